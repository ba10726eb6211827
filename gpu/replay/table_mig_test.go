package replay

import (
	"math"
	"testing"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// TestTableMIGDevices reads nvidia-smi's table of a GPU in MIG mode: its
// instances from the "MIG devices" section, each with its memory, after
// their GPU, and the processes with GI and CI IDs on their instance.
func TestTableMIGDevices(t *testing.T) {
	r, err := Open("testdata/mig/table-535-mig.log", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	snaps := readAll(t, r)
	if r.Format() != formatTable || len(snaps) != 3 {
		t.Fatalf("got %d snapshots of format %s, want 3 of the table", len(snaps), r.Format())
	}
	for k, s := range snaps {
		if len(s.Devices) != 4 {
			t.Fatalf("snapshot %d: got %d devices, want GPU 0, its two instances, GPU 1", k, len(s.Devices))
		}
		parent, big, small, whole := s.Devices[0], s.Devices[1], s.Devices[2], s.Devices[3]
		if !parent.MIGEnabled || parent.MemKnown() || !math.IsNaN(parent.UtilGPU) || parent.TempC != 44 || parent.PowerW != 182 || len(parent.Processes) != 0 {
			t.Errorf("snapshot %d: GPU 0 %+v, want in MIG mode with the card's readings only", k, parent)
		}
		used := uint64(9801+1024*k) << 20
		for _, c := range []struct {
			d    gpu.Device
			want string
			used uint64
			pid  int
		}{{big, "GPU 0 · MIG 1", used, 204874}, {small, "GPU 0 · MIG 2", 4113 << 20, 205112}} {
			if c.d.Label() != c.want || c.d.UUID != "MIG-gpu0/"+c.want[len(c.want)-1:]+"/0" || c.d.MemUsed != c.used || c.d.MemTotal != 40192<<20 ||
				len(c.d.Processes) != 1 || c.d.Processes[0].PID != c.pid || c.d.Name != "NVIDIA A100-SXM4-80GB" {
				t.Errorf("snapshot %d: %s: got %s %s mem %d/%d processes %+v", k, c.want, c.d.Label(), c.d.UUID, c.d.MemUsed, c.d.MemTotal, c.d.Processes)
			}
		}
		if whole.Index != 1 || whole.MIG != nil || whole.MIGEnabled || whole.UtilGPU != 88 || len(whole.Processes) != 1 || whole.Processes[0].PID != 206300 {
			t.Errorf("snapshot %d: GPU 1 %+v, want it read as before", k, whole)
		}
	}
}
