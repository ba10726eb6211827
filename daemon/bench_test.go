package daemon_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
