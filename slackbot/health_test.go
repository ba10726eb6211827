package slackbot

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// TestHealth: /gpu health says every GPU's condition in one word, the
// worst first with why, and counts the ok ones; in a fleet, each GPU
// named with its host.
func TestHealth(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	devs := ta.b.snap.Devices
	for i := range devs {
		h := &devs[i].Health
		h.Set(gpu.ECCUncorrectedVolatile, 0)
		h.Set(gpu.RowRemapPending, 0)
		h.Set(gpu.PCIeLinkWidth, 16)
		h.Set(gpu.PCIeLinkWidthMax, 16)
	}
	devs[1].Health.Set(gpu.PCIeLinkWidth, 8)
	devs[2].Health.Set(gpu.RowRemapPending, 1)
	devs[2].Health.Set(gpu.ECCUncorrectedVolatile, 1)
	ta.b.snap.Events = []gpu.Event{{Kind: gpu.EventXID, GPU: 0, UUID: "GPU-0000", XID: 13}}
	k := ta.run(t, "health", "U1", "alice")
	if heads := k.texts("header"); len(heads) != 1 || heads[0] != "🩺 GPU health on node1: 1 needs reset, 1 degraded, 2 ok" {
		t.Errorf("/gpu health: got headers %q", heads)
	}
	want := []string{
		"🟠 *GPU 2* · needs reset: 1 uncorrectable ECC error(s) since the driver loaded; a row remap is pending: reset the GPU when its job ends",
		"🟡 *GPU 1* · degraded: PCIe link at x8 of x16",
		"🟢 2 GPUs ok",
	}
	if got := strings.Split(k.texts("section")[0], "\n"); !slices.Equal(got, want) {
		t.Errorf("/gpu health lines:\n got %q\nwant %q", got, want)
	}
	contains(t, "note", strings.Join(k.texts("context"), ""), "needs reset (once its jobs have stopped)")

	// A fleet: the hosts' GPUs with their host; an XID 79 needs a reset.
	ta = newFleetApp(t)
	s := hostSnapshot("node4", 0, 0)
	s.Events = []gpu.Event{{Kind: gpu.EventXID, GPU: 1, XID: 79}}
	ta.b.others = append(ta.b.others, s)
	k = ta.run(t, "health", "U1", "alice")
	contains(t, "fleet", k.all(), "on 4 hosts: 1 needs reset,", "🟠 *node4 GPU 1* · needs reset: XID 79: the GPU has fallen off the bus — reset the GPU or reboot the node",
		"give no health readings")
	k = ta.run(t, "health node9", "U1", "alice")
	contains(t, "unknown host", k.all(), "node9")
}
