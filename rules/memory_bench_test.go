package rules

import (
	"runtime"
	"strconv"
	"testing"
	"time"

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
