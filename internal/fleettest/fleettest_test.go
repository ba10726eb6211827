package fleettest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestPrometheusAndAlertmanagerStart: both start, answer their APIs, and
// Prometheus scrapes itself.
func TestPrometheusAndAlertmanagerStart(t *testing.T) {
	am := Alertmanager(t, "route: {receiver: none}\nreceivers: [{name: none}]\n")
	prom := Prometheus(t, "global: {scrape_interval: 1s}\nscrape_configs: []\n")
	for _, u := range []string{am.URL + "/api/v2/status", prom.URL + "/api/v1/status/buildinfo"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "version") {
			t.Errorf("GET %s: HTTP %d %s", u, resp.StatusCode, body)
		}
	}
}

// TestVictoriaMetricsStarts: vmagent scrapes an exporter into
// VictoriaMetrics, where its series answer a query, and vmalert records a
// rule over them there.
func TestVictoriaMetricsStarts(t *testing.T) {
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "# TYPE gpu_temperature gauge\ngpu_temperature{gpu=\"0\"} 61\n")
	}))
	defer exporter.Close()
	vm := VictoriaMetrics(t)
	VMAgent(t, fmt.Sprintf("global: {scrape_interval: 1s}\nscrape_configs: [{job_name: gpus, static_configs: [{targets: [%q]}]}]\n",
		strings.TrimPrefix(exporter.URL, "http://")), vm.URL+"/api/v1/write")
	VMAlert(t, VMAlertOptions{VictoriaMetrics: vm.URL, Alertmanager: "http://" + FreeAddr(t),
		Rules: map[string]string{"rules.yml": "groups: [{name: g, interval: 1s, params: {nocache: ['1']}, rules: [{record: 'gpu:hot', expr: 'gpu_temperature > 60'}]}]\n"}})
	Eventually(t, 30*time.Second, "gpu:hot in VictoriaMetrics", func() (bool, string) {
		resp, err := http.Get(vm.URL + "/api/v1/query?nocache=1&query=" + url.QueryEscape(`gpu:hot{job="gpus"}`))
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(body), `"61"`), string(body)
	})
}

// recorder is a testing.TB that records a Fatal or Skip and ends the
// goroutine that called it (see run), not the test.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Fatal(args ...any) { r.fatal = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Skip(args ...any)  { r.skip = fmt.Sprint(args...); runtime.Goexit() }

// run calls f with r in a goroutine of its own, as the testing package
// runs a test, and waits for it.
func (r *recorder) run(f func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
}

// TestMissingBinary: a program the fleet suite needs and cannot find skips
// the test, saying which package installs it, or fails it when the suite is
// required.
func TestMissingBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, env := range []string{"1", "require"} {
		t.Setenv(RequireEnv, env)
		for name, pkg := range map[string]string{"vmalert": "victoria-metrics", "promtool": "prometheus", "prometheus-alertmanager": "prometheus-alertmanager"} {
			r := &recorder{TB: t}
			r.run(func(tb testing.TB) { Binary(tb, name) })
			got, other := r.skip, r.fatal
			if env == "require" {
				got, other = r.fatal, r.skip
			}
			if want := "apt-get install " + pkg; !strings.Contains(got, want) || other != "" {
				t.Errorf("%s=%s, %s missing: skip %q, fatal %q; want the %s to say %q", RequireEnv, env, name, r.skip, r.fatal,
					map[bool]string{true: "failure", false: "skip"}[env == "require"], want)
			}
		}
	}
}
