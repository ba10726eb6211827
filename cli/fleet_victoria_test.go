package cli_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/fleettest"
	"github.com/gpuwatch/gpuwatch/internal/suites"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// vmalertRules are the rules vmalert evaluates in the fleet test, as
// `gpuwatch rules export --target vmalert` writes them: two of the hub's,
// GPUHot with the example rule's hysteresis.
const vmalertRules = `rules:
  - alert: GPUHot
    when: temperature > 85
    clear_when: temperature < 80
    for: 2s
    severity: critical
  - alert: GPUMemoryNearFull
    when: memory.used_percent > 95
    for: 2s
    severity: critical
`

// vmOutage is how long VictoriaMetrics is down in the fleet test: longer
// than the hub's host_down_for and the rules' missing_for, and than
// vmalert's resolve time were it not sending its alerts every resend delay.
const vmOutage = 10 * time.Second

// victoriaSpeed is the agents' speed in the VictoriaMetrics fleet test: a
// scenario lasts 72 s before it starts again, past VictoriaMetrics' restart,
// so that the alerts it raised still hold then.
const victoriaSpeed = 100

// resolvedDuring are the alerts of an Alertmanager webhook notification
// that resolved between from and to.
func resolvedDuring(t *testing.T, body []byte, from, to time.Time) []fleettest.Alert {
	var n struct {
		Alerts []struct {
			Status string `json:"status"`
			fleettest.Alert
		} `json:"alerts"`
	}
	if err := json.Unmarshal(body, &n); err != nil {
		t.Fatalf("Alertmanager's notification %s: %v", body, err)
	}
	var out []fleettest.Alert
	for _, a := range n.Alerts {
		if a.Status == "resolved" && !a.EndsAt.Before(from) && a.EndsAt.Before(to) {
			out = append(out, a.Alert)
		}
	}
	return out
}

// activeBy lists the alerts Alertmanager holds as active, as
// "alertname host/gpu": vmalert's (they carry its alertgroup label) or the
// hubs'.
func activeBy(am *fleettest.Server, vmalert bool) ([]string, error) {
	alerts, err := am.Alerts()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range alerts {
		if _, fromVMAlert := a.Labels["alertgroup"]; a.Status.State == "active" && fromVMAlert == vmalert {
			out = append(out, a.Labels["alertname"]+" "+a.Labels["host"]+"/"+a.Labels["gpu"])
		}
	}
	slices.Sort(out)
	return out, nil
}

// TestFleetOnVictoriaMetrics runs a fleet on VictoriaMetrics, from
// Debian's victoria-metrics: two gpuwatch agents on simulated GPUs as
// hosts a (a fan fails: GPU 0 runs hot) and b (a batch fills GPU 0's
// memory), scraped every second by vmagent, which writes them into
// VictoriaMetrics; a hub reading the fleet from VictoriaMetrics' query
// API; vmalert evaluating the rules `gpuwatch rules export --target
// vmalert` wrote, against VictoriaMetrics; and the real Alertmanager both
// push to. The hub sends GPUHot for a's GPU 0 and GPUMemoryNearFull for
// b's, nothing else, and Alertmanager shows them once; vmalert's alerts of
// the same rules reach Alertmanager too. When VictoriaMetrics is stopped
// (as systemctl stops it) for longer than the hub's host_down_for and restarts, GPUWatchSourceDown on
// the hub, once, resolved once it answers again, and nothing else pages:
// no GPULost, and vmalert's alerts do not resolve while it is down and are
// still in Alertmanager after. When b's agent is killed, one GPUHostDown for b,
// in Alertmanager too, and no GPULost, resolved when it is back.
func TestFleetOnVictoriaMetrics(t *testing.T) {
	suites.Fleet(t) // VictoriaMetrics, vmagent, vmalert and Alertmanager, for about a minute
	dir := t.TempDir()
	vm := fleettest.VictoriaMetrics(t)
	addrs := map[string]string{"a": freeAddr(t), "b": freeAddr(t)}
	fleettest.VMAgent(t, fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 900ms}
scrape_configs:
  - job_name: gpuwatch
    static_configs: [{targets: [%q, %q]}]
`, addrs["a"], addrs["b"]), vm.URL+"/api/v1/write", "-remoteWrite.flushInterval=1s")
	agents := map[string]*inProcess{}
	for host, scenario := range map[string]string{"a": "thermal", "b": "batch-spike"} {
		path := filepath.Join(dir, host+".yaml")
		writeFile(t, path, fleetAgentAt(dir, host, scenario, addrs[host], victoriaSpeed))
		agents[host] = runInProcess(t, path)
	}
	fleettest.Eventually(t, 30*time.Second, "VictoriaMetrics to have both agents' GPUs", func() (bool, string) {
		got := promQuery(t, vm.URL, `count by (host) (gpuwatch_gpu_temperature_celsius)`)
		return len(got) == 2, fmt.Sprint(got)
	})

	amHook := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 200} })
	am := fleettest.Alertmanager(t, fmt.Sprintf(`route: {receiver: hook, group_by: [alertname, host, gpu, alertgroup], group_wait: 0s, group_interval: 1s}
receivers: [{name: hook, webhook_configs: [{url: %q, send_resolved: true}]}]
`, amHook.URL))

	// vmalert evaluates the exported rules every second.
	rulesPath := filepath.Join(dir, "rules.yaml")
	writeFile(t, rulesPath, vmalertRules)
	export := gpuwatch(t, "rules", "export", "--schema", "gpuwatch", "--target", "vmalert", "--interval", "1s", "--config", rulesPath)
	if export.code != 0 {
		t.Fatalf("rules export --target vmalert: exit %d\n%s", export.code, export.stderr)
	}
	// Its alerts last 4 resend delays in Alertmanager unless sent again:
	// long enough to ride out VictoriaMetrics' restart below.
	fleettest.VMAlert(t, fleettest.VMAlertOptions{Rules: map[string]string{"gpuwatch.rules.yml": export.stdout},
		VictoriaMetrics: vm.URL, Alertmanager: am.URL, Flags: []string{"-remoteWrite.flushInterval=1s", "-rule.resendDelay=15s"}})

	hook := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 200} })
	hubPath := filepath.Join(dir, "hub.yaml")
	writeFile(t, hubPath, fleetHub(dir, "hub", vm.URL, hook.URL, am.URL, freeAddr(t)))
	hub := runInProcess(t, hubPath)
	defer hub.stop()

	firing := []string{"firing GPUHot a/0", "firing GPUMemoryNearFull b/0"}
	fleettest.Eventually(t, 60*time.Second, "GPUHot on a's GPU 0 and GPUMemoryNearFull on b's", func() (bool, string) {
		got := hook.AlertLines(t)
		return containsAll(got, firing...), strings.Join(got, "\n")
	})
	for _, a := range hook.AlertLines(t) {
		if !strings.HasSuffix(a, " a/0") && !strings.HasSuffix(a, " b/0") {
			t.Errorf("the hub sent %q: want alerts on a's and b's GPU 0 only", a)
		}
	}
	want := []string{"GPUHot a/0", "GPUMemoryNearFull b/0"}
	for _, fromVMAlert := range []bool{false, true} {
		fleettest.Eventually(t, 60*time.Second, fmt.Sprintf("Alertmanager to show each alert once (from vmalert: %v)", fromVMAlert), func() (bool, string) {
			got, err := activeBy(am, fromVMAlert)
			if err != nil {
				return false, err.Error()
			}
			return slices.Equal(got, want), strings.Join(got, "\n")
		})
	}

	// vmalert keeps its alerts' state in VictoriaMetrics: the ALERTS
	// series, which the hysteresis of GPUHot's clear_when reads. Once it
	// is there, VictoriaMetrics is stopped as an operator stops it, and
	// restarted; vmagent keeps what it scrapes meanwhile and sends it
	// then. (Killed, VictoriaMetrics loses its last seconds of data, an
	// alert's first ALERTS samples among them: docs/fleet.md says so.)
	fleettest.Eventually(t, 30*time.Second, "vmalert's firing alerts in VictoriaMetrics", func() (bool, string) {
		got := promQuery(t, vm.URL, `ALERTS{alertstate="firing"}`)
		return len(got) == len(want), fmt.Sprint(got)
	})
	sentBefore := len(amHook.Requests())
	stopped := time.Now()
	vm.Terminate()
	fleettest.Eventually(t, 30*time.Second, "GPUWatchSourceDown", func() (bool, string) {
		got := hook.AlertLines(t)
		return slices.Contains(got, "firing GPUWatchSourceDown hub/-"), strings.Join(got, "\n")
	})
	time.Sleep(vmOutage)
	vm.Restart()
	restarted := time.Now()
	fleettest.Eventually(t, 60*time.Second, "GPUWatchSourceDown resolved", func() (bool, string) {
		got := hook.AlertLines(t)
		return slices.Contains(got, "resolved GPUWatchSourceDown hub/-"), strings.Join(got, "\n")
	})
	time.Sleep(5 * time.Second) // past missing_for (3s) and Alertmanager's group_interval
	if hookSaid(hook, "GPULost") {
		t.Errorf("GPULost reached the hub's webhook:\n%s", requestBodies(hook))
	}
	if n := strings.Count(strings.Join(hook.AlertLines(t), "\n"), "firing GPUWatchSourceDown"); n != 1 {
		t.Errorf("GPUWatchSourceDown sent %d times, want once", n)
	}
	for _, r := range amHook.Requests()[sentBefore:] {
		if strings.Contains(string(r.Body), "GPULost") {
			t.Errorf("Alertmanager sent, after VictoriaMetrics' restart: %s\nwant nothing of GPULost", r.Body)
		}
		for _, a := range resolvedDuring(t, r.Body, stopped, restarted) {
			if _, fromVMAlert := a.Labels["alertgroup"]; fromVMAlert {
				t.Errorf("vmalert's %s on %s/%s resolved at %v, while VictoriaMetrics was down: want its alerts to hold through an outage",
					a.Labels["alertname"], a.Labels["host"], a.Labels["gpu"], a.EndsAt)
			}
		}
	}
	fleettest.Eventually(t, 30*time.Second, "Alertmanager to hold vmalert's alerts after VictoriaMetrics' restart", func() (bool, string) {
		got, err := activeBy(am, true)
		if err != nil {
			return false, err.Error()
		}
		return slices.Equal(got, want), strings.Join(got, "\n")
	})

	// b's agent is killed: vmagent cannot scrape it (up is 0). One alert
	// for the host, none for its GPUs.
	if code := agents["b"].stop(); code != 0 {
		t.Errorf("agent b stopped with exit %d", code)
	}
	fleettest.Eventually(t, 30*time.Second, "GPUHostDown on b", func() (bool, string) {
		got := hook.AlertLines(t)
		return slices.Contains(got, "firing GPUHostDown b/-"), strings.Join(got, "\n")
	})
	fleettest.Eventually(t, 30*time.Second, "Alertmanager to show b down", func() (bool, string) {
		got, err := activeBy(am, false)
		if err != nil {
			return false, err.Error()
		}
		return slices.Contains(got, "GPUHostDown b/"), strings.Join(got, "\n")
	})
	agents["b"] = runInProcess(t, filepath.Join(dir, "b.yaml"))
	fleettest.Eventually(t, 45*time.Second, "GPUHostDown on b resolved", func() (bool, string) {
		got := hook.AlertLines(t)
		return slices.Contains(got, "resolved GPUHostDown b/-"), strings.Join(got, "\n")
	})
	if n := strings.Count(strings.Join(hook.AlertLines(t), "\n"), "firing GPUHostDown b/-"); n != 1 {
		t.Errorf("GPUHostDown on b fired %d times, want once", n)
	}
}
