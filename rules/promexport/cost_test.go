package promexport_test

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/fleettest"
	"github.com/gpuwatch/gpuwatch/internal/suites"
	"github.com/gpuwatch/gpuwatch/rules/promexport"
)

// costInterval is the scrape interval of the measurement, and the step of
// the history it pushes.
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

// maxWriteRequest is the most a remote write carries before it is sent:
// below VictoriaMetrics' -maxInsertRequestSize (32 MiB), which a step of
// 10,000 GPUs' series passes.
const maxWriteRequest = 8 << 20

// flushFull sends the samples gathered once they reach maxWriteRequest.
func (w *remoteWriter) flushFull(t *testing.T) {
	if len(w.buf) >= maxWriteRequest {
		w.flush(t)
	}
}

// costLabelPairs are the labels of GPU g's series of family name, sorted.
func costLabelPairs(name string, g int) []string {
	return []string{"__name__", name, "gpu", strconv.Itoa(g % 8), "host", fmt.Sprintf("gpu-node-%04d", g/8),
		"instance", fmt.Sprintf("gpu-node-%04d:9477", g/8), "job", "gpuwatch", "name", "NVIDIA H100 80GB HBM3",
		"uuid", fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", g, g)}
}

// pushCostHistory pushes gpus GPUs' series from start to end, every
// costInterval, in time order; and the series of the recording rules the
// rules read over ranges (history), as the rules would have recorded them
// every evaluation: the times a GPU reported, was held or free, no
// out-of-memory exits, and 0 for the others (slice rates).
func pushCostHistory(t *testing.T, w *remoteWriter, gpus int, history []string, start, end time.Time) {
	for at := start; !at.After(end); at = at.Add(costInterval) {
		ms, sec := at.UnixMilli(), float64(at.Unix())
		for _, f := range costFamilies {
			for g := range gpus {
				w.series(costLabelPairs(f.name, g), f.value(g, sec), ms)
				w.flushFull(t)
			}
		}
		for g := range gpus {
			labels := func(name string) []string {
				return []string{"__name__", name, "gpu", strconv.Itoa(g % 8), "host", fmt.Sprintf("gpu-node-%04d", g/8), "uuid", fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", g, g)}
			}
			held := g%10 < 6
			for _, name := range history {
				switch {
				case name == "gpuwatch:reported_at", name == "gpuwatch:held_at" && held, name == "gpuwatch:free_at" && !held:
					w.series(labels(name), sec, ms)
				case name == "gpuwatch:oom_exit":
					// An event, recorded only when a job leaves a full
					// GPU: none did.
				case name != "gpuwatch:held_at" && name != "gpuwatch:free_at":
					w.series(labels(name), 0, ms)
				}
			}
			w.flushFull(t)
		}
		w.flush(t)
	}
}

// historyRead are the recording rules a rule file reads over ranges.
func historyRead(ruleFile []byte) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(gpuwatch:[A-Za-z0-9_:]+)\[`).FindAllSubmatch(ruleFile, -1) {
		if name := string(m[1]); !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// costExporter serves gpus GPUs' series now, as one target whose series
// carry their own host and instance (honor_labels).
func costExporter(t *testing.T, gpus int) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := bufio.NewWriterSize(w, 1<<20)
		defer b.Flush()
		now := float64(time.Now().Unix())
		for _, f := range costFamilies {
			fmt.Fprintf(b, "# TYPE %s gauge\n", f.name)
			for g := range gpus {
				fmt.Fprintf(b, "%s{%s} %s\n", f.name, costLabels(g), strconv.FormatFloat(f.value(g, now), 'g', -1, 64))
			}
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// TestRuleCost measures what the exported example rules cost their engine,
// the real Prometheus and vmalert over the real VictoriaMetrics: each
// group's evaluation time over several evaluations, against the interval
// the export gives it, after 50 minutes of history fill the rules'
// windows, and the costliest rules. At 1,000 GPUs (125 hosts of 8, ten
// series a GPU, scraped every 30 s) it runs with the fleet suite, every
// group evaluated every 10 s to be quick (its time is the same); with
// GPUWATCH_RULE_COST=1 at 10,000 GPUs (1,250 hosts), each group at its own
// interval, for some 15 minutes an engine. GPUWATCH_RULE_COST_GPUS sets
// another fleet size, GPUWATCH_RULE_COST_FILE another rule file (for
// Prometheus), GPUWATCH_RULE_COST_INTERVAL one interval for every group
// (rules export --interval), GPUWATCH_RULE_COST_ENGINE one engine
// (prometheus or vmalert).
func TestRuleCost(t *testing.T) {
	if raceDetector {
		t.Skip("measures the real Prometheus and vmalert (not with -race)")
	}
	suites.Fleet(t)
	gpus, full := 1000, os.Getenv("GPUWATCH_RULE_COST") != ""
	if full {
		gpus = 10000
	}
	if n, err := strconv.Atoi(os.Getenv("GPUWATCH_RULE_COST_GPUS")); err == nil && n > 0 {
		gpus = n
	}
	for _, engine := range []promexport.Target{promexport.TargetPrometheus, promexport.TargetVMAlert} {
		t.Run(string(engine), func(t *testing.T) {
			if e := os.Getenv("GPUWATCH_RULE_COST_ENGINE"); e != "" && e != string(engine) {
				t.Skipf("GPUWATCH_RULE_COST_ENGINE=%s", e)
			}
			measureRuleCost(t, engine, gpus, full)
		})
	}
}

// measureRuleCost runs the example rules at gpus GPUs on engine.
func measureRuleCost(t *testing.T, engine promexport.Target, gpus int, full bool) {
	var ruleFile []byte
	if path := os.Getenv("GPUWATCH_RULE_COST_FILE"); path != "" && engine == promexport.TargetPrometheus {
		var err error
		if ruleFile, err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	} else {
		var interval time.Duration // each group at its own
		if v := os.Getenv("GPUWATCH_RULE_COST_INTERVAL"); v != "" {
			var err error
			if interval, err = time.ParseDuration(v); err != nil {
				t.Fatalf("GPUWATCH_RULE_COST_INTERVAL: %v", err)
			}
		}
		f, err := promexport.Export(exampleRules(t), promexport.Options{Schema: promexport.SchemaGPUWatch, Target: engine, Source: "config.example.yaml", Interval: interval})
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		if err := f.Write(&text); err != nil {
			t.Fatal(err)
		}
		ruleFile = []byte(text.String())
	}
	intervals := groupIntervals(t, ruleFile)
	if !full {
		ruleFile = regexp.MustCompile(`(?m)^    interval: .*$`).ReplaceAll(ruleFile, []byte("    interval: 10s"))
	}
	exporter := costExporter(t, gpus)
	end := time.Now().Truncate(costInterval)
	var groups func() map[string]groupEvaluation
	var engineURLs []string // the servers whose CPU the rules cost
	// stopRules ends the engine's evaluations; queryURL and queryParams
	// are where the rules' queries go, and what they add to them.
	// checkRecords checks that the base group kept up.
	var stopRules, checkRecords func()
	var queryURL, queryParams string
	push := func(url string) {
		began := time.Now()
		pushCostHistory(t, &remoteWriter{url: url}, gpus, historyRead(ruleFile), end.Add(-50*time.Minute), end)
		t.Logf("history of %d GPUs pushed in %v", gpus, time.Since(began).Round(time.Second))
	}
	switch engine {
	case promexport.TargetPrometheus:
		// Prometheus starts without rules or targets and takes the last
		// 50 minutes through its remote-write receiver, in time order;
		// then the rules and the exporter come in with a reload.
		config := fmt.Sprintf("global: {scrape_interval: %s, scrape_timeout: 25s}\n", costInterval)
		prom := fleettest.PrometheusWith(t, config, fleettest.PrometheusOptions{
			Flags: []string{"--web.enable-remote-write-receiver"}, Files: map[string]string{"rules.yml": string(ruleFile)}})
		push(prom.URL + "/api/v1/write")
		config += fmt.Sprintf("rule_files: [rules.yml]\nscrape_configs:\n  - {job_name: gpuwatch, honor_labels: true, static_configs: [{targets: [%q]}]}\n",
			strings.TrimPrefix(exporter.URL, "http://"))
		if err := os.WriteFile(filepath.Join(prom.Dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		if resp, err := http.Post(prom.URL+"/-/reload", "", nil); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("reload Prometheus: %v %v", resp, err)
		}
		groups = func() map[string]groupEvaluation { return prometheusGroups(prom.URL) }
		engineURLs = []string{prom.URL}
		queryURL = prom.URL
		checkRecords = func() { checkRecorded(t, prom.URL, "", gpus, "") }
		stopRules = func() {
			// A reload with no rules stops every group, waiting for those
			// evaluating.
			if err := os.WriteFile(filepath.Join(prom.Dir, "rules.yml"), []byte("groups: []\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if resp, err := http.Post(prom.URL+"/-/reload", "", nil); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("reload Prometheus: %v %v", resp, err)
			}
		}
	case promexport.TargetVMAlert:
		// VictoriaMetrics scrapes the exporter and takes the last 50
		// minutes through its remote-write API; then vmalert starts.
		dir := t.TempDir()
		scrape := filepath.Join(dir, "scrape.yml")
		if err := os.WriteFile(scrape, fmt.Appendf(nil, "global: {scrape_interval: %s, scrape_timeout: 25s}\nscrape_configs:\n  - {job_name: gpuwatch, honor_labels: true, static_configs: [{targets: [%q]}]}\n",
			costInterval, strings.TrimPrefix(exporter.URL, "http://")), 0o644); err != nil {
			t.Fatal(err)
		}
		vm := fleettest.VictoriaMetrics(t, append([]string{"-promscrape.config=" + scrape}, victoriaFleetFlags...)...)
		push(vm.URL + "/api/v1/write")
		am := fleettest.Alertmanager(t, "route: {receiver: none}\nreceivers: [{name: none}]\n")
		vmalert := fleettest.VMAlert(t, fleettest.VMAlertOptions{Rules: map[string]string{"rules.yml": string(ruleFile)},
			VictoriaMetrics: vm.URL, Alertmanager: am.URL, Flags: vmalertFleetFlags})
		groups = vmalertGroups(vmalert.URL)
		engineURLs = []string{vm.URL, vmalert.URL}
		queryURL, queryParams = vm.URL, "nocache=1"
		checkRecords = func() { checkRecorded(t, vm.URL, "&nocache=1", gpus, vmalert.URL) }
		stopRules = vmalert.Terminate
	}

	// Warm-up evaluations (the live series join the history), then the
	// measured ones, of every group.
	warm, measured := 1, 3
	if full {
		warm, measured = 2, 6
	}
	seen := map[string][]groupEvaluation{}
	cpuFrom, wallFrom := cpuSeconds(engineURLs), time.Now()
	deadline := time.Now().Add(time.Duration(warm+measured+4) * 2 * max(slices.Max(slices.Collect(maps.Values(intervals))), 10*time.Second))
	for {
		done := len(seen) == len(intervals)
		for _, evs := range seen {
			done = done && len(evs) >= warm+measured
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			// What was measured is reported all the same: the groups
			// that fell behind are the ones to know of.
			t.Errorf("not every group evaluated %d times in time", warm+measured)
			break
		}
		time.Sleep(time.Second)
		for name, g := range groups() {
			evs := seen[name]
			if g.at != "" && (len(evs) == 0 || evs[len(evs)-1].at != g.at) {
				if g.err != "" {
					t.Fatalf("%s: group %s: %s", engine, name, g.err)
				}
				seen[name] = append(evs, g)
			}
		}
	}
	cpu, wall := cpuSeconds(engineURLs)-cpuFrom, time.Since(wallFrom)
	var report strings.Builder
	perRule := map[string][]float64{}
	for _, name := range slices.Sorted(maps.Keys(seen)) {
		evs := seen[name]
		if len(evs) > warm {
			evs = evs[warm:]
		}
		var ds []float64
		for _, g := range evs {
			ds = append(ds, g.seconds)
			for rule, d := range g.rules {
				perRule[rule] = append(perRule[rule], d)
			}
		}
		slices.Sort(ds)
		fmt.Fprintf(&report, "\n  %-40s every %-5v median %.3fs, max %.3fs (%.0f%% of its interval at most)", name, intervals[name],
			ds[len(ds)/2], ds[len(ds)-1], 100*ds[len(ds)-1]/intervals[name].Seconds())
		if len(ds) < measured {
			fmt.Fprintf(&report, ", %d evaluations of %d", len(ds), measured)
		}
	}
	t.Logf("%s, %d GPUs, the groups' evaluations (%d each):%s", engine, gpus, measured, report.String())
	t.Logf("the costliest rules (median of the measured evaluations): %s", costliest(perRule, 8))
	t.Logf("%s's CPU while it evaluated (scrapes included): %.0f s in %v, %.2f cores", engine, cpu, wall.Round(time.Second), cpu/wall.Seconds())
	checkRecords()
	// The queries are of the time before the evaluations stop: Prometheus
	// marks the records of a group it stops stale at once.
	stopped := time.Now()
	stopRules()
	// What they read is there: the base group's records of every GPU.
	checkRecorded(t, queryURL, "&time="+queryTime(stopped)+"&"+queryParams, gpus, "")
	t.Logf("%s, %d GPUs, each group alone, its rules as queries one after the other (3 rounds):%s", engine, gpus,
		measureAlone(t, queryURL, queryParams, stopped, ruleFile, intervals, 3))
}

// cpuSeconds is the CPU the servers at urls have used, the sum of their
// process_cpu_seconds_total.
func cpuSeconds(urls []string) float64 {
	var sum float64
	for _, u := range urls {
		for _, line := range metricLines(u, "process_cpu_seconds_total ") {
			f, _ := strconv.ParseFloat(line, 64)
			sum += f
		}
	}
	return sum
}

// metricLines are the lines of the /metrics of the server at base that
// start with prefix, without it; none when it does not answer.
func metricLines(base, prefix string) []string {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out []string
	for line := range strings.Lines(string(body)) {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			out = append(out, strings.TrimSpace(rest))
		}
	}
	return out
}

// vmalertFleetFlags are vmalert's flags for a large fleet: results sent
// every second, in batches and a queue as large as an evaluation of 10,000
// GPUs' recording rules makes.
var vmalertFleetFlags = []string{"-remoteWrite.flushInterval=1s", "-remoteWrite.maxQueueSize=2000000",
	"-remoteWrite.maxBatchSize=10000", "-remoteWrite.concurrency=4"}

// victoriaFleetFlags are VictoriaMetrics' flags for a large fleet's
// rules: as many queries at once as vmalert's groups make, each as long as
// it takes, where its defaults for a small machine (4 at once on 2 cores,
// 10 s in the queue, 30 s a query) fail the evaluations the harness
// measures.
var victoriaFleetFlags = []string{"-search.maxConcurrentRequests=32", "-search.maxQueueDuration=5m", "-search.maxQueryDuration=5m"}

// groupIntervals are the interval of each group of a rule file.
func groupIntervals(t *testing.T, ruleFile []byte) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, g := range ruleGroups(t, ruleFile) {
		d, err := time.ParseDuration(g.Interval)
		if err != nil {
			t.Fatalf("group %s: interval %q: %v", g.Name, g.Interval, err)
		}
		out[g.Name] = d
	}
	return out
}

// checkRecorded checks that the engine recorded gpuwatch:memory_used
// (the base group's) for every GPU; writer, when set, is the server that
// wrote the records (vmalert), whose remote-write metrics a failure logs.
func checkRecorded(t *testing.T, base, params string, gpus int, writer string) {
	n := promQueryValue(t, base, `count(gpuwatch:memory_used)`+params)
	if n == float64(gpus) {
		return
	}
	t.Errorf("gpuwatch:memory_used has %v series, want one for each of %d GPUs", n, gpus)
	if writer == "" {
		return
	}
	// Whether the records are there but late, or not there at all.
	t.Logf("over the last 30 minutes: %v series, the newest sample %.0f s old",
		promQueryValue(t, base, `count(last_over_time(gpuwatch:memory_used[30m]))`+params),
		promQueryValue(t, base, `time() - max(tlast_over_time(gpuwatch:memory_used[30m]))`+params))
	for _, line := range metricLines(writer, "vmalert_remotewrite_") {
		t.Log("vmalert_remotewrite_" + line)
	}
}

// promQueryValue is the first value an instant query of Prometheus's own
// API answers; 0 when none.
func promQueryValue(t *testing.T, base, query string) float64 {
	t.Helper()
	q, params, _ := strings.Cut(query, "&")
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q) + "&" + params)
	if err != nil {
		t.Logf("%s: %v", query, err)
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	i := strings.Index(string(body), `"value":[`)
	if i < 0 {
		t.Logf("%s: no value in %.500s", query, body)
		return 0
	}
	rest := string(body[i+len(`"value":[`):])
	_, v, _ := strings.Cut(rest, `,"`)
	v, _, _ = strings.Cut(v, `"`)
	f, _ := strconv.ParseFloat(v, 64)
	return f
}

// groupEvaluation is a group's latest evaluation: when (as the engine
// writes it), how long it took, each rule's time (by record or alert
// name), and the error of a rule that failed.
type groupEvaluation struct {
	at      string
	seconds float64
	rules   map[string]float64
	err     string
}

// rulesAnswer is /api/v1/rules of Prometheus and of vmalert.
type rulesAnswer struct {
	Data struct {
		Groups []struct {
			Name           string  `json:"name"`
			EvaluationTime float64 `json:"evaluationTime"`
			LastEvaluation string  `json:"lastEvaluation"`
			Rules          []struct {
				Name           string  `json:"name"`
				EvaluationTime float64 `json:"evaluationTime"`
				LastEvaluation string  `json:"lastEvaluation"`
				LastError      string  `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"data"`
}

func getJSON(url string, v any) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}

// evaluations reads the groups of /api/v1/rules; seconds, when set, gives
// a group's evaluation time where the answer does not; cumulative says
// that a rule's time is counted from the start of its group's evaluation
// (vmalert's), so its own is the difference from the rule before it in
// the same evaluation.
func (a *rulesAnswer) evaluations(seconds func(group string) float64, cumulative bool) map[string]groupEvaluation {
	out := map[string]groupEvaluation{}
	for _, g := range a.Data.Groups {
		if strings.HasPrefix(g.LastEvaluation, "0001-") {
			continue
		}
		e := groupEvaluation{at: g.LastEvaluation, seconds: g.EvaluationTime, rules: map[string]float64{}}
		var before float64
		var beforeAt string
		for _, r := range g.Rules {
			d := r.EvaluationTime
			if cumulative {
				if r.LastEvaluation != beforeAt { // the first rule of an evaluation
					before, beforeAt = 0, r.LastEvaluation
				}
				d, before = max(d-before, 0), max(d, before)
			}
			e.rules[r.Name] += d
			if r.LastError != "" && e.err == "" {
				e.err = r.Name + ": " + r.LastError
			}
		}
		if seconds != nil {
			e.seconds = seconds(g.Name)
		}
		out[g.Name] = e
	}
	return out
}

// prometheusGroups are Prometheus's groups' latest evaluations.
func prometheusGroups(base string) map[string]groupEvaluation {
	var a rulesAnswer
	if !getJSON(base+"/api/v1/rules", &a) {
		return nil
	}
	return a.evaluations(nil, false)
}

// vmalertGroups reads vmalert's groups' latest evaluations, each's time
// from vmalert_iteration_duration_seconds: its sum grows by the time of
// each evaluation, read right after it.
func vmalertGroups(base string) func() map[string]groupEvaluation {
	last := map[string]float64{} // the sums read at each group's last new evaluation
	lastAt := map[string]string{}
	return func() map[string]groupEvaluation {
		var a rulesAnswer
		if !getJSON(base+"/api/v1/rules", &a) {
			return nil
		}
		sums := map[string]float64{}
		for _, rest := range metricLines(base, `vmalert_iteration_duration_seconds_sum{group="`) {
			group, rest, _ := strings.Cut(rest, `"`)
			_, value, _ := strings.Cut(rest, "} ")
			sums[group], _ = strconv.ParseFloat(strings.TrimSpace(value), 64)
		}
		evs := a.evaluations(func(group string) float64 { return sums[group] - last[group] }, true)
		for name, e := range evs {
			if e.at != lastAt[name] {
				last[name], lastAt[name] = sums[name], e.at
			}
		}
		return evs
	}
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
