package daemon_test

import (
	"fmt"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/internal/fleettest"
	"github.com/gpuwatch/gpuwatch/internal/suites"
)

// The tests here run gpuwatch in-process against the real Alertmanager
// (internal/fleettest), on the wall clock: Alertmanager judges endsAt by
// its own.

// amConfig is an Alertmanager that keeps alerts and sends them nowhere.
const amConfig = "route: {receiver: none}\nreceivers: [{name: none}]\n"

// amAlert is an alert as Alertmanager's GET /api/v2/alerts shows it.
type amAlert = fleettest.Alert

// amAlerts returns the alerts an Alertmanager holds.
func amAlerts(am *fleettest.Server) ([]amAlert, error) { return am.Alerts() }

// waitAlerts waits until the Alertmanager shows exactly want active
// alerts, and returns them.
func waitAlerts(t *testing.T, am *fleettest.Server, want int, what string) []amAlert {
	t.Helper()
	var got []amAlert
	fleettest.Eventually(t, 20*time.Second, what, func() (bool, string) {
		var err error
		if got, err = amAlerts(am); err != nil {
			return false, err.Error()
		}
		active := 0
		for _, a := range got {
			if a.Status.State == "active" {
				active++
			}
		}
		return active == want && len(got) == want, fmt.Sprintf("%d alerts: %+v", len(got), got)
	})
	return got
}

// amGpuwatch is a gpuwatch config that sends GPUHot to an alertmanager
// receiver with the given block (urls and the rest), in dir.
func amGpuwatch(t *testing.T, dir, block string) *config.Config {
	t.Helper()
	return parseConfig(t, dir, fmt.Sprintf(`
source:
  type: sim
receivers:
  - name: am
    alertmanager: %s
route:
  receiver: am
  group_wait: 0s
%s`, block, hotRule), nil)
}

// wantGPUHot checks an alert is GPU 0's GPUHot on node1 as gpuwatch pushes it.
func wantGPUHot(t *testing.T, a amAlert, generator string) {
	t.Helper()
	want := map[string]string{"alertname": "GPUHot", "host": "node1", "gpu": "0",
		"uuid": "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd", "severity": "critical"}
	if fmt.Sprint(a.Labels) != fmt.Sprint(want) {
		t.Errorf("labels: got %v, want %v", a.Labels, want)
	}
	if a.Annotations["summary"] != "GPU 0 is hot" {
		t.Errorf("annotations: got %v, want summary %q", a.Annotations, "GPU 0 is hot")
	}
	if a.GeneratorURL != generator {
		t.Errorf("generatorURL: got %q, want %q", a.GeneratorURL, generator)
	}
	ls := model.LabelSet{}
	for k, v := range a.Labels {
		ls[model.LabelName(k)] = model.LabelValue(v)
	}
	if a.Fingerprint != ls.Fingerprint().String() {
		t.Errorf("fingerprint: Alertmanager has %q, the label set's is %q", a.Fingerprint, ls.Fingerprint())
	}
}

// TestAlertmanagerFiresAndResolves: a firing alert shows in Alertmanager
// with its labels, annotations and link back; its resolve takes it away.
func TestAlertmanagerFiresAndResolves(t *testing.T) {
	suites.Fleet(t)
	am := fleettest.Alertmanager(t, amConfig)
	r := start(t, amGpuwatch(t, t.TempDir(), fmt.Sprintf("{urls: [%s], generator_url: 'http://gpuwatch.test:9477'}", am.URL)), nil)
	fired := time.Now().UTC().Truncate(time.Millisecond)
	r.D.Step(snapshot(fired, 90))
	got := waitAlerts(t, am, 1, "GPUHot active in Alertmanager")
	wantGPUHot(t, got[0], "http://gpuwatch.test:9477/api/v1/alerts")
	if !got[0].StartsAt.Equal(fired) {
		t.Errorf("startsAt: got %v, want %v, when it fired", got[0].StartsAt, fired)
	}
	if min, max := time.Now().Add(3*time.Minute), time.Now().Add(4*time.Minute); got[0].EndsAt.Before(min) || got[0].EndsAt.After(max) {
		t.Errorf("endsAt: got %v, want about now + 4 × resend_interval (4m)", got[0].EndsAt)
	}
	r.D.Step(snapshot(time.Now().UTC(), 50))
	waitAlerts(t, am, 0, "GPUHot resolved in Alertmanager")
}

// TestAlertmanagerOneAlertFromTwoGpuwatch: two gpuwatch pushing the same
// alert (a hub and its standby) make one alert: Alertmanager dedups by
// label set.
func TestAlertmanagerOneAlertFromTwoGpuwatch(t *testing.T) {
	suites.Fleet(t)
	am := fleettest.Alertmanager(t, amConfig)
	block := fmt.Sprintf("{urls: [%s]}", am.URL)
	a := start(t, amGpuwatch(t, t.TempDir(), block), nil)
	b := start(t, amGpuwatch(t, t.TempDir(), block), nil)
	a.D.Step(snapshot(time.Now().UTC(), 90))
	time.Sleep(100 * time.Millisecond) // b fires a little later, as a standby does
	b.D.Step(snapshot(time.Now().UTC(), 90))
	a.Drain()
	b.Drain()
	got := waitAlerts(t, am, 1, "one GPUHot from two gpuwatch")
	wantGPUHot(t, got[0], "http://127.0.0.1:0/api/v1/alerts") // server.listen of both
	a.D.Step(snapshot(time.Now().UTC(), 50))
	b.D.Step(snapshot(time.Now().UTC(), 50))
	waitAlerts(t, am, 0, "GPUHot resolved by both")
}

// TestAlertmanagerHAPair: both Alertmanagers of a gossiping HA pair get
// every alert and every resolve.
func TestAlertmanagerHAPair(t *testing.T) {
	suites.Fleet(t)
	peer1, peer2 := fleettest.FreeAddr(t), fleettest.FreeAddr(t)
	am1 := fleettest.Alertmanager(t, amConfig, peer1, peer2)
	am2 := fleettest.Alertmanager(t, amConfig, peer2, peer1)
	r := start(t, amGpuwatch(t, t.TempDir(), fmt.Sprintf("{urls: [%s, %s]}", am1.URL, am2.URL)), nil)
	r.D.Step(snapshot(time.Now().UTC(), 90))
	for _, am := range []*fleettest.Server{am1, am2} {
		wantGPUHot(t, waitAlerts(t, am, 1, "GPUHot active in "+am.Addr)[0], "http://127.0.0.1:0/api/v1/alerts")
	}
	r.D.Step(snapshot(time.Now().UTC(), 50))
	for _, am := range []*fleettest.Server{am1, am2} {
		waitAlerts(t, am, 0, "GPUHot resolved in "+am.Addr)
	}
}

// TestAlertmanagerResend: re-sends keep a firing alert alive well past
// the 4 × resend_interval it would live without them; once gpuwatch is
// gone, Alertmanager lets it expire; gpuwatch restarted on its store
// pushes it again at once, with no new transition.
func TestAlertmanagerResend(t *testing.T) {
	suites.Fleet(t)
	am := fleettest.Alertmanager(t, amConfig)
	dir := t.TempDir()
	cfg := amGpuwatch(t, dir, fmt.Sprintf("{urls: [%s], resend_interval: 1s}", am.URL))
	r := start(t, cfg, nil)
	r.D.Step(snapshot(time.Now().UTC(), 90))
	first := waitAlerts(t, am, 1, "GPUHot active")[0]
	time.Sleep(6 * time.Second) // 4 × resend_interval and more
	later := waitAlerts(t, am, 1, "GPUHot still active after 6s")[0]
	if !later.EndsAt.After(first.EndsAt.Add(4 * time.Second)) {
		t.Errorf("endsAt after 6s: got %v, first %v; want it moved on by the re-sends", later.EndsAt, first.EndsAt)
	}
	r.Stop()
	waitAlerts(t, am, 0, "GPUHot expired once gpuwatch stopped")

	again := start(t, amGpuwatch(t, dir, fmt.Sprintf("{urls: [%s], resend_interval: 1s}", am.URL)), nil)
	back := waitAlerts(t, am, 1, "GPUHot pushed again by the restarted gpuwatch")[0]
	wantGPUHot(t, back, "http://127.0.0.1:0/api/v1/alerts")
	if !back.StartsAt.Equal(first.StartsAt) {
		t.Errorf("startsAt after the restart: got %v, want %v, when it fired", back.StartsAt, first.StartsAt)
	}
	again.D.Step(snapshot(time.Now().UTC(), 50))
	waitAlerts(t, am, 0, "GPUHot resolved by the restarted gpuwatch")
}

// TestAlertmanagerDownThenUp: an Alertmanager that is down when the alert
// fires gets it once it is up; nothing is lost.
func TestAlertmanagerDownThenUp(t *testing.T) {
	suites.Fleet(t)
	am := fleettest.Alertmanager(t, amConfig)
	addr := fleettest.FreeAddr(t) // nothing listens here yet
	r := start(t, amGpuwatch(t, t.TempDir(), fmt.Sprintf("{urls: ['http://%s']}", addr)), nil)
	r.D.Step(snapshot(time.Now().UTC(), 90))
	waitFor(t, "two failed tries", func() bool { return strings.Count(r.Logs.String(), "delivery failed; will retry") >= 2 })
	if r.Pending() != 1 {
		t.Fatalf("got %d notifications waiting, want the firing one", r.Pending())
	}

	// Alertmanager comes up at addr (a proxy there to the real one).
	target, _ := url.Parse(am.URL)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(target))
	proxy.Listener.Close()
	proxy.Listener = l
	proxy.Start()
	defer proxy.Close()
	wantGPUHot(t, waitAlerts(t, am, 1, "GPUHot once Alertmanager is up")[0], "http://127.0.0.1:0/api/v1/alerts")
	r.Drain()
}
