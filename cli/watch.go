package cli

import (
	"context"
	"errors"
	"io"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/rules"
)

// watcher is the sampling loop of the commands that print rather than
// deliver (replay, demo): it takes snapshots from a source, evaluates the
// rules on each at the snapshot's own time, and hands the transitions to
// emit. What happens to a GPU (lost, an XID) is told by the alerts it
// raises, not logged beside them.
type watcher struct {
	source gpu.Source
	engine *rules.Engine
	emit   func([]rules.Transition) error
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
		if ts := w.engine.Eval(snap); len(ts) > 0 {
			if err := w.emit(ts); err != nil {
				return err
			}
		}
		if w.onSnapshot != nil {
			w.onSnapshot(snap)
		}
	}
}
