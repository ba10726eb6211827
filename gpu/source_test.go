package gpu_test

import (
	"context"
	"errors"
	"io"
	"math"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/replay"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
)

// TestSourceConformance holds every finite Source to the same contract:
// snapshots in time order, GPUs sorted by index with distinct UUIDs, each
// MIG instance after its parent,
// readings either unknown (NaN) or plausible, io.EOF at the end, and
// snapshots that do not share memory with the next one.
func TestSourceConformance(t *testing.T) {
	sources := map[string]func(t *testing.T) gpu.Source{}
	for _, name := range sim.Scenarios() {
		sources["sim/"+name] = func(t *testing.T) gpu.Source {
			s, err := sim.New(sim.Config{Scenario: name, Seed: 3, Step: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	sources["replay/memory-leak"] = func(t *testing.T) gpu.Source {
		r, err := replay.Open("replay/testdata/memory-leak.csv", replay.Options{Host: "node1"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for name, open := range sources {
		t.Run(name, func(t *testing.T) { checkSource(t, open(t)) })
	}
}

func checkSource(t *testing.T, src gpu.Source) {
	t.Helper()
	defer func() {
		if err := src.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	ctx := context.Background()
	var prev *gpu.Snapshot
	var prevFirst gpu.Device
	n := 0
	for {
		s, err := src.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("snapshot %d: %v", n, err)
		}
		n++
		if s.Time.IsZero() || s.Host == "" {
			t.Fatalf("snapshot %d: time %v host %q, want both set", n, s.Time, s.Host)
		}
		if prev != nil {
			if !s.Time.After(prev.Time) {
				t.Fatalf("snapshot %d at %v is not after the previous one at %v", n, s.Time, prev.Time)
			}
			if len(prev.Devices) > 0 && !sameDevice(prev.Devices[0], prevFirst) {
				t.Fatalf("snapshot %d changed the previous snapshot's devices: sources must not reuse them", n)
			}
		}
		checkDevices(t, n, s.Devices)
		prev = s
		if len(s.Devices) > 0 {
			prevFirst = s.Devices[0]
		}
	}
	if n < 2 {
		t.Fatalf("got %d snapshots, want a series", n)
	}
	if _, err := src.Next(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("Next after the end: %v, want io.EOF again", err)
	}
}

func sameDevice(a, b gpu.Device) bool {
	return a.Index == b.Index && a.UUID == b.UUID && a.MemUsed == b.MemUsed && (a.TempC == b.TempC || math.IsNaN(a.TempC) && math.IsNaN(b.TempC))
}

func checkDevices(t *testing.T, n int, devs []gpu.Device) {
	t.Helper()
	uuids := map[string]bool{}
	for i, d := range devs {
		switch {
		case d.MIG != nil:
			// A MIG instance follows its parent, or the instance before it.
			p := &devs[max(i-1, 0)]
			if i == 0 || p.Index != d.Index || p.ParentUUID() != d.MIG.ParentUUID || !p.MIGEnabled && p.MIG == nil {
				t.Fatalf("snapshot %d: %s (%s) does not follow its parent %s", n, d.Label(), d.UUID, d.MIG.ParentUUID)
			}
		case i > 0 && d.Index <= devs[i-1].Index:
			t.Fatalf("snapshot %d: GPU indices %d then %d, want increasing", n, devs[i-1].Index, d.Index)
		}
		if uuids[d.UUID] {
			t.Fatalf("snapshot %d: UUID %q twice", n, d.UUID)
		}
		uuids[d.UUID] = true
		if d.MemKnown() && d.MemUsed > d.MemTotal {
			t.Fatalf("snapshot %d GPU %d: memory used %d > total %d", n, d.Index, d.MemUsed, d.MemTotal)
		}
		for what, v := range map[string]float64{"utilization.gpu": d.UtilGPU, "utilization.memory": d.UtilMem} {
			if !math.IsNaN(v) && (v < 0 || v > 100) {
				t.Fatalf("snapshot %d GPU %d: %s %v outside 0..100", n, d.Index, what, v)
			}
		}
		if !math.IsNaN(d.TempC) && (d.TempC < -40 || d.TempC > 130) {
			t.Fatalf("snapshot %d GPU %d: temperature %v C implausible", n, d.Index, d.TempC)
		}
		if !math.IsNaN(d.PowerW) && d.PowerW < 0 {
			t.Fatalf("snapshot %d GPU %d: power %v W negative", n, d.Index, d.PowerW)
		}
	}
}
