package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/fleettest"
	"github.com/gpuwatch/gpuwatch/internal/suites"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
	"github.com/gpuwatch/gpuwatch/slackbot"
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

// fleetHub is the config of a hub named name on promURL, evaluating every
// second, with short rules for a test, a generic webhook at hookURL, the
// Alertmanager at amURL, and the Slack app's signing secret.
func fleetHub(dir, name, promURL, hookURL, amURL, addr string) string {
	return fmt.Sprintf(`host: %s
storage: {path: %s}
server: {listen: %q}
slack: {signing_secret: %s}
source:
  type: prometheus
  interval: 1s
  prometheus: {url: %s, schema: gpuwatch, timeout: 900ms}
receivers:
  - name: hook
    webhook: {url: %s, format: generic}
  - name: am
    alertmanager: {urls: [%s], resend_interval: 1s}
route:
  receiver: hook
  group_wait: 0s
  routes:
    - {matchers: ['alert=~".+"'], receiver: hook, continue: true}
    - {matchers: ['alert=~".+"'], receiver: am}
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
`, name, filepath.Join(dir, name+".db"), addr, fleetSecret, promURL, hookURL, amURL)
}

// fleetSecret is the hubs' Slack signing secret.
const fleetSecret = "fleet-test-signing-secret"

// slashCommand posts /gpu text, signed, to the hub's Slack app and returns
// the text of its answer.
func slashCommand(t *testing.T, hubAddr, text string) string {
	t.Helper()
	body := url.Values{"team_id": {"T1"}, "channel_id": {"C0GPU"}, "channel_name": {"gpu"}, "user_id": {"U1"},
		"user_name": {"alice"}, "command": {"/gpu"}, "text": {text}, "trigger_id": {"1.2." + text}}.Encode()
	req, err := http.NewRequest(http.MethodPost, "http://"+hubAddr+"/slack/commands", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("X-Slack-Signature", slackbot.Sign(fleetSecret, now, []byte(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/gpu %s: HTTP %d %s", text, resp.StatusCode, answer)
	}
	return string(answer)
}

// activeInAlertmanager lists the alerts Alertmanager holds as active, as
// "alertname host/gpu", each as often as Alertmanager holds it.
func activeInAlertmanager(am *fleettest.Server) ([]string, error) {
	alerts, err := am.Alerts()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range alerts {
		if a.Status.State == "active" {
			out = append(out, a.Labels["alertname"]+" "+a.Labels["host"]+"/"+a.Labels["gpu"])
		}
	}
	slices.Sort(out)
	return out, nil
}

// TestFleetOnRealPrometheus runs a fleet on the real engines: three
// gpuwatch agents on simulated GPUs as hosts a (a fan fails: GPU 0 runs
// hot), b (a batch fills GPU 0's memory) and c (healthy training), the real
// Prometheus scraping their /metrics every second, two hubs on the
// prometheus source, and the real Alertmanager both push to. The hub's
// webhook gets GPUHot for a's GPU 0 and GPUMemoryNearFull for b's GPU 0,
// nothing of c; Alertmanager shows each once, although two hubs push it;
// /gpu status and /gpu free on the hub cover the three hosts; when c's
// agent stops, GPULost for both of c's GPUs, in Alertmanager too, and
// resolved there when it is back; when Prometheus stops,
// GPUWatchSourceDown on the hub, about no GPU.
func TestFleetOnRealPrometheus(t *testing.T) {
	suites.Fleet(t) // the real Prometheus, for about a minute
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
	am := fleettest.Alertmanager(t, "route: {receiver: none}\nreceivers: [{name: none}]\n")
	hook := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 200} })
	hubPath, hubAddr := filepath.Join(dir, "hub.yaml"), freeAddr(t)
	writeFile(t, hubPath, fleetHub(dir, "hub", prom.URL, hook.URL, am.URL, hubAddr))
	hub := runInProcess(t, hubPath)
	defer hub.stop()
	// A second hub, as a fleet runs two for availability: the same alerts
	// reach Alertmanager twice, and it shows each once.
	hook2 := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 200} })
	hub2Path := filepath.Join(dir, "hub2.yaml")
	writeFile(t, hub2Path, fleetHub(dir, "hub2", prom.URL, hook2.URL, am.URL, freeAddr(t)))
	hub2 := runInProcess(t, hub2Path)
	defer hub2.stop()

	fleettest.Eventually(t, 60*time.Second, "GPUHot on a's GPU 0 and GPUMemoryNearFull on b's", func() (bool, string) {
		got := hook.AlertLines(t)
		return slices.Contains(got, "firing GPUHot a/0") && slices.Contains(got, "firing GPUMemoryNearFull b/0"), strings.Join(got, "\n")
	})
	for _, a := range hook.AlertLines(t) {
		if !strings.HasSuffix(a, " a/0") && !strings.HasSuffix(a, " b/0") {
			t.Errorf("the hub sent %q: want alerts on a's and b's GPU 0 only", a)
		}
	}
	fleettest.Eventually(t, 30*time.Second, "Alertmanager to show each alert once, from two hubs", func() (bool, string) {
		got, err := activeInAlertmanager(am)
		if err != nil {
			return false, err.Error()
		}
		return slices.Equal(got, []string{"GPUHot a/0", "GPUMemoryNearFull b/0"}), strings.Join(got, "\n")
	})
	fleettest.Eventually(t, 30*time.Second, "the second hub to send the same alerts", func() (bool, string) {
		got := hook2.AlertLines(t)
		return slices.Contains(got, "firing GPUHot a/0") && slices.Contains(got, "firing GPUMemoryNearFull b/0"), strings.Join(got, "\n")
	})

	// The Slack app of the hub answers for the fleet.
	if status := slashCommand(t, hubAddr, "status"); !strings.Contains(status, "3 hosts") ||
		!strings.Contains(status, "*a*") || !strings.Contains(status, "*b*") || !strings.Contains(status, "*c*") {
		t.Errorf("/gpu status on the hub: got %s\nwant a line for each of hosts a, b and c", status)
	}
	if free := slashCommand(t, hubAddr, "free"); !strings.Contains(free, "all 6 GPUs are held") {
		t.Errorf("/gpu free on the hub: got %s\nwant it to count the six GPUs of the three hosts", free)
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
	fleettest.Eventually(t, 30*time.Second, "Alertmanager to show c's lost GPUs", func() (bool, string) {
		got, err := activeInAlertmanager(am)
		if err != nil {
			return false, err.Error()
		}
		return slices.Contains(got, "GPULost c/0") && slices.Contains(got, "GPULost c/1"), strings.Join(got, "\n")
	})
	// c comes back: its GPUs report again, the hub resolves GPULost, and
	// Alertmanager no longer holds it.
	agents["c"] = runInProcess(t, filepath.Join(dir, "c.yaml"))
	fleettest.Eventually(t, 45*time.Second, "GPULost on c resolved", func() (bool, string) {
		got := hook.AlertLines(t)
		return slices.Contains(got, "resolved GPULost c/0") && slices.Contains(got, "resolved GPULost c/1"), strings.Join(got, "\n")
	})
	fleettest.Eventually(t, 30*time.Second, "Alertmanager to let c's lost GPUs go", func() (bool, string) {
		got, err := activeInAlertmanager(am)
		if err != nil {
			return false, err.Error()
		}
		return !slices.Contains(got, "GPULost c/0") && !slices.Contains(got, "GPULost c/1"), strings.Join(got, "\n")
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
