package nvml

import (
	"context"
	"fmt"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// BenchmarkSample samples an 8-GPU mock with two processes per GPU, each
// giving every health reading an H100 SXM gives (ECC, row remapping, clock
// event reasons, PCIe, 18 NVLink links, clocks). The mock records every
// call, so part of the time and allocations are its own.
func BenchmarkSample(b *testing.B) {
	var gpus []*fakeGPU
	for i := range 8 {
		gpus = append(gpus, &fakeGPU{
			uuid: fmt.Sprintf("GPU-%08d", i), name: "NVIDIA H100 80GB HBM3",
			mem:     gonvml.Memory{Total: 80 * gib, Used: 40 * gib},
			util:    gonvml.Utilization{Gpu: 90, Memory: 40},
			temp:    70,
			powerMW: 500000, limitMW: 700000,
			compute: []gonvml.ProcessInfo{
				{Pid: uint32(1000 + i), UsedGpuMemory: 30 * gib},
				{Pid: uint32(2000 + i), UsedGpuMemory: 10 * gib},
			},
			health: h100Health(),
		})
	}
	h := newFakeHost(gpus...)
	s := h.open(b, Options{Host: "bench", Attributor: fakeAttributor{}})
	ctx := context.Background()
	at := time.Unix(0, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Sample(ctx, at); err != nil {
			b.Fatal(err)
		}
	}
}
