package prometheus

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// at0 is a fixed evaluation time: 2025-11-29 09:00:00 UTC, the time of
// the recorded answers.
var at0 = time.Unix(1764406800, 0).UTC()

// describe writes snapshots as the golden files hold them: one line per
// host, GPU, process and event, every reading with its unit.
func describe(snaps []*gpu.Snapshot) string {
	var b strings.Builder
	for _, s := range snaps {
		fmt.Fprintf(&b, "host %s at %s: %d GPUs, %d events\n", s.Host, s.Time.UTC().Format(time.RFC3339), len(s.Devices), len(s.Events))
		for _, d := range s.Devices {
			fmt.Fprintf(&b, "  gpu %d %s %q mem %d/%d util %s mem-util %s temp %s power %s/%s\n", d.Index, d.UUID, d.Name,
				d.MemUsed, d.MemTotal, num(d.UtilGPU), num(d.UtilMem), num(d.TempC), num(d.PowerW), num(d.PowerLimitW))
			switch {
			case d.MIGEnabled:
				fmt.Fprintf(&b, "    in MIG mode\n")
			case d.MIG != nil:
				fmt.Fprintf(&b, "    %s of %s\n", d.Label(), d.MIG.ParentUUID)
			}
			for _, p := range d.Processes {
				fmt.Fprintf(&b, "    process pid %d user %q command %q container %q mem %d\n", p.PID, p.User, p.Command, p.Container, p.MemUsed)
			}
		}
		for _, e := range s.Events {
			fmt.Fprintf(&b, "  event %s gpu %d %s xid %d: %s\n", e.Kind, e.GPU, e.UUID, e.XID, e.Detail)
		}
	}
	return b.String()
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "unknown"
	}
	return fmt.Sprintf("%.4g", v)
}

// TestRecordedAnswers reads recorded answers of both schemas (label sets
// of dcgm-exporter 3.3 with its default counters, on bare metal with and
// without Hostname and on Kubernetes with pod mapping and a MIG instance;
// of gpuwatch agents with per-process series, with per-user series only
// and a lost GPU, and of an agent with the base series only) and compares
// the snapshots with testdata/*.golden (go test -update rewrites them).
func TestRecordedAnswers(t *testing.T) {
	for _, name := range []string{"dcgm", "gpuwatch"} {
		t.Run(name, func(t *testing.T) {
			answer, err := os.ReadFile(filepath.Join("testdata", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			f := newFakePrometheus(t)
			f.answer = answer
			src := newSource(t, f, Options{Schema: SchemaAuto})
			snaps, err := src.q.SampleFleet(t.Context(), at0)
			if err != nil {
				t.Fatal(err)
			}
			got := describe(snaps)
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("snapshots of testdata/%s.json:\n%s\nwant (testdata/%s.golden):\n%s", name, got, name, want)
			}
		})
	}
}

// TestQueriesPerEvaluationAreConstant runs evaluations over fleets of 1,
// 10 and 125 hosts of 8 GPUs: each costs one instant query, and a
// backfill one range query per series family of memory, utilization,
// temperature and power, and one for the health readings, a round of
// chunkSteps steps, whatever the fleet's size.
func TestQueriesPerEvaluationAreConstant(t *testing.T) {
	for _, hosts := range []int{1, 10, 125} {
		t.Run(fmt.Sprintf("%d hosts", hosts), func(t *testing.T) {
			f := newFakePrometheus(t)
			start := at0.Add(-time.Hour)
			for h := range hosts {
				for g := range 8 {
					f.addAgentGPU(fmt.Sprintf("node%03d", h), g, start)
				}
			}
			src := newSource(t, f, Options{Schema: SchemaGPUWatch})
			warmed := 0
			if err := src.q.backfill(t.Context(), at0, everything(10*time.Minute, 0), func(*gpu.Snapshot) { warmed++ }); err != nil {
				t.Fatal(err)
			}
			rounds := (21 + chunkSteps - 1) / chunkSteps // 21 steps
			// The families a backfill of everything reads: those of memory,
			// utilization, temperature and power, and the XIDs over the
			// last region, that the first evaluation tells only new ones.
			read := 0
			for _, name := range SchemaGPUWatch.names() {
				if r := readings[name]; r >= ReadingMemory && r <= ReadingXIDs {
					read++
				}
			}
			if got, want := f.count("/api/v1/query_range"), rounds*read; got != want {
				t.Errorf("backfill sent %d range queries, want %d (one per series family with a reading asked for and round of %d steps)", got, want, chunkSteps)
			}
			if want := 21 * hosts; warmed != want { // (at0-10m, at0] every 30s
				t.Errorf("backfill warmed %d snapshots, want %d", warmed, want)
			}
			for i := range 3 {
				snaps, err := src.q.SampleFleet(t.Context(), at0.Add(time.Duration(i+1)*30*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				if len(snaps) != hosts || len(snaps[0].Devices) != 8 {
					t.Fatalf("evaluation %d: %d snapshots of %d GPUs, want %d of 8", i, len(snaps), len(snaps[0].Devices), hosts)
				}
				if got := f.count("/api/v1/query"); got != i+1 {
					t.Errorf("after %d evaluations: %d instant queries, want %d (one per evaluation)", i+1, got, i+1)
				}
			}
		})
	}
}

// TestNextReturnsEveryHostThenWaits checks the Source contract: one
// snapshot per host and evaluation, hosts sorted, all at the evaluation's
// time, a query per evaluation and not per host.
func TestNextReturnsEveryHostThenWaits(t *testing.T) {
	f := newFakePrometheus(t)
	for _, h := range []string{"c", "a", "b"} {
		f.addAgentGPU(h, 0, time.Unix(0, 0))
	}
	src := newSource(t, f, Options{Interval: 100 * time.Millisecond})
	var snaps []*gpu.Snapshot
	for range 6 {
		s, err := src.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s)
	}
	if got, want := hostsOf(snaps), "a,b,c,a,b,c"; got != want {
		t.Errorf("hosts %s, want %s", got, want)
	}
	for i, s := range snaps {
		if first := snaps[i/3*3]; !s.Time.Equal(first.Time) {
			t.Errorf("snapshot %d at %v, want its evaluation's time %v", i, s.Time, first.Time)
		}
	}
	if !snaps[3].Time.After(snaps[0].Time) {
		t.Errorf("second evaluation at %v, not after the first at %v", snaps[3].Time, snaps[0].Time)
	}
	if got := f.count("/api/v1/query"); got != 2 {
		t.Errorf("%d instant queries for two evaluations of three hosts, want 2", got)
	}
}

// TestHostGone: a host whose series vanish while its exporter is scraped
// (up is 1) gets snapshots without GPUs, so the engine counts its GPUs
// missing; the others go on.
func TestHostGone(t *testing.T) {
	f := newFakePrometheus(t)
	f.addAgentGPU("a", 0, time.Unix(0, 0))
	f.addAgentGPU("b", 0, time.Unix(0, 0))
	src := newSource(t, f, Options{})
	if _, err := src.q.SampleFleet(t.Context(), at0); err != nil {
		t.Fatal(err)
	}
	f.remove("host", "b")
	for i := range 2 {
		snaps, err := src.q.SampleFleet(t.Context(), at0.Add(time.Duration(i+1)*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if hostsOf(snaps) != "a,b" || len(snaps[0].Devices) != 1 || len(snaps[1].Devices) != 0 || snaps[1].Down != "" {
			t.Errorf("after b's series went: %s", describe(snaps))
		}
	}
	f.remove("host", "a")
	snaps, err := src.q.SampleFleet(t.Context(), at0.Add(3*time.Minute))
	if err != nil {
		t.Fatalf("every host's GPUs gone, their exporters up: %v, want empty snapshots of a and b (GPUs missing, not the source down)", err)
	}
	if hostsOf(snaps) != "a,b" || len(snaps[0].Devices)+len(snaps[1].Devices) != 0 {
		t.Errorf("every host gone: %s", describe(snaps))
	}
}

// TestHostDown: a host whose exporter Prometheus cannot scrape (up is 0)
// is down, one snapshot saying why, without GPUs; when it is scraped
// again its GPUs are back, none of them lost.
func TestHostDown(t *testing.T) {
	f := newFakePrometheus(t)
	f.addAgentGPU("a", 0, time.Unix(0, 0))
	f.addAgentGPU("b", 0, time.Unix(0, 0))
	f.addAgentGPU("b", 1, time.Unix(0, 0))
	src := newSource(t, f, Options{})
	if _, err := src.q.SampleFleet(t.Context(), at0); err != nil {
		t.Fatal(err)
	}
	f.remove("host", "b") // Prometheus marks a failed target's series stale
	f.setUp("b:9477", 0, false)
	snaps, err := src.q.SampleFleet(t.Context(), at0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if hostsOf(snaps) != "a,b" || len(snaps[0].Devices) != 1 || snaps[0].Down != "" || len(snaps[1].Devices) != 0 ||
		snaps[1].Down != "Prometheus cannot scrape its exporter at b:9477 (job gpuwatch): up is 0" {
		t.Errorf("b's exporter down: %s (b down: %q)", describe(snaps), snaps[len(snaps)-1].Down)
	}
	f.setUp("b:9477", 1, false)
	f.addAgentGPU("b", 0, time.Unix(0, 0))
	f.addAgentGPU("b", 1, time.Unix(0, 0))
	snaps, err = src.q.SampleFleet(t.Context(), at0.Add(2*time.Minute))
	if err != nil || len(snaps) != 2 || len(snaps[1].Devices) != 2 || snaps[1].Down != "" || eventsOf(snaps) != "" {
		t.Errorf("b back: %s, events %q, %v", describe(snaps), eventsOf(snaps), err)
	}
}

// TestPrometheusSilent: an answer without the series of hosts that
// reported, and without their targets' up (Prometheus restarted after its
// lookback and has not scraped them yet), is the source down, not lost
// GPUs, and changes nothing the next evaluation compares with; a host
// Prometheus stays silent about past the grace is down.
func TestPrometheusSilent(t *testing.T) {
	f := newFakePrometheus(t)
	f.addAgentGPU("a", 0, time.Unix(0, 0))
	f.addAgentGPU("b", 0, time.Unix(0, 0))
	var xid atomic.Int64
	f.add(map[string]string{"__name__": "gpuwatch_gpu_xid_errors_total", "host": "a", "gpu": "0", "uuid": "GPU-a-0", "xid": "79",
		"instance": "a:9477", "job": "gpuwatch"}, func(time.Time) (float64, bool) { return float64(xid.Load()), true })
	src := newSource(t, f, Options{Interval: 10 * time.Second})
	if _, err := src.q.SampleFleet(t.Context(), at0); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	saved := f.series
	f.series = nil
	f.mu.Unlock()
	var se *gpu.SourceError
	if _, err := src.q.SampleFleet(t.Context(), at0.Add(6*time.Minute)); !errors.As(err, &se) ||
		!strings.Contains(err.Error(), "without the series of 2 of the 2 hosts it had (a, b)") {
		t.Fatalf("empty answer: %v, want the source down naming a and b", err)
	}
	// a is scraped again, with an XID since; b not yet.
	f.mu.Lock()
	f.series = slices.DeleteFunc(slices.Clone(saved), func(s fakeSeries) bool { return s.labels["instance"] == "b:9477" })
	f.mu.Unlock()
	xid.Store(1)
	if _, err := src.q.SampleFleet(t.Context(), at0.Add(6*time.Minute+10*time.Second)); !errors.As(err, &se) ||
		!strings.Contains(err.Error(), "without the series of 1 of the 2 hosts it had (b)") {
		t.Fatalf("partial answer: %v, want the source down naming b", err)
	}
	f.mu.Lock()
	f.series = saved
	f.mu.Unlock()
	snaps, err := src.q.SampleFleet(t.Context(), at0.Add(6*time.Minute+20*time.Second))
	if err != nil || hostsOf(snaps) != "a,b" || len(snaps[0].Devices) != 1 || len(snaps[1].Devices) != 1 || eventsOf(snaps) != "xid 79" {
		t.Fatalf("whole answer again: %s, events %q, %v; want both hosts, and the XID the partial answer held", describe(snaps), eventsOf(snaps), err)
	}
	// b's target leaves Prometheus for good: unknown within the grace
	// (two minutes), down after.
	f.remove("instance", "b:9477")
	f.setUp("b:9477", 0, true)
	at := at0.Add(7 * time.Minute)
	if _, err := src.q.SampleFleet(t.Context(), at); !errors.As(err, &se) {
		t.Fatalf("b gone: %v, want the source down within the grace", err)
	}
	snaps, err = src.q.SampleFleet(t.Context(), at.Add(minGrace))
	if err != nil || hostsOf(snaps) != "a,b" || !strings.HasPrefix(snaps[1].Down, "Prometheus has had none of its series") {
		t.Fatalf("b gone past the grace: %s, %v; want b down", describe(snaps), err)
	}
}

// TestNoSeriesAtAll: an answer without a single GPU series, before any
// host was seen, is a source error: the hub would watch nothing.
func TestNoSeriesAtAll(t *testing.T) {
	f := newFakePrometheus(t)
	src := newSource(t, f, Options{Selector: mustSelector(t, `{cluster="a"}`)})
	_, err := src.q.SampleFleet(t.Context(), at0)
	var se *gpu.SourceError
	if !errors.As(err, &se) || !se.At.Equal(at0) {
		t.Fatalf("got %v, want a *gpu.SourceError at %v", err, at0)
	}
	want := `has no GPU series of schema auto matching {cluster="a"}`
	if !strings.Contains(err.Error(), want) {
		t.Errorf("got %q, want it to say %q", err, want)
	}
}

func mustSelector(t testing.TB, s string) Selector {
	t.Helper()
	sel, err := ParseSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// TestSelectorReachesPrometheus: the selector is part of every query.
func TestSelectorReachesPrometheus(t *testing.T) {
	f := newFakePrometheus(t)
	f.addAgentGPU("a", 0, time.Unix(0, 0))
	f.addAgentGPU("b", 0, time.Unix(0, 0))
	src := newSource(t, f, Options{Schema: SchemaGPUWatch, Selector: mustSelector(t, `{host=~"a|c"}`)})
	snaps, err := src.q.SampleFleet(t.Context(), at0)
	if err != nil {
		t.Fatal(err)
	}
	if hostsOf(snaps) != "a" {
		t.Errorf("hosts %s, want a alone", hostsOf(snaps))
	}
	want := `{__name__=~"gpuwatch_gpu_info|gpuwatch_gpu_lost|` // …
	if q := f.requests[0].query; !strings.HasPrefix(q, want) || !strings.HasSuffix(q, `",host=~"a|c"}`) {
		t.Errorf("query %s, want %s…,host=~\"a|c\"}", q, want)
	}
}

// TestPrometheusDown: a refused connection, an error answer and a slow
// answer are *gpu.SourceErrors at the evaluation's time, saying what.
func TestPrometheusDown(t *testing.T) {
	f := newFakePrometheus(t)
	f.addAgentGPU("a", 0, time.Unix(0, 0))
	src := newSource(t, f, Options{Timeout: 200 * time.Millisecond})
	f.setFail(http.StatusServiceUnavailable)
	_, err := src.q.SampleFleet(t.Context(), at0)
	var se *gpu.SourceError
	if !errors.As(err, &se) || !se.At.Equal(at0) || !strings.Contains(err.Error(), "the query engine is overloaded") {
		t.Errorf("error answer: got %v, want a *gpu.SourceError quoting Prometheus", err)
	}
	f.setFail(0)
	if _, err := src.q.SampleFleet(t.Context(), at0); err != nil {
		t.Errorf("answering again: %v", err)
	}
	f.Close()
	_, err = src.q.SampleFleet(t.Context(), at0)
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "query prometheus at "+f.URL) {
		t.Errorf("closed: got %v, want a *gpu.SourceError naming the URL", err)
	}
}

// TestSecretsStayOut: a far side that quotes the credentials back in its
// error gets them cut out of the error.
func TestSecretsStayOut(t *testing.T) {
	const token = "s3cr3t-t0ken-0123456789abcdef"
	srv := newFakePrometheus(t)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusUnauthorized, "bad credentials: "+r.Header.Get("Authorization"))
	})
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultTransport.RoundTrip(r)
	})}
	src := newSource(t, srv, Options{Client: client, Secrets: func() []string { return []string{token} }})
	_, err := src.q.SampleFleet(t.Context(), at0)
	if err == nil || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "Bearer <secret>") {
		t.Errorf("got %v, want the error without the token", err)
	}
	err = src.Backfill(t.Context(), everything(time.Hour, 0), func(*gpu.Snapshot) {})
	if err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("backfill: got %v, want an error without the token", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestBackfill reads the past in time order, every interval, one
// snapshot per host and step, with the readings of each step.
func TestBackfill(t *testing.T) {
	f := newFakePrometheus(t)
	start := at0.Add(-time.Hour)
	f.addAgentGPU("b", 0, start)
	f.addAgentGPU("a", 0, start.Add(55*time.Minute)) // joined 5 minutes ago
	src := newSource(t, f, Options{Interval: time.Minute})
	var got []*gpu.Snapshot
	if err := src.q.backfill(context.Background(), at0, everything(10*time.Minute, 0), func(s *gpu.Snapshot) { got = append(got, s) }); err != nil {
		t.Fatal(err)
	}
	// b at every minute of the last 10, a from its first minute on.
	if len(got) < 10 {
		t.Fatalf("got %d snapshots, want about 16", len(got))
	}
	for i := 1; i < len(got); i++ {
		prev, s := got[i-1], got[i]
		if s.Time.Before(prev.Time) || s.Time.Equal(prev.Time) && s.Host <= prev.Host {
			t.Fatalf("snapshot %d (%s at %v) after %s at %v: want time order, hosts sorted", i, s.Host, s.Time, prev.Host, prev.Time)
		}
	}
	for _, s := range got {
		if len(s.Devices) == 0 {
			continue // a before it joined: no snapshot of it, or an empty one
		}
		b := start
		if s.Host == "a" {
			b = start.Add(55 * time.Minute)
		}
		if want := uint64(s.Time.Sub(b)/time.Minute) << 30; s.Devices[0].MemUsed != want {
			t.Errorf("%s at %v: memory %d, want %d", s.Host, s.Time, s.Devices[0].MemUsed, want)
		}
	}
}

// TestBackfillCoarseThenFine: the past a coarse Need reaches beyond a
// fine one is read a step per its Step, the rest every interval, in time
// order, each time once.
func TestBackfillCoarseThenFine(t *testing.T) {
	f := newFakePrometheus(t)
	f.addAgentGPU("a", 0, at0.Add(-2*time.Hour))
	src := newSource(t, f, Options{Interval: time.Minute})
	var times []time.Time
	past := append(everything(time.Hour, 5*time.Minute), everything(10*time.Minute, 0)...)
	if err := src.q.backfill(t.Context(), at0, past, func(s *gpu.Snapshot) { times = append(times, s.Time) }); err != nil {
		t.Fatal(err)
	}
	var want []time.Time
	for at := at0.Add(-time.Hour); !at.After(at0.Add(-10 * time.Minute)); at = at.Add(5 * time.Minute) {
		want = append(want, at)
	}
	for at := at0.Add(-9 * time.Minute); !at.After(at0); at = at.Add(time.Minute) {
		want = append(want, at)
	}
	if !slices.EqualFunc(times, want, time.Time.Equal) {
		t.Errorf("backfill of %+v read\n%v\nwant\n%v", past, times, want)
	}
	// A step no coarser than the interval, or a fine part as long as the
	// span, reads all of it every interval.
	for _, past := range []Past{append(everything(time.Hour, time.Minute), everything(10*time.Minute, 0)...),
		append(everything(time.Hour, 5*time.Minute), everything(time.Hour, 0)...)} {
		n := 0
		if err := src.q.backfill(t.Context(), at0, past, func(*gpu.Snapshot) { n++ }); err != nil {
			t.Fatal(err)
		}
		if n != 61 {
			t.Errorf("backfill of %+v read %d steps, want 61", past, n)
		}
	}
}

// TestBackfillStaysUnderPrometheusResolutionLimit: a long window at a
// short interval asks coarser steps rather than be refused.
func TestBackfillStaysUnderPrometheusResolutionLimit(t *testing.T) {
	f := newFakePrometheus(t)
	f.addAgentGPU("a", 0, time.Unix(0, 0))
	src := newSource(t, f, Options{Interval: time.Second})
	n := 0
	if err := src.q.backfill(t.Context(), at0, everything(24*time.Hour, 0), func(*gpu.Snapshot) { n++ }); err != nil {
		t.Fatal(err)
	}
	if n == 0 || n > MaxPoints+1 {
		t.Errorf("a day at 1s warmed %d snapshots, want at most %d", n, MaxPoints+1)
	}
}

// everything is a Past of every reading over the last span at step.
func everything(span, step time.Duration) Past {
	var p Past
	for r := ReadingMemory; r <= ReadingPower; r++ {
		p = append(p, Need{Reading: r, Span: span, Step: step})
	}
	return p
}
