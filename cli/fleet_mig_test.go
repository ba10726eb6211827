package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
	"github.com/gpuwatch/gpuwatch/internal/fleettest"
	"github.com/gpuwatch/gpuwatch/internal/suites"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// migDCGMExporter plays an NVIDIA dcgm-exporter on host whose GPU is
// split into MIG slices (a sim scenario at 240 times real time, as a
// gpuwatch agent plays it): the card's temperature and power without
// GPU_I_ID, each slice's memory with GPU_I_ID and GPU_I_PROFILE, its
// DCGM_FI_DEV_GPU_UTIL 0 as dcgm-exporter reports an instance's, and its
// activity (DCGM_FI_PROF_GR_ENGINE_ACTIVE) where the GPU measures it.
type migDCGMExporter struct {
	*httptest.Server
	mu    sync.Mutex
	snap  *gpu.Snapshot
	start func() // starts the clock: until then, the first sample
}

func newMIGDCGMExporter(t *testing.T, scenario, host string) *migDCGMExporter {
	e := &migDCGMExporter{}
	e.start = playSim(t, sim.Config{Scenario: scenario, Seed: 1, Host: host, Step: 10 * time.Second}, 240, func(s *gpu.Snapshot) {
		e.mu.Lock()
		e.snap = s
		e.mu.Unlock()
	})
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		e.mu.Lock()
		s := e.snap
		e.mu.Unlock()
		const mib = 1 << 20
		for _, d := range s.Devices {
			uuid := d.UUID
			if d.MIG != nil {
				uuid = d.MIG.ParentUUID
			}
			labels := fmt.Sprintf(`gpu="%d",UUID=%q,device="nvidia%d",modelName=%q,Hostname=%q`, d.Index, uuid, d.Index, d.Name, host)
			if d.MIG == nil {
				fmt.Fprintf(w, "DCGM_FI_DEV_GPU_TEMP{%s} %g\nDCGM_FI_DEV_POWER_USAGE{%s} %g\n", labels, d.TempC, labels, d.PowerW)
				continue
			}
			labels += fmt.Sprintf(`,GPU_I_ID="%d",GPU_I_PROFILE=%q`, d.MIG.GPUInstance, d.MIG.Profile)
			fmt.Fprintf(w, "DCGM_FI_DEV_FB_USED{%s} %d\nDCGM_FI_DEV_FB_FREE{%s} %d\nDCGM_FI_DEV_GPU_UTIL{%s} 0\n",
				labels, d.MemUsed/mib, labels, (d.MemTotal-d.MemUsed)/mib, labels)
			if !math.IsNaN(d.UtilGPU) {
				fmt.Fprintf(w, "DCGM_FI_PROF_GR_ENGINE_ACTIVE{%s} %g\n", labels, d.UtilGPU/100)
			}
		}
	}))
	t.Cleanup(e.Close)
	return e
}

// playSim plays the simulation cfg in a loop (as a gpuwatch agent's sim
// source does), speed times faster than real time, giving each snapshot
// to each: the first at once, the next ones once start is called, until
// the test ends.
func playSim(t *testing.T, cfg sim.Config, speed int, each func(*gpu.Snapshot)) (start func()) {
	cfg.Loop = true
	src, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	next := func() {
		if s, err := src.Next(context.Background()); err == nil {
			each(s)
		}
	}
	next()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return sync.OnceFunc(func() {
		go func() {
			tick := time.NewTicker(cfg.Step / time.Duration(speed))
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					next()
				}
			}
		}()
	})
}

// hookAlerts are the alerts of a generic webhook's requests, as "status
// alert host label".
func hookAlerts(t *testing.T, s *notifiertest.Server) []string {
	t.Helper()
	var out []string
	for _, r := range s.Requests() {
		var m struct {
			Alerts []struct {
				Alert, Status, Host string
				Label               string `json:"gpu_label"`
			}
		}
		if err := json.Unmarshal(r.Body, &m); err != nil {
			t.Fatalf("a request that is not a generic webhook message: %v\n%s", err, r.Body)
		}
		for _, a := range m.Alerts {
			out = append(out, a.Status+" "+a.Alert+" "+a.Host+" "+a.Label)
		}
	}
	return out
}

// TestFleetMIGOnRealPrometheus runs a hub on the real Prometheus over
// nodes whose GPUs are split into MIG slices, each kind twice: once from a
// gpuwatch agent (NVML's view, simulated) and once from a dcgm-exporter
// (its MIG labels). An A100 in seven 1g.10gb slices, one leaking until it
// is full (hosts g and m), and an H100 as a 4g.40gb slice whose notebook
// computes nothing and a 3g.40gb slice that trains (hosts h and n). The
// hub makes instances of every exporter's series and sends the same
// alerts of both: the leaking slice filling up, named GPU 0 · MIG 7
// (1g.10gb), first; the idle 4g.40gb slice held idle (its activity from
// GPM, or from DCGM_FI_PROF_GR_ENGINE_ACTIVE); nothing of the cards, and
// no idle alert where the A100 measures none. /gpu status of each host
// shows the slices under the GPU. (The simulations loop, each run with
// the next seed: later runs leak on other slices.)
func TestFleetMIGOnRealPrometheus(t *testing.T) {
	suites.Fleet(t)
	dir := t.TempDir()
	agents := map[string]string{"g": sim.ScenarioMIGSliceLeak, "h": sim.ScenarioMIGMixed}
	exporters := map[string]*migDCGMExporter{"m": newMIGDCGMExporter(t, sim.ScenarioMIGSliceLeak, "m"), "n": newMIGDCGMExporter(t, sim.ScenarioMIGMixed, "n")}
	addrs := map[string]string{"g": freeAddr(t), "h": freeAddr(t)}
	prom := fleettest.Prometheus(t, fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 900ms}
scrape_configs:
  - job_name: gpuwatch
    static_configs: [{targets: [%q, %q]}]
  - job_name: dcgm
    static_configs: [{targets: [%q, %q]}]
`, addrs["g"], addrs["h"], strings.TrimPrefix(exporters["m"].URL, "http://"), strings.TrimPrefix(exporters["n"].URL, "http://")))
	// The exporters' clocks start with the agents': the same samples at
	// about the same times.
	for _, e := range exporters {
		e.start()
	}
	for host, scenario := range agents {
		path := filepath.Join(dir, host+".yaml")
		writeFile(t, path, fleetAgent(dir, host, scenario, addrs[host]))
		a := runInProcess(t, path)
		defer a.stop()
	}
	fleettest.Eventually(t, 30*time.Second, "Prometheus to scrape the agents' and the dcgm-exporters' slices", func() (bool, string) {
		got := promQuery(t, prom.URL, `count by (host) (gpuwatch_gpu_mig_info) or count by (Hostname) (DCGM_FI_DEV_FB_USED{GPU_I_ID!=""})`)
		return len(got) == 4, fmt.Sprint(got)
	})
	hook := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 200} })
	hubPath, hubAddr := filepath.Join(dir, "hub.yaml"), freeAddr(t)
	writeFile(t, hubPath, fmt.Sprintf(`host: hub
storage: {path: %s}
server: {listen: %q}
slack: {signing_secret: %s}
source:
  type: prometheus
  interval: 1s
  prometheus: {url: %s, schema: auto, timeout: 900ms, host_down_for: 5s}
receivers: [{name: hook, webhook: {url: %s, format: generic}}]
route: {receiver: hook, group_wait: 0s}
rules:
  - alert: SliceFillingUp
    when: memory.used_percent > 80
    for: 1s
    severity: warning
  - alert: GPUHot
    when: temperature > 85
    for: 2s
    severity: critical
  - alert: GPUIdleButHeld
    when: memory.used > 1GiB and utilization.gpu < 5
    for: 2s
    severity: warning
`, filepath.Join(dir, "hub.db"), hubAddr, fleetSecret, prom.URL, hook.URL))
	hub := runInProcess(t, hubPath)
	defer hub.stop()

	want := []string{
		"firing SliceFillingUp g GPU 0 · MIG 7 (1g.10gb)", "firing SliceFillingUp m GPU 0 · MIG 7 (1g.10gb)",
		"firing GPUIdleButHeld h GPU 0 · MIG 1 (4g.40gb)", "firing GPUIdleButHeld n GPU 0 · MIG 1 (4g.40gb)",
	}
	fleettest.Eventually(t, 90*time.Second, "the leaking slice filling up and the idle slice, on both kinds of node", func() (bool, string) {
		got := hookAlerts(t, hook)
		return containsAll(got, want...), strings.Join(got, "\n")
	})
	first := map[string]string{} // host → its first SliceFillingUp
	for _, a := range hookAlerts(t, hook) {
		if !strings.Contains(a, " · MIG ") {
			t.Errorf("the hub sent %q: want alerts on slices only, not on the cards", a)
		}
		if strings.Contains(a, "GPUIdleButHeld") && strings.Contains(a, "1g.10gb") {
			t.Errorf("the hub sent %q: an A100 measures no slice's utilization", a)
		}
		if f := strings.Fields(a); f[1] == "SliceFillingUp" && first[f[2]] == "" {
			first[f[2]] = a
		}
	}
	for _, host := range []string{"g", "m"} {
		if want := "firing SliceFillingUp " + host + " GPU 0 · MIG 7 (1g.10gb)"; first[host] != want {
			t.Errorf("%s's first SliceFillingUp: %q, want %q (the first run's leak)", host, first[host], want)
		}
	}
	if !strings.Contains(requestBodies(hook), `"profile":"1g.10gb"`) {
		t.Errorf("the alerts do not carry the instance:\n%s", requestBodies(hook))
	}
	for host, wants := range map[string][]string{
		"g": {"1 GPU · 7 MIG instances", "MIG: 7 instances", "↳ *MIG 7 (1g.10gb)*", "↳ *MIG 13 (1g.10gb)*"},
		"m": {"1 GPU · 7 MIG instances", "MIG: 7 instances", "↳ *MIG 7 (1g.10gb)*", "↳ *MIG 13 (1g.10gb)*"},
		"h": {"1 GPU · 2 MIG instances", "↳ *MIG 1 (4g.40gb)*", "↳ *MIG 2 (3g.40gb)*"},
		"n": {"1 GPU · 2 MIG instances", "↳ *MIG 1 (4g.40gb)*", "↳ *MIG 2 (3g.40gb)*"},
	} {
		status := slashCommand(t, hubAddr, "status "+host)
		for _, want := range wants {
			if !strings.Contains(status, want) {
				t.Errorf("/gpu status %s on the hub: got %s\nwant %q", host, status, want)
			}
		}
	}
}
