package rules

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
)

// BenchmarkSimulatedDay8GPUs runs the default rules over a simulated day of
// 8 GPUs sampled every second (86,400 snapshots: four two-GPU scenarios
// side by side, looping) and reports the memory the process holds
// afterwards. Target: resident memory ≤ 30 MiB for `gpuwatch run`.
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
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
		b.ReportMetric(residentMiB(b), "RSS-MiB")
	}
}

// residentMiB reads the process's resident set size from /proc.
func residentMiB(tb testing.TB) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		tb.Skip("no /proc: ", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
