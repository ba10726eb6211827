package daemon

import (
	"cmp"
	"context"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/prometheus"
	"github.com/gpuwatch/gpuwatch/rules"
)

// fleet is the latest snapshot of every host the daemon has seen: one on
// a GPU server, every host of the fleet on a hub.
type fleet struct {
	mu     sync.RWMutex
	byHost map[string]*gpu.Snapshot
}

func newFleet() *fleet { return &fleet{byHost: map[string]*gpu.Snapshot{}} }

func (f *fleet) record(s *gpu.Snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byHost[s.Host] = s
}

// of is host's latest snapshot; nil for a host never seen.
func (f *fleet) of(host string) *gpu.Snapshot {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.byHost[host]
}

func (f *fleet) snapshots() []*gpu.Snapshot {
	f.mu.RLock()
	out := make([]*gpu.Snapshot, 0, len(f.byHost))
	for _, s := range f.byHost {
		out = append(out, s)
	}
	f.mu.RUnlock()
	slices.SortFunc(out, func(a, b *gpu.Snapshot) int { return cmp.Compare(a.Host, b.Host) })
	return out
}

// Snapshots is the latest snapshot of every host, sorted by host: one on a
// GPU server, every host of the fleet on a hub (a host whose GPUs all
// stopped reporting has one without GPUs). Empty before the first sample.
func (d *Daemon) Snapshots() []*gpu.Snapshot { return d.fleet.snapshots() }

// backfiller is a source that can tell what its hosts looked like before
// it started (a hub's Prometheus): Run feeds that past to the rules
// engine, so rules over windows judge at the first evaluation.
type backfiller interface {
	Backfill(ctx context.Context, past prometheus.Past, warm func(*gpu.Snapshot)) error
}

// backfillGCPercent is the garbage collector's GOGC while a backfill
// runs.
const backfillGCPercent = 25

// backfill warms the engine's windows and the GPUs' history from src's
// past, what the rules and the charts read of it, when src can tell it.
// A failure is logged: the windows then fill as the samples come.
func (d *Daemon) backfill(ctx context.Context, src gpu.Source) {
	b, ok := src.(backfiller)
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	past := pastNeeded(d.engine.Lookbacks(), d.history.span())
	if len(past) == 0 {
		return
	}
	// A fleet's past comes in rounds of answers that are garbage once
	// replayed, hundreds of megabytes of them on a large fleet: collecting
	// more often while they come keeps the hub's peak near what it keeps,
	// and what they took goes back to the system at the end.
	defer debug.FreeOSMemory()
	defer debug.SetGCPercent(debug.SetGCPercent(backfillGCPercent))
	n := 0
	err := b.Backfill(ctx, past, func(s *gpu.Snapshot) {
		if !d.admit(s) {
			return
		}
		d.engine.Warm(s)
		d.history.Record(s)
		n++
	})
	if err != nil {
		d.logger.Warn("cannot read the past from the source: windows fill as samples come, so rules over windows judge only after them",
			"window", past.Span(), "err", err)
		return
	}
	d.logger.Info("rule windows filled from the source's past", "window", past.Span(), "snapshots", n)
}

// pastNeeded is what a hub reads of its fleet's past at start: what the
// rules read of each metric (lookbacks), and, for the charts of their
// alerts, the memory, utilization and temperature of the history's span,
// a point a minute, with who holds each GPU wherever anything is read.
func pastNeeded(lookbacks []rules.MetricLookback, history time.Duration) prometheus.Past {
	var past prometheus.Past
	add := func(r prometheus.Reading, span, step time.Duration) {
		n := prometheus.Need{Reading: r, Span: span, Step: step}
		if !slices.Contains(past, n) {
			past = append(past, n)
		}
	}
	for _, l := range lookbacks {
		for _, r := range readingsOf(l.Metric) {
			add(r, l.Span, l.Step)
		}
	}
	if history > 0 {
		for _, r := range []prometheus.Reading{prometheus.ReadingMemory, prometheus.ReadingHolders,
			prometheus.ReadingUtilization, prometheus.ReadingTemperature} {
			add(r, history, time.Minute)
		}
	}
	return past
}

// readingsOf are the readings of a hub's source metric m of the rules is
// made of: a health metric is its health reading (and, for one below its
// maximum, the maximum's), an XID metric the XID events.
func readingsOf(m rules.Metric) []prometheus.Reading {
	if m.IsEvent() {
		return []prometheus.Reading{prometheus.ReadingXIDs}
	}
	if h, ok := m.HealthSource(); ok {
		if h.BelowMax {
			return []prometheus.Reading{prometheus.ReadingHealth(h.Reading), prometheus.ReadingHealth(h.Max)}
		}
		return []prometheus.Reading{prometheus.ReadingHealth(h.Reading)}
	}
	return metricReadings[m]
}

// metricReadings are the readings of a hub's source each metric of
// memory, utilization, temperature, power and processes is made of.
var metricReadings = map[rules.Metric][]prometheus.Reading{
	rules.MetricMemoryUsed:        {prometheus.ReadingMemory},
	rules.MetricMemoryFree:        {prometheus.ReadingMemory},
	rules.MetricMemoryTotal:       {prometheus.ReadingMemory},
	rules.MetricMemoryUsedPercent: {prometheus.ReadingMemory},
	rules.MetricUtilizationGPU:    {prometheus.ReadingUtilization},
	rules.MetricUtilizationMemory: {prometheus.ReadingMemoryUtilization},
	rules.MetricTemperature:       {prometheus.ReadingTemperature},
	rules.MetricPower:             {prometheus.ReadingPower},
	rules.MetricPowerPercent:      {prometheus.ReadingPower},
	// dcgm-exporter names the pod holding a GPU on its memory series.
	rules.MetricProcessMemory: {prometheus.ReadingHolders, prometheus.ReadingMemory},
	rules.MetricProcessCount:  {prometheus.ReadingHolders, prometheus.ReadingMemory},
	rules.MetricProcessJobs:   {prometheus.ReadingHolders, prometheus.ReadingMemory},
}
