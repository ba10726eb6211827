package rules

import (
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
)

// BenchmarkSimulatedDay8GPUs runs the default rules over a simulated day of
// 8 GPUs sampled every second (86,400 snapshots: four two-GPU scenarios
// side by side, looping) and reports the heap the engine holds after the
// day, with the engine still alive (read after it is freed, the heap says
// nothing about it). The resident memory of `gpuwatch run` itself, the
// target of ≤ 30 MiB, is BenchmarkRunDay8GPUs in package cli: this test
// binary's would count the testing framework instead.
func BenchmarkSimulatedDay8GPUs(b *testing.B) {
	rs := exampleRules(b)
	b.ReportAllocs()
	for b.Loop() {
		e := NewEngine(rs, Options{RepeatInterval: 4 * time.Hour})
		var srcs []*sim.Source
		for _, name := range []string{"memory-leak", "idle-hog", "thermal", "normal-training"} {
			s, err := sim.New(sim.Config{Scenario: name, Seed: 1, Step: time.Second, Host: "bench", Loop: true})
			if err != nil {
				b.Fatal(err)
			}
			srcs = append(srcs, s)
		}
		ctx := b.Context()
		for range 86400 {
			merged := &gpu.Snapshot{}
			for k, s := range srcs {
				snap, err := s.Next(ctx)
				if err != nil {
					b.Fatal(err)
				}
				merged.Time, merged.Host = snap.Time, snap.Host
				for _, d := range snap.Devices {
					d.Index += 2 * k
					d.UUID += strconv.Itoa(k)
					merged.Devices = append(merged.Devices, d)
				}
			}
			e.Eval(merged)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		runtime.KeepAlive(e)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	}
}

// BenchmarkTrendMemory10000GPUs24h measures what trends keep on a hub of
// 10,000 GPUs whose rules look back a day: the trends of the example
// rules (time_to_full over 40m to 6h, and over 5m) and
// time_to_full(memory.used, 24h, 8d) (scales of 1 to 8 days), fed a sample
// a second for ten minutes and then one an hour for a day, so every slice
// of every day-long window holds samples. It reports the heap in use after
// a collection with the engine alive, and the bytes each GPU's trends
// take, which do not depend on the windows' length or the sampling: a
// trend keeps 12 slices a scale, whatever their span. Target: the hub's
// 500 MiB.
func BenchmarkTrendMemory10000GPUs24h(b *testing.B) {
	rs := mustRules(b, `
rules:
  - alert: GPUMemoryLeak
    when: time_to_full(memory.used, 40m, 6h) < 24h
  - alert: GPUMemoryFillingFast
    when: time_to_full(memory.used, 5m) < 1h
  - alert: GPUMemoryFullWithinTheWeek
    when: time_to_full(memory.used, 24h, 8d) < 7d
`)
	const gpus = 10000
	for b.Loop() {
		e := NewEngine(rs, Options{})
		s := &gpu.Snapshot{Time: t0, Host: "hub"}
		for i := range gpus {
			s.Devices = append(s.Devices, gpu.Device{Index: i % 8, UUID: "GPU-" + strconv.Itoa(i), Name: "NVIDIA H100 80GB HBM3",
				MemTotal: 80 << 30, UtilGPU: 80, UtilMem: 40, TempC: 60, PowerW: 300, PowerLimitW: 700})
		}
		step := func(at time.Duration) {
			s.Time = t0.Add(at)
			for i := range s.Devices {
				s.Devices[i].MemUsed = 40<<30 + uint64(at/time.Second)<<10 + uint64(i%13)<<20
			}
			e.Eval(s)
		}
		for at := time.Duration(0); at < 10*time.Minute; at += time.Second {
			step(at)
		}
		for at := time.Hour; at <= 26*time.Hour; at += time.Hour {
			step(at)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		runtime.KeepAlive(e)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
		var trendBytes int
		for _, tr := range e.gpus["GPU-0"].trends {
			trendBytes += trendSize(tr)
		}
		b.ReportMetric(float64(trendBytes), "trend-B/GPU")
	}
}

// trendSize is the memory a trend keeps: the struct and its scales.
func trendSize(tr *Trend) int {
	return int(unsafe.Sizeof(*tr)) + len(tr.scales)*int(unsafe.Sizeof(trendScale{}))
}

// TestTrendSizeDoesNotGrowWithTheWindow: a trend of a day keeps what a
// trend of a minute keeps, scale for scale.
func TestTrendSizeDoesNotGrowWithTheWindow(t *testing.T) {
	for _, longest := range []time.Duration{0, 8 * time.Minute} {
		short, long := NewTrendScales(time.Minute, longest), NewTrendScales(24*time.Hour, 24*time.Hour*time.Duration(longest/time.Minute))
		if short.Scales() != long.Scales() || trendSize(short) != trendSize(long) {
			t.Errorf("a trend of 1m keeps %d B in %d scales, one of 24h %d B in %d", trendSize(short), short.Scales(), trendSize(long), long.Scales())
		}
	}
}
