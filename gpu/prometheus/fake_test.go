package prometheus

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// fakePrometheus plays the part of Prometheus's query API that gpuwatch
// uses, over real HTTP: /api/v1/query and /api/v1/query_range on the
// selectors gpuwatch sends ({__name__=~"a|b",label="v",…}), over series
// whose values are functions of time. It records every request.
type fakePrometheus struct {
	*httptest.Server
	mu       sync.Mutex
	series   []fakeSeries
	requests []fakeRequest
	// answer, when set, is the body of every instant query (a recorded
	// answer); fail, when set, is the status of every answer.
	answer []byte
	fail   int
	// up is the up series of each target (instance) addAgentGPU made:
	// 1 unless set.
	up map[string]float64
}

type fakeSeries struct {
	labels map[string]string
	value  func(t time.Time) (float64, bool) // false: no sample then
}

type fakeRequest struct {
	path, query, auth string
}

func newFakePrometheus(t testing.TB) *fakePrometheus {
	f := &fakePrometheus{up: map[string]float64{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/query", f.instant)
	mux.HandleFunc("/api/v1/query_range", f.rangeQuery)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("gpuwatch asked %s %s: only /api/v1/query and /api/v1/query_range are Prometheus-compatible everywhere", r.Method, r.URL.Path)
		http.NotFound(w, r)
	})
	f.Server = httptest.NewServer(compressing(mux))
	t.Cleanup(f.Close)
	return f
}

// compressing serves h's answers as Prometheus does: gzipped to a client
// that accepts gzip, as they are to one that does not.
func compressing(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		defer zw.Close()
		h.ServeHTTP(gzipResponse{w, zw}, r)
	})
}

// gzipResponse writes a response's body through a gzip writer.
type gzipResponse struct {
	http.ResponseWriter
	zw *gzip.Writer
}

func (g gzipResponse) Write(b []byte) (int, error) { return g.zw.Write(b) }

func (f *fakePrometheus) add(labels map[string]string, value func(time.Time) (float64, bool)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.series = append(f.series, fakeSeries{labels: labels, value: value})
}

// remove drops the series whose label name has value v.
func (f *fakePrometheus) remove(name, v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.series = slices.DeleteFunc(f.series, func(s fakeSeries) bool { return s.labels[name] == v })
}

// setUp sets the up series of the scrape target instance (absent: none).
func (f *fakePrometheus) setUp(instance string, v float64, absent bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if absent {
		delete(f.up, instance)
		return
	}
	f.up[instance] = v
}

func (f *fakePrometheus) setFail(status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = status
}

// count is how many requests went to path.
func (f *fakePrometheus) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if r.path == path {
			n++
		}
	}
	return n
}

func (f *fakePrometheus) record(r *http.Request) (fakeRequest, int, []byte) {
	r.ParseForm()
	req := fakeRequest{path: r.URL.Path, query: r.Form.Get("query"), auth: r.Header.Get("Authorization")}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
	return req, f.fail, f.answer
}

func (f *fakePrometheus) instant(w http.ResponseWriter, r *http.Request) {
	req, fail, answer := f.record(r)
	if fail != 0 {
		apiError(w, fail, "the query engine is overloaded")
		return
	}
	if answer != nil {
		w.Write(answer)
		return
	}
	at, err := parseTime(r.Form.Get("time"))
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	match, err := fakeSelector(req.query)
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	var result []map[string]any
	for _, s := range f.snapshotSeries() {
		if v, ok := s.value(at); ok && match(s.labels) {
			result = append(result, map[string]any{"metric": s.labels, "value": []any{unix(at), formatValue(v)}})
		}
	}
	writeData(w, "vector", result)
}

func (f *fakePrometheus) rangeQuery(w http.ResponseWriter, r *http.Request) {
	req, fail, _ := f.record(r)
	if fail != 0 {
		apiError(w, fail, "the query engine is overloaded")
		return
	}
	start, err1 := parseTime(r.Form.Get("start"))
	end, err2 := parseTime(r.Form.Get("end"))
	step, err3 := strconv.ParseFloat(r.Form.Get("step"), 64)
	match, err4 := fakeSelector(req.query)
	if err := cmpErr(err1, err2, err3, err4); err != nil || step <= 0 {
		apiError(w, http.StatusBadRequest, fmt.Sprintf("bad range query: %v", err))
		return
	}
	if (end.Sub(start).Seconds())/step > MaxPoints {
		apiError(w, http.StatusBadRequest, "exceeded maximum resolution of 11,000 points per timeseries")
		return
	}
	var result []map[string]any
	for _, s := range f.snapshotSeries() {
		if !match(s.labels) {
			continue
		}
		var values [][]any
		for t := start; !t.After(end); t = t.Add(time.Duration(step * float64(time.Second))) {
			if v, ok := s.value(t); ok {
				values = append(values, []any{unix(t), formatValue(v)})
			}
		}
		if len(values) > 0 {
			result = append(result, map[string]any{"metric": s.labels, "values": values})
		}
	}
	writeData(w, "matrix", result)
}

func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (f *fakePrometheus) snapshotSeries() []fakeSeries {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.series)
}

// fakeSelector matches what gpuwatch sends: a __name__ alternation and
// the selector's = and =~ matchers.
func fakeSelector(q string) (func(map[string]string) bool, error) {
	names := regexp.MustCompile(`^\{__name__=~"([^"]*)"(?:,(.*))?\}$`).FindStringSubmatch(q)
	if names == nil {
		return nil, fmt.Errorf("unexpected query %q", q)
	}
	nameRE := regexp.MustCompile("^(?:" + names[1] + ")$")
	sel, err := ParseSelector("{" + names[2] + "}")
	if err != nil {
		return nil, err
	}
	return func(labels map[string]string) bool {
		if !nameRE.MatchString(labels["__name__"]) {
			return false
		}
		for _, m := range sel.matchers {
			ok := labels[m.name] == m.value
			if m.op == "=~" {
				ok = regexp.MustCompile("^(?:" + m.value + ")$").MatchString(labels[m.name])
			}
			if ok != (m.op == "=" || m.op == "=~") {
				return false
			}
		}
		return true
	}, nil
}

func parseTime(s string) (time.Time, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q: %v", s, err)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(math.Round(frac*1e3))*1e6).UTC(), nil
}

func unix(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

func formatValue(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func writeData(w http.ResponseWriter, kind string, result []map[string]any) {
	if result == nil {
		result = []map[string]any{}
	}
	json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": kind, "result": result}})
}

func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"status": "error", "errorType": "unavailable", "error": msg})
}

// addAgentGPU adds the base series a gpuwatch agent exports for one GPU,
// with memory growing 1 GiB a minute from start, and the up series of
// its host's target (host:9477) when it has none.
func (f *fakePrometheus) addAgentGPU(host string, index int, start time.Time) {
	uuid := fmt.Sprintf("GPU-%s-%d", host, index)
	labels := func(name string) map[string]string {
		return map[string]string{"__name__": name, "host": host, "gpu": strconv.Itoa(index), "uuid": uuid,
			"name": "NVIDIA H100 80GB HBM3", "instance": host + ":9477", "job": "gpuwatch"}
	}
	always := func(v float64) func(time.Time) (float64, bool) {
		return func(t time.Time) (float64, bool) { return v, !t.Before(start) }
	}
	f.mu.Lock()
	_, targeted := f.up[host+":9477"]
	if !targeted {
		f.up[host+":9477"] = 1
	}
	f.mu.Unlock()
	if !targeted {
		f.add(map[string]string{"__name__": "up", "instance": host + ":9477", "job": "gpuwatch"}, func(time.Time) (float64, bool) {
			f.mu.Lock()
			defer f.mu.Unlock()
			v, ok := f.up[host+":9477"]
			return v, ok
		})
	}
	f.add(labels("gpuwatch_gpu_info"), always(1))
	f.add(labels("gpuwatch_gpu_memory_total_bytes"), always(80<<30))
	f.add(labels("gpuwatch_gpu_memory_used_bytes"), func(t time.Time) (float64, bool) {
		return float64(t.Sub(start)/time.Minute) * (1 << 30), !t.Before(start)
	})
	f.add(labels("gpuwatch_gpu_utilization_ratio"), always(0.9))
	f.add(labels("gpuwatch_gpu_temperature_celsius"), always(60+float64(index)))
	f.add(labels("gpuwatch_gpu_power_watts"), always(400))
}

// newSource makes a Source on the fake for tests.
func newSource(t testing.TB, f *fakePrometheus, opts Options) *Source {
	t.Helper()
	opts.URL = f.URL
	if opts.Schema == "" {
		opts.Schema = SchemaAuto
	}
	if opts.Interval == 0 {
		opts.Interval = 30 * time.Second
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// hostsOf lists the hosts of snapshots, in order.
func hostsOf(snaps []*gpu.Snapshot) string {
	var hs []string
	for _, s := range snaps {
		hs = append(hs, s.Host)
	}
	return strings.Join(hs, ",")
}
