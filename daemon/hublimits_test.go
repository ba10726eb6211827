package daemon_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
	"github.com/gpuwatch/gpuwatch/store"
)

// hostileHub is a fleet's Prometheus with two healthy hosts, a and b (b's
// GPU 0 hot), and two bad series beside them, both of a hot GPU: one whose
// host label is 33 KiB, and one of host c whose uuid label is 30 MiB. The
// long values are written as they are sent, from a small buffer, so the
// test process holds them only if the hub does.
func hostileHub(t *testing.T) (url string, answers *atomic.Int64) {
	const hostBytes, uuidBytes = 33 << 10, 30 << 20
	chunk := []byte(strings.Repeat("x", 64<<10))
	long := func(w http.ResponseWriter, n int) {
		for ; n > len(chunk); n -= len(chunk) {
			w.Write(chunk)
		}
		w.Write(chunk[:n])
	}
	answers = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
			return
		}
		now := time.Now().Unix()
		var healthy []string
		for _, name := range hubFamilies {
			healthy = append(healthy, hubSeries(name, []time.Time{time.Now()}, true, false)...)
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s,`, strings.Join(healthy, ","))
		fmt.Fprint(w, `{"metric":{"__name__":"gpuwatch_gpu_temperature_celsius","gpu":"0","uuid":"GPU-evil","instance":"evil:9477","host":"`)
		long(w, hostBytes)
		fmt.Fprintf(w, `"},"value":[%d,"95"]},`, now)
		fmt.Fprint(w, `{"metric":{"__name__":"gpuwatch_gpu_temperature_celsius","host":"c","gpu":"0","instance":"c:9477","uuid":"`)
		long(w, uuidBytes)
		fmt.Fprintf(w, `"},"value":[%d,"95"]},`, now)
		fmt.Fprintf(w, `{"metric":{"__name__":"up","instance":"a:9477","job":"gpuwatch"},"value":[%d,"1"]},`, now)
		fmt.Fprintf(w, `{"metric":{"__name__":"up","instance":"b:9477","job":"gpuwatch"},"value":[%d,"1"]}]}}`, now)
		answers.Add(1)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, answers
}

// TestHubLeavesOutLongLabels: a hub whose Prometheus serves, beside
// healthy hosts, one series with a 33 KiB label and one with a 30 MiB
// label, both of hot GPUs, alerts for the healthy hosts (GPUHot on b
// arrives, and nothing else), names each bad series once in its log
// however many evaluations pass, writes to its store all along (its
// /healthz stays ok), and holds none of the long labels: an evaluation
// allocates far less than the 30 MiB it reads.
func TestHubLeavesOutLongLabels(t *testing.T) {
	dir := t.TempDir()
	url, answers := hostileHub(t)
	hook := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 200} })
	cfg := hubConfig(t, dir, url, hook.URL)
	cfg.Source.Prometheus.Timeout = 5 * time.Second
	cfg.Source.Interval = 300 * time.Millisecond
	d, logs, _ := runHub(t, cfg)
	waitFor(t, "GPUHot on b", func() bool { return len(hook.AlertLines(t)) >= 1 })

	// Memory: what the evaluations allocate while the long labels stream
	// through, against what they are.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	from := answers.Load()
	waitFor(t, "five more evaluations", func() bool { return answers.Load() >= from+5 })
	runtime.ReadMemStats(&after)
	n := answers.Load() - from
	if per := (after.TotalAlloc - before.TotalAlloc) / uint64(n); per > 8<<20 {
		t.Errorf("an evaluation allocates %d MiB, want under 8 MiB: the 30 MiB label must not be held", per>>20)
	}

	if got := hook.AlertLines(t); strings.Join(got, "\n") != "firing GPUHot b/0" {
		t.Errorf("the hook got %q, want only GPUHot on b: the bad series are left out, the healthy hosts alerted", got)
	}
	text := logs.String()
	if got := strings.Count(text, "a series is left out"); got != 2 {
		t.Errorf("the log names %d series left out over %d evaluations, want the 2 bad ones once each:\n%s", got, answers.Load(), text)
	}
	for _, want := range []string{`host=\"xxxx`, "(33792 bytes)", `uuid=\"xxxx`, "(31457280 bytes)"} {
		if !strings.Contains(text, want) {
			t.Errorf("the log does not say %s of the series left out:\n%s", want, text)
		}
	}
	if strings.Contains(text, "longer than 32768") || strings.Contains(text, "cannot write to the store") {
		t.Errorf("the store refused a write:\n%s", text)
	}
	if health := get(t, "http://"+d.Addr()+"/healthz"); !strings.HasPrefix(health, "ok") {
		t.Errorf("/healthz: %q, want ok", health)
	}
	if hosts := d.Snapshots(); len(hosts) != 2 || hosts[0].Host != "a" || hosts[1].Host != "b" {
		t.Errorf("the hub watches %d hosts, want a and b only", len(hosts))
	}
}

// TestStepLeavesOutOversizedHost: whatever the source, a snapshot whose
// host name is too long to keep (33 KiB) is left out, said once, and the
// other hosts go on: their alerts arrive and their usage rollups are
// written (a store that refused the bad host's keys would lose both, for
// every host).
func TestStepLeavesOutOversizedHost(t *testing.T) {
	h := newHook(t, nil)
	cfg := webhookConfig(t, t.TempDir(), h.URL, "0s")
	r := start(t, cfg, nil)
	bad := strings.Repeat("h", 33<<10)
	for i := range 40 { // past the five minutes between checkpoints of the rollups
		at := base.Add(time.Duration(i) * 10 * time.Second)
		evil := snapshot(at, 95)
		evil.Host = bad
		r.D.Step(evil)
		r.D.Step(snapshot(at, 95, 50))
	}
	h.WaitAccepted(t, 1)
	r.Drain()
	r.Stop()
	if got := h.Summary(); strings.Join(got, " ") != "firing[0]" {
		t.Errorf("the hook got %v, want GPUHot on node1's GPU 0 only", got)
	}
	logs := r.Logs.String()
	if n := strings.Count(logs, "its snapshot is left out"); n != 1 {
		t.Errorf("the log says %d times that the snapshot is left out, want once:\n%.2000s", n, logs)
	}
	if strings.Contains(logs, "cannot write to the store") {
		t.Errorf("the store refused a write:\n%.2000s", logs)
	}
	db, err := store.Open(cfg.Storage.Path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rollups, err := db.All(daemon.BucketRollups)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for key := range rollups {
		found = found || strings.Contains(key, "/gpu/node1/")
		if len(key) > 2*gpu.MaxNameBytes {
			t.Errorf("a rollup key of %d bytes was written", len(key))
		}
	}
	if !found {
		t.Errorf("no usage rollup of node1 was written: %d records", len(rollups))
	}
}
