package slackbot

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
)

// hostSnapshot is host with one H100 per entry of used (GiB of memory in
// use; 0 is a free GPU) at 60 % utilization, each used GPU held by dave.
func hostSnapshot(host string, used ...int) *gpu.Snapshot {
	s := &gpu.Snapshot{Time: testNow.Add(-5 * time.Second), Host: host}
	for i, u := range used {
		d := gpu.Device{Index: i, UUID: fmt.Sprintf("GPU-%s-%d", host, i), Name: "NVIDIA H100 80GB HBM3",
			MemUsed: uint64(u) << 30, MemTotal: 80 << 30, UtilGPU: 60, UtilMem: 10, TempC: 50, PowerW: 300, PowerLimitW: 700}
		if u > 0 {
			d.Processes = []gpu.Process{{PID: 1000 + i, User: "dave", Command: "python sweep.py", MemUsed: uint64(u) << 30}}
		} else {
			d.UtilGPU, d.MemUsed = 0, 300<<20 // the driver's own, under 1 GiB
		}
		s.Devices = append(s.Devices, d)
	}
	return s
}

// newFleetApp is an app on three hosts: node1 (the four GPUs of
// newFakeBackend: 3 busy, 1 idle-held), node2.example.org (8 GPUs, 3 of
// them free, GPU 5 hot) and node3 (its series gone: no GPU reports).
func newFleetApp(t *testing.T) *testApp {
	t.Helper()
	ta := newTestApp(t, 4, nil)
	node2 := hostSnapshot("node2.example.org", 20, 0, 40, 0, 70, 0, 30, 30)
	node2.Devices[5].TempC = 91
	node3 := &gpu.Snapshot{Time: testNow.Add(-5 * time.Second), Host: "node3"}
	ta.b.others = []*gpu.Snapshot{node3, node2}
	ta.b.alerts = append(ta.b.alerts,
		ActiveAlert{Key: "node2.example.org/GPUHot/GPU-node2.example.org-5", Host: "node2.example.org", Name: "GPUHot", Severity: "critical",
			State: "firing", GPU: 5, UUID: "GPU-node2.example.org-5", Since: testNow.Add(-3 * time.Minute), ValueText: "91 C"},
		ActiveAlert{Key: "node3/GPUMissing/GPU-node3-0", Host: "node3", Name: "GPUMissing", Severity: "critical",
			State: "firing", GPU: 0, UUID: "GPU-node3-0", Since: testNow.Add(-time.Minute)})
	return ta
}

func TestFleetStatus(t *testing.T) {
	ta := newFleetApp(t)
	k := ta.run(t, "status", "U1", "alice")
	if heads := k.texts("header"); len(heads) != 1 || heads[0] != "🖥 3 hosts · 12 GPUs" {
		t.Errorf("/gpu status: got headers %q, want 🖥 3 hosts · 12 GPUs", heads)
	}
	contains(t, "context", strings.Join(k.texts("context"), ""), "8 busy, 1 idle-held, 3 free", "🔥 3 firing · ⏳ 1 pending",
		"`/gpu status &lt;host&gt;`", "`/gpu free`")
	secs := k.texts("section")
	if len(secs) != 1 {
		t.Fatalf("/gpu status: got sections %q, want one of host lines", secs)
	}
	want := []string{
		"*node1* · 4 GPUs: 3 busy, 1 idle-held, 0 free · 🔥 1 firing · ⏳ 1 pending",
		"*node2.example.org* · 8 GPUs: 5 busy, 0 idle-held, 3 free · 🔥 1 firing",
		"*node3* · ⚠️ no GPU reports · 🔥 1 firing",
	}
	if got := strings.Split(secs[0], "\n"); !slices.Equal(got, want) {
		t.Errorf("/gpu status host lines:\n got %q\nwant %q", got, want)
	}
}

func TestFleetStatusOfOneHost(t *testing.T) {
	ta := newFleetApp(t)
	for _, host := range []string{"node2.example.org", "NODE2.example.org", "node2"} {
		k := ta.run(t, "status "+host, "U1", "alice")
		if heads := k.texts("header"); len(heads) != 1 || heads[0] != "🖥 node2.example.org · 8 GPUs" {
			t.Errorf("/gpu status %s: got headers %q, want node2.example.org · 8 GPUs", host, heads)
		}
		secs := k.texts("section")
		if len(secs) != 8 {
			t.Fatalf("/gpu status %s: got %d sections, want one per GPU", host, len(secs))
		}
		contains(t, "GPU 5", secs[5], "*GPU 5*", "🔥 *GPUHot* firing 3m")
		contains(t, "context", strings.Join(k.texts("context"), ""), "1 active alert")
		// node1's GPU 0 alert is not node2's.
		if strings.Contains(secs[0], "GPUMemoryLeak") {
			t.Errorf("/gpu status %s GPU 0: got %q, want no alert of node1's GPU 0", host, secs[0])
		}
	}
	k := ta.run(t, "status node9", "U1", "alice")
	contains(t, "unknown host", k.all(), "No host is called node9: the hosts are node1, node2.example.org and node3")
}

// TestOneHostReadsAsToday: on one host, naming it gives today's answers.
func TestOneHostReadsAsToday(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	for _, cmd := range [][2]string{{"status", "status node1"}, {"top", "top node1"}, {"alerts", "alerts"}, {"history 1", "history node1 1"}} {
		a, b := ta.run(t, cmd[0], "U1", "alice").all(), ta.run(t, cmd[1], "U1", "alice").all()
		if a != b {
			t.Errorf("/gpu %s and /gpu %s differ:\n%s\n---\n%s", cmd[0], cmd[1], a, b)
		}
	}
	if got := ta.b.histories; !slices.Equal(got, []string{"node1", "node1"}) {
		t.Errorf("History got hosts %q, want node1 for both", got)
	}
	k := ta.run(t, "status node2", "U1", "alice")
	contains(t, "other host", k.all(), "No host is called node2: the only host is node1")
}

func TestFree(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	k := ta.run(t, "free", "U1", "alice")
	contains(t, "none free", k.all(), "0 of 4 GPUs free on node1", "No GPU is free now: all 4 GPUs are held")

	ta = newFleetApp(t)
	k = ta.run(t, "free", "U1", "alice")
	if heads := k.texts("header"); len(heads) != 1 || heads[0] != "🟢 3 GPUs free on 1 of 3 hosts" {
		t.Errorf("/gpu free: got headers %q, want 3 GPUs free on 1 of 3 hosts", heads)
	}
	want := []string{
		"*node2.example.org GPU 1* · NVIDIA H100 80GB HBM3 · 79.7 GiB free of 80.0 GiB",
		"*node2.example.org GPU 3* · NVIDIA H100 80GB HBM3 · 79.7 GiB free of 80.0 GiB",
		"*node2.example.org GPU 5* · NVIDIA H100 80GB HBM3 · 79.7 GiB free of 80.0 GiB · 🔥 GPUHot",
	}
	if got := strings.Split(k.texts("section")[0], "\n"); !slices.Equal(got, want) {
		t.Errorf("/gpu free lines:\n got %q\nwant %q", got, want)
	}
	contains(t, "note", strings.Join(k.texts("context"), ""), "no process and under 1 GiB of memory in use")

	// Held is rules.Held: a process holding nothing, or 1 GiB without one,
	// is not free; memory unknown without a process is.
	s := hostSnapshot("node4", 0, 0, 0)
	s.Devices[0].Processes = []gpu.Process{{PID: 1, User: "erin", Command: "python -c 'import torch'"}}
	s.Devices[1].MemUsed = 2 << 30
	s.Devices[2].MemTotal, s.Devices[2].MemUsed = 0, 0
	ta.b.others = []*gpu.Snapshot{s}
	k = ta.run(t, "free node4", "U1", "alice")
	contains(t, "node4", k.all(), "1 of 3 GPUs free on node4", "*GPU 2* · NVIDIA H100 80GB HBM3 · memory n/a")
}

// TestFleetOf125Hosts: /gpu status and /gpu free for 125 hosts of 8 GPUs
// fit in one message, every host on its line, the free GPUs cut with a
// count; 250 hosts end with "and N more".
func TestFleetOf125Hosts(t *testing.T) {
	for _, n := range []int{125, 250} {
		ta := newTestApp(t, 0, nil)
		ta.b.snap, ta.b.alerts = nil, nil
		for i := range n {
			ta.b.others = append(ta.b.others, hostSnapshot(fmt.Sprintf("gpu-node-%03d.cluster-a.example.org", i), 0, 10, 0, 20, 0, 30, 0, 40))
		}
		text, blocks := ta.answer(t, "status")
		if err := blockkit.ValidateMessage(text, blocks); err != nil || len(blocks) == 0 {
			t.Fatalf("%d hosts: /gpu status breaks Slack's limits (%d blocks): %v", n, len(blocks), err)
		}
		all := blockkit.PlainText(blocks)
		lines := strings.Count(all, "GPUs: 4 busy, 0 idle-held, 4 free")
		if want := min(n, maxStatusHosts); lines != want {
			t.Errorf("%d hosts: got %d host lines, want %d", n, lines, want)
		}
		if more := strings.Contains(all, fmt.Sprintf("…and %d more hosts", n-maxStatusHosts)); more != (n > maxStatusHosts) {
			t.Errorf("%d hosts: got 'and more' %v, want %v", n, more, n > maxStatusHosts)
		}
		text, blocks = ta.answer(t, "free")
		if err := blockkit.ValidateMessage(text, blocks); err != nil || len(blocks) == 0 {
			t.Fatalf("%d hosts: /gpu free breaks Slack's limits: %v", n, err)
		}
		all = blockkit.PlainText(blocks)
		contains(t, "free", all, fmt.Sprintf("%d GPUs free on %d of %d hosts", 4*n, n, n), fmt.Sprintf("…and %d more free GPUs", 4*n-maxFreeListed))
		if got := strings.Count(all, "free of 80.0 GiB"); got != maxFreeListed {
			t.Errorf("%d hosts: /gpu free lists %d GPUs, want %d", n, got, maxFreeListed)
		}
	}
}

// TestFleetSourceDown: an alert of no GPU (the hub's source is down, GPU
// -1) on a host with no snapshot is in /gpu status and /gpu alerts, named
// by its host, with no GPU.
func TestFleetSourceDown(t *testing.T) {
	ta := newFleetApp(t)
	ta.b.alerts = append(ta.b.alerts, ActiveAlert{Key: "hub/GPUWatchSourceDown/", Host: "hub", Name: "GPUWatchSourceDown",
		Severity: "critical", State: "firing", GPU: -1, Since: testNow.Add(-2 * time.Minute)})
	k := ta.run(t, "status", "U1", "alice")
	contains(t, "status", k.all(), "*hub* · no GPU of its own · 🔥 1 firing: GPUWatchSourceDown")
	k = ta.run(t, "alerts", "U1", "alice")
	contains(t, "alerts", k.all(), "🔥 *GPUWatchSourceDown* · hub · critical")
	if strings.Contains(k.all(), "GPU -1") {
		t.Errorf("/gpu alerts: got %q, want no GPU -1", k.all())
	}
	one := newTestApp(t, 2, nil)
	one.b.alerts = []ActiveAlert{{Key: "node1/GPUWatchSourceDown/", Host: "node1", Name: "GPUWatchSourceDown", State: "firing", GPU: -1, Since: testNow}}
	contains(t, "one host", one.run(t, "alerts", "U1", "alice").all(), "🔥 *GPUWatchSourceDown* · gpuwatch")
}

func TestFleetTopAndAlerts(t *testing.T) {
	ta := newFleetApp(t)
	k := ta.run(t, "top", "U1", "alice")
	contains(t, "header", strings.Join(k.texts("header"), ""), "Processes on 3 hosts by GPU memory")
	lines := strings.Split(strings.Join(k.texts("section"), "\n"), "\n")
	contains(t, "largest", lines[0], "`node2.example.org GPU 4`", "70.0 GiB", "dave")
	k = ta.run(t, "top node1", "U1", "alice")
	contains(t, "one host", strings.Join(k.texts("header"), ""), "Processes on node1 by GPU memory")
	contains(t, "one host", k.texts("section")[0], "`GPU 2` *30.0 GiB* carol")

	k = ta.run(t, "alerts", "U1", "alice")
	secs := k.texts("section")
	if len(secs) != 4 {
		t.Fatalf("/gpu alerts: got %d sections, want 4", len(secs))
	}
	contains(t, "node2's", strings.Join(secs, "\n"), "🔥 *GPUHot* · node2.example.org GPU 5 · critical", "🔥 *GPUMemoryLeak* · node1 GPU 0",
		"🔥 *GPUMissing* · node3 GPU 0")
	k = ta.run(t, "alerts node3", "U1", "alice")
	contains(t, "node3", k.all(), "1 firing, 0 pending on node3", "*GPUMissing* · node3 GPU 0")
	if strings.Contains(k.all(), "GPUHot") {
		t.Errorf("/gpu alerts node3: got %q, want node3's alerts only", k.all())
	}
}

func TestFleetHistory(t *testing.T) {
	ta := newFleetApp(t)
	k := ta.run(t, "history 0", "U1", "alice")
	contains(t, "no host", k.all(), "Say which host's GPU 0: write `/gpu history &lt;host&gt; 0`", "node1, node2.example.org and node3")
	k = ta.run(t, "history node2 7 2h", "U1", "alice")
	contains(t, "node2", strings.Join(k.texts("header"), ""), "node2.example.org GPU 7 · last 2h")
	k = ta.run(t, "history node2 9", "U1", "alice")
	contains(t, "unknown GPU", k.all(), "GPU 9 is unknown: node2.example.org has GPUs 0, 1, 2, 3, 4, 5, 6, 7")
	if got := ta.b.histories; !slices.Equal(got, []string{"node2.example.org"}) {
		t.Errorf("History got hosts %q, want node2.example.org once (not the host as typed; not for an unknown GPU)", got)
	}
	k = ta.run(t, "history", "U1", "alice")
	contains(t, "no host", k.all(), "Say which host: write `/gpu history &lt;host&gt;`")
}

func TestFleetSilence(t *testing.T) {
	ta := newFleetApp(t)
	k := ta.run(t, "silence gpu 2 1h", "U0ADMIN", "admin")
	contains(t, "gpu without host", k.all(), "There is a GPU 2 on each of the 3 hosts: say which host's, e.g. `/gpu silence gpu 2 on node1 1h`")
	if len(ta.b.added) != 0 {
		t.Fatalf("got %d silences, want none for a GPU of no host", len(ta.b.added))
	}
	cases := []struct{ text, matchers, note string }{
		{"silence gpu 2 on NODE2 1h", `{gpu="2", host="node2.example.org"}`, ""},
		{"silence all on node3 1d", `{alert=~".+", host="node3"}`, ""},
		{"silence GPUHot 2h", `{alert="GPUHot"}`, ""},
		{"silence GPUHot on node9 2h", `{alert="GPUHot", host="node9"}`, "No host called node9 reports now"},
	}
	for i, c := range cases {
		k := ta.run(t, c.text, "U0ADMIN", "admin")
		if len(ta.b.added) != i+1 {
			t.Fatalf("/gpu %s: got %d silences, want %d", c.text, len(ta.b.added), i+1)
		}
		if got := ta.b.added[i].Matchers.String(); got != c.matchers {
			t.Errorf("/gpu %s: got matchers %s, want %s", c.text, got, c.matchers)
		}
		if c.note != "" {
			contains(t, "/gpu "+c.text, strings.Join(k.texts("context"), ""), c.note)
		}
	}
}

// TestFleetButtonsActOnTheirHost: a button of node2's alert silences and
// acknowledges node2's alert, not the same rule and GPU on another host.
func TestFleetButtonsActOnTheirHost(t *testing.T) {
	ta := newFleetApp(t)
	key := "node2.example.org/GPUHot/GPU-node2.example.org-5"
	ta.click(t, ActionSilence1h, key, "U0ADMIN", "admin", "C0GPU")
	ta.click(t, ActionAcknowledge, key, "U0ADMIN", "admin", "C0GPU")
	if len(ta.b.added) != 1 {
		t.Fatalf("got %d silences, want 1", len(ta.b.added))
	}
	if got, want := ta.b.added[0].Matchers.String(), `{alert="GPUHot", uuid="GPU-node2.example.org-5", host="node2.example.org"}`; got != want {
		t.Errorf("silence: got matchers %s, want %s", got, want)
	}
	if len(ta.b.acks) != 1 || ta.b.acks[0][0] != key {
		t.Errorf("acknowledge: got %q, want the key %s", ta.b.acks, key)
	}
}

// TestFleetAnswersFitSlack: hosts named with the longest hostile names a
// Prometheus label can carry still give answers within Slack's limits.
func TestFleetAnswersFitSlack(t *testing.T) {
	ta := newFleetApp(t)
	hostile := strings.Repeat("&<>", 100)
	for i := range 30 {
		s := hostSnapshot(fmt.Sprintf("%s-%d", hostile, i), 0, 99, 0, 99, 0, 99, 0, 99)
		for j := range s.Devices {
			s.Devices[j].Name = hostile
			s.Devices[j].Processes = append(s.Devices[j].Processes, hostileProcess(hostile))
		}
		ta.b.others = append(ta.b.others, s)
		ta.b.alerts = append(ta.b.alerts, ActiveAlert{Key: s.Host + "/A/GPU", Host: s.Host, Name: hostile, Severity: hostile,
			State: "firing", GPU: 0, UUID: s.Devices[0].UUID, Since: testNow, ValueText: hostile, Summary: hostile})
	}
	for _, cmd := range []string{"status", "free", "top", "alerts", "history 0", "status nope", "silence gpu 1 1h"} {
		text, blocks := ta.answer(t, cmd)
		if err := blockkit.ValidateMessage(text, blocks); err != nil || len(blocks) == 0 {
			t.Errorf("/gpu %s: the answer breaks Slack's limits (%d blocks): %v", cmd, len(blocks), err)
		}
		if i := brokenEntity(blockkit.PlainText(blocks)); i >= 0 {
			t.Errorf("/gpu %s: an entity cut in two", cmd)
		}
	}
	for _, cmd := range []string{"status", "free", "top", "alerts"} {
		assertSafeMrkdwn(t, "/gpu "+cmd, ta.run(t, cmd, "U1", "alice").all())
	}
}

// TestFleetHostDown: a host the hub's Prometheus cannot scrape says so,
// with why, in /gpu status of the fleet and of the host.
func TestFleetHostDown(t *testing.T) {
	ta := newFleetApp(t)
	ta.b.others[0].Down = "Prometheus cannot scrape its exporter at node3:9477 (job gpuwatch): up is 0"
	k := ta.run(t, "status", "U1", "alice")
	contains(t, "/gpu status", strings.Join(k.texts("section"), "\n"),
		"*node3* · ⚠️ down: Prometheus cannot scrape its exporter at node3:9477 (job gpuwatch): up is 0 · 🔥 1 firing")
	k = ta.run(t, "status node3", "U1", "alice")
	contains(t, "/gpu status node3", strings.Join(k.texts("section"), "\n"), "⚠️ This host is down: Prometheus cannot scrape its exporter")
}
