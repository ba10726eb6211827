package slack

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// TestAlertOfMIGInstanceAndProcess: a message about a MIG slice names the
// slice ("GPU 0 · MIG 3 (1g.10gb)"), and one of a rule that runs per
// process names the process too, within Slack's limits.
func TestAlertOfMIGInstanceAndProcess(t *testing.T) {
	for _, status := range []notifier.Status{notifier.StatusFiring, notifier.StatusResolved} {
		n := notifiertest.Notification(status)
		slice := n.Alerts[0]
		slice.MIG = &gpu.MIG{ParentUUID: slice.UUID, GPUInstance: 3, Profile: "1g.10gb"}
		slice.UUID = "MIG-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
		proc := n.Alerts[0]
		proc.Key += "/pid/4242"
		proc.Process = &proc.Processes[0]
		alerts := []notifier.Alert{slice, proc}
		blocks, text := render(alerts, notifiertest.Start)
		if err := blockkit.ValidateMessage(text, blocks); err != nil {
			t.Fatalf("%s: %v", status, err)
		}
		raw, err := json.Marshal(blocks)
		if err != nil {
			t.Fatal(err)
		}
		all := string(raw) + text + moreAlerts(alerts)
		for _, want := range []string{"*GPU 0 · MIG 3 (1g.10gb) · NVIDIA H100 80GB HBM3*", "*GPU 0, pid 4242 · NVIDIA H100 80GB HBM3*",
			"on node1 GPU 0 · MIG 3 (1g.10gb)", "on node1 GPU 0, pid 4242", "GPU 0 · MIG 3 (1g.10gb) on `node1`"} {
			if !strings.Contains(all, want) {
				t.Errorf("%s: the message lacks %q:\n%s\n%s", status, want, raw, text)
			}
		}
	}
}
