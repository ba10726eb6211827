package digest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/store"
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
// users sampled every 5 s into a store, every 5 minutes, as the daemon
// does, and reports the size of the store's file: what a user sees on
// disk, bbolt's pages and free space included. It reports the bytes of the
// records it keeps (the last version of each) beside it.
func BenchmarkStoreSize(b *testing.B) {
	b.ReportAllocs()
	var disk, records float64
	for b.Loop() {
		path := filepath.Join(b.TempDir(), "gpuwatch.db")
		db, err := store.Open(path, store.Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		s := rollBenchSnapshot(1)
		r := NewRollups()
		kept := map[string]int{}
		checkpoint := func() {
			dirty := r.Dirty()
			for k, v := range dirty {
				kept[k] = len(k) + len(v)
			}
			if err := db.Commit(nil, map[string]map[string][]byte{"rollups": dirty}, nil); err != nil {
				b.Fatal(err)
			}
		}
		const samples = 30 * 24 * 3600 / 5
		for i := range samples {
			s.Time = s.Time.Add(5 * time.Second)
			s.Devices[0].UtilGPU = float64(i % 101)
			s.Devices[0].PowerW = 100 + float64(i%300)
			s.Devices[0].Processes[0].MemUsed = uint64(i%40) << 28
			r.Update(s)
			if i%60 == 59 {
				checkpoint()
			}
		}
		checkpoint()
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		total := 0
		for _, n := range kept {
			total += n
		}
		disk, records = float64(st.Size())/(1<<20), float64(total)/(1<<20)
	}
	b.ReportMetric(disk, "disk-MiB/GPU-month")
	b.ReportMetric(records, "records-MiB/GPU-month")
}
