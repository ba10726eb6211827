package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/metrics"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// scrape reads GET /metrics and parses the text exposition.
func scrape(t *testing.T, r *running) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(r.URL("/metrics"))
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: got HTTP %d, want 200", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("GET /metrics: got Content-Type %q, want text/plain", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET /metrics: not the text exposition format: %v", err)
	}
	return families
}

// sample finds the series of family name whose labels include want and
// returns its value (a gauge's or a counter's).
func sample(families map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f, ok := families[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Untyped != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

// gpuLabels are the labels of GPU index i of snapshot().
func gpuLabels(i int) map[string]string {
	return map[string]string{"gpu": fmt.Sprint(i), "uuid": fmt.Sprintf("GPU-0000000%d-aaaa-bbbb-cccc-dddddddddddd", i),
		"name": "NVIDIA H100 80GB HBM3", "host": "node1"}
}

type wantSample struct {
	name   string
	labels map[string]string
	value  float64
}

func checkSamples(t *testing.T, families map[string]*dto.MetricFamily, want []wantSample) {
	t.Helper()
	for _, w := range want {
		got, ok := sample(families, w.name, w.labels)
		if !ok {
			t.Errorf("%s%v: got no series, want %v", w.name, w.labels, w.value)
			continue
		}
		if math.Abs(got-w.value) > 1e-9*math.Max(1, math.Abs(w.value)) {
			t.Errorf("%s%v: got %v, want %v", w.name, w.labels, got, w.value)
		}
	}
}

func TestMetricsEndpoint(t *testing.T) {
	h := newHook(t, nil)
	r := start(t, webhookConfig(t, t.TempDir(), h.URL, "1ns"), nil)
	r.Steps(base, 10*time.Second, []float64{90, 50, 50}, []float64{91, 50, 49})
	h.WaitAccepted(t, 1)
	r.Drain()
	families := scrape(t, r)
	receiver := map[string]string{"receiver": "hook"}
	checkSamples(t, families, []wantSample{
		{"gpuwatch_gpu_memory_used_bytes", gpuLabels(0), 20 << 30},
		{"gpuwatch_gpu_memory_total_bytes", gpuLabels(2), 80 << 30},
		{"gpuwatch_gpu_utilization_ratio", gpuLabels(1), 0.9},
		{"gpuwatch_gpu_memory_utilization_ratio", gpuLabels(1), 0.4},
		{"gpuwatch_gpu_temperature_celsius", gpuLabels(0), 91},
		{"gpuwatch_gpu_temperature_celsius", gpuLabels(2), 49},
		{"gpuwatch_gpu_power_watts", gpuLabels(0), 500},
		{"gpuwatch_gpu_power_limit_watts", gpuLabels(0), 700},
		{"gpuwatch_last_sample_timestamp_seconds", map[string]string{"host": "node1"}, float64(base.Add(10 * time.Second).Unix())},
		{"gpuwatch_alerts", map[string]string{"alert": "GPUHot", "severity": "critical", "state": "firing"}, 1},
		{"gpuwatch_notifications_sent_total", receiver, 1},
		{"gpuwatch_notifications_retried_total", receiver, 0},
		{"gpuwatch_notifications_dead_total", receiver, 0},
		{"gpuwatch_notifications_failed_total", map[string]string{"receiver": "hook", "reason": "http_5xx"}, 0},
		{"gpuwatch_outbox_depth", receiver, 0},
		{"gpuwatch_build_info", map[string]string{"version": "unknown"}, 1},
	})
	if got := len(families["gpuwatch_gpu_temperature_celsius"].GetMetric()); got != 3 {
		t.Errorf("temperature series: got %d, want 3 (one per GPU)", got)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", metrics.SampleDurationName} {
		if _, ok := families[name]; !ok {
			t.Errorf("%s: got no family, want the Go runtime, process and sample duration metrics", name)
		}
	}
}

// TestMetricsFailureReasons: a receiver answers 503, then 400: one failed
// try of each reason, one retry, one dead letter, nothing sent.
func TestMetricsFailureReasons(t *testing.T) {
	h := newHook(t, func(n int) int {
		if n == 0 {
			return http.StatusServiceUnavailable
		}
		return http.StatusBadRequest
	})
	r := start(t, webhookConfig(t, t.TempDir(), h.URL, "1ns"), nil)
	r.Steps(base, 10*time.Second, []float64{90}, []float64{90}) // the second flushes the group
	waitFor(t, "a dead letter", func() bool { return len(r.Outbox().DeadLetters) == 1 })
	r.Drain() // the count follows the burial
	families := scrape(t, r)
	reason := func(why string) map[string]string { return map[string]string{"receiver": "hook", "reason": why} }
	receiver := map[string]string{"receiver": "hook"}
	checkSamples(t, families, []wantSample{
		{"gpuwatch_notifications_failed_total", reason("http_5xx"), 1},
		{"gpuwatch_notifications_failed_total", reason("http_4xx"), 1},
		{"gpuwatch_notifications_failed_total", reason("timeout"), 0},
		{"gpuwatch_notifications_failed_total", reason("other"), 0},
		{"gpuwatch_notifications_retried_total", receiver, 1},
		{"gpuwatch_notifications_dead_total", receiver, 1},
		{"gpuwatch_notifications_sent_total", receiver, 0},
		{"gpuwatch_outbox_depth", receiver, 0},
	})
}

// sliceSource is a gpu.Source that returns its snapshots, then io.EOF.
type sliceSource struct{ snaps []*gpu.Snapshot }

func (s *sliceSource) Next(context.Context) (*gpu.Snapshot, error) {
	if len(s.snaps) == 0 {
		return nil, io.EOF
	}
	snap := s.snaps[0]
	s.snaps = s.snaps[1:]
	return snap, nil
}

func (s *sliceSource) Close() error { return nil }

// TestSampleDurationObserved: Run observes every Step it makes.
func TestSampleDurationObserved(t *testing.T) {
	h := newHook(t, nil)
	logs := &notifiertest.Buffer{}
	opts := options(logs, io.Discard, nil)
	opts.Version = "v9.9.9"
	d, err := daemon.New(webhookConfig(t, t.TempDir(), h.URL, "1ns"), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	src := &sliceSource{}
	for i := range 3 {
		src.snaps = append(src.snaps, snapshot(base.Add(time.Duration(i)*10*time.Second), 50))
	}
	if err := d.Run(context.Background(), src, nil); err != nil {
		t.Fatalf("Run: %v", err)
	}
	families, err := d.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var count uint64
	var version string
	for _, f := range families {
		switch f.GetName() {
		case metrics.SampleDurationName:
			count = f.GetMetric()[0].GetHistogram().GetSampleCount()
		case "gpuwatch_build_info":
			for _, l := range f.GetMetric()[0].GetLabel() {
				if l.GetName() == "version" {
					version = l.GetValue()
				}
			}
		}
	}
	if count != 3 {
		t.Errorf("%s count: got %d, want 3 (one per snapshot)", metrics.SampleDurationName, count)
	}
	if version != "v9.9.9" {
		t.Errorf("gpuwatch_build_info version: got %q, want v9.9.9 (Options.Version)", version)
	}
}

// getJSON reads path and decodes its JSON into v.
func getJSON(t *testing.T, r *running, path string, v any) {
	t.Helper()
	code, body := r.Do(http.MethodGet, path, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s: got HTTP %d %s, want 200", path, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

// warmRule adds a pending-only alert: above 60 °C for an hour.
const warmRule = `
  - alert: GPUWarm
    when: temperature > 60
    for: 1h
    severity: warning
    summary: "GPU {{ .GPU }} is warm"
`

func TestStatusAPI(t *testing.T) {
	h := newHook(t, nil)
	r := start(t, webhookConfig(t, t.TempDir(), h.URL, "1ns"), nil)

	var empty map[string]any
	getJSON(t, r, "/api/v1/status", &empty)
	if empty["time"] != nil || fmt.Sprint(empty["gpus"]) != "[]" || fmt.Sprint(empty["alerts"]) != "[]" {
		t.Errorf("status before the first sample: got %v, want time null, gpus [] and alerts []", empty)
	}

	snap := snapshot(base, 90, 50)
	snap.Devices[1].MemTotal, snap.Devices[1].MemUsed = 0, 0
	snap.Devices[1].PowerW, snap.Devices[1].UtilMem = math.NaN(), math.NaN()
	snap.Devices[1].Processes = nil
	r.D.Step(snap)

	var raw struct {
		Host   string           `json:"host"`
		Time   time.Time        `json:"time"`
		GPUs   []map[string]any `json:"gpus"`
		Alerts []map[string]any `json:"alerts"`
	}
	getJSON(t, r, "/api/v1/status", &raw)
	if raw.Host != "node1" || !raw.Time.Equal(base) || len(raw.GPUs) != 2 || len(raw.Alerts) != 1 {
		t.Fatalf("status: got host %q time %v, %d GPUs, %d alerts; want node1, %v, 2, 1", raw.Host, raw.Time, len(raw.GPUs), len(raw.Alerts), base)
	}
	tests := []struct {
		gpu   int
		field string
		want  string // fmt.Sprint of the decoded JSON value
	}{
		{0, "index", "0"},
		{0, "uuid", "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd"},
		{0, "name", "NVIDIA H100 80GB HBM3"},
		{0, "memory_used_bytes", fmt.Sprint(float64(20 << 30))},
		{0, "memory_total_bytes", fmt.Sprint(float64(80 << 30))},
		{0, "utilization_gpu", "90"},
		{0, "utilization_memory", "40"},
		{0, "temperature_c", "90"},
		{0, "power_w", "500"},
		{0, "power_limit_w", "700"},
		{0, "processes", "[map[command:python train.py memory_bytes:2.147483648e+10 pid:4242 user:alice]]"},
		{1, "index", "1"},
		{1, "memory_used_bytes", "<nil>"},
		{1, "memory_total_bytes", "<nil>"},
		{1, "power_w", "<nil>"},
		{1, "utilization_memory", "<nil>"},
		{1, "temperature_c", "50"},
		{1, "processes", "[]"},
	}
	for _, tt := range tests {
		v, ok := raw.GPUs[tt.gpu][tt.field]
		if got := fmt.Sprint(v); !ok || got != tt.want {
			t.Errorf("gpus[%d].%s: got %s (present %v), want %s", tt.gpu, tt.field, got, ok, tt.want)
		}
	}
	if a := raw.Alerts[0]; a["alert"] != "GPUHot" || a["state"] != "firing" || a["gpu"] != float64(0) {
		t.Errorf("status alerts[0]: got %v, want GPUHot firing on gpu 0", a)
	}

	// The typed form decodes what the API writes (null → NaN).
	var typed daemon.StatusJSON
	getJSON(t, r, "/api/v1/status", &typed)
	if p := typed.GPUs[1].PowerW; !math.IsNaN(float64(p)) || typed.GPUs[1].MemoryTotalBytes != nil || *typed.GPUs[0].MemoryTotalBytes != 80<<30 {
		t.Errorf("typed status: got power %v, memory total %v / %v, want NaN, nil, %d", p, typed.GPUs[1].MemoryTotalBytes, typed.GPUs[0].MemoryTotalBytes, 80<<30)
	}
}

func TestAlertsAPI(t *testing.T) {
	h := newHook(t, nil)
	cfg := parseConfig(t, t.TempDir(), fmt.Sprintf(`
source:
  type: sim
receivers:
  - name: hook
    webhook: {url: %s}
route:
  receiver: hook
  group_wait: 1ns
%s%s`, h.URL, hotRule, warmRule), nil)
	r := start(t, cfg, nil)
	var none []daemon.AlertJSON
	getJSON(t, r, "/api/v1/alerts", &none)
	if none == nil || len(none) != 0 {
		t.Errorf("alerts before the first sample: got %v, want []", none)
	}
	r.Steps(base, time.Minute, []float64{90, 70, 50}, []float64{90, 70, 50})

	var got []daemon.AlertJSON
	getJSON(t, r, "/api/v1/alerts", &got)
	want := []daemon.AlertJSON{
		{Key: "node1/GPUHot/GPU-00000000-aaaa-bbbb-cccc-dddddddddddd", Alert: "GPUHot", Severity: "critical", State: "firing", Host: "node1",
			GPU: 0, UUID: "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd", Label: "GPU 0", Since: base, Summary: "GPU 0 is hot"},
		{Key: "node1/GPUWarm/GPU-00000000-aaaa-bbbb-cccc-dddddddddddd", Alert: "GPUWarm", Severity: "warning", State: "pending", Host: "node1",
			GPU: 0, UUID: "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd", Label: "GPU 0", Since: base},
		{Key: "node1/GPUWarm/GPU-00000001-aaaa-bbbb-cccc-dddddddddddd", Alert: "GPUWarm", Severity: "warning", State: "pending", Host: "node1",
			GPU: 1, UUID: "GPU-00000001-aaaa-bbbb-cccc-dddddddddddd", Label: "GPU 1", Since: base},
	}
	if len(got) != len(want) {
		t.Fatalf("alerts: got %d %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.ValueText == "" || !strings.Contains(g.ValueText, "C") {
			t.Errorf("alerts[%d].value_text: got %q, want a temperature", i, g.ValueText)
		}
		g.ValueText = ""
		if w.Summary == "" {
			g.Summary = "" // a pending alert's summary is not rendered yet
		}
		if !g.Since.Equal(w.Since) {
			t.Errorf("alerts[%d].since: got %v, want %v", i, g.Since, w.Since)
		}
		g.Since = w.Since
		if g != w {
			t.Errorf("alerts[%d]:\n got %+v\nwant %+v", i, g, w)
		}
	}
	families := scrape(t, r)
	checkSamples(t, families, []wantSample{
		{"gpuwatch_alerts", map[string]string{"alert": "GPUHot", "severity": "critical", "state": "firing"}, 1},
		{"gpuwatch_alerts", map[string]string{"alert": "GPUWarm", "severity": "warning", "state": "pending"}, 2},
	})
}

func TestMetricsAndStatusMethods(t *testing.T) {
	r := start(t, webhookConfig(t, t.TempDir(), "http://127.0.0.1:1/hook", "1ns"), nil)
	tests := []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/metrics", http.StatusOK},
		{http.MethodHead, "/metrics", http.StatusOK},
		{http.MethodPost, "/metrics", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/metrics", http.StatusMethodNotAllowed},
		{http.MethodPost, "/api/v1/status", http.StatusMethodNotAllowed},
		{http.MethodPut, "/api/v1/alerts", http.StatusMethodNotAllowed},
		{http.MethodGet, "/api/v1/nothing", http.StatusNotFound},
	}
	for _, tt := range tests {
		if code, body := r.Do(tt.method, tt.path, ""); code != tt.want {
			t.Errorf("%s %s: got HTTP %d %s, want %d", tt.method, tt.path, code, body, tt.want)
		}
	}
}

// TestNoSecretsInMetricsOrStatus: with every integration configured with
// its secrets and failing, neither /metrics nor /api/v1/status nor
// /api/v1/alerts quotes a secret.
func TestNoSecretsInMetricsOrStatus(t *testing.T) {
	secrets := make([]string, 0, len(secretEnv))
	for _, v := range secretEnv {
		secrets = append(secrets, v)
	}
	echo := echoServer(t)
	r := start(t, parseConfig(t, t.TempDir(), secretsConfig(echo.URL), secretEnv), nil)
	r.Steps(base, 10*time.Second, []float64{90}, []float64{90})
	waitFor(t, "every receiver to refuse", func() bool {
		dead := map[string]bool{}
		for _, dl := range r.Outbox().DeadLetters {
			dead[dl.Receiver] = true
		}
		return len(dead) == len(secretReceivers)
	})
	for _, path := range []string{"/metrics", "/api/v1/status", "/api/v1/alerts"} {
		code, body := r.Do(http.MethodGet, path, "")
		if code != http.StatusOK {
			t.Errorf("GET %s: got HTTP %d, want 200", path, code)
		}
		notifiertest.AssertNoSecrets(t, "GET "+path, body, secrets...)
		if path == "/metrics" {
			for _, rc := range secretReceivers {
				if !strings.Contains(body, `receiver="`+rc.name+`"`) {
					t.Errorf("GET /metrics says nothing of receiver %s: the test did not exercise it", rc.name)
				}
			}
		}
	}
}
