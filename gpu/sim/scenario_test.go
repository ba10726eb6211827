package sim_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
)

// seeds are the seeds every shape test runs with: the shapes must hold for
// any seed, not for one tuned trace.
var seeds = []uint64{1, 2, 3, 7, 11, 42, 1234, 99991}

// series is one GPU's readings over a run, at Step apart from offset 0.
type series struct {
	step time.Duration
	devs []gpu.Device
}

func gpuSeries(snaps []*gpu.Snapshot, i int) series {
	s := series{step: snaps[1].Time.Sub(snaps[0].Time)}
	for _, snap := range snaps {
		s.devs = append(s.devs, snap.Devices[i])
	}
	return s
}

// span returns the readings at offsets in [from, until).
func (s series) span(from, until time.Duration) []gpu.Device {
	lo := int((from + s.step - 1) / s.step)
	hi := min(int((until+s.step-1)/s.step), len(s.devs))
	if lo >= hi {
		return nil
	}
	return s.devs[lo:hi]
}

// at returns the reading at offset t (the last one at or before t).
func (s series) at(t time.Duration) gpu.Device { return s.devs[int(t/s.step)] }

func memMiB(d gpu.Device) float64 { return float64(d.MemUsed >> 20) }

// slopeMiBPerMin is the least-squares slope of memory over devs.
func slopeMiBPerMin(devs []gpu.Device, step time.Duration) float64 {
	n := float64(len(devs))
	var sx, sy, sxx, sxy float64
	for i, d := range devs {
		x := float64(i) * step.Minutes()
		y := memMiB(d)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

func find(t testing.TB, truth []sim.Truth, gpu int, expect string) sim.Truth {
	t.Helper()
	for _, tr := range truth {
		if tr.GPU == gpu && tr.Expect == expect {
			return tr
		}
	}
	t.Fatalf("no %s truth for GPU %d in %+v", expect, gpu, truth)
	return sim.Truth{}
}

// forSeeds runs check on every seed of scenario.
func forSeeds(t *testing.T, scenario string, check func(t *testing.T, snaps []*gpu.Snapshot, truth []sim.Truth)) {
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			snaps, src := run(t, sim.Config{Scenario: scenario, Seed: seed})
			check(t, snaps, src.Truth())
		})
	}
}

func maxPercent(devs []gpu.Device) float64 {
	m := 0.0
	for _, d := range devs {
		m = max(m, d.MemUsedPercent())
	}
	return m
}

func maxTemp(devs []gpu.Device) float64 {
	m := 0.0
	for _, d := range devs {
		m = max(m, d.TempC)
	}
	return m
}

func meanUtil(devs []gpu.Device) float64 {
	sum := 0.0
	for _, d := range devs {
		sum += d.UtilGPU
	}
	return sum / float64(len(devs))
}

func TestNormalTraining(t *testing.T) {
	forSeeds(t, "normal-training", func(t *testing.T, snaps []*gpu.Snapshot, truth []sim.Truth) {
		for i := range 2 {
			s := gpuSeries(snaps, i)
			if tr := find(t, truth, i, sim.ExpectNone); tr.From != 0 || tr.Until != 2*time.Hour {
				t.Errorf("GPU %d truth %+v, want none for the whole 2h", i, tr)
			}
			checkPeak(t, s.devs, 93)
			if got := maxTemp(s.devs); got > 80 {
				t.Errorf("GPU %d peaks at %v C, want at most 80 C", i, got)
			}
			if got := meanUtil(s.devs[:12]); got > 0 {
				t.Errorf("GPU %d averages %.0f %% in the first minute, want idle before training", i, got)
			}
			if got := meanUtil(s.span(time.Hour, 2*time.Hour)); got < 85 {
				t.Errorf("GPU %d averages %.0f %% in the second hour, want training (> 85 %%)", i, got)
			}
			// After warm-up memory is flat, apart from brief eval spikes.
			if got := slopeMiBPerMin(s.span(30*time.Minute, 2*time.Hour), s.step); got > 5 || got < -5 {
				t.Errorf("GPU %d memory slope %.1f MiB/min after warm-up, want flat", i, got)
			}
		}
	})
}

func TestMemoryLeak(t *testing.T) {
	forSeeds(t, "memory-leak", func(t *testing.T, snaps []*gpu.Snapshot, truth []sim.Truth) {
		leak := find(t, truth, 0, sim.ExpectLeak)
		if leak.From < 10*time.Minute || leak.From > 20*time.Minute || leak.OOMAt < 85*time.Minute || leak.OOMAt > 110*time.Minute || leak.Until != leak.OOMAt {
			t.Errorf("leak truth %+v, want it from 10-20 min to OOM at 85-110 min", leak)
		}
		s := gpuSeries(snaps, 0)
		total := float64(s.devs[0].MemTotal >> 20)
		// Flat before the leak, after the warm-up.
		if got := slopeMiBPerMin(s.span(5*time.Minute, leak.From), s.step); got > 10 || got < -10 {
			t.Errorf("memory slope %.1f MiB/min before the leak, want flat", got)
		}
		// Linear at the stated rate while leaking.
		got := slopeMiBPerMin(s.span(leak.From, leak.OOMAt-s.step), s.step)
		if got < 0.95*leak.RateMiBPerMin || got > 1.05*leak.RateMiBPerMin {
			t.Errorf("leaks %.1f MiB/min, truth says %.1f", got, leak.RateMiBPerMin)
		}
		if leak.RateMiBPerMin < 150 || leak.RateMiBPerMin > 500 {
			t.Errorf("leak rate %.1f MiB/min, want the traces' few hundred", leak.RateMiBPerMin)
		}
		// Always growing: no fall over three minutes.
		devs := s.span(leak.From, leak.OOMAt)
		lag := int(3 * time.Minute / s.step)
		for i := lag; i < len(devs); i++ {
			if memMiB(devs[i]) < memMiB(devs[i-lag]) {
				t.Fatalf("memory falls from %v to %v MiB in 3 minutes during the leak", memMiB(devs[i-lag]), memMiB(devs[i]))
			}
		}
		if last := memMiB(s.at(leak.OOMAt - s.step)); last < 0.97*total {
			t.Errorf("memory %v MiB just before OOM, want nearly all of %v", last, total)
		}
		for _, d := range s.span(leak.OOMAt, 2*time.Hour) {
			if d.MemUsed > 1<<30 || d.UtilGPU != 0 || len(d.Processes) != 0 {
				t.Fatalf("after OOM: %d MiB, %v %%, %d processes; want memory released, idle, no process", d.MemUsed>>20, d.UtilGPU, len(d.Processes))
			}
		}
		near := find(t, truth, 0, sim.ExpectNearOOM)
		before, after := s.at(near.From-time.Minute), s.at(near.From+time.Minute)
		if p, q := before.MemUsedPercent(), after.MemUsedPercent(); p > 95 || q < 95 {
			t.Errorf("near-oom from %v, but memory is at %.1f %% a minute earlier and %.1f %% a minute later", near.From, p, q)
		}
		checkPeak(t, gpuSeries(snaps, 1).devs, 90)
	})
}

func TestBatchSpike(t *testing.T) {
	forSeeds(t, "batch-spike", func(t *testing.T, snaps []*gpu.Snapshot, truth []sim.Truth) {
		spike := find(t, truth, 0, sim.ExpectNearOOM)
		s := gpuSeries(snaps, 0)
		if got := maxPercent(s.span(5*time.Minute, spike.From)); got > 70 {
			t.Errorf("GPU 0 at %.1f %% before the spike at %v, want at most 70 %%", got, spike.From)
		}
		checkSpike(t, s.span(spike.From, spike.Until))
		checkPeak(t, gpuSeries(snaps, 1).devs, 90)
	})
}

func TestIdleHog(t *testing.T) {
	forSeeds(t, "idle-hog", func(t *testing.T, snaps []*gpu.Snapshot, truth []sim.Truth) {
		idle := find(t, truth, 1, sim.ExpectIdle)
		s := gpuSeries(snaps, 1)
		if got := meanUtil(s.span(0, idle.From)); got < 40 {
			t.Errorf("GPU 1 averages %.0f %% before going idle, want interactive use", got)
		}
		checkIdleHolding(t, s.span(idle.From, idle.Until))
		if got := meanUtil(gpuSeries(snaps, 0).span(10*time.Minute, 2*time.Hour)); got < 85 {
			t.Errorf("GPU 0 averages %.0f %%, want training", got)
		}
	})
}

// checkSpike checks a GPU during a big batch: memory at ~97 %.
func checkSpike(t *testing.T, devs []gpu.Device) {
	t.Helper()
	for _, d := range devs {
		if p := d.MemUsedPercent(); p < 95.5 || p > 99 {
			t.Fatalf("GPU %d at %.1f %% during the spike, want ~97 %%", d.Index, p)
		}
	}
}

// checkPeak checks that memory stays at most limit percent.
func checkPeak(t *testing.T, devs []gpu.Device, limit float64) {
	t.Helper()
	if got := maxPercent(devs); got > limit {
		t.Errorf("GPU %d peaks at %.1f %% memory, want at most %v %%", devs[0].Index, got, limit)
	}
}

// checkIdleHolding checks a notebook holding 20 GiB and computing nothing.
func checkIdleHolding(t *testing.T, devs []gpu.Device) {
	t.Helper()
	for _, d := range devs {
		if d.UtilGPU >= 2 || memMiB(d) < 20400 || memMiB(d) > 20560 || len(d.Processes) != 1 {
			t.Fatalf("idle holder at %v %%, %v MiB, %d processes; want < 2 %%, ~20 GiB, one process", d.UtilGPU, memMiB(d), len(d.Processes))
		}
	}
}

func TestThermal(t *testing.T) {
	forSeeds(t, "thermal", func(t *testing.T, snaps []*gpu.Snapshot, truth []sim.Truth) {
		hot := find(t, truth, 0, sim.ExpectHot)
		s := gpuSeries(snaps, 0)
		if got := maxTemp(s.span(0, hot.From)); got > 75 {
			t.Errorf("GPU 0 at %v C before the fan fails, want at most 75 C", got)
		}
		checkHot(t, s.span(hot.From+15*time.Minute, hot.Until), s.step)
		if got := maxTemp(s.devs); got > 93 {
			t.Errorf("GPU 0 peaks at %v C, want at most 93 C", got)
		}
		if got := maxTemp(gpuSeries(snaps, 1).devs); got > 75 {
			t.Errorf("GPU 1 peaks at %v C, want at most 75 C", got)
		}
	})
}

// checkHot checks a GPU whose fan failed: mostly above 85 C, in runs of a
// minute and more, and never cool enough (80 C) to clear a hot alert.
func checkHot(t *testing.T, devs []gpu.Device, step time.Duration) {
	t.Helper()
	above, run, longest := 0, 0, 0
	for _, d := range devs {
		if d.TempC < 80 {
			t.Fatalf("a failed fan's GPU at %v C, want at least 80 C", d.TempC)
		}
		if d.TempC > 85 {
			above++
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	if share := float64(above) / float64(len(devs)); share < 0.6 {
		t.Errorf("above 85 C for %.0f %% of the time, want most of it", 100*share)
	}
	if d := time.Duration(longest) * step; d < 2*time.Minute {
		t.Errorf("longest time above 85 C is %v, want at least 2m", d)
	}
}

func TestDemo(t *testing.T) {
	forSeeds(t, "all", func(t *testing.T, snaps []*gpu.Snapshot, truth []sim.Truth) {
		end := 100 * time.Minute
		for _, d := range snaps[0].Devices {
			if d.Name != "NVIDIA H100 80GB HBM3" {
				t.Errorf("GPU %d is a %s, want an H100", d.Index, d.Name)
			}
		}

		leak := find(t, truth, 0, sim.ExpectLeak)
		if leak.From < 4*time.Minute || leak.From > 6*time.Minute || leak.OOMAt < 50*time.Minute || leak.OOMAt > 60*time.Minute {
			t.Errorf("leak %+v, want it from ~5 min to OOM at ~55 min", leak)
		}
		if r := leak.RateMiBPerMin / 1024; r < 0.9 || r > 1.15 {
			t.Errorf("leak at %.2f GiB/min, want ~1", r)
		}
		g0 := gpuSeries(snaps, 0)
		if got := slopeMiBPerMin(g0.span(leak.From, leak.OOMAt-g0.step), g0.step); got < 0.95*leak.RateMiBPerMin || got > 1.05*leak.RateMiBPerMin {
			t.Errorf("GPU 0 leaks %.0f MiB/min, truth says %.0f", got, leak.RateMiBPerMin)
		}
		for _, d := range g0.span(leak.OOMAt, end) {
			if d.MemUsed > 1<<30 || len(d.Processes) != 0 || d.UtilGPU != 0 {
				t.Fatalf("GPU 0 after OOM: %d MiB, %d processes, %v %%", d.MemUsed>>20, len(d.Processes), d.UtilGPU)
			}
		}

		spike := find(t, truth, 1, sim.ExpectNearOOM)
		if spike.From < 9*time.Minute || spike.From > 11*time.Minute || spike.Until-spike.From < 14*time.Minute || spike.Until-spike.From > 16*time.Minute {
			t.Errorf("batch spike %+v, want ~15 min from ~10 min", spike)
		}
		g1 := gpuSeries(snaps, 1)
		checkSpike(t, g1.span(spike.From, spike.Until))
		checkPeak(t, g1.span(spike.Until, end), 90)

		idle := find(t, truth, 2, sim.ExpectIdle)
		if idle.From < 4*time.Minute || idle.From > 6*time.Minute || idle.Until < 84*time.Minute || idle.Until > 86*time.Minute {
			t.Errorf("idle holder %+v, want ~5 to ~85 min", idle)
		}
		g2 := gpuSeries(snaps, 2)
		checkIdleHolding(t, g2.span(idle.From, idle.Until))
		for _, d := range g2.span(idle.Until, end) {
			if d.MemUsed > 1<<30 || len(d.Processes) != 0 {
				t.Fatalf("GPU 2 after release: %d MiB, %d processes", d.MemUsed>>20, len(d.Processes))
			}
		}

		hot := find(t, truth, 3, sim.ExpectHot)
		if hot.From < 14*time.Minute || hot.From > 16*time.Minute {
			t.Errorf("fan failure at %v, want ~15 min", hot.From)
		}
		g3 := gpuSeries(snaps, 3)
		checkHot(t, g3.span(hot.From+10*time.Minute, hot.Until), g3.step)
		above := 0
		for _, d := range g3.span(hot.From, hot.Until) {
			if d.TempC > 85 {
				above++
			}
		}
		if d := time.Duration(above) * g3.step; d < 15*time.Minute {
			t.Errorf("GPU 3 above 85 C for %v, want ~20 min", d)
		}
		if got := maxTemp(g3.span(hot.Until+3*time.Minute, end)); got >= 75 {
			t.Errorf("GPU 3 at %v C 3 minutes after the repair, want below 75 C", got)
		}

		g4 := gpuSeries(snaps, 4)
		find(t, truth, 4, sim.ExpectNone)
		checkPeak(t, g4.devs, 93)
		if got := maxTemp(g4.devs); got > 80 {
			t.Errorf("healthy GPU 4 peaks at %v C", got)
		}

		lost := find(t, truth, 5, sim.ExpectLost)
		if lost.From < 58*time.Minute || lost.From > 62*time.Minute || lost.Until-lost.From < 13*time.Minute || lost.Until-lost.From > 16*time.Minute {
			t.Errorf("GPU 5 off the bus %+v, want from ~60 min for ~15 min", lost)
		}
		start := snaps[0].Time
		events := 0
		for _, s := range snaps {
			at := s.Time.Sub(start)
			reports := slices.ContainsFunc(s.Devices, func(d gpu.Device) bool { return d.Index == 5 })
			if off := at >= lost.From && at < lost.Until; reports == off {
				t.Fatalf("at %v GPU 5 reports: %v; want it silent from %v to %v", at, reports, lost.From, lost.Until)
			}
			for _, ev := range s.Events {
				if ev.Kind == gpu.EventGPULost && ev.GPU == 5 {
					events++
				}
			}
			if d := findDevice(s, 5); d != nil && at >= lost.Until && (d.MemUsed > 1<<30 || len(d.Processes) > 0) {
				t.Fatalf("GPU 5 after its reset holds %d MiB and %d processes; its job died with it", d.MemUsed>>20, len(d.Processes))
			}
		}
		if events != 1 {
			t.Errorf("got %d GPU-lost events for GPU 5, want one", events)
		}
	})
}

// findDevice returns GPU index of s, nil when it is not in s.
func findDevice(s *gpu.Snapshot, index int) *gpu.Device {
	for i := range s.Devices {
		if s.Devices[i].Index == index {
			return &s.Devices[i]
		}
	}
	return nil
}
