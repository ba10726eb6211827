package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/gpu/prometheus"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// hubPrometheus answers instant queries with two hosts of gpuwatch
// agents, a and b, b's GPU 0 at 90 °C, and their targets' up; while down
// it answers 503; while silent it answers no series at all (as after a
// restart, before its first scrapes); while bDown its scrapes of b fail
// (b's series are gone, its up is 0). Its range queries answer the same
// GPUs over any window, b's GPU 0 using memory in proportion to the hour
// (10% at :06, 50% at :30).
type hubPrometheus struct {
	*httptest.Server
	down, silent, bDown atomic.Bool
	queries             atomic.Int64
	ranges              atomic.Int64 // range queries answered
}

// hubSeries are the series of one family, as the API answers them: each
// host's GPUs' labels and value, and its values at each of times; b's
// none while bDown.
func hubSeries(name string, times []time.Time, instant, bDown bool) []string {
	var result []string
	for _, host := range []string{"a", "b"} {
		if host == "b" && bDown {
			continue
		}
		for g := range 2 {
			labels := fmt.Sprintf(`"__name__":%q,"host":%q,"gpu":"%d","uuid":"GPU-%s%d","name":"NVIDIA H100 80GB HBM3","instance":"%s:9477","job":"gpuwatch"`, name, host, g, host, g, host)
			value := func(at time.Time) float64 {
				switch name {
				case "gpuwatch_gpu_temperature_celsius":
					if host == "b" && g == 0 {
						return 90
					}
					return 60
				case "gpuwatch_gpu_memory_used_bytes":
					if host == "b" && g == 0 && !instant {
						return float64(at.Minute()) / 60 * (80 << 30)
					}
					return 1 << 30
				case "gpuwatch_gpu_memory_total_bytes":
					return 80 << 30
				}
				return math.NaN()
			}
			if math.IsNaN(value(times[0])) {
				continue
			}
			if instant {
				result = append(result, fmt.Sprintf(`{"metric":{%s},"value":[%d,"%v"]}`, labels, times[0].Unix(), value(times[0])))
				continue
			}
			points := make([]string, len(times))
			for i, at := range times {
				points[i] = fmt.Sprintf(`[%d,"%v"]`, at.Unix(), value(at))
			}
			result = append(result, fmt.Sprintf(`{"metric":{%s},"values":[%s]}`, labels, strings.Join(points, ",")))
		}
	}
	return result
}

var hubFamilies = []string{"gpuwatch_gpu_temperature_celsius", "gpuwatch_gpu_memory_used_bytes", "gpuwatch_gpu_memory_total_bytes"}

func newHubPrometheus(t *testing.T) *hubPrometheus {
	p := &hubPrometheus{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.queries.Add(1)
		if p.down.Load() || (r.URL.Path != "/api/v1/query" && r.URL.Path != "/api/v1/query_range") {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"status":"error","errorType":"unavailable","error":"the TSDB is starting"}`)
			return
		}
		var result []string
		if p.silent.Load() {
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
			return
		}
		if r.URL.Path == "/api/v1/query" {
			for _, host := range []string{"a", "b"} {
				up := 1
				if host == "b" && p.bDown.Load() {
					up = 0
				}
				result = append(result, fmt.Sprintf(`{"metric":{"__name__":"up","instance":"%s:9477","job":"gpuwatch"},"value":[%d,"%d"]}`, host, time.Now().Unix(), up))
			}
			for _, name := range hubFamilies {
				result = append(result, hubSeries(name, []time.Time{time.Now()}, true, p.bDown.Load())...)
			}
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Join(result, ","))
			return
		}
		p.ranges.Add(1)
		r.ParseForm()
		start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
		end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
		step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
		var times []time.Time
		for at := start; at <= end && step > 0; at += step {
			times = append(times, time.Unix(int64(at), 0))
		}
		for _, name := range hubFamilies {
			if len(times) > 0 && strings.Contains(r.Form.Get("query"), name) {
				result = append(result, hubSeries(name, times, false, p.bDown.Load())...)
			}
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[%s]}}`, strings.Join(result, ","))
	}))
	t.Cleanup(p.Close)
	return p
}

// runHub runs a hub on p until the test ends or stop is called.
func runHub(t *testing.T, cfg *config.Config) (d *daemon.Daemon, logs *notifiertest.Buffer, stop func()) {
	t.Helper()
	opts, err := cfg.PrometheusOptions()
	if err != nil {
		t.Fatal(err)
	}
	logs = &notifiertest.Buffer{}
	dopts := options(logs, &notifiertest.Buffer{}, nil)
	opts.Logger = dopts.Logger
	src, err := prometheus.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	d, err = daemon.New(cfg, dopts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, src, nil) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		src.Close()
		d.Close()
	}
	t.Cleanup(stop)
	return d, logs, stop
}

// hubConfig is a hub on Prometheus at prometheusURL sending GPUHot to a
// webhook at hookURL; more is added to the config (a slack section).
func hubConfig(t *testing.T, dir, prometheusURL, hookURL string, more ...string) *config.Config {
	return parseConfig(t, dir, fmt.Sprintf(`
host: hub
source:
  type: prometheus
  interval: 100ms
  prometheus: {url: %s, schema: gpuwatch, timeout: 90ms}
`+strings.Join(more, "\n")+`
receivers:
  - name: hook
    webhook: {url: %s, format: generic}
route:
  receiver: hook
  group_wait: 0s
%s`, prometheusURL, hookURL, hotRule), nil)
}

// TestHubSourceDown runs a hub on a Prometheus that goes down and comes
// back: the hub alerts for the right host and GPU while it answers, raises
// one GPUWatchSourceDown (on its own host, about no GPU) however many
// evaluations fail, keeps running, and resolves it when Prometheus
// answers again; a restart in between neither repeats nor forgets it.
func TestHubSourceDown(t *testing.T) {
	dir := t.TempDir()
	prom := newHubPrometheus(t)
	hook := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 200} })
	cfg := hubConfig(t, dir, prom.URL, hook.URL)
	d, _, stop := runHub(t, cfg)
	waitFor(t, "GPUHot on b", func() bool { return len(hook.AlertLines(t)) == 1 })
	if got := hook.AlertLines(t); got[0] != "firing GPUHot b/0" {
		t.Fatalf("got %q, want GPUHot firing on b GPU 0", got)
	}
	if hosts := d.Snapshots(); len(hosts) != 2 || hosts[0].Host != "a" || hosts[1].Host != "b" {
		t.Errorf("Snapshots: %d hosts, want a and b", len(hosts))
	}

	prom.down.Store(true)
	waitFor(t, "GPUWatchSourceDown", func() bool { return len(hook.AlertLines(t)) == 2 })
	before := prom.queries.Load()
	waitFor(t, "more failed evaluations", func() bool { return prom.queries.Load() > before+5 })
	if got := hook.AlertLines(t); len(got) != 2 || got[1] != "firing GPUWatchSourceDown hub/-" {
		t.Fatalf("got %q, want one GPUWatchSourceDown firing on hub without a GPU", got)
	}
	var alerts []daemon.AlertJSON
	if err := json.Unmarshal([]byte(get(t, "http://"+d.Addr()+"/api/v1/alerts")), &alerts); err != nil {
		t.Fatal(err)
	}
	if len(alerts) != 2 || alerts[1].Alert != daemon.SourceDownAlert || alerts[1].Host != "hub" || alerts[1].GPU != -1 ||
		alerts[0].Host != "b" || !strings.Contains(alerts[1].Summary, "the TSDB is starting") {
		t.Errorf("/api/v1/alerts: %+v, want GPUHot on b and GPUWatchSourceDown on hub saying why", alerts)
	}

	// A restart while Prometheus is still down: no second announcement.
	restartHub(t, d, stop, cfg, prom, 3)
	prom.down.Store(false)
	waitFor(t, "the resolve", func() bool { return len(hook.AlertLines(t)) >= 3 })
	time.Sleep(300 * time.Millisecond)
	want := []string{"firing GPUHot b/0", "firing GPUWatchSourceDown hub/-", "resolved GPUWatchSourceDown hub/-"}
	if got := hook.AlertLines(t); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the hook got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestHubPrometheusSilentAndHostDown: an answer without any series (a
// Prometheus that restarted and has not scraped yet) is GPUWatchSourceDown,
// and no GPU is lost for it; a host whose exporter Prometheus cannot
// scrape (up is 0) is one GPUHostDown, about the host, once it has been
// down for host_down_for, and no GPU of it is lost; a restart while it is
// down neither repeats nor forgets it; when it reports again, it resolves.
func TestHubPrometheusSilentAndHostDown(t *testing.T) {
	dir := t.TempDir()
	prom := newHubPrometheus(t)
	hook := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 200} })
	cfg := parseConfig(t, dir, fmt.Sprintf(`
host: hub
source:
  type: prometheus
  interval: 100ms
  prometheus: {url: %s, schema: gpuwatch, timeout: 90ms, host_down_for: 500ms}
receivers:
  - name: hook
    webhook: {url: %s, format: generic}
route:
  receiver: hook
  group_wait: 0s
%s  - alert: GPULost
    when: missing_for > 200ms
`, prom.URL, hook.URL, hotRule), nil)
	d, _, stop := runHub(t, cfg)
	has := func(line string) bool { return slices.Contains(hook.AlertLines(t), line) }
	count := func(line string) int {
		n := 0
		for _, l := range hook.AlertLines(t) {
			if l == line {
				n++
			}
		}
		return n
	}
	waitFor(t, "GPUHot on b", func() bool { return has("firing GPUHot b/0") })

	prom.silent.Store(true)
	waitFor(t, "GPUWatchSourceDown", func() bool { return has("firing GPUWatchSourceDown hub/-") })
	before := prom.queries.Load()
	waitFor(t, "silent evaluations past missing_for", func() bool { return prom.queries.Load() > before+5 })
	prom.silent.Store(false)
	waitFor(t, "the resolve", func() bool { return has("resolved GPUWatchSourceDown hub/-") })

	prom.bDown.Store(true)
	waitFor(t, "GPUHostDown on b", func() bool { return has("firing GPUHostDown b/-") })
	if s := d.Snapshots(); len(s) != 2 || s[1].Down == "" || len(s[1].Devices) != 0 {
		t.Errorf("Snapshots while b is down: %+v, want b down without GPUs", s)
	}
	var alerts []daemon.AlertJSON
	if err := json.Unmarshal([]byte(get(t, "http://"+d.Addr()+"/api/v1/alerts")), &alerts); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(alerts, func(a daemon.AlertJSON) bool {
		return a.Alert == daemon.HostDownAlert && a.Host == "b" && a.GPU == -1 && strings.Contains(a.Summary, "up is 0")
	}) {
		t.Errorf("/api/v1/alerts: %+v, want GPUHostDown on b saying why", alerts)
	}
	restartHub(t, d, stop, cfg, prom, 5)
	prom.bDown.Store(false)
	waitFor(t, "b's resolve", func() bool { return has("resolved GPUHostDown b/-") })
	time.Sleep(300 * time.Millisecond)
	if n := count("firing GPUHostDown b/-"); n != 1 {
		t.Errorf("GPUHostDown on b announced %d times, want once: the restart neither repeats nor forgets it", n)
	}
	for _, l := range hook.AlertLines(t) {
		if strings.Contains(l, "GPULost") {
			t.Errorf("the hook got %q: no GPU is lost while Prometheus is silent or its host is down\n%s", l, strings.Join(hook.AlertLines(t), "\n"))
		}
	}
}

// TestHubStatusAndMetrics: a hub's /api/v1/status lists every host, and
// its /metrics has its own series but not the fleet's GPUs.
func TestHubStatusAndMetrics(t *testing.T) {
	dir := t.TempDir()
	prom := newHubPrometheus(t)
	hook := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 200} })
	d, _, _ := runHub(t, hubConfig(t, dir, prom.URL, hook.URL))
	waitFor(t, "both hosts", func() bool { return len(d.Snapshots()) == 2 })
	var status daemon.StatusJSON
	if err := json.Unmarshal([]byte(get(t, "http://"+d.Addr()+"/api/v1/status")), &status); err != nil {
		t.Fatal(err)
	}
	if len(status.Hosts) != 2 || status.Hosts[0].Host != "a" || len(status.Hosts[0].GPUs) != 2 || status.Hosts[1].Host != "b" || status.Time == nil {
		t.Errorf("/api/v1/status: %+v, want hosts a and b of 2 GPUs each", status)
	}
	metrics := get(t, "http://"+d.Addr()+"/metrics")
	if strings.Contains(metrics, "gpuwatch_gpu_") || !strings.Contains(metrics, `gpuwatch_alerts{alert="GPUHot"`) ||
		!strings.Contains(metrics, `gpuwatch_last_sample_timestamp_seconds{host="hub"}`) {
		t.Errorf("a hub's /metrics: want its own series and no gpuwatch_gpu_*; got\n%s", metrics)
	}
}

// restartHub stops hub d once its deliveries are written and runs
// another on cfg until it has queried prom more than n times. The hook
// having an alert is not its delivery being written: a stop in between
// delivers it again after the restart, as it must (at least once).
func restartHub(t *testing.T, d *daemon.Daemon, stop func(), cfg *config.Config, prom *hubPrometheus, n int64) {
	t.Helper()
	waitFor(t, "the outbox to empty", func() bool { return hubPending(t, d) == 0 })
	stop()
	runHub(t, cfg)
	before := prom.queries.Load()
	waitFor(t, "evaluations after the restart", func() bool { return prom.queries.Load() > before+n })
}

// hubPending is how many notifications wait in d's outboxes, from
// GET /api/v1/outbox.
func hubPending(t *testing.T, d *daemon.Daemon) int {
	t.Helper()
	var out daemon.OutboxJSON
	if err := json.Unmarshal([]byte(get(t, "http://"+d.Addr()+"/api/v1/outbox")), &out); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range out.Pending {
		n += c
	}
	return n
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
