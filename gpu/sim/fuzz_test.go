package sim_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
)

// FuzzSource checks that any config either is refused with an error or
// yields plausible snapshots at Start + n×Step: no panic, no reading a GPU
// could not show.
func FuzzSource(f *testing.F) {
	f.Add("all", uint64(1), int64(5000), false)
	f.Add("memory-leak", uint64(0), int64(600000), true)
	f.Add("thermal", uint64(1<<63), int64(1), false)
	f.Add("nope", uint64(7), int64(5000), false)
	f.Add("idle-hog", uint64(18446744073709551615), int64(-5), true)
	f.Add("leak-gappy", uint64(3), int64(0), false)
	f.Add("gpu-lost", uint64(9), int64(1), true)
	f.Fuzz(func(t *testing.T, scenario string, seed uint64, stepMillis int64, loop bool) {
		step := time.Duration(stepMillis) * time.Millisecond
		start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
		src, err := sim.New(sim.Config{Scenario: scenario, Seed: seed, Step: step, Start: start, Loop: loop})
		valid := (scenario == "" || slices.Contains(sim.Scenarios(), scenario)) &&
			(step == 0 || (step >= sim.MinStep && step <= sim.MaxStep))
		if err != nil {
			if valid {
				t.Fatalf("New refused a valid config: %v", err)
			}
			return
		}
		if !valid {
			t.Fatalf("New accepted scenario %q, step %v", scenario, step)
		}
		realistic := src.TruthFile() != nil
		if step == 0 && !realistic {
			step = sim.DefaultStep
		}
		var snaps []*gpu.Snapshot
		for i := range 400 {
			s, err := src.Next(context.Background())
			if errors.Is(err, io.EOF) && !loop {
				break
			}
			if err != nil {
				t.Fatalf("Next %d: %v", i, err)
			}
			switch {
			case !realistic:
				if want := start.Add(time.Duration(i) * step); !s.Time.Equal(want) {
					t.Fatalf("snapshot %d at %v, want %v", i, s.Time, want)
				}
			case i == 0 && s.Time.Before(start):
				t.Fatalf("first snapshot at %v, before the start %v", s.Time, start)
			case i > 0 && !s.Time.After(snaps[i-1].Time):
				t.Fatalf("snapshot %d at %v, not after snapshot %d at %v", i, s.Time, i-1, snaps[i-1].Time)
			}
			snaps = append(snaps, s)
		}
		checkPlausible(t, snaps, realistic)
	})
}
