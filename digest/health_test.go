package digest

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// TestHealthSection: a report says how many GPUs are in each condition
// and why each that is not ok is, the worst first; a report whose GPUs
// give no health reading, all ok, has no health section.
func TestHealthSection(t *testing.T) {
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	hours := []GPUHour{
		{Hour: at, GPU: 0, UUID: "GPU-0", Name: "NVIDIA H100 80GB HBM3", Samples: 12, Seconds: 3600, UtilSeconds: 3000, MemTotal: 80 << 30},
		{Hour: at, GPU: 1, UUID: "GPU-1", Name: "NVIDIA H100 80GB HBM3", Samples: 12, Seconds: 3600, UtilSeconds: 3000, MemTotal: 80 << 30},
		{Hour: at, GPU: 2, UUID: "GPU-2", Name: "NVIDIA H100 80GB HBM3", Samples: 12, Seconds: 3600, UtilSeconds: 3000, MemTotal: 80 << 30},
	}
	var pcie, remap gpu.Device
	pcie.Health.Set(gpu.PCIeLinkWidth, 8)
	pcie.Health.Set(gpu.PCIeLinkWidthMax, 16)
	remap.Health.Set(gpu.RowRemapPending, 1)
	ok := gpu.Device{}
	ok.Health.Set(gpu.RowRemapPending, 0)
	health := []GPUHealth{
		{GPU: 0, UUID: "GPU-0", Verdict: gpu.Assess(&ok, nil)},
		{GPU: 1, UUID: "GPU-1", Verdict: gpu.Assess(&pcie, nil)},
		{GPU: 2, UUID: "GPU-2", Verdict: gpu.Assess(&remap, nil)},
	}
	r := Build(hours, nil, nil, Options{Name: "daily", Host: "node1", From: at, To: at.Add(time.Hour), Health: health})
	text := r.Text()
	want := "\nHealth\n  1 needs reset, 1 degraded, 1 ok now\n  GPU 2 needs reset: a row remap is pending: reset the GPU when its job ends\n  GPU 1 degraded: PCIe link at x8 of x16\n"
	if !strings.Contains(text, want) {
		t.Errorf("the report:\n%s\nwant it to contain\n%s", text, want)
	}
	if _, err := r.Blocks(); err != nil {
		t.Fatal(err)
	}
	none := []GPUHealth{{GPU: 0, Verdict: gpu.Assess(&gpu.Device{}, nil)}}
	if text := Build(hours, nil, nil, Options{Name: "daily", Host: "node1", From: at, To: at.Add(time.Hour), Health: none}).Text(); strings.Contains(text, "Health") {
		t.Errorf("a report of GPUs without health readings has a health section:\n%s", text)
	}
}
