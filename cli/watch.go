package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/rules"
)

// watcher is the sampling loop: it takes snapshots from a source, evaluates
// the rules on each at the snapshot's own time, and hands the transitions
// to the notifier.
type watcher struct {
	source   gpu.Source
	engine   *rules.Engine
	notifier notifier.Notifier
	logger   *slog.Logger
	// reload, when set, is polled between snapshots; it returns a new engine
	// to continue with, or nil to keep the current one.
	reload func() *rules.Engine
	// onSnapshot, when set, sees every snapshot after evaluation.
	onSnapshot func(*gpu.Snapshot)
}

// run loops until the source ends (nil), the context ends (its error) or the
// source fails.
func (w *watcher) run(ctx context.Context) error {
	for {
		snap, err := w.source.Next(ctx)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err // sources say where: FILE:LINE:COL, or which GPU call failed
		}
		if w.reload != nil {
			if e := w.reload(); e != nil {
				w.engine = e
			}
		}
		w.logEvents(snap)
		if ts := w.engine.Eval(snap); len(ts) > 0 {
			if _, err := w.notifier.Notify(ctx, ts...); err != nil {
				w.logger.Error("notify failed", "err", err)
			}
		}
		if w.onSnapshot != nil {
			w.onSnapshot(snap)
		}
	}
}

func (w *watcher) logEvents(s *gpu.Snapshot) {
	for _, ev := range s.Events {
		switch ev.Kind {
		case gpu.EventGPULost:
			w.logger.Error("GPU lost: it fell off the bus or stopped answering; the other GPUs are still watched",
				"gpu", ev.GPU, "uuid", ev.UUID, "detail", ev.Detail)
		case gpu.EventXID:
			w.logger.Warn("XID error", "gpu", ev.GPU, "uuid", ev.UUID, "xid", ev.XID, "detail", ev.Detail)
		}
	}
}
