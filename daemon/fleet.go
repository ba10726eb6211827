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
// past over the longest window the rules read, when src can tell it. A
// failure is logged: the windows then fill as the samples come.
func (d *Daemon) backfill(ctx context.Context, src gpu.Source) {
	b, ok := src.(backfiller)
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	span := d.engine.Lookback()
	if span <= 0 {
		return
	}
	// Before the windows and the trends' shortest scale, a step a minute at
	// most, so the minute-by-minute history alert charts draw has no holes.
	fine, step := d.engine.FineLookback()
	past := prometheus.Past{Span: span, Fine: fine, Step: min(step, time.Minute)}
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
			"window", span, "err", err)
		return
	}
	d.logger.Info("rule windows filled from the source's past", "window", span, "finely", past.Fine, "snapshots", n)
}
