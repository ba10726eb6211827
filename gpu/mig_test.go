package gpu_test

import (
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
