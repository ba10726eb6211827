package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
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
	return fleetAgentAt(dir, host, scenario, addr, fleetSpeed)
}

// fleetSpeed is how many times faster than real time the fleet tests'
// agents run their scenario: a 2-hour scenario lasts 30 s, then starts
// again.
const fleetSpeed = 240

// fleetAgentAt is fleetAgent's config at another speed.
func fleetAgentAt(dir, host, scenario, addr string, speed int) string {
	return fmt.Sprintf(`host: %s
storage: {path: %s}
server: {listen: %q}
source: {type: sim, interval: 10s, sim: {scenario: %s, seed: 1, speed: %d}}
`, host, filepath.Join(dir, host+".db"), addr, scenario, speed)
}

// fleetHub is the config of a hub named name on promURL (gpuwatch agents
// and dcgm-exporters: schema auto), evaluating every second, with short
// rules for a test (a host down for 2 s is down), a generic webhook at
// hookURL, the Alertmanager at amURL, and the Slack app's signing secret.
func fleetHub(dir, name, promURL, hookURL, amURL, addr string) string {
	return fmt.Sprintf(`host: %s
storage: {path: %s}
server: {listen: %q}
slack: {signing_secret: %s}
source:
  type: prometheus
  interval: 1s
  prometheus: {url: %s, schema: auto, timeout: 900ms, host_down_for: 2s}
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

// dcgmExporter plays an NVIDIA dcgm-exporter 4 (host label hostname) on
// Kubernetes, host d, one GPU: while the pod ml/train-0 (container trainer)
// holds it, at 97.5 % of its memory; after, free and without a pod.
type dcgmExporter struct {
	*httptest.Server
	podGone atomic.Bool
}

func newDCGMExporter(t *testing.T) *dcgmExporter {
	e := &dcgmExporter{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		labels := `gpu="0",UUID="GPU-d0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="d",DCGM_FI_DRIVER_VERSION="550.54.15"`
		used, free := 78000, 1500
		if e.podGone.Load() {
			used, free = 100, 79400
		} else {
			labels += `,container="trainer",namespace="ml",pod="train-0"`
		}
		for _, s := range []struct {
			name  string
			value int
		}{{"DCGM_FI_DEV_FB_USED", used}, {"DCGM_FI_DEV_FB_FREE", free}, {"DCGM_FI_DEV_FB_RESERVED", 500},
			{"DCGM_FI_DEV_GPU_UTIL", 90}, {"DCGM_FI_DEV_GPU_TEMP", 60}} {
			fmt.Fprintf(w, "# TYPE %s gauge\n%s{%s} %d\n", s.name, s.name, labels, s.value)
		}
	}))
	t.Cleanup(e.Close)
	return e
}

// fleetLookback is Prometheus's lookback in the fleet test: an outage
// longer than it, then a restart, is what a Prometheus down for 6 minutes
// (its default lookback is 5) looks like, in seconds rather than minutes.
const fleetLookback = 5 * time.Second

// TestFleetOnRealPrometheus runs a fleet on the real engines: three
// gpuwatch agents on simulated GPUs as hosts a (a fan fails: GPU 0 runs
// hot), b (a batch fills GPU 0's memory) and c (healthy training), a
// dcgm-exporter on Kubernetes as host d (the pod ml/train-0 fills its GPU),
// the real Prometheus scraping them every second, two hubs on the
// prometheus source, and the real Alertmanager both push to, which sends
// to a webhook of its own. The hub's webhook gets GPUHot for a's GPU 0 and
// GPUMemoryNearFull for b's and d's GPU 0, nothing of c; Alertmanager shows
// each once, although two hubs push it (one reading Prometheus's answers
// gzipped, the other uncompressed); /gpu status, /gpu free and /gpu top
// on the hub cover the four hosts, top naming d's pod; when d's pod
// leaves, the resolve names it. When c's agent is killed, one GPUHostDown
// for c and no GPULost, in Alertmanager too, resolved when it is back.
// When Prometheus stops for longer than its lookback and restarts,
// GPUWatchSourceDown on the hub, about no GPU, resolved once Prometheus
// has scraped again, and no GPULost reaches the webhook or Alertmanager.
func TestFleetOnRealPrometheus(t *testing.T) {
	suites.Fleet(t) // the real Prometheus and Alertmanager, for about a minute
	dir := t.TempDir()
	hosts := map[string]string{"a": "thermal", "b": "batch-spike", "c": "normal-training"}
	addrs := map[string]string{}
	agents := map[string]*inProcess{}
	var targets []string
	for _, host := range []string{"a", "b", "c"} {
		addrs[host] = freeAddr(t)
		targets = append(targets, fmt.Sprintf("%q", addrs[host]))
	}
	dcgm := newDCGMExporter(t)
	prom := fleettest.PrometheusWith(t, fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 900ms}
scrape_configs:
  - job_name: gpuwatch
    static_configs: [{targets: [%s]}]
  - job_name: dcgm
    static_configs: [{targets: [%q]}]
`, strings.Join(targets, ", "), strings.TrimPrefix(dcgm.URL, "http://")),
		fleettest.PrometheusOptions{Flags: []string{"--query.lookback-delta=" + fleetLookback.String()}})
	for _, host := range []string{"a", "b", "c"} {
		path := filepath.Join(dir, host+".yaml")
		writeFile(t, path, fleetAgent(dir, host, hosts[host], addrs[host]))
		agents[host] = runInProcess(t, path)
	}
	// The hub starts once Prometheus has every agent's GPUs: before, its
	// first evaluation would rightly find no GPU series at all.
	fleettest.Eventually(t, 30*time.Second, "Prometheus to scrape the three agents and the dcgm-exporter", func() (bool, string) {
		got := promQuery(t, prom.URL, `count by (host) (gpuwatch_gpu_temperature_celsius) or count by (hostname) (DCGM_FI_DEV_FB_USED)`)
		return len(got) == 4, fmt.Sprint(got)
	})
	amHook := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 200} })
	am := fleettest.Alertmanager(t, fmt.Sprintf(`route: {receiver: hook, group_by: [alertname, host, gpu], group_wait: 0s, group_interval: 1s}
receivers: [{name: hook, webhook_configs: [{url: %q, send_resolved: true}]}]
`, amHook.URL))
	hook := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 200} })
	hubPath, hubAddr := filepath.Join(dir, "hub.yaml"), freeAddr(t)
	writeFile(t, hubPath, fleetHub(dir, "hub", prom.URL, hook.URL, am.URL, hubAddr))
	hub := runInProcess(t, hubPath)
	defer hub.stop()
	// A second hub, as a fleet runs two for availability: the same alerts
	// reach Alertmanager twice, and it shows each once. It sits beside
	// Prometheus and asks for its answers uncompressed; the first, gzipped.
	hook2 := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 200} })
	hub2Path := filepath.Join(dir, "hub2.yaml")
	hub2Config := strings.Replace(fleetHub(dir, "hub2", prom.URL, hook2.URL, am.URL, freeAddr(t)),
		"host_down_for: 2s}", "host_down_for: 2s, compression: none}", 1)
	if !strings.Contains(hub2Config, "compression: none") {
		t.Fatalf("the second hub's config does not ask for answers uncompressed:\n%s", hub2Config)
	}
	writeFile(t, hub2Path, hub2Config)
	hub2 := runInProcess(t, hub2Path)
	defer hub2.stop()

	firing := []string{"firing GPUHot a/0", "firing GPUMemoryNearFull b/0", "firing GPUMemoryNearFull d/0"}
	fleettest.Eventually(t, 60*time.Second, "GPUHot on a's GPU 0 and GPUMemoryNearFull on b's and d's", func() (bool, string) {
		got := hook.AlertLines(t)
		return containsAll(got, firing...), strings.Join(got, "\n")
	})
	for _, a := range hook.AlertLines(t) {
		if !strings.HasSuffix(a, " a/0") && !strings.HasSuffix(a, " b/0") && !strings.HasSuffix(a, " d/0") {
			t.Errorf("the hub sent %q: want alerts on a's, b's and d's GPU 0 only", a)
		}
	}
	fleettest.Eventually(t, 30*time.Second, "Alertmanager to show each alert once, from two hubs", func() (bool, string) {
		got, err := activeInAlertmanager(am)
		if err != nil {
			return false, err.Error()
		}
		return slices.Equal(got, []string{"GPUHot a/0", "GPUMemoryNearFull b/0", "GPUMemoryNearFull d/0"}), strings.Join(got, "\n")
	})
	fleettest.Eventually(t, 30*time.Second, "the second hub to send the same alerts", func() (bool, string) {
		got := hook2.AlertLines(t)
		return containsAll(got, firing...), strings.Join(got, "\n")
	})

	// The Slack app of the hub answers for the fleet.
	if status := slashCommand(t, hubAddr, "status"); !strings.Contains(status, "4 hosts") ||
		!strings.Contains(status, "*a*") || !strings.Contains(status, "*b*") || !strings.Contains(status, "*c*") || !strings.Contains(status, "*d*") {
		t.Errorf("/gpu status on the hub: got %s\nwant a line for each of hosts a, b, c and d", status)
	}
	if free := slashCommand(t, hubAddr, "free"); !strings.Contains(free, "all 7 GPUs are held") {
		t.Errorf("/gpu free on the hub: got %s\nwant it to count the seven GPUs of the four hosts", free)
	}
	if top := slashCommand(t, hubAddr, "top"); !strings.Contains(top, "pod ml/train-0, container trainer") || strings.Contains(top, "pid 0") {
		t.Errorf("/gpu top on the hub: got %s\nwant d's GPU held by the pod ml/train-0, container trainer", top)
	}
	// gpuwatch status asks the hub: every host, and the alerts with theirs.
	status := gpuwatch(t, "status", "--config", hubPath)
	for _, want := range []string{"a · ", "\nb · ", "\nc · ", "\nd · ", "GPUHot [critical] a GPU 0 since"} {
		if !strings.Contains(status.stdout, want) {
			t.Errorf("gpuwatch status --config hub.yaml: got\n%s\nwant it to contain %q", status.stdout, want)
		}
	}

	// d's pod leaves the GPU: the resolve names it.
	dcgm.podGone.Store(true)
	fleettest.Eventually(t, 30*time.Second, "GPUMemoryNearFull on d resolved, naming the pod", func() (bool, string) {
		got := hook.AlertLines(t)
		return slices.Contains(got, "resolved GPUMemoryNearFull d/0") && hookSaid(hook, "pod ml/train-0, container trainer exited"), strings.Join(got, "\n")
	})

	// c's agent is killed: Prometheus cannot scrape it (up is 0). One
	// alert for the host, none for its GPUs.
	if code := agents["c"].stop(); code != 0 {
		t.Errorf("agent c stopped with exit %d", code)
	}
	fleettest.Eventually(t, 30*time.Second, "GPUHostDown on c", func() (bool, string) {
		got := hook.AlertLines(t)
		return slices.Contains(got, "firing GPUHostDown c/-"), strings.Join(got, "\n")
	})
	fleettest.Eventually(t, 30*time.Second, "Alertmanager to show c down", func() (bool, string) {
		got, err := activeInAlertmanager(am)
		if err != nil {
			return false, err.Error()
		}
		return slices.Contains(got, "GPUHostDown c/"), strings.Join(got, "\n")
	})
	// c comes back: the hub resolves GPUHostDown, and Alertmanager no
	// longer holds it.
	agents["c"] = runInProcess(t, filepath.Join(dir, "c.yaml"))
	fleettest.Eventually(t, 45*time.Second, "GPUHostDown on c resolved", func() (bool, string) {
		got := hook.AlertLines(t)
		return slices.Contains(got, "resolved GPUHostDown c/-"), strings.Join(got, "\n")
	})
	fleettest.Eventually(t, 30*time.Second, "Alertmanager to let c go", func() (bool, string) {
		got, err := activeInAlertmanager(am)
		if err != nil {
			return false, err.Error()
		}
		return !slices.Contains(got, "GPUHostDown c/"), strings.Join(got, "\n")
	})
	if n := strings.Count(strings.Join(hook.AlertLines(t), "\n"), "firing GPUHostDown c/-"); n != 1 {
		t.Errorf("GPUHostDown on c fired %d times, want once", n)
	}

	// Prometheus stops for longer than its lookback, then restarts: its
	// first answers hold no series, or some hosts' only.
	prom.Stop()
	fleettest.Eventually(t, 30*time.Second, "GPUWatchSourceDown", func() (bool, string) {
		got := hook.AlertLines(t)
		return slices.Contains(got, "firing GPUWatchSourceDown hub/-"), strings.Join(got, "\n")
	})
	if !strings.Contains(hub.stderr.String(), "the source does not answer") {
		t.Errorf("the hub's log does not say the source is down:\n%s", hub.stderr.String())
	}
	time.Sleep(2 * fleetLookback)
	prom.Restart()
	fleettest.Eventually(t, 60*time.Second, "GPUWatchSourceDown resolved on both hubs", func() (bool, string) {
		got, got2 := hook.AlertLines(t), hook2.AlertLines(t)
		return slices.Contains(got, "resolved GPUWatchSourceDown hub/-") && slices.Contains(got2, "resolved GPUWatchSourceDown hub2/-"),
			strings.Join(got, "\n") + "\n--\n" + strings.Join(got2, "\n")
	})
	time.Sleep(5 * time.Second) // past missing_for (3s) and Alertmanager's group_interval
	for name, h := range map[string]*notifiertest.Server{"hub's webhook": hook, "second hub's webhook": hook2, "Alertmanager's webhook": amHook} {
		if hookSaid(h, "GPULost") {
			t.Errorf("GPULost reached the %s:\n%s", name, requestBodies(h))
		}
	}
	if n := strings.Count(strings.Join(hook.AlertLines(t), "\n"), "firing GPUWatchSourceDown"); n != 1 {
		t.Errorf("GPUWatchSourceDown sent %d times, want once", n)
	}
	got, err := activeInAlertmanager(am)
	if err != nil || slices.ContainsFunc(got, func(a string) bool { return strings.HasPrefix(a, "GPULost") }) {
		t.Errorf("Alertmanager holds %q (%v), want no GPULost", got, err)
	}
}

// containsAll reports whether every one of want is in got.
func containsAll(got []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}

// hookSaid reports whether any request the server received holds text.
func hookSaid(s *notifiertest.Server, text string) bool {
	return strings.Contains(requestBodies(s), text)
}

func requestBodies(s *notifiertest.Server) string {
	var b strings.Builder
	for _, r := range s.Requests() {
		b.Write(r.Body)
		b.WriteByte('\n')
	}
	return b.String()
}

// fleetAgents starts a gpuwatch agent for each host, on the sim scenario
// of the same place (its config is dir/HOST.yaml), and the real Prometheus
// scraping them every second; it returns once Prometheus has every
// agent's GPUs: a hub started before would rightly find no GPU series at
// all on its first evaluation.
func fleetAgents(t *testing.T, dir string, hosts, scenarios []string) (*fleettest.Server, map[string]*inProcess) {
	t.Helper()
	addrs := map[string]string{}
	var targets []string
	for _, host := range hosts {
		addrs[host] = freeAddr(t)
		targets = append(targets, fmt.Sprintf("%q", addrs[host]))
	}
	prom := fleettest.Prometheus(t, fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 900ms}
scrape_configs:
  - job_name: gpuwatch
    static_configs: [{targets: [%s]}]
`, strings.Join(targets, ", ")))
	agents := map[string]*inProcess{}
	for i, host := range hosts {
		path := filepath.Join(dir, host+".yaml")
		writeFile(t, path, fleetAgent(dir, host, scenarios[i], addrs[host]))
		agents[host] = runInProcess(t, path)
	}
	fleettest.Eventually(t, 30*time.Second, fmt.Sprintf("Prometheus to scrape the %d agents", len(hosts)), func() (bool, string) {
		got := promQuery(t, prom.URL, `count by (host) (gpuwatch_gpu_temperature_celsius)`)
		return len(got) == len(hosts), fmt.Sprint(got)
	})
	return prom, agents
}

// promQuery runs an instant query on Prometheus (or VictoriaMetrics,
// told to answer as of now: nocache) and returns the label sets of the
// answer; nil when it does not answer.
func promQuery(t *testing.T, base, query string) []map[string]string {
	resp, err := http.Get(base + "/api/v1/query?nocache=1&query=" + url.QueryEscape(query))
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
