package rules

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// migSnapshot is n H100s, each split into seven 1g.10gb MIG instances that
// measure their utilization (GPM), each instance running one process:
// 8n devices a snapshot, as NVML reports them.
func migSnapshot(n int) *gpu.Snapshot {
	s := &gpu.Snapshot{Time: t0, Host: "node1"}
	nan := math.NaN()
	for i := range n {
		parent := fmt.Sprintf("GPU-%04d", i)
		s.Devices = append(s.Devices, gpu.Device{Index: i, UUID: parent, Name: "NVIDIA H100 80GB HBM3", MIGEnabled: true,
			UtilGPU: nan, UtilMem: nan, TempC: 60, PowerW: 300, PowerLimitW: 700})
		for k := range 7 {
			s.Devices = append(s.Devices, gpu.Device{Index: i, UUID: gpu.InstanceUUID(parent, 7+k, 0), Name: "NVIDIA H100 80GB HBM3",
				MIG:     &gpu.MIG{ParentUUID: parent, GPUInstance: 7 + k, Profile: "1g.10gb"},
				MemUsed: 5 << 30, MemTotal: 10 << 30, UtilGPU: 80, UtilMem: 40, TempC: nan, PowerW: nan, PowerLimitW: nan,
				Processes: []gpu.Process{{PID: 1000 + 10*i + k, User: "alice", MemUsed: 5 << 30}}})
		}
	}
	return s
}

// advanceMIG moves the snapshot 5 s on with slightly different readings.
func advanceMIG(s *gpu.Snapshot) {
	s.Time = s.Time.Add(5 * time.Second)
	for i := range s.Devices {
		d := &s.Devices[i]
		if d.MIG == nil {
			d.TempC = 60 + float64(s.Time.Unix()%5)
			continue
		}
		d.MemUsed = 5<<30 + uint64(s.Time.Unix()%7)<<20
		d.Processes[0].MemUsed = d.MemUsed
		d.UtilGPU = 70 + float64(s.Time.Unix()%20)
	}
}

// BenchmarkEvalMIG evaluates the default rules on 8 whole GPUs and on 8
// GPUs split into 7 MIG instances each (64 devices), in steady state, and
// reports the cost per rule and device: an instance is a GPU of its own,
// and must cost what a GPU costs (the target: within twice as much).
func BenchmarkEvalMIG(b *testing.B) {
	rs := exampleRules(b)
	for _, bc := range []struct {
		name    string
		snap    *gpu.Snapshot
		advance func(*gpu.Snapshot)
	}{
		{"8 whole GPUs", steadySnapshot(8), advance},
		{"8 GPUs x 7 instances", migSnapshot(8), advanceMIG},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := NewEngine(rs, Options{})
			for range 2000 { // fills the 30m windows at 5 s
				bc.advance(bc.snap)
				e.Eval(bc.snap)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				bc.advance(bc.snap)
				e.Eval(bc.snap)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(bc.snap.Devices)*len(rs)), "ns/rule×device")
		})
	}
}
