package digest

import (
	"strconv"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// rollBenchSnapshot is a snapshot of n busy GPUs with two users each.
func rollBenchSnapshot(n int) *gpu.Snapshot {
	s := &gpu.Snapshot{Time: rollBase, Host: "h1"}
	for i := range n {
		s.Devices = append(s.Devices, gpu.Device{
			Index: i, UUID: "GPU-" + strconv.Itoa(i) + "-0000-0000-0000-000000000000", Name: "NVIDIA H100",
			MemUsed: 30 * rollGiB, MemTotal: 80 * rollGiB, UtilGPU: 60, UtilMem: 30, TempC: 60, PowerW: 400, PowerLimitW: 700,
			Processes: []gpu.Process{
				{PID: 100 + i, User: "alice", Command: "python train.py", MemUsed: 20 * rollGiB},
				{PID: 200 + i, User: "bob", Command: "python eval.py", MemUsed: 10 * rollGiB},
			},
		})
	}
	return s
}

// BenchmarkUpdate8GPUs updates rollups with 8 GPUs sampled every 5 s; the
// hour changes every 720 snapshots, as it does live.
func BenchmarkUpdate8GPUs(b *testing.B) {
	const n = 8
	s := rollBenchSnapshot(n)
	r := NewRollups()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.Time = s.Time.Add(5 * time.Second)
		s.Devices[i%n].UtilGPU = float64(i % 100)
		r.Update(s)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/GPU-sample")
}

// BenchmarkStoreSize checkpoints a simulated month of one GPU with two
// users sampled every 5 s, every 5 minutes, and reports the bytes the
// store keeps (the last version of each record).
func BenchmarkStoreSize(b *testing.B) {
	b.ReportAllocs()
	var mib float64
	for b.Loop() {
		s := rollBenchSnapshot(1)
		r := NewRollups()
		store := map[string]int{}
		const samples = 30 * 24 * 3600 / 5
		for i := range samples {
			s.Time = s.Time.Add(5 * time.Second)
			s.Devices[0].UtilGPU = float64(i % 101)
			s.Devices[0].PowerW = 100 + float64(i%300)
			s.Devices[0].Processes[0].MemUsed = uint64(i%40) << 28
			r.Update(s)
			if i%60 == 59 {
				for k, v := range r.Dirty() {
					store[k] = len(k) + len(v)
				}
			}
		}
		for k, v := range r.Dirty() {
			store[k] = len(k) + len(v)
		}
		total := 0
		for _, n := range store {
			total += n
		}
		mib = float64(total) / (1 << 20)
	}
	b.ReportMetric(mib, "MiB/GPU-month")
}
