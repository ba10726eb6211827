package promexport_test

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/fleettest"
	"github.com/gpuwatch/gpuwatch/rules/promexport"
)

// costGPUs is the fleet TestRuleCost measures the rules on: 1,250 hosts
// of 8 GPUs, or GPUWATCH_RULE_COST_GPUS.
var costGPUs = 10000

// costInterval is the scrape and evaluation interval of the measurement.
const costInterval = 30 * time.Second

// costFamilies are the series a gpuwatch agent exports per GPU that the
// exported rules read, with a value at time t (seconds): 6 GPUs in 10
// held (a job's memory, growing on some), the rest free.
var costFamilies = []struct {
	name  string
	value func(g int, t float64) float64
}{
	{"gpuwatch_gpu_info", func(int, float64) float64 { return 1 }},
	{"gpuwatch_gpu_lost", func(int, float64) float64 { return 0 }},
	{"gpuwatch_gpu_memory_used_bytes", costMemory},
	{"gpuwatch_gpu_memory_total_bytes", func(int, float64) float64 { return 80 << 30 }},
	{"gpuwatch_gpu_processes", func(g int, _ float64) float64 { return float64(min(g%10, 6) / 6 * (1 + g%2)) }},
	{"gpuwatch_gpu_utilization_ratio", func(g int, _ float64) float64 { return float64(g%100) / 100 }},
	{"gpuwatch_gpu_memory_utilization_ratio", func(g int, _ float64) float64 { return float64(g%50) / 100 }},
	{"gpuwatch_gpu_temperature_celsius", func(g int, _ float64) float64 { return float64(40 + g%50) }},
	{"gpuwatch_gpu_power_watts", func(g int, _ float64) float64 { return float64(100 + g%500) }},
	{"gpuwatch_gpu_power_limit_watts", func(int, float64) float64 { return 700 }},
}

func costMemory(g int, t float64) float64 {
	if g%10 >= 6 {
		return 300 << 20
	}
	base := float64((g%40 + 20) << 30)
	if g%7 == 0 { // a leak: 50 MiB a minute
		base += float64(int64(t)%7200) / 60 * (50 << 20)
	}
	return base
}

func costLabels(g int) string {
	return fmt.Sprintf(`gpu="%d",host="gpu-node-%04d",instance="gpu-node-%04d:9477",job="gpuwatch",name="NVIDIA H100 80GB HBM3",uuid="GPU-%08x-0000-4000-8000-%012x"`,
		g%8, g/8, g/8, g, g)
}

// remoteWriter pushes samples into Prometheus through its remote-write
// receiver: a WriteRequest in protobuf, compressed as snappy (literals
// only, which every snappy reader takes), written here by hand.
type remoteWriter struct {
	url string
	buf []byte
}

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// appendField appends a length-delimited protobuf field.
func appendField(b []byte, field int, data []byte) []byte {
	b = appendVarint(b, uint64(field<<3|2))
	b = appendVarint(b, uint64(len(data)))
	return append(b, data...)
}

// series appends one TimeSeries of one sample: labels as name, value
// pairs, sorted by name.
func (w *remoteWriter) series(labels []string, value float64, ms int64) {
	var ts []byte
	for i := 0; i+1 < len(labels); i += 2 {
		var l []byte
		l = appendField(l, 1, []byte(labels[i]))
		l = appendField(l, 2, []byte(labels[i+1]))
		ts = appendField(ts, 1, l)
	}
	var smp []byte
	smp = append(smp, 1<<3|1)
	smp = binary.LittleEndian.AppendUint64(smp, math.Float64bits(value))
	smp = appendVarint(smp, 2<<3|0)
	smp = appendVarint(smp, uint64(ms))
	ts = appendField(ts, 2, smp)
	w.buf = appendField(w.buf, 1, ts)
}

// snappy encodes b as a snappy block of literals.
func snappy(b []byte) []byte {
	out := appendVarint(nil, uint64(len(b)))
	for len(b) > 0 {
		n := min(len(b), 1<<16)
		out = append(out, 61<<2, byte(n-1), byte((n-1)>>8))
		out = append(out, b[:n]...)
		b = b[n:]
	}
	return out
}

// flush sends the samples gathered.
func (w *remoteWriter) flush(t *testing.T) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, w.url, bytes.NewReader(snappy(w.buf)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("remote write: HTTP %d %s", resp.StatusCode, body)
	}
	w.buf = w.buf[:0]
}

// costLabelPairs are the labels of GPU g's series of family name, sorted.
func costLabelPairs(name string, g int) []string {
	return []string{"__name__", name, "gpu", strconv.Itoa(g % 8), "host", fmt.Sprintf("gpu-node-%04d", g/8),
		"instance", fmt.Sprintf("gpu-node-%04d:9477", g/8), "job", "gpuwatch", "name", "NVIDIA H100 80GB HBM3",
		"uuid", fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", g, g)}
}

// pushCostHistory pushes the fleet's series from start to end, every
// costInterval, in time order; and the recording rules' series the rules
// read over long ranges (held_for's, missing_for's), as the rules would
// have recorded them every evaluation.
func pushCostHistory(t *testing.T, w *remoteWriter, start, end time.Time) {
	for at := start; !at.After(end); at = at.Add(costInterval) {
		ms, sec := at.UnixMilli(), float64(at.Unix())
		for _, f := range costFamilies {
			for g := range costGPUs {
				w.series(costLabelPairs(f.name, g), f.value(g, sec), ms)
			}
		}
		for g := range costGPUs {
			labels := func(name string) []string {
				return []string{"__name__", name, "gpu", strconv.Itoa(g % 8), "host", fmt.Sprintf("gpu-node-%04d", g/8), "uuid", fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", g, g)}
			}
			w.series(labels("gpuwatch:reported_at"), sec, ms)
			if g%10 < 6 {
				w.series(labels("gpuwatch:held_at"), sec, ms)
			} else {
				w.series(labels("gpuwatch:free_at"), sec, ms)
			}
		}
		w.flush(t)
	}
}

// costExporter serves the fleet's series now, as one target whose series
// carry their own host and instance (honor_labels).
func costExporter(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := bufio.NewWriterSize(w, 1<<20)
		defer b.Flush()
		now := float64(time.Now().Unix())
		for _, f := range costFamilies {
			fmt.Fprintf(b, "# TYPE %s gauge\n", f.name)
			for g := range costGPUs {
				fmt.Fprintf(b, "%s{%s} %s\n", f.name, costLabels(g), strconv.FormatFloat(f.value(g, now), 'g', -1, 64))
			}
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// TestRuleCost measures what the exported example rules cost the real
// Prometheus at 10,000 GPUs (1,250 hosts of 8, ten series a GPU), scraped
// and evaluated every 30 s: the group's evaluation time, from
// prometheus_rule_group_last_duration_seconds over several evaluations,
// after 50 minutes of history (backfilled with promtool) fill the rules'
// windows. It takes some 15 minutes on a machine of its own: set
// GPUWATCH_RULE_COST=1 to run it, GPUWATCH_RULE_COST_FILE to measure another
// rule file, GPUWATCH_RULE_COST_GPUS another fleet size.
func TestRuleCost(t *testing.T) {
	if os.Getenv("GPUWATCH_RULE_COST") == "" {
		t.Skip("measures the exported rules in the real Prometheus at 10,000 GPUs for some 15 minutes: set GPUWATCH_RULE_COST=1")
	}
	if n, err := strconv.Atoi(os.Getenv("GPUWATCH_RULE_COST_GPUS")); err == nil && n > 0 {
		costGPUs = n
	}
	var ruleFile []byte
	if path := os.Getenv("GPUWATCH_RULE_COST_FILE"); path != "" {
		var err error
		if ruleFile, err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	} else {
		f, err := promexport.Export(exampleRules(t), promexport.Options{Schema: promexport.SchemaGPUWatch, Interval: costInterval, Source: "config.example.yaml"})
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		if err := f.Write(&text); err != nil {
			t.Fatal(err)
		}
		ruleFile = []byte(text.String())
	}
	// Prometheus starts without rules or targets and takes the last 50
	// minutes through its remote-write receiver, in time order; then the
	// rules and the exporter come in with a reload.
	exporter := costExporter(t)
	config := fmt.Sprintf(`global: {scrape_interval: %s, evaluation_interval: %s, scrape_timeout: 25s}
`, costInterval, costInterval)
	prom := fleettest.PrometheusWith(t, config, fleettest.PrometheusOptions{
		Flags: []string{"--web.enable-remote-write-receiver"}, Files: map[string]string{"rules.yml": string(ruleFile)}})
	end := time.Now().Truncate(costInterval)
	began := time.Now()
	pushCostHistory(t, &remoteWriter{url: prom.URL + "/api/v1/write"}, end.Add(-50*time.Minute), end)
	t.Logf("history of %d GPUs pushed in %v", costGPUs, time.Since(began).Round(time.Second))
	config += fmt.Sprintf(`rule_files: [rules.yml]
scrape_configs:
  - job_name: gpuwatch
    honor_labels: true
    static_configs: [{targets: [%q]}]
`, strings.TrimPrefix(exporter.URL, "http://"))
	if err := os.WriteFile(filepath.Join(prom.Dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Post(prom.URL+"/-/reload", "", nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("reload Prometheus: %v %v", resp, err)
	}

	// Two evaluations to warm up (the live series join the history), then
	// the measured ones, each read from /api/v1/rules.
	const warm, measured = 2, 6
	var durations []float64
	perRule := map[string][]float64{}
	var last string
	deadline := time.Now().Add(time.Duration(warm+measured+4) * costInterval * 2)
	for len(durations) < warm+measured {
		if time.Now().After(deadline) {
			t.Fatalf("only %d evaluations in time: %v", len(durations), durations)
		}
		time.Sleep(time.Second)
		at, took, rules := lastGroupEvaluation(t, prom.URL)
		if at == "" || at == last {
			continue
		}
		last = at
		durations = append(durations, took)
		if len(durations) > warm {
			for name, d := range rules {
				perRule[name] = append(perRule[name], d)
			}
		}
	}
	m := slices.Clone(durations[warm:])
	slices.Sort(m)
	t.Logf("rule group evaluation at %d GPUs every %v: median %.3fs, max %.3fs (%d evaluations: %v)", costGPUs, costInterval, m[len(m)/2], m[len(m)-1], len(m), durations[warm:])
	t.Logf("the costliest rules (median of the measured evaluations): %s", costliest(perRule, 8))
	if n := promQueryValue(t, prom.URL, `count(gpuwatch:memory_used)`); n != float64(costGPUs) {
		t.Errorf("gpuwatch:memory_used has %v series, want one for each of %d GPUs", n, costGPUs)
	}
}

// promQueryValue is the first value an instant query of Prometheus's own
// API answers; 0 when none.
func promQueryValue(t *testing.T, base, query string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	i := strings.Index(string(body), `"value":[`)
	if i < 0 {
		return 0
	}
	rest := string(body[i+len(`"value":[`):])
	_, v, _ := strings.Cut(rest, `,"`)
	v, _, _ = strings.Cut(v, `"`)
	f, _ := strconv.ParseFloat(v, 64)
	return f
}

// lastGroupEvaluation is when Prometheus last evaluated the rule group, how
// long that took in seconds, and how long each of its rules took (by
// record or alert name), from its /api/v1/rules.
func lastGroupEvaluation(t *testing.T, base string) (at string, seconds float64, rules map[string]float64) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/rules")
	if err != nil {
		return "", 0, nil
	}
	defer resp.Body.Close()
	var answer struct {
		Data struct {
			Groups []struct {
				EvaluationTime float64 `json:"evaluationTime"`
				LastEvaluation string  `json:"lastEvaluation"`
				Rules          []struct {
					Name           string  `json:"name"`
					EvaluationTime float64 `json:"evaluationTime"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || len(answer.Data.Groups) != 1 {
		return "", 0, nil
	}
	g := answer.Data.Groups[0]
	if strings.HasPrefix(g.LastEvaluation, "0001-") {
		return "", 0, nil
	}
	rules = map[string]float64{}
	for _, r := range g.Rules {
		rules[r.Name] += r.EvaluationTime
	}
	return g.LastEvaluation, g.EvaluationTime, rules
}

// costliest says which rules took the most of the measured evaluations,
// the n costliest first, with their median time.
func costliest(perRule map[string][]float64, n int) string {
	type cost struct {
		name   string
		median float64
	}
	var all []cost
	for name, ds := range perRule {
		ds = slices.Sorted(slices.Values(ds))
		all = append(all, cost{name, ds[len(ds)/2]})
	}
	slices.SortFunc(all, func(a, b cost) int { return cmp.Compare(b.median, a.median) })
	var out []string
	for _, c := range all[:min(n, len(all))] {
		out = append(out, fmt.Sprintf("%s %.3fs", c.name, c.median))
	}
	return strings.Join(out, ", ")
}
