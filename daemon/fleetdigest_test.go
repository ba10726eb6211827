package daemon_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// hostSnapshots are one snapshot of each of two hosts at at: GPU 0 of
// each trains for alice; node2's GPU 1 is held idle by bob. Both hosts'
// GPUs have the harness's UUIDs: the same GPU indexes and UUIDs on two
// hosts, which a fleet's digest keeps apart.
func hostSnapshots(at time.Time) []*gpu.Snapshot {
	var out []*gpu.Snapshot
	for _, host := range []string{"node1", "node2"} {
		s := snapshot(at, 50, 40)
		s.Host = host
		s.Devices[1].Processes = nil
		s.Devices[1].MemUsed, s.Devices[1].UtilGPU = 0, 0
		if host == "node2" {
			s.Devices[1].Processes = []gpu.Process{{PID: 7, User: "bob", Command: "jupyter-lab", MemUsed: 20 << 30}}
			s.Devices[1].MemUsed = 20 << 30
		}
		out = append(out, s)
	}
	return out
}

// TestFleetDigest: a daemon fed the snapshots of two hosts (as a hub is)
// makes a digest that ranks users by GPU-hours on both hosts and names the
// idle holder with the host; /gpu digest shows it.
func TestFleetDigest(t *testing.T) {
	r := start(t, webhookConfig(t, t.TempDir(), "http://127.0.0.1:1/hook", "1ns"), newClock(base.Add(2*time.Hour)).Now)
	for i := range 120 {
		for _, s := range hostSnapshots(base.Add(time.Duration(i) * time.Minute)) {
			r.D.Step(s)
		}
	}
	rep, err := r.D.UsageReport("", 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Fleet() || len(rep.GPUs) != 4 {
		t.Fatalf("report: got %d hosts and %d GPUs, want 2 and 4", len(rep.Hosts), len(rep.GPUs))
	}
	text := rep.Text()
	for _, want := range []string{"GPU usage on 2 hosts", "2 hosts, 4 GPUs",
		"alice 4.0 GPU-hours, 79.3 GiB-hours on node1 GPU 0; node2 GPU 0", "bob held 20 GiB on node2 GPU 1 idle for 1h59m"} {
		if !strings.Contains(text, want) {
			t.Errorf("fleet digest: want %q in\n%s", want, text)
		}
	}
	title, blocks, err := r.D.Digest(2 * time.Hour)
	if err != nil || !strings.Contains(title, "on 2 hosts") {
		t.Fatalf("Digest: got %q, %v; want the fleet's", title, err)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(blocks, &list); err != nil || !strings.Contains(string(blocks), "node2 GPU 1 idle") {
		t.Errorf("Digest blocks: got %s (%v), want the idle holder with the host", blocks, err)
	}
}
