// Package metrics exposes gpuwatch to Prometheus: per-GPU gauges from the
// latest snapshot, alert states, notification counters per receiver and
// failure reason, outbox depths, the duration of each sample's evaluation,
// build info, and the Go runtime and process collectors.
//
// Nothing here is registered globally. The daemon makes a Registry with
// NewRegistry, passing a Source it implements; the Collector reads the
// Source at scrape time, so a scrape always shows the latest state and
// costs nothing between scrapes.
package metrics

import (
	"math"
	"runtime"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// Source is what the Collector reads at scrape time. Every method is safe
// to call from any goroutine and returns quickly.
type Source interface {
	// Snapshot is the latest sample of the GPUs; nil before the first.
	Snapshot() *gpu.Snapshot
	// Alerts are the pending and firing alerts.
	Alerts() []Alert
	// OutboxDepth is how many notifications wait per receiver.
	OutboxDepth() map[string]int
	// DeliveryStats are each receiver's delivery counters.
	DeliveryStats() map[string]notifier.DeliveryStats
}

// Alert is one pending or firing alert as the metrics count it.
type Alert struct {
	Name     string
	Severity string
	State    string // "pending" or "firing"
}

// SampleDurationName is the histogram of how long each sample's
// evaluation (Daemon.Step) took.
const SampleDurationName = "gpuwatch_sample_duration_seconds"

// NewSampleDuration returns the histogram the daemon observes each
// Step's duration into, measured by its caller. Buckets run from 100µs to
// about 3s: a Step is well under a millisecond unless the store is slow.
func NewSampleDuration() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    SampleDurationName,
		Help:    "Time to evaluate one sample: rules, routing and the durable write of what it decided, in seconds.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9),
	})
}

// NewRegistry returns a registry holding a Collector on src, sampleDuration
// (nil for none), and the Go runtime and process collectors.
func NewRegistry(src Source, version string, sampleDuration prometheus.Histogram) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(src, version),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if sampleDuration != nil {
		reg.MustRegister(sampleDuration)
	}
	return reg
}

var gpuLabels = []string{"gpu", "uuid", "name", "host"}

// Collector turns a Source into gpuwatch's metrics at scrape time.
type Collector struct {
	src     Source
	version string

	memUsed, memTotal, utilGPU, utilMem, temp, power, powerLimit *prometheus.Desc
	processes                                                    *prometheus.Desc

	alerts                         *prometheus.Desc
	sent, failed, retried, dead    *prometheus.Desc
	outboxDepth, buildInfo, sample *prometheus.Desc
}

// NewCollector returns a Collector reading src; version is gpuwatch's
// version, for gpuwatch_build_info ("unknown" when empty).
func NewCollector(src Source, version string) *Collector {
	if version == "" {
		version = "unknown"
	}
	gauge := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &Collector{
		src:     src,
		version: version,
		memUsed: gauge("gpuwatch_gpu_memory_used_bytes", "GPU memory in use, in bytes.", gpuLabels...),
		memTotal: gauge("gpuwatch_gpu_memory_total_bytes",
			"GPU memory in all, in bytes.", gpuLabels...),
		utilGPU: gauge("gpuwatch_gpu_utilization_ratio",
			"Share of the last sample period the GPU was busy, from 0 to 1 (nvidia-smi's utilization.gpu / 100).", gpuLabels...),
		utilMem: gauge("gpuwatch_gpu_memory_utilization_ratio",
			"Share of the last sample period GPU memory was read or written, from 0 to 1 (nvidia-smi's utilization.memory / 100).", gpuLabels...),
		temp:       gauge("gpuwatch_gpu_temperature_celsius", "GPU core temperature, in degrees Celsius.", gpuLabels...),
		power:      gauge("gpuwatch_gpu_power_watts", "GPU power draw, in watts.", gpuLabels...),
		powerLimit: gauge("gpuwatch_gpu_power_limit_watts", "GPU power limit, in watts.", gpuLabels...),
		processes:  gauge("gpuwatch_gpu_processes", "Compute processes on the GPU.", gpuLabels...),
		alerts: gauge("gpuwatch_alerts",
			"Pending and firing alerts, by rule, severity and state.", "alert", "severity", "state"),
		sent: gauge("gpuwatch_notifications_sent_total",
			"Notifications the receiver accepted.", "receiver"),
		failed: gauge("gpuwatch_notifications_failed_total",
			"Failed delivery tries, retried or not, by why they failed: timeout, connection, rate_limited, http_4xx, http_5xx, rejected (the receiver said no in its answer), other.",
			"receiver", "reason"),
		retried: gauge("gpuwatch_notifications_retried_total",
			"Failed delivery tries that will be tried again.", "receiver"),
		dead: gauge("gpuwatch_notifications_dead_total",
			"Notifications the receiver refused for good, kept as dead letters (gpuwatch outbox list).", "receiver"),
		outboxDepth: gauge("gpuwatch_outbox_depth",
			"Notifications waiting in the receiver's durable outbox.", "receiver"),
		buildInfo: gauge("gpuwatch_build_info",
			"Always 1; the labels say which gpuwatch is running.", "version", "goversion"),
		sample: gauge("gpuwatch_last_sample_timestamp_seconds",
			"Time of the latest sample, in seconds since the Unix epoch (its own time: a replay shows the log's).", "host"),
	}
}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.memUsed, c.memTotal, c.utilGPU, c.utilMem, c.temp, c.power,
		c.powerLimit, c.processes, c.alerts, c.sent, c.failed, c.retried, c.dead, c.outboxDepth, c.buildInfo, c.sample} {
		ch <- d
	}
}

// Collect reads the Source and sends every metric.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.buildInfo, prometheus.GaugeValue, 1, c.version, runtime.Version())
	if snap := c.src.Snapshot(); snap != nil {
		c.collectGPUs(ch, snap)
	}
	c.collectAlerts(ch, c.src.Alerts())
	for receiver, n := range c.src.OutboxDepth() {
		ch <- prometheus.MustNewConstMetric(c.outboxDepth, prometheus.GaugeValue, float64(n), receiver)
	}
	for receiver, s := range c.src.DeliveryStats() {
		ch <- prometheus.MustNewConstMetric(c.sent, prometheus.CounterValue, float64(s.Sent), receiver)
		ch <- prometheus.MustNewConstMetric(c.retried, prometheus.CounterValue, float64(s.Retried), receiver)
		ch <- prometheus.MustNewConstMetric(c.dead, prometheus.CounterValue, float64(s.Dead), receiver)
		for reason, n := range s.Failed {
			ch <- prometheus.MustNewConstMetric(c.failed, prometheus.CounterValue, float64(n), receiver, reason)
		}
	}
}

func (c *Collector) collectGPUs(ch chan<- prometheus.Metric, snap *gpu.Snapshot) {
	if !snap.Time.IsZero() {
		ch <- prometheus.MustNewConstMetric(c.sample, prometheus.GaugeValue,
			float64(snap.Time.UnixNano())/1e9, snap.Host)
	}
	for i := range snap.Devices {
		d := &snap.Devices[i]
		labels := []string{strconv.Itoa(d.Index), d.UUID, d.Name, snap.Host}
		// Unknown readings (NaN) are left out rather than shown as a value.
		gauge := func(desc *prometheus.Desc, v float64) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return
			}
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
		}
		if d.MemKnown() {
			gauge(c.memUsed, float64(d.MemUsed))
			gauge(c.memTotal, float64(d.MemTotal))
		}
		gauge(c.utilGPU, d.UtilGPU/100)
		gauge(c.utilMem, d.UtilMem/100)
		gauge(c.temp, d.TempC)
		gauge(c.power, d.PowerW)
		gauge(c.powerLimit, d.PowerLimitW)
		gauge(c.processes, float64(len(d.Processes)))
	}
}

// collectAlerts counts alerts by rule, severity and state: one series per
// rule and state whatever the number of GPUs, so the cardinality stays that
// of the rule file.
func (c *Collector) collectAlerts(ch chan<- prometheus.Metric, alerts []Alert) {
	counts := map[Alert]int{}
	for _, a := range alerts {
		counts[a]++
	}
	for a, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.alerts, prometheus.GaugeValue, float64(n), a.Name, a.Severity, a.State)
	}
}
