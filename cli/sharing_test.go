package cli_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
	"github.com/gpuwatch/gpuwatch/rules"
)

// sharingSeeds is how many seeds of each sharing scenario the example
// rules are held to.
const sharingSeeds = 8

// playExample evaluates the example config's rules over a scenario's run
// and returns its transitions and truth.
func playExample(t *testing.T, scenario string, seed uint64) ([]rules.Transition, []sim.Truth) {
	t.Helper()
	cfg, err := config.Parse("config.example.yaml", []byte(mustRead(t, "../config.example.yaml")), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	src, err := sim.New(sim.Config{Scenario: scenario, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	e := rules.NewEngine(cfg.Rules, rules.Options{})
	var out []rules.Transition
	for {
		s, err := src.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return out, src.Truth()
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range e.Eval(s) {
			tr.Processes = slices.Clone(tr.Processes)
			out = append(out, tr)
		}
	}
}

// TestExampleRulesOnMIGSliceLeak: on an A100 in seven 1g.10gb slices, the
// example rules warn of the leaking slice at least 30 minutes before its
// job runs out of memory, naming the slice and its owner, and say nothing
// of the other six slices or of the card.
func TestExampleRulesOnMIGSliceLeak(t *testing.T) {
	start := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for seed := uint64(1); seed <= sharingSeeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			ts, truth := playExample(t, sim.ScenarioMIGSliceLeak, seed)
			i := slices.IndexFunc(truth, func(tr sim.Truth) bool { return tr.Expect == sim.ExpectLeak })
			leak := truth[i]
			var first *rules.Transition
			for k := range ts {
				tr := &ts[k]
				if tr.MIG == nil || tr.MIG.GPUInstance != leak.Instance {
					t.Errorf("%s %s on %s at %v: want alerts on the leaking slice, MIG %d, only", tr.StateName(), tr.Alert, tr.Label(), tr.At.Sub(start), leak.Instance)
					continue
				}
				if first == nil && !tr.Resolved() {
					first = tr
				}
			}
			if first == nil {
				t.Fatalf("no alert on the leaking slice, MIG %d", leak.Instance)
			}
			lead := start.Add(leak.OOMAt).Sub(first.At)
			if lead < 30*time.Minute {
				t.Errorf("%s warned %v before the slice's OOM, want 30 minutes or more", first.Alert, lead)
			}
			t.Logf("%s on %s %v before its OOM", first.Alert, first.Label(), lead)
			if want := fmt.Sprintf("GPU 0 · MIG %d (1g.10gb)", leak.Instance); first.Label() != want || len(first.Processes) == 0 ||
				first.Processes[0].PID != leak.PID || first.Processes[0].User == "" {
				t.Errorf("%s on %s held by %+v, want %s held by pid %d and its user", first.Alert, first.Label(), first.Processes, want, leak.PID)
			}
		})
	}
}

// TestExampleRulesOnTimeSlicedLeak: on a GPU three pods share, one
// leaking, the example rules tell of the leaking process only (its owner
// the one to tell), well before the card is full, and not of the GPU.
func TestExampleRulesOnTimeSlicedLeak(t *testing.T) {
	start := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for seed := uint64(1); seed <= sharingSeeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			ts, truth := playExample(t, sim.ScenarioTimesliceLeak, seed)
			leak := truth[0]
			fired := 0
			for _, tr := range ts {
				if tr.Process == nil || tr.Process.PID != leak.PID {
					t.Errorf("%s %s on %s (process %+v) at %v: want alerts on the leaking process, pid %d, only",
						tr.StateName(), tr.Alert, tr.Subject(), tr.Process, tr.At.Sub(start), leak.PID)
					continue
				}
				if tr.Resolved() {
					continue
				}
				fired++
				lead := start.Add(leak.OOMAt).Sub(tr.At)
				if lead < 30*time.Minute {
					t.Errorf("%s warned %v before the OOM, want 30 minutes or more", tr.Alert, lead)
				}
				t.Logf("%s on %s %v before the OOM", tr.Alert, tr.Subject(), lead)
				if tr.Process.User == "" || tr.Labels["pid"] == "" {
					t.Errorf("%s: process %+v labels %v, want its owner and pid", tr.Alert, tr.Process, tr.Labels)
				}
				// The owners told (people:) are those of the alert's
				// processes: the leaking job's alone.
				if len(tr.Processes) != 1 || tr.Processes[0].PID != leak.PID {
					t.Errorf("%s: processes %+v, want the leaking process alone, for its owner to be told", tr.Alert, tr.Processes)
				}
			}
			if fired != 1 {
				t.Errorf("%d firings, want one, of ProcessMemoryLeak", fired)
			}
		})
	}
}
