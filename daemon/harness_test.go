package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// base is the time of the first snapshot of every test: fixed, so alert
// times in payloads are exact.
var base = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// patience bounds how long a test waits for the daemon to do something it
// must do (deliver, start listening). It is a deadlock guard, not a speed
// requirement: on a healthy run every wait ends in milliseconds.
const patience = 20 * time.Second

// hotRule fires GPUHot on a GPU above 85 °C, at once (no for:).
const hotRule = `
rules:
  - alert: GPUHot
    when: temperature > 85
    severity: critical
    summary: "GPU {{ .GPU }} is hot"
`

// parseConfig builds a config from YAML text, as config.Load would from a
// file, with env resolving ${VAR}. storage.path and server.listen are
// added: a fresh store in dir and a free loopback port.
func parseConfig(t testing.TB, dir, text string, env map[string]string) *config.Config {
	t.Helper()
	text = fmt.Sprintf("storage:\n  path: %s\nserver:\n  listen: 127.0.0.1:0\n%s",
		filepath.Join(dir, "state.db"), text)
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	cfg, err := config.Parse(filepath.Join(dir, "gpuwatch.yaml"), []byte(text), lookup)
	if err != nil {
		t.Fatalf("config.Parse: %v\n%s", err, text)
	}
	return cfg
}

// webhookConfig is a config with a source the test drives, hotRule, and
// one generic webhook receiver "hook" at url with the given group_wait.
func webhookConfig(t testing.TB, dir, url, groupWait string) *config.Config {
	t.Helper()
	return parseConfig(t, dir, fmt.Sprintf(`
source:
  type: sim
receivers:
  - name: hook
    webhook:
      url: %s
      format: generic
route:
  receiver: hook
  group_wait: %s
%s`, url, groupWait, hotRule), nil)
}

// clock is a wall clock the test sets; the API stamps silences with it.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.Set(t)
	return c
}

func (c *clock) Set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func (c *clock) Now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Add(d time.Duration) { c.ns.Add(int64(d)) }

// idleSource is a gpu.Source that never produces a snapshot: Run starts the
// deliverers and the API while the test feeds the daemon with Step.
type idleSource struct{}

func (idleSource) Next(ctx context.Context) (*gpu.Snapshot, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (idleSource) Close() error { return nil }

// running is a daemon started in-process by a test.
type running struct {
	t       testing.TB
	D       *daemon.Daemon
	Logs    *notifiertest.Buffer
	Console *notifiertest.Buffer
	cancel  context.CancelFunc
	done    chan error
	closed  bool
}

// options are the daemon options every test uses: logs into a buffer at
// debug level, a fast backoff without jitter.
func options(logs, console io.Writer, now func() time.Time) daemon.Options {
	return daemon.Options{
		Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Console: console,
		Backoff: notifier.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond},
		Now:     now,
		Wall:    now, // one clock plays both, unless a test sets Wall
	}
}

// start builds a daemon on cfg and runs it with a source that never
// produces (the test calls Step), so its deliverers and API run; it stops
// and closes it when the test ends unless the test did.
func start(t testing.TB, cfg *config.Config, now func() time.Time) *running {
	t.Helper()
	return startWith(t, cfg, now, nil)
}

// startWith is start with the options changed by mod first.
func startWith(t testing.TB, cfg *config.Config, now func() time.Time, mod func(*daemon.Options)) *running {
	t.Helper()
	logs, console := &notifiertest.Buffer{}, &notifiertest.Buffer{}
	opts := options(logs, console, now)
	if mod != nil {
		mod(&opts)
	}
	d, err := daemon.New(cfg, opts)
	if err != nil {
		t.Fatalf("daemon.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{t: t, D: d, Logs: logs, Console: console, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- d.Run(ctx, idleSource{}, nil) }()
	t.Cleanup(r.Stop)
	waitFor(t, "the HTTP API to listen", func() bool { return d.Addr() != "" })
	return r
}

// Stop cancels Run, waits for it and closes the store; it may be called
// more than once.
func (r *running) Stop() {
	if r.closed {
		return
	}
	r.closed = true
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			r.t.Errorf("Run returned %v, want nil after a cancel", err)
		}
	case <-time.After(patience):
		r.t.Errorf("Run did not return within %v of its context ending", patience)
	}
	if err := r.D.Close(); err != nil {
		r.t.Errorf("Close: %v", err)
	}
}

// Steps feeds one snapshot per row of temperatures (one per GPU), the
// i-th at from+i*step.
func (r *running) Steps(from time.Time, step time.Duration, rows ...[]float64) {
	for i, temps := range rows {
		r.D.Step(snapshot(from.Add(time.Duration(i)*step), temps...))
	}
}

// URL is the address of the daemon's HTTP API plus path.
func (r *running) URL(path string) string { return "http://" + r.D.Addr() + path }

// Do sends a request to the daemon's API and returns the status and body.
func (r *running) Do(method, path, body string) (int, string) {
	r.t.Helper()
	req, err := http.NewRequest(method, r.URL(path), strings.NewReader(body))
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatalf("%s %s: read answer: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}

// Outbox reads GET /api/v1/outbox.
func (r *running) Outbox() daemon.OutboxJSON {
	r.t.Helper()
	code, body := r.Do(http.MethodGet, "/api/v1/outbox", "")
	if code != http.StatusOK {
		r.t.Fatalf("GET /api/v1/outbox: got HTTP %d %s, want 200", code, body)
	}
	var out daemon.OutboxJSON
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		r.t.Fatalf("GET /api/v1/outbox: %v in %s", err, body)
	}
	return out
}

// Pending is how many notifications wait in every outbox together.
func (r *running) Pending() int {
	n := 0
	for _, c := range r.Outbox().Pending {
		n += c
	}
	return n
}

// snapshot is host node1 at time at with one H100 per temperature.
func snapshot(at time.Time, temps ...float64) *gpu.Snapshot {
	s := &gpu.Snapshot{Time: at, Host: "node1"}
	for i, temp := range temps {
		s.Devices = append(s.Devices, gpu.Device{
			Index: i, UUID: fmt.Sprintf("GPU-0000000%d-aaaa-bbbb-cccc-dddddddddddd", i), Name: "NVIDIA H100 80GB HBM3",
			MemUsed: 20 << 30, MemTotal: 80 << 30, UtilGPU: 90, UtilMem: 40, TempC: temp, PowerW: 500, PowerLimitW: 700,
			Processes: []gpu.Process{{PID: 4242 + i, User: "alice", Command: "python train.py", MemUsed: 20 << 30}},
		})
	}
	return s
}

// waitFor polls cond until it holds, failing the test after patience.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %v", what, patience)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// message is a generic-format webhook body, the fields tests look at.
type message struct {
	Receiver string `json:"receiver"`
	Status   string `json:"status"`
	GroupKey string `json:"group_key"`
	Alerts   []struct {
		Key    string     `json:"key"`
		Alert  string     `json:"alert"`
		Status string     `json:"status"`
		Repeat bool       `json:"repeat"`
		GPU    int        `json:"gpu"`
		Starts time.Time  `json:"starts_at"`
		Ends   *time.Time `json:"ends_at"`
		At     time.Time  `json:"at"`
	} `json:"alerts"`
}

// String writes a message as "firing[0,1]" for readable comparisons.
func (m message) String() string {
	gpus := make([]string, len(m.Alerts))
	for i, a := range m.Alerts {
		gpus[i] = fmt.Sprint(a.GPU)
		if a.Status != m.Status {
			gpus[i] += "(" + a.Status + ")"
		}
	}
	return m.Status + "[" + strings.Join(gpus, ",") + "]"
}

// copyFile copies src to dst, as a backup of a live bbolt file taken at a
// crash would be.
func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("copy the store: %v", err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatalf("copy the store: %v", err)
	}
}

// hook is a loopback webhook receiver that answers each request with the
// status answer picks and keeps, in arrival order, the generic messages it
// accepted (answered 2xx).
type hook struct {
	*notifiertest.Server
	mu       sync.Mutex
	accepted []message
}

// newHook starts a hook; answer nil accepts everything.
func newHook(t testing.TB, answer func(n int) int) *hook {
	h := &hook{}
	h.Server = notifiertest.NewServer(t, func(n int, r *notifiertest.Request) notifiertest.Response {
		status := http.StatusOK
		if answer != nil {
			status = answer(n)
		}
		if status/100 == 2 {
			var m message
			if err := json.Unmarshal(r.Body, &m); err != nil {
				m.Status = "undecodable: " + err.Error()
			}
			h.mu.Lock()
			h.accepted = append(h.accepted, m)
			h.mu.Unlock()
		}
		return notifiertest.Response{Status: status, Body: `{"error":"try later"}`}
	})
	return h
}

// Accepted returns the messages accepted so far.
func (h *hook) Accepted() []message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]message(nil), h.accepted...)
}

// Summary is Accepted as strings, "firing[0]".
func (h *hook) Summary() []string {
	var out []string
	for _, m := range h.Accepted() {
		out = append(out, m.String())
	}
	return out
}

// WaitAccepted waits until n messages were accepted.
func (h *hook) WaitAccepted(t testing.TB, n int) []message {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d accepted webhook requests", n), func() bool { return len(h.Accepted()) >= n })
	return h.Accepted()
}

// Drain waits until every outbox is empty: each accepted notification is
// also acked.
func (r *running) Drain() {
	r.t.Helper()
	waitFor(r.t, "the outbox to empty", func() bool { return r.Pending() == 0 })
}
