package gpu

import (
	"strings"
	"testing"
)

// TestAdmit: a snapshot past the limits loses what passes them, and says
// so: GPUs whose UUID (or MIG parent's) is too long, GPUs past
// MaxDevices; a user name too long is clipped; a host name too long
// refuses the snapshot.
func TestAdmit(t *testing.T) {
	long := strings.Repeat("x", MaxNameBytes+1)
	s := &Snapshot{Host: "node1"}
	s.Devices = append(s.Devices,
		Device{Index: 0, UUID: "GPU-0", Processes: []Process{{PID: 1, User: long}, {PID: 2, User: "alice"}}},
		Device{Index: 1, UUID: long},
		Device{Index: 2, UUID: "MIG-2", MIG: &MIG{ParentUUID: long, GPUInstance: 1}})
	for i := range MaxDevices + 5 {
		s.Devices = append(s.Devices, Device{Index: 3 + i, UUID: "GPU-" + strings.Repeat("y", i)})
	}
	problems, ok := Admit(s)
	if !ok {
		t.Fatal("Admit refused the snapshot of host node1")
	}
	if len(s.Devices) != MaxDevices || s.Devices[0].UUID != "GPU-0" || s.Devices[1].Index != 3 {
		t.Errorf("Admit kept %d GPUs starting %d, %d; want %d, without GPUs 1 and 2", len(s.Devices), s.Devices[0].Index, s.Devices[1].Index, MaxDevices)
	}
	if u := s.Devices[0].Processes[0].User; len(u) != MaxNameBytes || s.Devices[0].Processes[1].User != "alice" {
		t.Errorf("user names after Admit: %d bytes and %q, want %d and alice", len(u), s.Devices[0].Processes[1].User, MaxNameBytes)
	}
	want := []string{
		`a process on GPU 0 of host "node1" has a user name of 1025 bytes: clipped to 1024`,
		`GPU 1 of host "node1" has a UUID of 1025 bytes, more than the 1024 gpuwatch keeps: it is left out`,
		`GPU 2 · MIG 1 of host "node1" has a UUID of 1025 bytes, more than the 1024 gpuwatch keeps: it is left out`,
		`host "node1" reports 136 GPUs, more than the 128 gpuwatch watches on one host: those past GPU 129 are left out`,
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("Admit said\n%s\nwant\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}

	problems, ok = Admit(&Snapshot{Host: long, Devices: []Device{{UUID: "GPU-0"}}})
	if ok || len(problems) != 1 || !strings.Contains(problems[0], "has a name of 1025 bytes, more than the 1024 gpuwatch keeps: its snapshot is left out") {
		t.Errorf("Admit of a host name of 1025 bytes: %v %q, want refused, saying why", ok, problems)
	}
}
