// Package metrics exposes gpuwatch to Prometheus: per-GPU gauges from the
// latest snapshot of each host (and its health readings, under the names
// of package healthseries), who uses each GPU (memory and utilization
// by user, bounded; by process, when asked), the GPUs known and lost,
// energy and XID counters, alert states, notification counters per
// receiver and failure reason, outbox depths, the duration of each
// sample's evaluation, build info, and the Go runtime and process
// collectors. A hub over Prometheus reads the same series back (schema
// "gpuwatch").
//
// Nothing here is registered globally. The daemon makes a Registry with
// NewRegistry, passing a Source it implements and a Tracker it feeds; the
// Collector reads them at scrape time, so a scrape always shows the latest
// state and costs nothing between scrapes.
package metrics

import (
	"math"
	"runtime"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/healthseries"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// Source is what the Collector reads at scrape time. Every method is safe
// to call from any goroutine and returns quickly.
type Source interface {
	// Snapshots are the latest sample of every host; none before the
	// first.
	Snapshots() []*gpu.Snapshot
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

// Options say what a Collector shows beyond its Source.
type Options struct {
	// Version is gpuwatch's version, for gpuwatch_build_info ("unknown"
	// when empty).
	Version string
	// GPUs, when set, gives the series that follow a GPU across snapshots:
	// gpuwatch_gpu_info, _lost, _energy_joules_total, _xid_errors_total.
	GPUs *Tracker
	// PerProcess, when set and true, adds the per-process series
	// gpuwatch_gpu_process_memory_bytes (config metrics.per_process); a
	// function, so that a reload switches it.
	PerProcess func() bool
	// PodLabelKeys, when set, gives the Kubernetes pod label keys the
	// per-process series carry, each as label_KEY (config
	// metrics.pod_labels, sorted and distinct); a function, so that a
	// reload changes them.
	PodLabelKeys func() []string
}

// NewRegistry returns a registry holding a Collector on src, sampleDuration
// (nil for none), and the Go runtime and process collectors.
func NewRegistry(src Source, o Options, sampleDuration prometheus.Histogram) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(src, o),
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
	src        Source
	version    string
	gpus       *Tracker
	perProcess func() bool
	podKeys    func() []string

	memUsed, memTotal, utilGPU, utilMem, temp, power, powerLimit *prometheus.Desc
	processes                                                    *prometheus.Desc
	info, lost, energy, xids                                     *prometheus.Desc
	userMem, userUtil, processMem                                *prometheus.Desc
	migInfo, migEnabled                                          *prometheus.Desc

	alerts                         *prometheus.Desc
	sent, failed, retried, dead    *prometheus.Desc
	outboxDepth, buildInfo, sample *prometheus.Desc

	// health are the health readings' series, in healthseries.All's order.
	health []healthDesc
}

// healthDesc is a health reading's series.
type healthDesc struct {
	healthseries.Series
	desc *prometheus.Desc
}

// NewCollector returns a Collector reading src.
func NewCollector(src Source, o Options) *Collector {
	version := o.Version
	if version == "" {
		version = "unknown"
	}
	gauge := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	var health []healthDesc
	for _, s := range healthseries.All() {
		health = append(health, healthDesc{s, gauge(s.Name, s.Help, gpuLabels...)})
	}
	return &Collector{
		health:     health,
		src:        src,
		version:    version,
		gpus:       o.GPUs,
		perProcess: o.PerProcess,
		podKeys:    o.PodLabelKeys,
		memUsed:    gauge("gpuwatch_gpu_memory_used_bytes", "GPU memory in use, in bytes.", gpuLabels...),
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
		info:       gauge("gpuwatch_gpu_info", "Always 1, for every GPU gpuwatch knows, reporting or lost.", gpuLabels...),
		lost: gauge("gpuwatch_gpu_lost",
			"1 while a GPU gpuwatch knew has stopped reporting (NVML lost it: fell off the bus, stopped answering), else 0.", gpuLabels...),
		energy: gauge("gpuwatch_gpu_energy_joules_total",
			"Energy the GPU used since gpuwatch started, in joules: its power integrated over the samples' times (gaps of more than a few intervals are not bridged).", gpuLabels...),
		xids: gauge("gpuwatch_gpu_xid_errors_total",
			"XID errors the driver reported for the GPU, by XID code.", append(gpuLabels[:4:4], "xid")...),
		userMem: gauge("gpuwatch_gpu_user_memory_bytes",
			"GPU memory held by a user's processes, in bytes; the "+strconv.Itoa(MaxUsersPerGPU)+" largest users of each GPU, the rest summed as user=\""+OtherUsers+"\".",
			"gpu", "uuid", "host", "user"),
		userUtil: gauge("gpuwatch_gpu_user_utilization_ratio",
			"The GPU's utilization (0 to 1) shared among its users by their share of its process memory; users as in gpuwatch_gpu_user_memory_bytes.",
			"gpu", "uuid", "host", "user"),
		processMem: processMemDesc(nil),
		migInfo: gauge("gpuwatch_gpu_mig_info",
			"Always 1, for every MIG instance: its GPU (parent_uuid), GPU and compute instance IDs and profile. The instance's other series have its own uuid.",
			"gpu", "uuid", "host", "parent_uuid", "gpu_instance", "compute_instance", "profile"),
		migEnabled: gauge("gpuwatch_gpu_mig_enabled",
			"Always 1, for every GPU split into MIG instances: its memory and processes are its instances'.", gpuLabels...),
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
		c.powerLimit, c.processes, c.info, c.lost, c.energy, c.xids, c.userMem, c.userUtil, c.processMem, c.migInfo, c.migEnabled,
		c.alerts, c.sent, c.failed, c.retried, c.dead, c.outboxDepth, c.buildInfo, c.sample} {
		ch <- d
	}
	for _, h := range c.health {
		ch <- h.desc
	}
}

// Collect reads the Source and sends every metric.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.buildInfo, prometheus.GaugeValue, 1, c.version, runtime.Version())
	var processes *processSeries
	if c.perProcess != nil && c.perProcess() {
		processes = &processSeries{desc: c.processMem}
		if c.podKeys != nil {
			if keys := c.podKeys(); len(keys) > 0 {
				processes = &processSeries{desc: processMemDesc(keys), podKeys: keys}
			}
		}
	}
	for _, snap := range c.src.Snapshots() {
		if snap != nil {
			c.collectGPUs(ch, snap, processes)
		}
	}
	if c.gpus != nil {
		c.gpus.collect(ch, c)
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

func (c *Collector) collectGPUs(ch chan<- prometheus.Metric, snap *gpu.Snapshot, processes *processSeries) {
	if !snap.Time.IsZero() {
		send(ch, c.sample, prometheus.GaugeValue, float64(snap.Time.UnixNano())/1e9, snap.Host)
	}
	for i := range snap.Devices {
		d := &snap.Devices[i]
		labels := []string{strconv.Itoa(d.Index), d.UUID, d.Name, snap.Host}
		// Unknown readings (NaN) are left out rather than shown as a value.
		gauge := func(desc *prometheus.Desc, v float64) {
			if known(v) {
				send(ch, desc, prometheus.GaugeValue, v, labels...)
			}
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
		c.collectHealth(ch, d, labels)
		switch {
		case d.MIG != nil:
			send(ch, c.migInfo, prometheus.GaugeValue, 1, strconv.Itoa(d.Index), d.UUID, snap.Host, d.MIG.ParentUUID,
				strconv.Itoa(d.MIG.GPUInstance), strconv.Itoa(d.MIG.ComputeInstance), d.MIG.Profile)
		case d.MIGEnabled:
			gauge(c.migEnabled, 1)
		}
		c.collectUsers(ch, snap.Host, d)
		if processes != nil {
			processes.collect(ch, snap.Host, d)
		}
	}
}

// collectHealth sends the GPU's health readings it knows; a missing one
// has no series, not a 0.
func (c *Collector) collectHealth(ch chan<- prometheus.Metric, d *gpu.Device, labels []string) {
	if !d.Health.Known() {
		return
	}
	for _, h := range c.health {
		v, ok := d.Health.Get(h.Reading)
		if !ok {
			continue
		}
		typ := prometheus.GaugeValue
		if h.Counter {
			typ = prometheus.CounterValue
		}
		send(ch, h.desc, typ, v*h.Scale, labels...)
	}
}

// send sends one metric, its label values made valid UTF-8 (a command
// line or a user name from /proc may not be), which Prometheus requires.
func send(ch chan<- prometheus.Metric, desc *prometheus.Desc, typ prometheus.ValueType, v float64, labels ...string) {
	for i, l := range labels {
		if !utf8.ValidString(l) {
			labels[i] = strings.ToValidUTF8(l, "\uFFFD")
		}
	}
	m, err := prometheus.NewConstMetric(desc, typ, v, labels...)
	if err != nil { // the label count is the Desc's own: cannot happen
		m = prometheus.NewInvalidMetric(desc, err)
	}
	ch <- m
}

// known reports whether a reading is a number.
func known(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func nan() float64 { return math.NaN() }

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
