package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
	"github.com/gpuwatch/gpuwatch/rules"
)

// `gpuwatch check` tries the rules before the daemon has to: it evaluates
// them over simulated samples of a full server and compares the time one
// sample takes with source.interval. Samples that take longer than the
// interval fall behind for good.

const (
	// trialGPUs is the server the rules are tried on: eight GPUs, the
	// most a common server holds.
	trialGPUs = 8
	// trialSamples and trialTime bound the trial: it stops at whichever
	// comes first, or at the first sample slower than the interval.
	trialSamples = 60
	trialTime    = 3 * time.Second
)

// trialResult is how long the rules took on one sample: the slowest (the
// one where most alerts fire, with their templates) and the typical one.
type trialResult struct {
	slowest, typical time.Duration
	samples          int
}

// tryEvaluation evaluates the rules over simulated samples, source.interval
// apart (at most sim.MaxStep), and times each. The simulation ends: a
// long interval takes fewer samples than trialSamples, and samples=0
// says none could be taken.
func tryEvaluation(ctx context.Context, rs []*rules.Rule, interval time.Duration) (trialResult, error) {
	src, err := sim.New(sim.Config{Scenario: sim.ScenarioAll, Step: min(interval, sim.MaxStep), Seed: 1})
	if err != nil {
		return trialResult{}, err
	}
	defer src.Close()
	engine := rules.NewEngine(rs, rules.Options{})
	var took []time.Duration
	began := time.Now()
	for len(took) < trialSamples && time.Since(began) < trialTime {
		snap, err := src.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return trialResult{}, err
		}
		snap = fullServer(snap, trialGPUs)
		start := time.Now()
		engine.Eval(snap)
		took = append(took, time.Since(start))
		if took[len(took)-1] > interval {
			break // one sample too slow is enough to know
		}
	}
	if len(took) == 0 {
		return trialResult{}, nil
	}
	r := trialResult{slowest: slices.Max(took), samples: len(took)}
	slices.Sort(took)
	r.typical = took[len(took)/2]
	return r, nil
}

// fullServer returns s with n GPUs: its own, then copies of them under
// new indices and UUIDs.
func fullServer(s *gpu.Snapshot, n int) *gpu.Snapshot {
	out := *s
	out.Devices = make([]gpu.Device, n)
	for i := range out.Devices {
		d := s.Devices[i%len(s.Devices)]
		if i >= len(s.Devices) {
			d.Index, d.UUID = i, fmt.Sprintf("%s-copy%d", d.UUID, i)
		}
		out.Devices[i] = d
	}
	return &out
}

// checkEvaluationTime tries cfg's rules and returns a problem (at
// source.interval) when a sample takes longer than the interval, and a
// warning when a typical one takes more than half of it.
func checkEvaluationTime(ctx context.Context, cfg *config.Config) (problem, warning error, err error) {
	if len(cfg.Rules) == 0 {
		return nil, nil, nil
	}
	r, err := tryEvaluation(ctx, cfg.Rules, cfg.Source.Interval)
	if err != nil {
		return nil, nil, fmt.Errorf("try the rules: %w", err)
	}
	interval := []string{"source", "interval"}
	switch {
	case r.slowest > cfg.Source.Interval:
		return cfg.ErrorAt(interval, "evaluating the %d rules on %d GPUs takes up to %v a sample, longer than source.interval %v: "+
			"samples would fall behind; use fewer rules or a longer interval", len(cfg.Rules), trialGPUs, round(r.slowest), cfg.Source.Interval), nil, nil
	case r.typical > cfg.Source.Interval/2:
		return nil, cfg.ErrorAt(interval, "warning: evaluating the %d rules on %d GPUs takes about %v a sample, over half of source.interval %v: "+
			"a busier machine may fall behind; use fewer rules or a longer interval", len(cfg.Rules), trialGPUs, round(r.typical), cfg.Source.Interval), nil
	}
	return nil, nil, nil
}

// round keeps a duration readable: milliseconds, or microseconds below one.
func round(d time.Duration) time.Duration {
	if d >= time.Millisecond {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}
