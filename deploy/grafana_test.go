package deploy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

const dashboardFile = "grafana/gpuwatch.json"

// dashboard is what the test reads of a Grafana dashboard.
type dashboard struct {
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// query is one PromQL expression of the dashboard and where it is.
type query struct{ where, expr string }

func readDashboard(t *testing.T) (dashboard, []query) {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var qs []query
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				qs = append(qs, query{"panel " + p.Title, tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	// label_values(SELECTOR, LABEL) is Grafana's, around a series selector.
	labelValues := regexp.MustCompile(`^label_values\((.*),\s*\w+\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		text, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			text, _ = m["query"].(string)
		}
		m := labelValues.FindStringSubmatch(text)
		if m == nil {
			t.Errorf("%s: variable %s: query %q is not label_values(SELECTOR, LABEL)", dashboardFile, v.Name, text)
			continue
		}
		qs = append(qs, query{"variable " + v.Name, m[1]})
	}
	return d, qs
}

// grafanaVariable is a Grafana variable in an expression: $name, ${name}
// or ${name:format}.
var grafanaVariable = regexp.MustCompile(`\$\{?(\w+)(?::\w+)?\}?`)

// metricNames parses an expression as PromQL, with Grafana's variables
// replaced by values of their kind, and returns the metric names it selects.
func metricNames(expr string) ([]string, error) {
	expr = grafanaVariable.ReplaceAllStringFunc(expr, func(v string) string {
		name := grafanaVariable.FindStringSubmatch(v)[1]
		if strings.HasPrefix(name, "__") { // $__rate_interval, $__interval, $__range
			return "5m"
		}
		return "x"
	})
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	var problem error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName {
				if m.Type != labels.MatchEqual {
					problem = fmt.Errorf("%s: a metric name by regular expression cannot be checked", vs)
				}
				names = append(names, m.Value)
			}
		}
		if vs.Name == "" && !slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool { return m.Name == labels.MetricName }) {
			problem = fmt.Errorf("%s selects no metric by name", vs)
		}
		return nil
	})
	return names, problem
}

// TestDashboardShowsWhatTheREADMESays checks the dashboard's contents:
// per-GPU memory, utilization, temperature and power, alerts, delivery
// health, and a host variable.
func TestDashboardShowsWhatTheREADMESays(t *testing.T) {
	d, qs := readDashboard(t)
	var all strings.Builder
	for _, q := range qs {
		all.WriteString(q.expr + "\n")
	}
	for _, name := range []string{"gpuwatch_gpu_memory_used_bytes", "gpuwatch_gpu_utilization_ratio", "gpuwatch_gpu_temperature_celsius",
		"gpuwatch_gpu_power_watts", "gpuwatch_alerts", "gpuwatch_notifications_sent_total", "gpuwatch_notifications_failed_total", "gpuwatch_outbox_depth"} {
		if !strings.Contains(all.String(), name) {
			t.Errorf("%s: no panel shows %s", dashboardFile, name)
		}
	}
	if !slices.ContainsFunc(d.Templating.List, func(v struct {
		Name  string `json:"name"`
		Type  string `json:"type"`
		Query any    `json:"query"`
	}) bool {
		return v.Name == "host"
	}) {
		t.Errorf("%s: no host variable", dashboardFile)
	}
}

// TestDashboardMetricsAreServed runs gpuwatch on simulated GPUs, with
// receivers that accept, refuse for a while and refuse for good, scrapes
// its /metrics, and checks that every metric every expression of the
// dashboard names is served: a panel on a metric gpuwatch does not have
// (a typo, a rename) fails here.
func TestDashboardMetricsAreServed(t *testing.T) {
	_, qs := readDashboard(t)
	wanted := map[string][]string{} // metric name → where the dashboard uses it
	for _, q := range qs {
		names, err := metricNames(q.expr)
		if err != nil {
			t.Errorf("%s: %s: %q: %v", dashboardFile, q.where, q.expr, err)
		}
		for _, n := range names {
			wanted[n] = append(wanted[n], q.where)
		}
	}
	if len(wanted) < 10 {
		t.Fatalf("%s: %d metric names, want the dozen or so the panels use", dashboardFile, len(wanted))
	}
	addr := startDaemon(t)
	deadline := time.Now().Add(90 * time.Second)
	var served map[string]bool
	for {
		served = scrape(t, "http://"+addr+"/metrics")
		missing := 0
		for n := range wanted {
			if !served[n] {
				missing++
			}
		}
		if missing == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	for n, where := range wanted {
		if !served[n] {
			t.Errorf("%s: %s uses %s, which gpuwatch's /metrics does not serve", dashboardFile, strings.Join(where, ", "), n)
		}
	}
}

// startDaemon starts `gpuwatch run` on simulated GPUs in fast time, with a
// console receiver, a webhook that fails with 503 and one that refuses
// with 400, and returns its address once /metrics answers.
func startDaemon(t *testing.T) string {
	t.Helper()
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	t.Cleanup(unavailable.Close)
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no such hook", http.StatusBadRequest)
	}))
	t.Cleanup(refusing.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	config := fmt.Sprintf(`source: {type: sim, interval: 5s, sim: {scenario: all, seed: 1, speed: 600}}
storage: {path: %s}
server: {listen: "%s"}
receivers:
  - {name: console, console: {}}
  - {name: flaky-hook, webhook: {url: "%s", format: generic}}
  - {name: wrong-hook, webhook: {url: "%s", format: generic}}
route:
  receiver: console
  group_wait: 0s
  routes:
    - {matchers: ['alert=~".+"'], receiver: console, continue: true}
    - {matchers: ['alert=~".+"'], receiver: flaky-hook, continue: true}
    - {matchers: ['alert=~".+"'], receiver: wrong-hook}
rules:
  - {alert: GPUBusy, when: utilization.gpu > 50}
  - {alert: GPUHot, when: temperature > 80, severity: critical}
`, filepath.Join(dir, "gpuwatch.db"), addr, unavailable.URL, refusing.URL)
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gpuwatch(t), "run", "--config", path)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		found := false
		for sc.Scan() {
			if !found && strings.Contains(sc.Text(), "HTTP API listening") {
				found = true
				listening <- true
			}
		}
		if !found {
			listening <- false
		}
	}()
	select {
	case ok := <-listening:
		if !ok {
			t.Fatal("gpuwatch run ended before its API listened")
		}
	case <-time.After(time.Minute):
		t.Fatal("gpuwatch run: its API did not listen within a minute")
	}
	return addr
}

// scrape returns the names of the series /metrics serves: each family's,
// and a histogram's _bucket, _sum and _count.
func scrape(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	out := map[string]bool{}
	for name, f := range families {
		if len(f.GetMetric()) == 0 {
			continue
		}
		out[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY {
			out[name+"_sum"], out[name+"_count"] = true, true
			if f.GetType() == dto.MetricType_HISTOGRAM {
				out[name+"_bucket"] = true
			}
		}
	}
	return out
}
