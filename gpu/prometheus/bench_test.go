package prometheus

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
	"github.com/gpuwatch/gpuwatch/rules"
)

// memoryAPI serves recorded answers from memory: queries cost no network
// and no Prometheus, only what gpuwatch does with the answer.
type memoryAPI struct {
	instant func() []byte
	ranged  func(name string, start, end time.Time, step time.Duration) []byte
	queries atomic.Int64
}

func (m *memoryAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	m.queries.Add(1)
	r.ParseForm()
	var body []byte
	switch r.URL.Path {
	case "/api/v1/query":
		body = m.instant()
	case "/api/v1/query_range":
		q := r.Form.Get("query")
		at := func(k string) time.Time {
			f, _ := strconv.ParseFloat(r.Form.Get(k), 64)
			return time.UnixMilli(int64(math.Round(f * 1000))).UTC()
		}
		step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
		body = m.ranged(q[len(`{__name__=~"`):len(q)-len(`"}`)], at("start"), at("end"), time.Duration(step*float64(time.Second)))
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
}

// agentFamilies are the series a gpuwatch agent exports per GPU (with
// one user), and their values.
var agentFamilies = []struct {
	name  string
	value func(g int, t float64) float64
}{
	{"gpuwatch_gpu_info", func(int, float64) float64 { return 1 }},
	{"gpuwatch_gpu_lost", func(int, float64) float64 { return 0 }},
	{"gpuwatch_gpu_memory_used_bytes", func(g int, t float64) float64 { return float64((g%40+20)<<30) + t*1e5 }},
	{"gpuwatch_gpu_memory_total_bytes", func(int, float64) float64 { return 80 << 30 }},
	{"gpuwatch_gpu_utilization_ratio", func(g int, _ float64) float64 { return float64(g%100) / 100 }},
	{"gpuwatch_gpu_memory_utilization_ratio", func(g int, _ float64) float64 { return float64(g%50) / 100 }},
	{"gpuwatch_gpu_temperature_celsius", func(g int, _ float64) float64 { return float64(40 + g%45) }},
	{"gpuwatch_gpu_power_watts", func(g int, _ float64) float64 { return float64(100 + g%500) }},
	{"gpuwatch_gpu_power_limit_watts", func(int, float64) float64 { return 700 }},
	{"gpuwatch_gpu_user_memory_bytes", func(g int, t float64) float64 { return float64((g%40+20)<<30) + t*1e5 }},
}

// labels writes the label set of family f for GPU g of the fleet.
func labels(b *bytes.Buffer, f string, g int) {
	host := "node" + strconv.Itoa(g/8)
	fmt.Fprintf(b, `{"__name__":%q,"gpu":"%d","uuid":"GPU-%08x-0000-4000-8000-%012x","host":%q,"instance":"%s:9477","job":"gpuwatch"`, f, g%8, g, g, host, host)
	if f == "gpuwatch_gpu_user_memory_bytes" {
		fmt.Fprintf(b, `,"user":"user%d"}`, g%37)
	} else {
		b.WriteString(`,"name":"NVIDIA H100 80GB HBM3"}`)
	}
}

// fleetVector is Prometheus's answer to a hub's instant query for gpus GPUs.
func fleetVector(gpus int, at time.Time) []byte {
	var b bytes.Buffer
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	ts := strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)
	for i, f := range agentFamilies {
		for g := range gpus {
			if i+g > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"metric":`)
			labels(&b, f.name, g)
			b.WriteString(`,"value":[` + ts + `,"` + strconv.FormatFloat(f.value(g, float64(at.Unix()%86400)), 'g', -1, 64) + `"]}`)
		}
	}
	b.WriteString(`]}}`)
	return b.Bytes()
}

// fleetMatrix is the answer to a range query of one family over steps
// points ending at end.
func fleetMatrix(name string, gpus, steps int, end time.Time, step time.Duration) []byte {
	var b bytes.Buffer
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	var value func(int, float64) float64
	for _, f := range agentFamilies {
		if f.name == name {
			value = f.value
		}
	}
	for g := 0; value != nil && g < gpus; g++ {
		if g > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"metric":`)
		labels(&b, name, g)
		b.WriteString(`,"values":[`)
		for s := range steps {
			at := end.Add(-time.Duration(steps-1-s) * step)
			if s > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`[` + strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64) + `,"` +
				strconv.FormatFloat(value(g, float64(at.Unix()%86400)), 'g', -1, 64) + `"]`)
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`]}}`)
	return b.Bytes()
}

func exampleRules(tb testing.TB) []*rules.Rule {
	tb.Helper()
	root, err := strictyaml.Parse("config.example.yaml", gpuwatch.ExampleConfig)
	if err != nil {
		tb.Fatal(err)
	}
	doc := root
	if doc.Kind == yaml.DocumentNode {
		doc = doc.Content[0]
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == "rules" {
			rs, errs := rules.ParseList("config.example.yaml", doc.Content[i+1])
			if len(errs) > 0 {
				tb.Fatal(errs)
			}
			return rs
		}
	}
	tb.Fatal("config.example.yaml has no rules")
	return nil
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHubEvaluation1000GPUs is one evaluation of a hub over 125 hosts
// of 8 GPUs: Prometheus's answer (served from memory: the query itself is
// Prometheus's time, not gpuwatch's) decoded, turned into 125 snapshots,
// and each evaluated with the example rules, their windows full. It
// reports the CPU time of an evaluation (cpu-ns/op, garbage collection
// included; target ≤ 50 ms) and the queries it sent (queries/op: one).
func BenchmarkHubEvaluation1000GPUs(b *testing.B) { benchmarkHubEvaluation(b, 1000) }

// BenchmarkHubEvaluation10000GPUs is the same at 1,250 hosts of 8 GPUs:
// the decoding and the rules of BenchmarkHubCost10000GPUs (cli), without
// the network, the daemon and the process around them.
func BenchmarkHubEvaluation10000GPUs(b *testing.B) { benchmarkHubEvaluation(b, 10000) }

func benchmarkHubEvaluation(b *testing.B, gpus int) {
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	answer := fleetVector(gpus, at)
	api := &memoryAPI{instant: func() []byte { return answer }}
	src, err := New(Options{URL: "http://prometheus:9090", Schema: SchemaGPUWatch, Interval: 30 * time.Second, Client: &http.Client{Transport: api}})
	if err != nil {
		b.Fatal(err)
	}
	e := rules.NewEngine(exampleRules(b), rules.Options{RepeatInterval: 4 * time.Hour})
	for i := range 100 { // fill the windows: 50 minutes at 30 s
		snaps, err := src.q.SampleFleet(b.Context(), at.Add(time.Duration(i-100)*30*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range snaps {
			e.Eval(s)
		}
	}
	b.ReportAllocs()
	api.queries.Store(0)
	i, cpu := 0, cpuTime()
	b.ResetTimer()
	for b.Loop() {
		snaps, err := src.q.SampleFleet(b.Context(), at.Add(time.Duration(i)*30*time.Second))
		if err != nil || len(snaps) != gpus/8 {
			b.Fatalf("%d snapshots, %v", len(snaps), err)
		}
		for _, s := range snaps {
			e.Eval(s)
		}
		i++
	}
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(api.queries.Load())/float64(b.N), "queries/op")
}

// BenchmarkHubMemory10000GPUs is a hub's heap at 10,000 GPUs (1,250 hosts
// of 8): the source backfills all the example rules look back (320
// minutes) at the default interval of 30 s into the engine, every step
// finely (the most a backfill reads: a hub reads the part before the
// trends' shortest scale coarser), and then evaluates once; the heap in
// use is read with both alive, after a collection (target ≤ 500 MiB).
func BenchmarkHubMemory10000GPUs(b *testing.B) {
	const gpus = 10000
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	interval := 30 * time.Second
	for b.Loop() {
		e := rules.NewEngine(exampleRules(b), rules.Options{RepeatInterval: 4 * time.Hour})
		span := e.Lookback()
		steps := int(span/interval) + 1
		api := &memoryAPI{
			instant: func() []byte { return fleetVector(gpus, at.Add(interval)) },
			ranged: func(name string, _, _ time.Time, _ time.Duration) []byte {
				return fleetMatrix(name, gpus, steps, at, interval)
			},
		}
		src, err := New(Options{URL: "http://prometheus:9090", Schema: SchemaGPUWatch, Interval: interval, Client: &http.Client{Transport: api}})
		if err != nil {
			b.Fatal(err)
		}
		warmed := 0
		if err := src.q.backfill(b.Context(), at, everything(span, 0), func(s *gpu.Snapshot) { e.Warm(s); warmed++ }); err != nil {
			b.Fatal(err)
		}
		snaps, err := src.q.SampleFleet(b.Context(), at.Add(interval))
		if err != nil || len(snaps) != gpus/8 || warmed != steps*gpus/8 {
			b.Fatalf("%d snapshots after %d warmed, %v", len(snaps), warmed, err)
		}
		for _, s := range snaps {
			e.Eval(s)
		}
		snaps = nil
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		runtime.KeepAlive(e)
		runtime.KeepAlive(src)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	}
}

// BenchmarkHubBackfill1000GPUs is a hub's start at 1,000 GPUs (125 hosts
// of 8), evaluating every 10 s: the source reads the past the example
// rules and their charts need from Prometheus's answers to its range
// queries (served from memory, written once beforehand: the query
// is Prometheus's time), builds each step's snapshots and warms the
// engine's windows with them. It reports the CPU time of the start
// (cpu-ns/op, garbage collection included), the points the answers held
// (points/op) and the bytes they took (answer-MB/op).
func BenchmarkHubBackfill1000GPUs(b *testing.B) {
	const gpus = 1000
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	interval := 10 * time.Second
	type key struct {
		name       string
		start, end time.Time
		step       time.Duration
	}
	answers := map[key][]byte{}
	var points, bytes int
	api := &memoryAPI{ranged: func(name string, start, end time.Time, step time.Duration) []byte {
		k := key{name, start, end, step}
		if a, ok := answers[k]; ok {
			return a
		}
		steps := int(end.Sub(start)/step) + 1
		a := fleetMatrix(name, gpus, steps, end, step)
		answers[k] = a
		points += gpus * steps
		bytes += len(a)
		return a
	}}
	// What a hub on the example rules asks (see the daemon): memory and
	// who holds each GPU over the 320 minutes of the longest trend, every
	// 100 s, and every evaluation over its shortest scale; the last 5
	// minutes of utilization and 30 of temperature every evaluation; and
	// two hours of each a minute, for the alerts' charts.
	past := Past{
		{ReadingMemory, 320 * time.Minute, 100 * time.Second}, {ReadingHolders, 320 * time.Minute, 100 * time.Second},
		{ReadingMemory, 40 * time.Minute, 0}, {ReadingHolders, 40 * time.Minute, 0},
		{ReadingUtilization, 5 * time.Minute, 0}, {ReadingTemperature, 30 * time.Minute, 0},
	}
	for _, r := range []Reading{ReadingMemory, ReadingHolders, ReadingUtilization, ReadingTemperature} {
		past = append(past, Need{r, 2 * time.Hour, time.Minute})
	}
	backfill := func() int {
		e := rules.NewEngine(exampleRules(b), rules.Options{RepeatInterval: 4 * time.Hour})
		src, err := New(Options{URL: "http://prometheus:9090", Schema: SchemaGPUWatch, Interval: interval, Client: &http.Client{Transport: api}})
		if err != nil {
			b.Fatal(err)
		}
		warmed := 0
		if err := src.q.backfill(b.Context(), at, past, func(s *gpu.Snapshot) { e.Warm(s); warmed++ }); err != nil {
			b.Fatal(err)
		}
		return warmed
	}
	backfill() // the answers, written once
	b.ReportAllocs()
	cpu := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		if n := backfill(); n == 0 {
			b.Fatal("nothing warmed")
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(points), "points/op")
	b.ReportMetric(float64(bytes)/1e6, "answer-MB/op")
}
