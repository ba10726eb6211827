package gpu_test

import (
	"slices"
	"testing"

	"github.com/gpuwatch/gpuwatch/gpu"
)

func TestLabel(t *testing.T) {
	for _, tc := range []struct {
		d    gpu.Device
		want string
	}{
		{gpu.Device{Index: 0}, "GPU 0"},
		{gpu.Device{Index: 7, MIGEnabled: true}, "GPU 7"},
		{gpu.Device{Index: 0, MIG: &gpu.MIG{GPUInstance: 3, Profile: "1g.10gb"}}, "GPU 0 · MIG 3 (1g.10gb)"},
		{gpu.Device{Index: 1, MIG: &gpu.MIG{GPUInstance: 2}}, "GPU 1 · MIG 2"},
	} {
		if got := tc.d.Label(); got != tc.want {
			t.Errorf("%+v: Label %q, want %q", tc.d, got, tc.want)
		}
		if got := tc.d.IsInstance(); got != (tc.d.MIG != nil) {
			t.Errorf("%+v: IsInstance %v", tc.d, got)
		}
	}
}

func TestParentUUIDAndInstanceUUID(t *testing.T) {
	whole := gpu.Device{UUID: "GPU-aaaa"}
	inst := gpu.Device{UUID: gpu.InstanceUUID("GPU-aaaa", 3, 0), MIG: &gpu.MIG{ParentUUID: "GPU-aaaa", GPUInstance: 3}}
	if got := whole.ParentUUID(); got != "GPU-aaaa" {
		t.Errorf("whole GPU: ParentUUID %q, want GPU-aaaa", got)
	}
	if got := inst.ParentUUID(); got != "GPU-aaaa" {
		t.Errorf("instance: ParentUUID %q, want GPU-aaaa", got)
	}
	if got, want := inst.UUID, "MIG-GPU-aaaa/3/0"; got != want {
		t.Errorf("InstanceUUID = %q, want %q", got, want)
	}
}

func TestSortInstances(t *testing.T) {
	ds := []gpu.Device{
		{Index: 1, UUID: "b"},
		{Index: 0, UUID: "a/2", MIG: &gpu.MIG{GPUInstance: 2}},
		{Index: 0, UUID: "a/1/1", MIG: &gpu.MIG{GPUInstance: 1, ComputeInstance: 1}},
		{Index: 0, UUID: "a", MIGEnabled: true},
		{Index: 0, UUID: "a/1/0", MIG: &gpu.MIG{GPUInstance: 1}},
	}
	gpu.SortInstances(ds)
	var got []string
	for _, d := range ds {
		got = append(got, d.UUID)
	}
	want := []string{"a", "a/1/0", "a/1/1", "a/2", "b"}
	if !slices.Equal(got, want) {
		t.Errorf("SortInstances: got %q, want %q", got, want)
	}
}

func TestComputeShare(t *testing.T) {
	for _, tc := range []struct {
		name, profile string
		want          float64
	}{
		{"NVIDIA A100-SXM4-80GB", "1g.10gb", 1.0 / 7},
		{"NVIDIA H100 80GB HBM3", "3g.40gb", 3.0 / 7},
		{"NVIDIA A100-SXM4-80GB", "1g.10gb+me", 1.0 / 7},
		{"NVIDIA A30", "2g.12gb", 0.5},
		{"NVIDIA H100 80GB HBM3", "", 0},
	} {
		if got := gpu.ComputeShare(tc.name, tc.profile); got != tc.want {
			t.Errorf("ComputeShare(%q, %q) = %v, want %v", tc.name, tc.profile, got, tc.want)
		}
	}
}
