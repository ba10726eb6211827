package daemon_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	root "github.com/gpuwatch/gpuwatch"
	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu"
)

// BenchmarkSnapshotToWebhookLatency measures, per notification, the time
// from d.Step of the snapshot whose transition it announces (evaluation,
// routing, the fsynced commit) to its request arriving at a loopback
// webhook (generic format). Snapshots alternate hot and cool, so the alert
// fires and resolves in turn.
//
// group_wait is 0: the route sends at once, so each notification leaves
// with the commit of the snapshot that made it and its window starts at
// that Step, not a snapshot later. Between iterations the outbox empties
// (off the clock), as it does between real snapshots seconds apart.
func BenchmarkSnapshotToWebhookLatency(b *testing.B) {
	var mu sync.Mutex
	var arrivals []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		arrivals = append(arrivals, at)
		mu.Unlock()
	}))
	b.Cleanup(srv.Close)
	r := start(b, webhookConfig(b, b.TempDir(), srv.URL, "0s"), nil)
	temp := func(i int) float64 { return []float64{90, 50}[i%2] }

	latencies := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		mu.Lock()
		seen := len(arrivals)
		mu.Unlock()
		t0 := time.Now()
		r.D.Step(snapshot(base.Add(time.Duration(i)*10*time.Second), temp(i)))
		b.StopTimer()
		r.Drain()
		mu.Lock()
		for _, at := range arrivals[seen:] {
			latencies = append(latencies, at.Sub(t0))
		}
		mu.Unlock()
		b.StartTimer()
	}
	b.StopTimer()
	if len(latencies) == 0 {
		if b.N > 1 {
			b.Fatalf("no notification arrived in %d snapshots", b.N)
		}
		return
	}
	slices.Sort(latencies)
	ms := func(q float64) float64 {
		i := min(len(latencies)-1, int(q*float64(len(latencies))))
		return float64(latencies[i].Microseconds()) / 1000
	}
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
	b.ReportMetric(ms(1), "max-ms")
}

// BenchmarkOutboxThroughput pushes at least b.N notifications through the daemon:
// snapshots flip 100 rules at once (100 notifications per fsynced commit),
// the receiver's deliverer sends them one by one to a loopback webhook.
// It reports notifications per second, from the first Step to the last
// request's arrival.
func BenchmarkOutboxThroughput(b *testing.B) {
	const rules = 100
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got.Add(1)
	}))
	b.Cleanup(srv.Close)
	var text strings.Builder
	fmt.Fprintf(&text, "source:\n  type: sim\nreceivers:\n  - name: hook\n    webhook: {url: %q}\nroute:\n  receiver: hook\n  group_wait: 1ns\nrules:\n", srv.URL)
	for i := range rules {
		fmt.Fprintf(&text, "  - alert: Hot%03d\n    when: temperature > 85\n", i)
	}
	r := start(b, parseConfig(b, b.TempDir(), text.String(), nil), nil)

	steps := (b.N + rules - 1) / rules
	b.ReportAllocs()
	b.ResetTimer()
	t0 := time.Now()
	for i := range steps {
		r.D.Step(snapshot(base.Add(time.Duration(i)*10*time.Second), []float64{90, 50}[i%2]))
	}
	// One more snapshot releases what still waits for its group_wait.
	r.D.Step(snapshot(base.Add(time.Duration(steps)*10*time.Second), []float64{90, 50}[(steps-1)%2]))
	r.Drain()
	elapsed := time.Since(t0)
	b.StopTimer()
	sent := got.Load()
	if want := int64(steps * rules); sent != want {
		b.Fatalf("requests: got %d, want %d (one per rule per snapshot)", sent, want)
	}
	b.ReportMetric(float64(sent)/elapsed.Seconds(), "notifications/s")
}

// BenchmarkHubMemory10000GPUsDaemon is the heap of a whole hub daemon over
// 10,000 GPUs (1,250 hosts of 8): the example rules' windows filled (40
// minutes at the hub's 30 s interval), each host's latest snapshot, the
// day of history /gpu history shows for every GPU, the usage rollups, the
// store. It steps the daemon with fleet snapshots as the prometheus source
// hands them (host by host, one time each evaluation), then reads the heap
// in use after a collection, the daemon alive. Target: ≤ 500 MiB.
func BenchmarkHubMemory10000GPUsDaemon(b *testing.B) {
	const hosts, perHost = 1250, 8
	for b.Loop() {
		cfg := parseConfig(b, b.TempDir(), "source: {type: sim}\nreceivers: [{name: console, console: {}}]\nroute: {receiver: console}\n", nil)
		example, err := config.Parse("config.example.yaml", root.ExampleConfig, func(string) (string, bool) { return "", false })
		if err != nil {
			b.Fatal(err)
		}
		cfg.Rules = example.Rules
		r := start(b, cfg, nil)
		fleet := make([]*gpu.Snapshot, hosts)
		for h := range fleet {
			fleet[h] = &gpu.Snapshot{Host: fmt.Sprintf("node%04d", h)}
			for g := range perHost {
				fleet[h].Devices = append(fleet[h].Devices, gpu.Device{Index: g, UUID: fmt.Sprintf("GPU-%04d-%d", h, g),
					Name: "NVIDIA H100 80GB HBM3", MemTotal: 80 << 30, PowerLimitW: 700,
					Processes: []gpu.Process{{PID: 1000 + g, User: fmt.Sprintf("user%d", h%40), Command: "python train.py", MemUsed: 40 << 30}}})
			}
		}
		for step := range 81 {
			at := base.Add(time.Duration(step) * 30 * time.Second)
			for _, s := range fleet {
				s.Time = at
				for g := range s.Devices {
					d := &s.Devices[g]
					d.MemUsed = 40<<30 + uint64((step*7+g)%13)<<20
					d.UtilGPU, d.UtilMem, d.TempC, d.PowerW = 80+float64(g), 40, 60, 400
				}
				r.D.Step(s)
			}
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		runtime.KeepAlive(r)
		runtime.KeepAlive(fleet)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
		r.Stop()
	}
}
