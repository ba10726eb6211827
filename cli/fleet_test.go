package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/fleettest"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// fleetAgent is the config of a gpuwatch agent on the sim source: host,
// scenario, 10 simulated seconds a sample at 240 times real time (a two
// hour scenario in 30 seconds), no rules, /metrics on addr.
func fleetAgent(dir, host, scenario, addr string) string {
	return fmt.Sprintf(`host: %s
storage: {path: %s}
server: {listen: %q}
source: {type: sim, interval: 10s, sim: {scenario: %s, seed: 1, speed: 240}}
`, host, filepath.Join(dir, host+".db"), addr, scenario)
}

// fleetHub is the config of a hub on promURL, evaluating every second,
// with short rules for a test and a generic webhook at hookURL.
func fleetHub(dir, promURL, hookURL, addr string) string {
	return fmt.Sprintf(`host: hub
storage: {path: %s}
server: {listen: %q}
source:
  type: prometheus
  interval: 1s
  prometheus: {url: %s, schema: gpuwatch, timeout: 900ms}
receivers:
  - name: hook
    webhook: {url: %s, format: generic}
route: {receiver: hook, group_wait: 0s}
rules:
  - alert: GPUHot
    when: temperature > 85
    for: 2s
    severity: critical
  - alert: GPUMemoryNearFull
    when: memory.used_percent > 95
    for: 2s
    severity: critical
  - alert: GPULost
    when: missing_for > 3s
    severity: critical
`, filepath.Join(dir, "hub.db"), addr, promURL, hookURL)
}

// TestFleetOnRealPrometheus runs three gpuwatch agents on simulated GPUs
// as hosts a (a fan fails: GPU 0 runs hot), b (a batch fills GPU 0's
// memory) and c (healthy training), the real Prometheus scraping their
// /metrics every second, and a hub on the prometheus source: the hub's
// webhook gets GPUHot for a's GPU 0 and GPUMemoryNearFull for b's GPU 0,
// nothing of c; when c's agent stops, GPULost for both of c's GPUs; when
// Prometheus stops, GPUWatchSourceDown on the hub, about no GPU.
func TestFleetOnRealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("the fleet test runs the real Prometheus for about a minute")
	}
	dir := t.TempDir()
	hosts := map[string]string{"a": "thermal", "b": "batch-spike", "c": "normal-training"}
	addrs := map[string]string{}
	agents := map[string]*inProcess{}
	var targets []string
	for _, host := range []string{"a", "b", "c"} {
		addrs[host] = freeAddr(t)
		targets = append(targets, fmt.Sprintf("%q", addrs[host]))
	}
	prom := fleettest.Prometheus(t, fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 900ms}
scrape_configs:
  - job_name: gpuwatch
    static_configs: [{targets: [%s]}]
`, strings.Join(targets, ", ")))
	for _, host := range []string{"a", "b", "c"} {
		path := filepath.Join(dir, host+".yaml")
		writeFile(t, path, fleetAgent(dir, host, hosts[host], addrs[host]))
		agents[host] = runInProcess(t, path)
	}
	// The hub starts once Prometheus has every agent's GPUs: before, its
	// first evaluation would rightly find no GPU series at all.
	fleettest.Eventually(t, 30*time.Second, "Prometheus to scrape the three agents", func() (bool, string) {
		got := promQuery(t, prom.URL, `count by (host) (gpuwatch_gpu_temperature_celsius)`)
		return len(got) == 3, fmt.Sprint(got)
	})
	hook := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 200} })
	hubPath := filepath.Join(dir, "hub.yaml")
	writeFile(t, hubPath, fleetHub(dir, prom.URL, hook.URL, freeAddr(t)))
	hub := runInProcess(t, hubPath)
	defer hub.stop()

	fleettest.Eventually(t, 60*time.Second, "GPUHot on a's GPU 0 and GPUMemoryNearFull on b's", func() (bool, string) {
		got := hook.AlertLines(t)
		return slices.Contains(got, "firing GPUHot a/0") && slices.Contains(got, "firing GPUMemoryNearFull b/0"), strings.Join(got, "\n")
	})
	for _, a := range hook.AlertLines(t) {
		if !strings.HasSuffix(a, " a/0") && !strings.HasSuffix(a, " b/0") {
			t.Errorf("the hub sent %q: want alerts on a's and b's GPU 0 only", a)
		}
	}
	// gpuwatch status asks the hub: every host, and the alerts with theirs.
	status := gpuwatch(t, "status", "--config", hubPath)
	for _, want := range []string{"a · ", "\nb · ", "\nc · ", "GPUHot [critical] a gpu0 since"} {
		if !strings.Contains(status.stdout, want) {
			t.Errorf("gpuwatch status --config hub.yaml: got\n%s\nwant it to contain %q", status.stdout, want)
		}
	}

	if code := agents["c"].stop(); code != 0 {
		t.Errorf("agent c stopped with exit %d", code)
	}
	fleettest.Eventually(t, 30*time.Second, "GPULost on c's two GPUs", func() (bool, string) {
		got := hook.AlertLines(t)
		return slices.Contains(got, "firing GPULost c/0") && slices.Contains(got, "firing GPULost c/1"), strings.Join(got, "\n")
	})

	prom.Stop()
	fleettest.Eventually(t, 30*time.Second, "GPUWatchSourceDown", func() (bool, string) {
		got := hook.AlertLines(t)
		return slices.Contains(got, "firing GPUWatchSourceDown hub/-"), strings.Join(got, "\n")
	})
	if !strings.Contains(hub.stderr.String(), "the source does not answer") {
		t.Errorf("the hub's log does not say the source is down:\n%s", hub.stderr.String())
	}
	if n := strings.Count(strings.Join(hook.AlertLines(t), "\n"), "GPUWatchSourceDown"); n != 1 {
		t.Errorf("GPUWatchSourceDown sent %d times, want once", n)
	}
}

// promQuery runs an instant query on Prometheus and returns the label
// sets of the answer; nil when it does not answer.
func promQuery(t *testing.T, base, query string) []map[string]string {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var answer struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, r := range answer.Data.Result {
		out = append(out, r.Metric)
	}
	return out
}
