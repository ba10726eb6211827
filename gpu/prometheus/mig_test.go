package prometheus

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestMIGInstancesOfDCGM: dcgm-exporter's series of MIG instances
// (GPU_I_ID, GPU_I_PROFILE) become instances after their GPU, their
// utilization the graphics engine's activity; the GPU keeps the card's
// readings.
func TestMIGInstancesOfDCGM(t *testing.T) {
	b := newBuilder(SchemaDCGM, 30*time.Second, nil)
	slice := func(v float64, name, gi, profile string) point {
		return dcgm(v, name, "GPU_I_ID", gi, "GPU_I_PROFILE", profile)
	}
	snaps := b.build(time.Unix(1e9, 0), []point{
		dcgm(52, "DCGM_FI_DEV_GPU_TEMP"), dcgm(180, "DCGM_FI_DEV_POWER_USAGE"), dcgm(0, "DCGM_FI_DEV_GPU_UTIL"),
		dcgm(30000, "DCGM_FI_DEV_FB_USED"), dcgm(50000, "DCGM_FI_DEV_FB_FREE"),
		slice(9000, "DCGM_FI_DEV_FB_USED", "9", "1g.10gb"), slice(728, "DCGM_FI_DEV_FB_FREE", "9", "1g.10gb"),
		slice(0, "DCGM_FI_DEV_GPU_UTIL", "9", "1g.10gb"), slice(0, "DCGM_FI_DEV_GPU_UTIL", "7", "1g.10gb"), // not measured per instance
		slice(0.93, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "9", "1g.10gb"),
		slice(2000, "DCGM_FI_DEV_FB_USED", "7", "1g.10gb"), slice(7728, "DCGM_FI_DEV_FB_FREE", "7", "1g.10gb"),
	})
	if len(snaps) != 1 || len(snaps[0].Devices) != 3 {
		t.Fatalf("got %s, want one host with the GPU and its two instances", describe(snaps))
	}
	ds := snaps[0].Devices
	if p := ds[0]; !p.MIGEnabled || p.TempC != 52 || p.PowerW != 180 || p.MemKnown() || !math.IsNaN(p.UtilGPU) {
		t.Errorf("parent: got %+v, want in MIG mode with the card's readings, no memory or utilization of its own", p)
	}
	for i, want := range []struct {
		label, uuid string
		used        uint64
		util        float64
	}{
		{"GPU 0 · MIG 7 (1g.10gb)", "MIG-GPU-0/7/0", 2000 << 20, math.NaN()},
		{"GPU 0 · MIG 9 (1g.10gb)", "MIG-GPU-0/9/0", 9000 << 20, 93},
	} {
		d := ds[1+i]
		if d.Label() != want.label || d.UUID != want.uuid || d.MemUsed != want.used || d.MemTotal != 9728<<20 ||
			!(d.UtilGPU == want.util || math.IsNaN(d.UtilGPU) && math.IsNaN(want.util)) {
			t.Errorf("instance %d: got %s %s mem %d/%d util %v, want %+v", i, d.Label(), d.UUID, d.MemUsed, d.MemTotal, d.UtilGPU, want)
		}
	}
}

// TestMIGInstancesOfAgents: a gpuwatch agent's instances are GPUs of
// their own (their NVML UUID), which gpuwatch_gpu_mig_info places under
// their GPU; with schema auto, dcgm-exporter's series of the same
// instances are left out.
func TestMIGInstancesOfAgents(t *testing.T) {
	b := newBuilder(SchemaAuto, 30*time.Second, nil)
	inst := func(v float64, name string, extra ...string) point {
		return series(v, name, append([]string{"host", "node1", "gpu", "0", "uuid", "MIG-abcd"}, extra...)...)
	}
	snaps := b.build(time.Unix(1e9, 0), []point{
		agent(1, "gpuwatch_gpu_info"), agent(1, "gpuwatch_gpu_mig_enabled"), agent(50, "gpuwatch_gpu_temperature_celsius"),
		inst(1, "gpuwatch_gpu_info"), inst(3<<30, "gpuwatch_gpu_memory_used_bytes"), inst(10<<30, "gpuwatch_gpu_memory_total_bytes"),
		inst(1, "gpuwatch_gpu_mig_info", "parent_uuid", "GPU-0", "gpu_instance", "3", "compute_instance", "0", "profile", "1g.10gb"),
		dcgm(2000, "DCGM_FI_DEV_FB_USED", "GPU_I_ID", "3", "GPU_I_PROFILE", "1g.10gb"),
	})
	got := describe(snaps)
	if len(snaps) != 1 || len(snaps[0].Devices) != 2 || !strings.Contains(got, "GPU 0 · MIG 3 (1g.10gb) of GPU-0") || !snaps[0].Devices[0].MIGEnabled {
		t.Errorf("got\n%s\nwant GPU-0 in MIG mode and its instance MIG-abcd, once", got)
	}
}
