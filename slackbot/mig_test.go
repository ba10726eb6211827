package slackbot

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
)

// migSnapshot is node1 with an H100 split into a 4g.40gb instance (an
// idle notebook) and a free 3g.40gb one, and a whole GPU three pods share.
func migSnapshot() *gpu.Snapshot {
	nan := math.NaN()
	return &gpu.Snapshot{Time: testNow.Add(-5 * time.Second), Host: "node1", Devices: []gpu.Device{
		{Index: 0, UUID: "GPU-h100", Name: "NVIDIA H100 80GB HBM3", MIGEnabled: true,
			UtilGPU: nan, UtilMem: nan, TempC: 52, PowerW: 180, PowerLimitW: 700},
		{Index: 0, UUID: "MIG-big", Name: "NVIDIA H100 80GB HBM3",
			MIG:     &gpu.MIG{ParentUUID: "GPU-h100", GPUInstance: 1, Profile: "4g.40gb"},
			MemUsed: 20 << 30, MemTotal: 40 << 30, UtilGPU: 0, UtilMem: 0, TempC: nan, PowerW: nan, PowerLimitW: nan,
			Processes: []gpu.Process{{PID: 4242, User: "bob", Command: "jupyter-lab", MemUsed: 20 << 30}}},
		{Index: 0, UUID: "MIG-small", Name: "NVIDIA H100 80GB HBM3",
			MIG:      &gpu.MIG{ParentUUID: "GPU-h100", GPUInstance: 2, Profile: "3g.40gb"},
			MemTotal: 40 << 30, UtilGPU: 0, UtilMem: 0, TempC: nan, PowerW: nan, PowerLimitW: nan},
		{Index: 1, UUID: "GPU-a10", Name: "NVIDIA A10", MemUsed: 15 << 30, MemTotal: 24 << 30,
			UtilGPU: 60, UtilMem: 20, TempC: 60, PowerW: 120, PowerLimitW: 150,
			Processes: []gpu.Process{
				{PID: 101, User: "alice", Command: "python serve.py", Container: "k8s:ml/a", MemUsed: 5 << 30},
				{PID: 202, User: "carol", Command: "python serve.py", Container: "k8s:ml/b", MemUsed: 10 << 30},
			}},
	}}
}

func TestStatusOfMIGInstancesAndSharedGPU(t *testing.T) {
	ta := newTestApp(t, 0, nil)
	ta.b.snap = migSnapshot()
	ta.b.alerts = []ActiveAlert{
		{Key: "node1/GPUIdleButHeld/MIG-big", Host: "node1", Name: "GPUIdleButHeld", Severity: "warning", State: "firing",
			GPU: 0, UUID: "MIG-big", MIG: ta.b.snap.Devices[1].MIG, Since: testNow.Add(-time.Hour), ValueText: "20 GiB"},
		{Key: "node1/ProcessMemoryLeak/GPU-a10/pid/202", Host: "node1", Name: "ProcessMemoryLeak", Severity: "warning", State: "firing",
			GPU: 1, UUID: "GPU-a10", Process: &ta.b.snap.Devices[3].Processes[1], Since: testNow.Add(-10 * time.Minute), ValueText: "1h20m"},
	}
	text, blocks := ta.answer(t, "status")
	if err := blockkit.ValidateMessage(text, blocks); err != nil {
		t.Fatalf("/gpu status breaks Slack's limits: %v", err)
	}
	k := ta.run(t, "status", "U1", "alice")
	if heads := k.texts("header"); len(heads) != 1 || !strings.Contains(heads[0], "node1 · 2 GPUs · 2 MIG instances") {
		t.Errorf("headers %q, want node1 · 2 GPUs · 2 MIG instances", heads)
	}
	secs := k.texts("section")
	if len(secs) != 2 {
		t.Fatalf("got %d sections, want one per GPU, its instances under it: %q", len(secs), secs)
	}
	mig := secs[0]
	contains(t, "GPU 0", mig, "*GPU 0* · NVIDIA H100", "MIG: 2 instances", "52 C", "180 / 700 W",
		"↳ *MIG 1 (4g.40gb)*", "20.0 GiB / 40.0 GiB (50%)", "bob", "🔥 *GPUIdleButHeld* firing",
		"↳ *MIG 2 (3g.40gb)*", "0.0 GiB / 40.0 GiB (0%)")
	if i, j := strings.Index(mig, "MIG 1 (4g.40gb)"), strings.Index(mig, "GPUIdleButHeld"); j < i || j > strings.Index(mig, "MIG 2 (3g.40gb)") {
		t.Errorf("the instance's alert is not under it:\n%s", mig)
	}
	contains(t, "GPU 1", secs[1], "*GPU 1* · NVIDIA A10", "carol", "🔥 *ProcessMemoryLeak (pid 202)* firing")

	contains(t, "/gpu alerts", ta.run(t, "alerts", "U1", "alice").all(),
		"*GPUIdleButHeld* · GPU 0 · MIG 1 (4g.40gb)", "*ProcessMemoryLeak* · GPU 1, pid 202")
	free := ta.run(t, "free", "U1", "alice").all()
	contains(t, "/gpu free", free, "1 of 3 GPUs free on node1", "*GPU 0 · MIG 2 (3g.40gb)* · NVIDIA H100 80GB HBM3 · 40.0 GiB free of 40.0 GiB")
	if strings.Contains(free, "*GPU 0* ·") {
		t.Errorf("/gpu free lists the GPU split into instances as free:\n%s", free)
	}
	contains(t, "/gpu top", ta.run(t, "top", "U1", "alice").all(), "`GPU 0 · MIG 1 (4g.40gb)` *20.0 GiB* bob")
}
