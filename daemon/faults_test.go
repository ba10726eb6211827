package daemon_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
	"github.com/gpuwatch/gpuwatch/store"
)

// faultyDisk is the real store on a disk the test controls: while refuse
// is set every write fails as a full disk's does; while a stall is on,
// every write waits until it is lifted, as on a disk that stopped
// answering. Reads always go through.
type faultyDisk struct {
	daemon.Store
	refuse atomic.Bool
	// stallReads makes a stall hold readers too, as bbolt's readers wait
	// while a stuck commit grows the file.
	stallReads atomic.Bool

	mu      sync.Mutex
	stall   chan struct{} // nil: no stall; closed to lift it
	stalled chan struct{} // gets a value each time a write starts to wait
}

// openFaulty returns an OpenStore that opens the real store and puts disk
// in front of it; disk is filled in when the daemon opens it.
func openFaulty(disk *faultyDisk) func(context.Context, string) (daemon.Store, error) {
	return func(ctx context.Context, path string) (daemon.Store, error) {
		db, err := store.OpenContext(ctx, path, store.Options{NoSync: true})
		disk.Store = db
		return disk, err
	}
}

func newFaultyDisk() *faultyDisk { return &faultyDisk{stalled: make(chan struct{}, 64)} }

// Stall makes writes wait until the returned lift is called.
func (f *faultyDisk) Stall() (lift func()) {
	gate := make(chan struct{})
	f.mu.Lock()
	f.stall = gate
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		f.stall = nil
		f.mu.Unlock()
		close(gate)
	}
}

var errDiskFull = errors.New("write state.db: no space left on device")

// fault is what a write meets before it reaches the store.
func (f *faultyDisk) fault() error {
	f.mu.Lock()
	gate := f.stall
	f.mu.Unlock()
	if gate != nil {
		f.stalled <- struct{}{}
		<-gate
	}
	if f.refuse.Load() {
		return errDiskFull
	}
	return nil
}

// PendingCount waits out a stall when stallReads is set.
func (f *faultyDisk) PendingCount(receiver string) (int, error) {
	if f.stallReads.Load() {
		_ = f.fault()
	}
	return f.Store.PendingCount(receiver)
}

func (f *faultyDisk) Put(bucket, key string, value []byte) error {
	if err := f.fault(); err != nil {
		return err
	}
	return f.Store.Put(bucket, key, value)
}

func (f *faultyDisk) Delete(bucket, key string) error {
	if err := f.fault(); err != nil {
		return err
	}
	return f.Store.Delete(bucket, key)
}

func (f *faultyDisk) Commit(outbox map[string][][]byte, put map[string]map[string][]byte, del map[string][]string) error {
	if err := f.fault(); err != nil {
		return err
	}
	return f.Store.Commit(outbox, put, del)
}

func (f *faultyDisk) Ack(receiver string, ids ...uint64) error {
	if err := f.fault(); err != nil {
		return err
	}
	return f.Store.Ack(receiver, ids...)
}

func (f *faultyDisk) Bury(receiver string, id uint64, reason string, at time.Time, attempts int) error {
	if err := f.fault(); err != nil {
		return err
	}
	return f.Store.Bury(receiver, id, reason, at, attempts)
}

// runDaemon runs a daemon on cfg with its store behind disk, as `gpuwatch
// run` does, and returns it with a stop that cancels Run and returns Run's
// error.
func runDaemon(t *testing.T, cfg *config.Config, disk *faultyDisk, now func() time.Time) (*running, func() error) {
	t.Helper()
	logs, console := &notifiertest.Buffer{}, &notifiertest.Buffer{}
	opts := options(logs, console, now)
	opts.OpenStore = openFaulty(disk)
	opts.FinalWrite = 500 * time.Millisecond
	opts.WriteWait = 300 * time.Millisecond
	d, err := daemon.New(cfg, opts)
	if err != nil {
		t.Fatalf("daemon.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, idleSource{}, nil) }()
	r := &running{t: t, D: d, Logs: logs, Console: console, cancel: cancel, done: done, closed: true}
	waitFor(t, "the HTTP API to listen", func() bool { return d.Addr() != "" })
	var (
		once    sync.Once
		stopErr error
	)
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-done:
				_ = d.Close()
			case <-time.After(patience):
				t.Errorf("Run did not return within %v of its context ending", patience)
			}
		})
		return stopErr
	}
	t.Cleanup(func() { stop() })
	return r, stop
}

// TestStoreRefusesAck: with the receiver back and the disk full, each
// notification reaches the receiver once, not once per retry of the ack.
func TestStoreRefusesAck(t *testing.T) {
	down := atomic.Bool{}
	down.Store(true)
	h := newHook(t, func(int) int {
		if down.Load() {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	disk := newFaultyDisk()
	r, stop := runDaemon(t, webhookConfig(t, t.TempDir(), h.URL, "1ns"), disk, nil)
	r.Steps(base, 10*time.Second, []float64{90, 90}, []float64{90, 90})
	waitFor(t, "a try that the receiver refuses", func() bool { return len(h.Requests()) > 0 })

	disk.refuse.Store(true)
	down.Store(false)
	h.WaitAccepted(t, 1)
	time.Sleep(time.Second) // the test's backoff tries the ack every 100ms at most
	if got := h.Accepted(); len(got) != 1 {
		t.Errorf("in a second of refused acks: the receiver got %d notifications, want the one, once: %v", len(got), h.Summary())
	}
	disk.refuse.Store(false)
	r.Drain()
	if err := stop(); err != nil {
		t.Errorf("stop with a healthy disk: got %v, want nil", err)
	}
	if got := h.Summary(); !slices.Equal(got, []string{"firing[0,1]"}) {
		t.Errorf("accepted: got %v, want [firing[0,1]]", got)
	}
}

// TestStopWithDiskFull: transitions made while the disk refuses writes are
// written at the stop when the disk takes them again; when it still
// refuses, the stop fails, saying what is lost, and the next start sends
// the alerts that are still true.
func TestStopWithDiskFull(t *testing.T) {
	// fullDisk runs a daemon whose disk refuses every write from the start.
	fullDisk := func(t *testing.T) (*hook, *config.Config, *faultyDisk, *running, func() error) {
		h := newHook(t, nil)
		cfg := webhookConfig(t, t.TempDir(), h.URL, "1ns")
		disk := newFaultyDisk()
		r, stop := runDaemon(t, cfg, disk, nil)
		disk.refuse.Store(true)
		return h, cfg, disk, r, stop
	}
	t.Run("the disk takes the last write", func(t *testing.T) {
		h, cfg, disk, r, stop := fullDisk(t)
		r.Steps(base, 10*time.Second, []float64{90}, []float64{90})
		if got := len(h.Accepted()); got != 0 {
			t.Fatalf("with the disk full: %d delivered, want none (nothing is sent before it is durable)", got)
		}
		disk.refuse.Store(false)
		if err := stop(); err != nil {
			t.Fatalf("stop once the disk takes writes: got %v, want nil", err)
		}
		again := start(t, cfg, nil)
		h.WaitAccepted(t, 1)
		again.Drain()
		if got := h.Summary(); !slices.Equal(got, []string{"firing[0]"}) {
			t.Errorf("after the restart: got %v, want [firing[0]]", got)
		}
	})
	t.Run("the disk still refuses", func(t *testing.T) {
		h, cfg, _, r, stop := fullDisk(t)
		// GPU 0 fires and resolves, GPU 1 fires and stays hot: all while
		// nothing can be written.
		r.Steps(base, 10*time.Second, []float64{90, 50}, []float64{90, 90}, []float64{50, 90}, []float64{50, 90})
		err := stop()
		if err == nil || !strings.Contains(err.Error(), "did not take the last writes") || !strings.Contains(err.Error(), "hook: firing GPUHot on gpu 0") {
			t.Fatalf("stop with the disk full: got %v, want an error naming what is lost", err)
		}
		if logs := r.Logs.String(); !strings.Contains(logs, "STOPPING WITH STATE THE STORE DID NOT TAKE") {
			t.Errorf("the log does not say loudly what is lost:\n%s", logs)
		}
		// The store has the alert states of before the disk filled: the
		// next start sends GPU 1, still hot.
		again := start(t, cfg, nil)
		again.Steps(base.Add(time.Minute), 10*time.Second, []float64{50, 90}, []float64{50, 90})
		h.WaitAccepted(t, 1)
		again.Drain()
		if got := h.Summary(); !slices.Equal(got, []string{"firing[1]"}) {
			t.Errorf("after the restart: got %v, want [firing[1]]: what is still true", got)
		}
	})
}

// TestStalledDisk: with every write stuck, the API, /metrics and silence
// reads answer; /healthz turns 503 once the last sample and the stuck
// write are older than a few intervals, and the log says what is stuck;
// a stop does not wait for the disk.
func TestStalledDisk(t *testing.T) {
	h := newHook(t, nil)
	clk := newClock(base)
	cfg := webhookConfig(t, t.TempDir(), h.URL, "1ns")
	disk := newFaultyDisk()
	r, stop := runDaemon(t, cfg, disk, clk.Now)
	r.Steps(base, 10*time.Second, []float64{90}, []float64{90})
	h.WaitAccepted(t, 1)
	r.Drain()

	lift := disk.Stall()
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		r.D.Step(snapshot(base.Add(time.Minute), 90, 90))
	}()
	<-disk.stalled // the Step's commit waits on the disk

	client := &http.Client{Timeout: 5 * time.Second}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get(r.URL(path))
		if err != nil {
			t.Fatalf("GET %s while the disk is stalled: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/api/v1/status", "/api/v1/alerts", "/metrics", "/api/v1/silences", "/api/v1/outbox"} {
		if code, body := get(path); code != http.StatusOK {
			t.Errorf("GET %s while the disk is stalled: got HTTP %d %s, want 200", path, code, body)
		}
	}
	if code, body := get("/api/v1/status"); !strings.Contains(body, `"alert": "GPUHot"`) {
		t.Errorf("GET /api/v1/status: got HTTP %d %s, want the firing alert", code, body)
	}
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz at once: got HTTP %d %s, want 200: a stall is not yet old", code, body)
	}

	clk.Add(5 * time.Minute)
	code, body := get("/healthz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "a write to the store") ||
		!strings.Contains(body, "has not finished for 5m0s") || !strings.Contains(body, "no sample for 5m0s") {
		t.Errorf("GET /healthz after five minutes stalled: got HTTP %d %q, want 503 naming the stuck write and the old sample", code, body)
	}
	waitFor(t, "the watchdog to log the stall", func() bool {
		logs := r.Logs.String()
		return strings.Contains(logs, "gpuwatch is unhealthy") && strings.Contains(logs, "the disk is stalled")
	})

	// A stop while the write hangs says what the write held, and returns.
	err := stop()
	if err == nil || !strings.Contains(err.Error(), "alert states GPUHot/GPU-00000001-aaaa-bbbb-cccc-dddddddddddd active") {
		t.Errorf("stop while the disk is stalled: got %v, want an error naming the alert the stuck write held", err)
	}
	lift()
	<-stepped
}

// TestHealthzStoreRefusing: a disk that keeps refusing writes makes
// /healthz unhealthy with the store's error, and healthy again once a
// write goes through.
func TestHealthzStoreRefusing(t *testing.T) {
	clk := newClock(base)
	disk := newFaultyDisk()
	r, _ := runDaemon(t, webhookConfig(t, t.TempDir(), "http://127.0.0.1:1/hook", "1ns"), disk, clk.Now)
	disk.refuse.Store(true)
	r.Steps(base, 10*time.Second, []float64{90}, []float64{90})
	clk.Add(time.Minute)
	r.D.Step(snapshot(base.Add(time.Minute), 90))
	code, body := r.Do(http.MethodGet, "/healthz", "")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "has refused writes for 1m0s") || !strings.Contains(body, "no space left on device") {
		t.Errorf("GET /healthz with the disk refusing for a minute: got HTTP %d %q, want 503 with the store's error", code, body)
	}
	disk.refuse.Store(false)
	r.D.Step(snapshot(base.Add(time.Minute+10*time.Second), 90))
	if code, body := r.Do(http.MethodGet, "/healthz", ""); code != http.StatusOK || body != "ok\n" {
		t.Errorf("GET /healthz once the disk took the write: got HTTP %d %q, want 200 ok", code, body)
	}
}

// TestStopWithWritesStuckOnStalledDisk: with the disk stalled, a request
// that writes (a new silence) answers 503 within Options.WriteWait
// instead of hanging, and a stop returns while that write, a sample's
// commit and a delivery's acknowledgement still wait on the disk.
func TestStopWithWritesStuckOnStalledDisk(t *testing.T) {
	disk := newFaultyDisk()
	lifts := make(chan func(), 1)
	h := newHook(t, func(n int) int {
		if n == 0 { // the disk stalls as the first delivery goes out: its ack waits
			lifts <- disk.Stall()
		}
		return http.StatusOK
	})
	r, stop := runDaemon(t, webhookConfig(t, t.TempDir(), h.URL, "1ns"), disk, nil)
	r.Steps(base, 10*time.Second, []float64{90}, []float64{90})
	lift := <-lifts
	defer lift()
	<-disk.stalled                                       // the ack
	go r.D.Step(snapshot(base.Add(time.Minute), 90, 90)) // its commit waits too
	<-disk.stalled

	client := &http.Client{Timeout: patience}
	resp, err := client.Post(r.URL("/api/v1/silences"), "application/json",
		strings.NewReader(`{"matchers":["alert=\"GPUHot\""],"duration":"1h","created_by":"alice"}`))
	if err != nil {
		t.Fatalf("POST /api/v1/silences on a stalled disk: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(body), "its disk is stalled") {
		t.Errorf("POST /api/v1/silences on a stalled disk: HTTP %d %s (Retry-After %q), want 503 saying the disk is stalled, with Retry-After",
			resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case <-stopped:
	case <-time.After(patience):
		t.Fatalf("the stop waited on the stalled disk for %v", patience)
	}
}

// TestMetricsWhileStoreReadsStall: while a stuck commit holds the store's
// readers too (bbolt's, as the commit grows the file), GET /metrics
// answers, its outbox depth from memory.
func TestMetricsWhileStoreReadsStall(t *testing.T) {
	h := newHook(t, func(int) int { return http.StatusServiceUnavailable })
	disk := newFaultyDisk()
	r, _ := runDaemon(t, webhookConfig(t, t.TempDir(), h.URL, "1ns"), disk, nil)
	r.Steps(base, 10*time.Second, []float64{90}, []float64{90})
	waitFor(t, "a try the receiver refuses", func() bool { return len(h.Requests()) > 0 })
	disk.stallReads.Store(true)
	lift := disk.Stall()
	defer lift()
	go r.D.Step(snapshot(base.Add(time.Minute), 90, 90))
	<-disk.stalled

	client := &http.Client{Timeout: patience}
	resp, err := client.Get(r.URL("/metrics"))
	if err != nil {
		t.Fatalf("GET /metrics while the store's readers wait: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `gpuwatch_outbox_depth{receiver="hook"} 1`) {
		t.Errorf("GET /metrics while the store's readers wait: HTTP %d, want 200 with the outbox depth 1:\n%s", resp.StatusCode, body)
	}
}

// TestStopSaysExactlyWhatIsLost: a stop while a write is stuck on the disk
// calls what that write holds in doubt, not lost: the disk may finish it,
// and when it does, the restart delivers its alert, once.
func TestStopSaysExactlyWhatIsLost(t *testing.T) {
	h := newHook(t, nil)
	cfg := webhookConfig(t, t.TempDir(), h.URL, "1ns")
	disk := newFaultyDisk()
	r, stop := runDaemon(t, cfg, disk, nil)
	lift := disk.Stall()
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		r.D.Step(snapshot(base, 90)) // GPUHot fires; its group and state wait on the disk
	}()
	<-disk.stalled
	err := stop()
	if err == nil || !strings.Contains(err.Error(), "in doubt") || !strings.Contains(err.Error(), "GPUHot/GPU-00000000-aaaa-bbbb-cccc-dddddddddddd active") {
		t.Fatalf("stop with a write stuck: %v, want GPUHot's state named in doubt", err)
	}
	if lost, _, _ := strings.Cut(err.Error(), "in doubt"); strings.Contains(lost, "GPUHot") {
		t.Errorf("stop with a write stuck: %v; GPUHot is not lost for sure: the stuck write may reach the disk", err)
	}
	lift()
	<-stepped // the disk finished the write
	if err := disk.Store.Close(); err != nil {
		t.Fatal(err)
	}

	again, _ := runDaemon(t, cfg, newFaultyDisk(), nil)
	again.Steps(base.Add(10*time.Second), 10*time.Second, []float64{90})
	h.WaitAccepted(t, 1)
	again.Drain()
	if got := h.Summary(); !slices.Equal(got, []string{"firing[0]"}) {
		t.Errorf("after the restart: got %v, want the alert of the write in doubt, once", got)
	}
}
