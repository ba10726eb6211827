package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/history"
	"github.com/gpuwatch/gpuwatch/rules"
)

// replayPlot draws what `replay --plot` replayed: the GPUs' readings and
// every alert's life. Its methods do nothing without --plot.
type replayPlot struct {
	path, trace string
	rec         *history.Recorder
	spans       []chart.AlertSpan
	open        map[string]int // firing alerts, by rule and GPU, → index in spans
}

func newReplayPlot(path, trace string) *replayPlot {
	if path == "" {
		return &replayPlot{}
	}
	return &replayPlot{path: path, trace: trace, rec: history.NewRecorder(), open: map[string]int{}}
}

func (p *replayPlot) snapshot(s *gpu.Snapshot) {
	if p.rec != nil {
		p.rec.Add(s)
	}
}

func (p *replayPlot) transitions(ts []rules.Transition) {
	if p.rec == nil {
		return
	}
	for i := range ts {
		t := &ts[i]
		key := fmt.Sprintf("%s/%s/%d", t.Alert, t.SeriesID(), t.GPU)
		switch {
		case t.Resolved():
			if k, ok := p.open[key]; ok {
				p.spans[k].ResolvedAt = t.At
				delete(p.open, key)
			}
		case !t.Repeat:
			p.open[key] = len(p.spans)
			p.spans = append(p.spans, chart.AlertSpan{Alert: t.Alert, Host: t.Host, GPU: t.GPU, MIG: t.MIG, FiredAt: t.StartsAt})
		}
	}
}

// write draws the plot to its file.
func (p *replayPlot) write(env *Env) error {
	if p.rec == nil {
		return nil
	}
	from, to := p.rec.Span()
	h := &chart.History{Title: "Replay of " + filepath.Base(p.trace), From: from, To: to.Add(59e9), GPUs: p.rec.GPUs(from, to), Alerts: p.spans}
	png, err := h.PNG(env.Location)
	if err != nil {
		return fmt.Errorf("replay --plot: %w", err)
	}
	if err := os.WriteFile(p.path, png, 0o644); err != nil {
		return userErrf("replay --plot: %v", err)
	}
	fmt.Fprintf(env.Stderr, "drew the replay to %s\n", p.path)
	return nil
}
