package sim_test

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu/replay"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
)

// The behaviours of the leak scenarios, checked for many seeds: the shapes
// a leak takes (shared/traces/v3 shows some of them) and the workloads that
// must not be taken for one.

// leakOf returns the one leak incident of a leak scenario's run, its GPU's
// samples and its OOM.
func leakOf(t *testing.T, r realTrace) (sim.Incident, []sample, time.Duration) {
	t.Helper()
	if len(r.tf.Incidents) != 1 || r.tf.Incidents[0].Kind != sim.ExpectLeak {
		t.Fatalf("incidents %+v, want one leak", r.tf.Incidents)
	}
	in := r.tf.Incidents[0]
	oom := secs(in.Until) - time.Minute
	if in.OOMAt != nil {
		oom = secs(*in.OOMAt)
	}
	return in, r.gpu(in.GPU), oom
}

// checkOOM checks that a leaking job dies of OOM: memory within 5 % of
// what can be allocated just before (unless it dies of a pass that never
// shows, want is 0), nothing after.
func checkOOM(t *testing.T, r realTrace, gpuIdx int, ss []sample, oom time.Duration, want float64) {
	t.Helper()
	if p := 100 * maxMiB(between(ss, oom-10*time.Minute, oom)) / allocatableMiB(r, gpuIdx, ss); p < want {
		t.Errorf("at most %.1f %% of what can be allocated in the 10 minutes before the OOM at %v, want at least %v %%", p, oom, want)
	}
	for _, s := range between(ss, oom+10*time.Second, oom+5*time.Minute) {
		if mib(s) > 4 {
			t.Fatalf("after the OOM at %v: %v MiB at %v; want the GPU empty", oom, mib(s), s.at)
		}
	}
}

// allocatableMiB is what jobs can allocate on GPU i, whose samples are ss.
func allocatableMiB(r realTrace, i int, ss []sample) float64 {
	return float64(r.tf.GPUs[i].MemoryTotalMiB) - float64(ss[0].MemReserved>>20)
}

// checkRate checks a leak's rate: within lo–hi MiB/min, and the floor's
// slope as the truth says.
func checkRate(t *testing.T, r realTrace, in sim.Incident, ss []sample, oom time.Duration, lo, hi float64) {
	t.Helper()
	var rate float64
	for _, tr := range r.truth {
		if tr.GPU == in.GPU && tr.Expect == sim.ExpectLeak {
			rate = tr.RateMiBPerMin
		}
	}
	if rate < lo || rate > hi {
		t.Errorf("leak of %.1f MiB/min, want %v-%v", rate, lo, hi)
	}
	from := secs(in.From)
	window := max(10*time.Minute, (oom-from)/30)
	if got := floorSlope(ss, from+window, oom-window, window); math.Abs(got-rate) > 0.1*rate {
		t.Errorf("memory grows %.1f MiB/min, truth says %.1f", got, rate)
	}
}

// checkReserved checks what the driver reserves: none, or about 0.73 % of
// every GPU (598 MiB of an H100), with memory in use never above the rest.
func checkReserved(t *testing.T, r realTrace) {
	t.Helper()
	for _, g := range r.tf.GPUs {
		for _, s := range r.gpu(g.GPU) {
			if res := float64(s.MemReserved >> 20); res > 0 {
				if share := res / float64(g.MemoryTotalMiB); share < 0.0065 || share > 0.0081 {
					t.Fatalf("GPU %d reserves %.0f MiB of %d, want about 0.73 %%", g.GPU, res, g.MemoryTotalMiB)
				}
			}
			if s.MemUsed+s.MemReserved > s.MemTotal {
				t.Fatalf("GPU %d at %v: %d MiB used and %d reserved of %d", g.GPU, s.at, s.MemUsed>>20, s.MemReserved>>20, s.MemTotal>>20)
			}
		}
	}
}

// steps returns the times the floor of ss rises by more than rise MiB
// from one window of w to the next, in [from, until).
func steps(ss []sample, from, until, w time.Duration, rise float64) []time.Duration {
	var out []time.Duration
	prev := math.NaN()
	for at := from; at+w <= until; at += w {
		win := between(ss, at, at+w)
		if len(win) == 0 {
			continue
		}
		f := minMiB(win)
		if !math.IsNaN(prev) && f-prev > rise {
			out = append(out, at)
		}
		prev = f
	}
	return out
}

func TestLeakEpoch(t *testing.T) {
	forRealSeeds(t, sim.ScenarioLeakEpoch, func(t *testing.T, r realTrace) {
		in, ss, oom := leakOf(t, r)
		period, block := r.note(t, "period_s")[0], r.tf.Notes["block_mib"].(float64)
		if period < 4*time.Minute || period > 25*time.Minute {
			t.Errorf("a block every %v, want 4-25 min", period)
		}
		rate := block / period.Minutes()
		if rate < 14 || rate > 121 {
			t.Errorf("%.0f MiB every %v: %.0f MiB/min, want 15-120", block, period, rate)
		}
		if d := oom - secs(in.From); d < 2*time.Hour {
			t.Errorf("OOM %v after the leak began, want hours", d)
		}
		// A staircase: the floor of each half period rises about once a
		// period, by about a block, and stays flat in between.
		got := steps(ss, secs(in.From)+period, oom-period, period/4, block/2)
		want := float64(oom-secs(in.From)-2*period) / float64(period)
		if n := float64(len(got)); n < 0.7*want || n > 1.3*want+1 {
			t.Errorf("%d steps of the floor, want about one a period (%.0f)", len(got), want)
		}
		checkOOM(t, r, in.GPU, ss, oom, 90) // the floor, or an evaluation pass over it, fills the GPU
		checkSlowWarmup(t, r.gpu(1-in.GPU))
		checkReserved(t, r)
	})
}

func TestLeakTiny(t *testing.T) {
	forRealSeeds(t, sim.ScenarioLeakTiny, func(t *testing.T, r realTrace) {
		in, ss, oom := leakOf(t, r)
		if g := r.tf.GPUs[in.GPU]; g.MemoryTotalMiB != 24564 || secs(r.tf.Step) != 30*time.Second {
			t.Errorf("a %d MiB card sampled every %v, want a 24 GB card every 30 s", g.MemoryTotalMiB, secs(r.tf.Step))
		}
		if d := oom - secs(in.From); d < 23*time.Hour || d > 41*time.Hour {
			t.Errorf("OOM %v after the leak began, want a day or more", d)
		}
		checkRate(t, r, in, ss, oom, 3, 9)
		checkOOM(t, r, in.GPU, ss, oom, 95)
		// The other service is flat: its floor moves by a few MiB over a day.
		other := r.gpu(1 - in.GPU)
		lo, hi := minMiB(between(other, time.Hour, 2*time.Hour)), minMiB(between(other, 20*time.Hour, 21*time.Hour))
		if hi-lo > 8 {
			t.Errorf("the other service's floor moves from %.0f to %.0f MiB, want flat", lo, hi)
		}
		checkReserved(t, r)
	})
}

func TestLeakNotebook(t *testing.T) {
	forRealSeeds(t, sim.ScenarioLeakNotebook, func(t *testing.T, r realTrace) {
		in, ss, oom := leakOf(t, r)
		// Between cells, memory nobody touches is exact; cells compute.
		var idle, busy int
		for _, s := range between(ss, secs(in.From), oom) {
			if s.UtilGPU == 0 {
				idle++
			} else if s.UtilGPU > 50 {
				busy++
			}
		}
		if idle == 0 || busy == 0 {
			t.Errorf("%d idle and %d busy samples, want cells between idle stretches", idle, busy)
		}
		// Pauses: at least one idle stretch of 15 minutes, none of 45.
		longest := time.Duration(0)
		for _, run := range runs(between(ss, secs(in.From), oom), func(s sample) bool { return s.UtilGPU < 10 }) {
			longest = max(longest, run[1])
		}
		if longest < 14*time.Minute || longest > 40*time.Minute {
			t.Errorf("the longest idle stretch lasts %v, want a pause of 15-35 minutes", longest)
		}
		// The floor grows in blocks at the cells' ends, irregularly.
		if got := steps(ss, secs(in.From), oom, time.Minute, 20); len(got) < 5 {
			t.Errorf("%d blocks kept, want a leak at every cell", len(got))
		}
		checkOOM(t, r, in.GPU, ss, oom, 0) // it dies of a cell's peak
		checkReserved(t, r)
	})
}

func TestLeakPeaks(t *testing.T) {
	forRealSeeds(t, sim.ScenarioLeakPeaks, func(t *testing.T, r realTrace) {
		in, ss, oom := leakOf(t, r)
		checkRate(t, r, in, ss, oom, 20, 80)
		checkOOM(t, r, in.GPU, ss, oom, 0) // it dies of a pass that never shows
		// It dies of a pass: its floor just before is well short of full.
		allocatable := allocatableMiB(r, in.GPU, ss)
		floor := minMiB(between(ss, oom-10*time.Minute, oom))
		if p := 100 * floor / allocatable; p > 93 {
			t.Errorf("the floor is at %.1f %% before the OOM, want the pass, not the floor, to fill the GPU", p)
		}
		if peak := maxMiB(between(ss, oom-time.Hour, oom)) - floor; peak < 0.05*allocatable {
			t.Errorf("passes peak %.0f MiB above the floor, want 8-20 %% of the GPU", peak)
		}
		// The other's passes reach 96–97 % of the GPU; its floor stays well
		// below.
		other := r.gpu(1 - in.GPU)
		total := float64(r.tf.GPUs[1-in.GPU].MemoryTotalMiB)
		if p := 100 * maxMiB(other) / total; p < 95.5 || p > 97.5 {
			t.Errorf("the other GPU's passes reach %.1f %%, want 96-97 %%", p)
		}
		if p := 100 * minMiB(between(other, time.Hour, secs(r.tf.Duration))) / total; p > 85 {
			t.Errorf("the other GPU's floor at %.1f %%, want well below its passes", p)
		}
		checkReserved(t, r)
	})
}

func TestLeakNearFull(t *testing.T) {
	forRealSeeds(t, sim.ScenarioLeakNearFull, func(t *testing.T, r realTrace) {
		in, ss, oom := leakOf(t, r)
		start := jobStart(ss)
		if d := oom - start; d < 24*time.Minute || d > 46*time.Minute {
			t.Errorf("the job dies %v after it starts, want 25-45 min", d)
		}
		if in.OOMAt != nil || secs(in.Deadline) > secs(in.From)+15*time.Minute || secs(in.Deadline) > oom-10*time.Minute {
			t.Errorf("incident %+v, want a warning within 15 minutes of the leak and 10 before the OOM", in)
		}
		g := r.tf.GPUs[in.GPU]
		first := between(ss, secs(in.From), secs(in.From)+time.Minute)
		if p := 100 * minMiB(first) / float64(g.MemoryTotalMiB); p < 78 {
			t.Errorf("at %.0f %% when the leak begins, want near full", p)
		}
		checkOOM(t, r, in.GPU, ss, oom, 95)
		// The other warms up as high and stays flat.
		other := r.gpu(1 - in.GPU)
		o := r.tf.GPUs[1-in.GPU]
		end := secs(r.tf.Duration)
		lo, hi := minMiB(between(other, end-time.Hour, end)), maxMiB(between(other, end-time.Hour, end))
		if p := 100 * lo / float64(o.MemoryTotalMiB); p < 80 || hi-lo > 60 {
			t.Errorf("the other GPU holds %.0f-%.0f MiB (%.0f %%) in the last hour, want near full and flat", lo, hi, p)
		}
		checkReserved(t, r)
	})
}

func TestVLLMServe(t *testing.T) {
	forRealSeeds(t, sim.ScenarioVLLMServe, func(t *testing.T, r realTrace) {
		if len(r.tf.Incidents) != 0 {
			t.Errorf("incidents %+v, want none", r.tf.Incidents)
		}
		for _, g := range r.tf.GPUs {
			ss := r.gpu(g.GPU)
			// Weights shard by shard, then the pool at once, exactly flat.
			end := secs(r.tf.Duration)
			flat := between(ss, end-4*time.Hour, end)
			if lo, hi := minMiB(flat), maxMiB(flat); lo != hi {
				t.Errorf("GPU %d: %v-%v MiB once serving, want exactly flat", g.GPU, lo, hi)
			}
			allocatable := float64(g.MemoryTotalMiB) - float64(flat[0].MemReserved>>20)
			if p := mib(flat[0]) / allocatable; p < 0.895 || p > 0.955 {
				t.Errorf("GPU %d: the pool maps %.1f %% of what can be allocated, want 90-95 %%", g.GPU, 100*p)
			}
			start := jobStart(ss)
			loading := steps(ss, start, start+20*time.Minute, 10*time.Second, 100)
			if len(loading) < 3 {
				t.Errorf("GPU %d: %d steps while loading, want weights shard by shard", g.GPU, len(loading))
			}
			if strings.Count(g.Role, "vLLM") != 1 {
				t.Errorf("GPU %d's role %q", g.GPU, g.Role)
			}
		}
		checkReserved(t, r)
	})
}

// TestLeakScenariosWriteReservedMemory: a log of GPUs that reserve memory
// has nvidia-smi's memory.reserved column; one of GPUs that do not, the
// layout of the reference traces.
func TestLeakScenariosWriteReservedMemory(t *testing.T) {
	seen := map[bool]bool{}
	for seed := uint64(1); seed <= 8 && len(seen) < 2; seed++ {
		src, err := sim.New(sim.Config{Scenario: sim.ScenarioVLLMServe, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := sim.WriteCSV(&out, src); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(out.String(), "\n")
		reserved := lines[0] == sim.CSVHeaderReserved
		if !reserved && lines[0] != sim.CSVHeader {
			t.Fatalf("header %q", lines[0])
		}
		seen[reserved] = true
		fields := strings.Split(lines[1], ", ")
		if want := 10 + btoi(reserved); len(fields) != want {
			t.Errorf("seed %d: row %q has %d fields, want %d", seed, lines[1], len(fields), want)
		}
		if reserved && (!strings.HasSuffix(fields[10], " MiB") || fields[10] == "0 MiB") {
			t.Errorf("seed %d: reserved %q, want the MiB the driver keeps", seed, fields[10])
		}
		// gpuwatch replay reads it back.
		rd, err := replay.NewReader(bytes.NewReader(out.Bytes()), "vllm.csv", replay.Options{Host: sim.DefaultHost})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := rd.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		first, _ := sim.New(sim.Config{Scenario: sim.ScenarioVLLMServe, Seed: seed})
		want, _ := first.Next(context.Background())
		if got, want := snap.Devices[0].MemReserved, want.Devices[0].MemReserved; got != want {
			t.Errorf("seed %d: replay read %d bytes reserved, the source made %d", seed, got, want)
		}
	}
	if len(seen) != 2 {
		t.Errorf("seeds 1-8 all reserve memory or none does (%v), want both", seen)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
