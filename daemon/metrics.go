package daemon

import (
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/metrics"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// daemonMetrics is the daemon's Prometheus registry, the histogram Run
// observes each Step into, and the Tracker each snapshot feeds (energy,
// XID errors, lost GPUs). Its zero value is ready: the registry is made
// on first use.
type daemonMetrics struct {
	once           sync.Once
	registry       *prometheus.Registry
	sampleDuration prometheus.Histogram
	gpus           *metrics.Tracker
	// perProcess is the config's metrics.per_process, which a reload
	// switches.
	perProcess atomic.Bool
	// podLabels are the config's metrics.pod_labels, sorted, which a
	// reload changes.
	podLabels atomic.Pointer[[]string]
}

// podLabelKeys are the pod label keys the per-process series carry.
func (m *daemonMetrics) podLabelKeys() []string {
	if keys := m.podLabels.Load(); keys != nil {
		return *keys
	}
	return nil
}

// init makes the registry and the tracker, once.
func (m *daemonMetrics) init(d *Daemon) {
	m.once.Do(func() {
		m.sampleDuration = metrics.NewSampleDuration()
		m.gpus = metrics.NewTracker()
		m.registry = metrics.NewRegistry(metricsSource{d},
			metrics.Options{Version: d.opts.Version, GPUs: m.gpus, PerProcess: m.perProcess.Load, PodLabelKeys: m.podLabelKeys}, m.sampleDuration)
	})
}

// configureMetrics applies the config's metrics section (at start and on
// a reload).
func (d *Daemon) configureMetrics(cfg *config.Config) {
	d.metrics.perProcess.Store(cfg.Metrics.PerProcess)
	keys := slices.Sorted(slices.Values(cfg.Metrics.PodLabels))
	d.metrics.podLabels.Store(&keys)
}

// trackGPUs feeds a snapshot to the series that follow GPUs across
// snapshots. A hub exports no fleet GPUs (see metricsSource.Snapshots), so
// it tracks none.
func (d *Daemon) trackGPUs(snap *gpu.Snapshot) {
	d.metrics.init(d)
	if !d.hub {
		d.metrics.gpus.Observe(snap)
	}
}

// Registry is the daemon's Prometheus registry, the one GET /metrics
// serves; callers may register collectors of their own.
func (d *Daemon) Registry() *prometheus.Registry {
	d.metrics.init(d)
	return d.metrics.registry
}

// observeStep records how long one Step took; Run measures it.
func (d *Daemon) observeStep(took time.Duration) {
	d.metrics.init(d)
	d.metrics.sampleDuration.Observe(took.Seconds())
}

// metricsHandler serves GET /metrics in the Prometheus text (or
// OpenMetrics) format. A collector's error is logged and the rest is
// served.
func (d *Daemon) metricsHandler() http.Handler {
	return promhttp.HandlerFor(d.Registry(), promhttp.HandlerOpts{
		ErrorLog:      slogPrinter{d},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// slogPrinter lets promhttp log through the daemon's logger.
type slogPrinter struct{ d *Daemon }

func (p slogPrinter) Println(v ...any) {
	p.d.logger.Error("serving /metrics", "err", v)
}

// metricsSource is the daemon as the metrics Collector reads it.
type metricsSource struct{ d *Daemon }

// Snapshots are the latest snapshots; on a hub, none: the fleet's GPUs
// are in the Prometheus the hub reads, and exporting them again would feed
// them back to it as the hub's own.
func (s metricsSource) Snapshots() []*gpu.Snapshot {
	snap := s.d.Snapshot()
	if snap == nil || !s.d.hub {
		return s.d.Snapshots()
	}
	return []*gpu.Snapshot{{Time: snap.Time, Host: s.d.health.host}}
}

func (s metricsSource) Alerts() []metrics.Alert {
	active := s.d.Alerts()
	out := make([]metrics.Alert, len(active))
	for i, a := range active {
		out[i] = metrics.Alert{Name: a.Name, Severity: a.Severity, State: a.State}
	}
	return out
}

// OutboxDepth is each receiver's waiting count, from memory: /metrics
// answers while a stalled disk holds the store.
func (s metricsSource) OutboxDepth() map[string]int { return s.d.depth.snapshot() }

func (s metricsSource) DeliveryStats() map[string]notifier.DeliveryStats {
	out := make(map[string]notifier.DeliveryStats, len(s.d.deliverers))
	for name, dl := range s.d.deliverers {
		out[name] = dl.Stats.Snapshot()
	}
	return out
}
