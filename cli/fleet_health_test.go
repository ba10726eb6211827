package cli_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
	"github.com/gpuwatch/gpuwatch/internal/fleettest"
	"github.com/gpuwatch/gpuwatch/internal/healthseries"
	"github.com/gpuwatch/gpuwatch/internal/suites"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// healthFleetSpeed is how much faster than real time the health fleet
// test plays its scenarios: a simulated minute is a second.
const healthFleetSpeed = 60

// healthDCGMExporter plays an NVIDIA dcgm-exporter of one generation of
// field names on host: a sim scenario at healthFleetSpeed times real time
// (as a gpuwatch agent at that speed plays it), each GPU's memory,
// utilization, temperature and power, its health fields as that
// generation names them (the fields a counters file lists), and its XIDs
// as DCGM_EXP_XID_ERRORS_COUNT counts them, by code, over an hour (kept by
// the exporter, so a GPU that fell off the bus keeps its count) and as the
// latest XID's code.
type healthDCGMExporter struct {
	*httptest.Server
	mu    sync.Mutex
	snap  *gpu.Snapshot
	xids  map[int][]xidSeen // by GPU index
	seen  map[int]string    // the labels of every GPU seen, by index
	start func()
}

// xidSeen is an XID the exporter counts, at its simulated time.
type xidSeen struct {
	at   time.Time
	code uint64
}

func newHealthDCGMExporter(t *testing.T, scenario, host string, gen healthseries.Generation) *healthDCGMExporter {
	e := &healthDCGMExporter{xids: map[int][]xidSeen{}, seen: map[int]string{}}
	hostLabel := "Hostname" // dcgm-exporter 3
	if gen == healthseries.DCGM49 {
		hostLabel = "hostname"
	}
	e.start = playSim(t, sim.Config{Scenario: scenario, Seed: 1, Host: host, Step: 10 * time.Second}, healthFleetSpeed, func(s *gpu.Snapshot) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.snap = s
		for _, d := range s.Devices {
			e.seen[d.Index] = fmt.Sprintf(`gpu="%d",UUID=%q,device="nvidia%d",modelName=%q,%s=%q`, d.Index, d.UUID, d.Index, d.Name, hostLabel, host)
		}
		for _, ev := range s.Events {
			if ev.Kind == gpu.EventXID {
				e.xids[ev.GPU] = append(e.xids[ev.GPU], xidSeen{s.Time, ev.XID})
			}
		}
	})
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, d := range e.snap.Devices {
			labels := e.seen[d.Index]
			const mib = 1 << 20
			if gen == healthseries.DCGM49 {
				fmt.Fprintf(w, "DCGM_FI_DEV_FB_USED_BYTES{%[1]s} %d\nDCGM_FI_DEV_FB_FREE_BYTES{%[1]s} %d\nDCGM_FI_DEV_FB_RESERVED_BYTES{%[1]s} %d\n",
					labels, d.MemUsed, d.MemTotal-d.MemUsed-d.MemReserved, d.MemReserved)
				fmt.Fprintf(w, "DCGM_FI_DEV_GPU_UTIL_RATIO{%[1]s} %g\nDCGM_FI_DEV_GPU_TEMP_CELSIUS{%[1]s} %g\nDCGM_FI_DEV_BOARD_POWER_WATTS{%[1]s} %g\n",
					labels, d.UtilGPU/100, d.TempC, d.PowerW)
			} else {
				fmt.Fprintf(w, "DCGM_FI_DEV_FB_USED{%[1]s} %d\nDCGM_FI_DEV_FB_FREE{%[1]s} %d\nDCGM_FI_DEV_FB_RESERVED{%[1]s} %d\n",
					labels, d.MemUsed/mib, (d.MemTotal-d.MemUsed-d.MemReserved)/mib, d.MemReserved/mib)
				fmt.Fprintf(w, "DCGM_FI_DEV_GPU_UTIL{%[1]s} %g\nDCGM_FI_DEV_GPU_TEMP{%[1]s} %g\nDCGM_FI_DEV_POWER_USAGE{%[1]s} %g\n",
					labels, d.UtilGPU, d.TempC, d.PowerW)
			}
			for _, v := range healthseries.DCGMValues(&d.Health, gen) {
				fmt.Fprintf(w, "%s{%s} %g\n", v.Name, labels, v.Value)
			}
		}
		last := healthseries.DCGMLastXID
		if gen == healthseries.DCGM49 {
			last = healthseries.DCGM49LastXID
		}
		for index, xs := range e.xids {
			counts := map[uint64]int{}
			for _, x := range xs {
				if e.snap.Time.Sub(x.at) < time.Hour {
					counts[x.code]++
				}
			}
			labels := e.seen[index]
			for code, n := range counts {
				fmt.Fprintf(w, "%s{%s,xid=\"%d\",%s=\"3600000\"} %d\n", healthseries.DCGMXIDCount, labels, code, healthseries.DCGMXIDCountLabel, n)
			}
			fmt.Fprintf(w, "%s{%s} %d\n", last, labels, xs[len(xs)-1].code)
		}
	}))
	t.Cleanup(e.Close)
	return e
}

// healthFleetRules are the example config's health rules with their
// windows and durations scaled to healthFleetSpeed (a minute becomes a
// second), and their rates scaled the other way.
const healthFleetRules = `rules:
  - alert: GPUMemoryUncorrectable
    when: ecc.uncorrected.volatile > 0
    severity: critical
  - alert: GPURowRemapFailed
    when: row_remap.failed == 1
    severity: critical
  - alert: GPURowRemapPending
    when: row_remap.pending == 1
    severity: warning
  - alert: GPUHardwareSlowdown
    when: active(throttle.hw_slowdown, 5s) >= 4s or active(throttle.hw_power_brake, 5s) >= 4s
    severity: warning
  - alert: GPUPCIeLinkDegraded
    when: pcie.link.width_below_max > 0
    for: 5s
    severity: warning
  - alert: GPUNVLinkErrors
    when: rate(nvlink.crc_errors, 5s) > 10/s or rate(nvlink.replay_errors, 5s) > 2/s or nvlink.links_down > 0
    for: 2s
    severity: warning
  - alert: GPUFanStopped
    when: fan.speed < 5 and temperature > 60
    for: 2s
    severity: critical
  - alert: GPUHardwareXID
    when: xid.fault == "hardware"
    keep_firing_for: 10s
    severity: critical
  - alert: GPUApplicationXIDs
    when: count(xid.fault == "application", 10s) >= 3
    severity: warning
`

// TestFleetHealthOnRealPrometheus runs a hub on the real Prometheus over
// each health scenario three times: from a gpuwatch agent, from a
// dcgm-exporter under the field names of its 3.x/4.0–4.8 releases, and
// from one under the names of 4.9. The hub, with the example's health
// rules (scaled to the simulation's speed), sends the alerts each
// scenario's truth expects, on its GPU, and the same alerts of the three
// nodes of a scenario.
func TestFleetHealthOnRealPrometheus(t *testing.T) {
	suites.Fleet(t)
	dir := t.TempDir()
	type node struct{ agent, legacy, renamed string }
	nodes := map[string]node{}
	var agentTargets, dcgmTargets []string
	var exporters []*healthDCGMExporter
	agentConfigs := map[string]string{}
	for i, scenario := range sim.HealthScenarios() {
		n := node{fmt.Sprintf("a%d", i), fmt.Sprintf("l%d", i), fmt.Sprintf("r%d", i)}
		nodes[scenario] = n
		addr := freeAddr(t)
		agentTargets = append(agentTargets, fmt.Sprintf("%q", addr))
		agentConfigs[n.agent] = fmt.Sprintf(`host: %s
storage: {path: %s}
server: {listen: %q}
source: {type: sim, interval: 10s, sim: {scenario: %s, seed: 1, speed: %d}}
`, n.agent, filepath.Join(dir, n.agent+".db"), addr, scenario, healthFleetSpeed)
		for host, gen := range map[string]healthseries.Generation{n.legacy: healthseries.DCGMLegacy, n.renamed: healthseries.DCGM49} {
			e := newHealthDCGMExporter(t, scenario, host, gen)
			exporters = append(exporters, e)
			dcgmTargets = append(dcgmTargets, fmt.Sprintf("%q", strings.TrimPrefix(e.URL, "http://")))
		}
	}
	prom := fleettest.Prometheus(t, fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 900ms}
scrape_configs:
  - job_name: gpuwatch
    static_configs: [{targets: [%s]}]
  - job_name: dcgm
    static_configs: [{targets: [%s]}]
`, strings.Join(agentTargets, ", "), strings.Join(dcgmTargets, ", ")))
	hook := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 200} })
	hubPath, hubAddr := filepath.Join(dir, "hub.yaml"), freeAddr(t)
	writeFile(t, hubPath, fmt.Sprintf(`host: hub
storage: {path: %s}
server: {listen: %q}
source:
  type: prometheus
  interval: 1s
  prometheus: {url: %s, schema: auto, timeout: 900ms, host_down_for: 5s}
receivers: [{name: hook, webhook: {url: %s, format: generic}}]
route: {receiver: hook, group_wait: 0s}
`, filepath.Join(dir, "hub.db"), hubAddr, prom.URL, hook.URL)+healthFleetRules)
	// The exporters' clocks start with the agents': the same samples at
	// about the same times.
	for _, e := range exporters {
		e.start()
	}
	for host, cfg := range agentConfigs {
		path := filepath.Join(dir, host+".yaml")
		writeFile(t, path, cfg)
		a := runInProcess(t, path)
		defer a.stop()
	}
	fleettest.Eventually(t, 30*time.Second, "Prometheus to scrape the agents and both generations of dcgm-exporter", func() (bool, string) {
		got := promQuery(t, prom.URL, `count by (host) (gpuwatch_gpu_pcie_link_width) or count by (Hostname) (DCGM_FI_DEV_PCIE_LINK_WIDTH{Hostname!=""}) or count by (hostname) (DCGM_FI_DEV_PCIE_LINK_WIDTH{hostname!=""})`)
		return len(got) == 3*len(nodes), fmt.Sprint(got)
	})
	hub := runInProcess(t, hubPath)
	defer hub.stop()

	// What each scenario's first run must fire, on each of its nodes.
	var want []string
	for scenario, n := range nodes {
		src, err := sim.New(sim.Config{Scenario: scenario, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range src.Truth() {
			for _, exp := range healthExpect[tr.Expect] {
				for _, host := range []string{n.agent, n.legacy, n.renamed} {
					want = append(want, fmt.Sprintf("firing %s %s GPU %d", exp.alert, host, tr.GPU))
				}
			}
		}
		src.Close()
	}
	// firingOf is what the hub fired on host, without the host: "alert GPU n".
	firingOf := func(got []string, host string) []string {
		var out []string
		for _, a := range got {
			f := strings.SplitN(a, " ", 4)
			if len(f) == 4 && f[0] == "firing" && f[2] == host && !slices.Contains(out, f[1]+" "+f[3]) {
				out = append(out, f[1]+" "+f[3])
			}
		}
		slices.Sort(out)
		return out
	}
	fleettest.Eventually(t, 3*time.Minute, "every health scenario's alerts, from the agent and both generations of dcgm-exporter alike", func() (bool, string) {
		got := hookAlerts(t, hook)
		if !containsAll(got, want...) {
			return false, "missing: " + strings.Join(slices.DeleteFunc(slices.Clone(want), func(w string) bool { return slices.Contains(got, w) }), "; ")
		}
		for scenario, n := range nodes {
			agent := firingOf(got, n.agent)
			for _, host := range []string{n.legacy, n.renamed} {
				if other := firingOf(got, host); !slices.Equal(agent, other) {
					return false, fmt.Sprintf("%s: the agent %s fired %q, the dcgm-exporter %s %q", scenario, n.agent, agent, host, other)
				}
			}
		}
		return true, ""
	})
	for scenario, n := range nodes {
		t.Logf("%s: %s", scenario, strings.Join(firingOf(hookAlerts(t, hook), n.agent), ", "))
	}
}
