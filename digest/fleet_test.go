package digest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/internal/blockkit"
)

// fleetHours is sampleHours on each host: the same GPU indexes, UUIDs and
// users on every host, as a fleet of identical nodes has.
func fleetHours(hosts ...string) rollups {
	var all rollups
	for _, host := range hosts {
		h := sampleHours(24, 2, 4)
		for i := range h.gpus {
			h.gpus[i].Host = host
		}
		for i := range h.users {
			h.users[i].Host = host
		}
		all.gpus, all.users, all.alerts = append(all.gpus, h.gpus...), append(all.users, h.users...), append(all.alerts, h.alerts...)
	}
	return all
}

// TestReportFleet: a report of four hosts keeps their GPUs apart, ranks
// users by their GPU-hours on every host, and names each idle holder's
// and underused GPU's host; it lists hosts, not GPUs.
func TestReportFleet(t *testing.T) {
	one := goldenReport()
	h := fleetHours("node1", "node2", "node3", "node4")
	r := Build(h.gpus, h.users, h.alerts, Options{Name: "daily", Host: "hub", From: hour(0), To: hour(24),
		TopUsers: 3, PricePerKWh: 0.30, Currency: "EUR", Location: time.FixedZone("CET", 3600)})
	if !r.Fleet() || len(r.Hosts) != 4 || len(r.GPUs) != 8 {
		t.Fatalf("got %d hosts and %d GPUs, want 4 and 8 (GPU 0 and 1 of each host)", len(r.Hosts), len(r.GPUs))
	}
	if got, want := r.Users[0].GPUHours, 4*one.Users[0].GPUHours; !near(got, want) {
		t.Errorf("top user: got %v GPU-hours, want %v (the same on each of 4 hosts)", got, want)
	}
	if len(r.IdleHolders) != 8 || r.IdleHolders[0].Host == "" {
		t.Errorf("idle holders: got %+v, want two per host, with their host", r.IdleHolders)
	}
	text := r.Text()
	for _, want := range []string{
		"GPU usage on 4 hosts, Mon 30 Nov 10:00 – Tue 1 Dec 10:00",
		"4 hosts, 8 GPUs, 188 GPU-hours covered",
		"\nHosts\n  node1 2 GPUs ",
		"usera 48.0 GPU-hours, 612 GiB-hours on node1 GPU 0; node2 GPU 0; node3 GPU 0; and 1 more host",
		"userc held 20 GiB on node1 GPU 1 idle for 13h00m",
		"GPUMemoryHigh fired 12 times",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("fleet report: want %q in\n%s", want, text)
		}
	}
	if strings.Contains(text, "\nGPUs\n") {
		t.Errorf("fleet report: got a line per GPU, want one per host:\n%s", text)
	}
	if got, want := r.Hosts[0], one.Hosts[0]; got.CoveredHours != want.CoveredHours || got.Sparkline != want.Sparkline || got.Host != "node1" {
		t.Errorf("node1: got %+v, want the one host's %+v", got, want)
	}
}

// TestReportFleetUnderusedNamesHost: an underused GPU of one host is named
// with its host, not mixed with the GPU of the same index elsewhere.
func TestReportFleetUnderusedNamesHost(t *testing.T) {
	var gpus []GPUHour
	var users []UserHour
	for i := range 3 {
		for _, host := range []string{"node1", "node2"} {
			g := GPUHour{Hour: hour(i), Host: host, GPU: 2, UUID: "GPU-" + host, Seconds: 3600, HeldSeconds: 3600, HeldUtilSeconds: 3600 * 0.8,
				UtilSeconds: 3600 * 0.8, BusySeconds: 3600, MemMax: 30 * gib}
			if host == "node2" {
				g.HeldUtilSeconds, g.UtilSeconds = 3600*0.15, 3600*0.15
			}
			gpus = append(gpus, g)
			users = append(users, UserHour{Hour: hour(i), Host: host, GPU: 2, UUID: g.UUID, User: "dana" + host, GPUSeconds: 3600, Command: "python load.py"})
		}
	}
	r := Build(gpus, users, nil, Options{From: hour(0), To: hour(3)})
	if len(r.Underused) != 1 || r.Underused[0].Host != "node2" || r.Underused[0].User != "dananode2" {
		t.Fatalf("underused: got %+v, want node2's GPU 2 held by dananode2", r.Underused)
	}
	if want := "node2 GPU 2: dananode2's python load.py held it 3h00m at 15% average utilization"; !strings.Contains(r.Text(), want) {
		t.Errorf("want %q in\n%s", want, r.Text())
	}
}

// TestReportFleetOf125HostsFitsSlack: a day of 125 hosts of 8 GPUs lists
// 50 hosts and counts the rest, and its blocks are within Slack's limits.
func TestReportFleetOf125HostsFitsSlack(t *testing.T) {
	hosts := make([]string, 125)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("gpu-node-%03d.cluster-a.example.org", i)
	}
	h := fleetHours(hosts...)
	r := Build(h.gpus, h.users, h.alerts, Options{Name: "daily", From: hour(0), To: hour(24)})
	if !strings.Contains(r.Text(), fmt.Sprintf("and %d more", 125-MaxHostLines)) {
		t.Errorf("want the hosts past %d counted", MaxHostLines)
	}
	raw, err := r.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	var blocks goslack.Blocks
	if err := blocks.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	if err := blockkit.Validate(blocks.BlockSet); err != nil {
		t.Errorf("blocks of 125 hosts: %v", err)
	}
	if all := blockkit.PlainText(blocks.BlockSet); strings.Contains(all, "does not fit") || !strings.Contains(all, "Alerts") {
		t.Errorf("blocks of 125 hosts: got a cut report, want every section")
	}
}
