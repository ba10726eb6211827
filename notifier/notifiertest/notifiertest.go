// Package notifiertest holds what every integration's tests share: a
// recording HTTP server that plays the far side, the one table of HTTP
// statuses and whether each is worth a retry, a realistic notification, and
// a check that no secret leaked into an error or a log.
package notifiertest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// Response is what the server answers.
type Response struct {
	Status int // 0 means 200
	Header map[string]string
	Body   string
}

// Server is an httptest.Server on loopback that records every request and
// answers with Respond (200 and an empty body when nil).
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	requests []Request
	// Respond decides the answer to the n-th request (0-based).
	Respond func(n int, r *Request) Response
}

// NewServer starts a recording server, closed when the test ends.
func NewServer(t testing.TB, respond func(n int, r *Request) Response) *Server {
	s := &Server{Respond: respond}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, req)
	respond := s.Respond
	s.mu.Unlock()
	resp := Response{}
	if respond != nil {
		resp = respond(n, &req)
	}
	for k, v := range resp.Header {
		w.Header().Set(k, v)
	}
	if resp.Status == 0 {
		resp.Status = http.StatusOK
	}
	w.WriteHeader(resp.Status)
	io.WriteString(w, resp.Body)
}

// Requests returns a copy of what the server received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// AlertLines lists the alerts of the generic webhook messages the server
// received, one "firing GPUHot node1/0" each (host/- for an alert about no
// GPU), in arrival order; a body that is not one fails the test.
func (s *Server) AlertLines(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, r := range s.Requests() {
		var m struct {
			Alerts []struct {
				Alert, Status, Host string
				GPU                 *int
			}
		}
		if err := json.Unmarshal(r.Body, &m); err != nil {
			t.Fatalf("a request that is not a generic webhook message: %v\n%s", err, r.Body)
		}
		for _, a := range m.Alerts {
			gpu := "-"
			if a.GPU != nil {
				gpu = strconv.Itoa(*a.GPU)
			}
			out = append(out, a.Status+" "+a.Alert+" "+a.Host+"/"+gpu)
		}
	}
	return out
}

// StatusCase is an HTTP status and how a notifier must treat it.
type StatusCase struct {
	Status int
	OK     bool // delivered
	Retry  bool // failed, worth a retry
}

// StatusCases is the one table of HTTP answers every integration is run
// against: 2xx delivered, 429 and 5xx retried, other 4xx permanent.
var StatusCases = []StatusCase{
	{200, true, false}, {201, true, false}, {202, true, false}, {204, true, false},
	{400, false, false}, {401, false, false}, {403, false, false}, {404, false, false},
	{410, false, false}, {413, false, false}, {422, false, false},
	{429, false, true},
	{500, false, true}, {502, false, true}, {503, false, true}, {504, false, true},
}

// RunStatusTable sends one notification per StatusCase to a server that
// answers with that status (and okBody as the body of 2xx answers), and
// checks that the notifier reports success, retry or permanent failure as
// the table says. newNotifier builds the integration pointed at the
// server's URL.
func RunStatusTable(t *testing.T, okBody string, newNotifier func(url string) notifier.Notifier) {
	t.Helper()
	for _, c := range StatusCases {
		srv := NewServer(t, func(int, *Request) Response {
			body := okBody
			if !c.OK {
				body = `{"error":"test failure"}`
			}
			return Response{Status: c.Status, Body: body, Header: map[string]string{"Retry-After": "7"}}
		})
		retry, err := newNotifier(srv.URL).Notify(context.Background(), Notification(notifier.StatusFiring))
		switch {
		case c.OK && err != nil:
			t.Errorf("HTTP %d: got error %v, want delivered", c.Status, err)
		case !c.OK && err == nil:
			t.Errorf("HTTP %d: got delivered, want an error", c.Status)
		case !c.OK && retry != c.Retry:
			t.Errorf("HTTP %d: got retry=%v (%v), want retry=%v", c.Status, retry, err, c.Retry)
		}
		if c.Status == http.StatusTooManyRequests || c.Status == http.StatusServiceUnavailable {
			var ra *notifier.RetryAfterError
			if !asRetryAfter(err, &ra) || ra.After != 7*time.Second {
				t.Errorf("HTTP %d with Retry-After: 7: got %v, want a RetryAfterError of 7s", c.Status, err)
			}
		}
	}
}

func asRetryAfter(err error, target **notifier.RetryAfterError) bool {
	for err != nil {
		if ra, ok := err.(*notifier.RetryAfterError); ok {
			*target = ra
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// Start is the time of the sample notifications: fixed, so payloads are golden.
var Start = time.Date(2026, 11, 29, 9, 41, 5, 0, time.UTC)

// Notification returns a realistic notification: GPU 0 of node1 is leaking
// memory and will be full in 12 minutes; alice's training job holds most of
// it. A resolved one carries the same alert, ended 18 minutes later when
// alice's job died with the GPU full.
func Notification(status notifier.Status) *notifier.Notification {
	a := notifier.Alert{
		Key: "node1/GPUMemoryLeak/GPU-cd613e30-d8f1-6adf-91b7-584a2265b1f5", Name: "GPUMemoryLeak",
		Status: status, Severity: "critical", Host: "node1", GPU: 0,
		UUID: "GPU-cd613e30-d8f1-6adf-91b7-584a2265b1f5", GPUName: "NVIDIA H100 80GB HBM3",
		Labels: map[string]string{"alert": "GPUMemoryLeak", "severity": "critical", "host": "node1",
			"gpu": "0", "uuid": "GPU-cd613e30-d8f1-6adf-91b7-584a2265b1f5", "team": "ml"},
		Summary:     "GPU 0 memory keeps growing: 1.5 GiB/min over the last 30 minutes",
		Description: "A job on GPU 0 allocates memory it never frees.",
		Value:       notifier.Float(1.5 * (1 << 30) / 60), ValueText: "1.5 GiB/min",
		Trend: notifier.Float(1.5 * (1 << 30) / 60), TrendText: "+1.5 GiB/min",
		TimeToFull: 720, StartsAt: Start, At: Start,
		Processes: []gpu.Process{
			{PID: 4242, User: "alice", Command: "python train.py --model llama-7b", Container: "docker:3f2a9c1b7e4d", MemUsed: 61 << 30},
			{PID: 5151, User: "bob", Command: "jupyter-lab", MemUsed: 2 << 30},
		},
		HistoryUnit: "bytes",
	}
	for i := range 30 {
		a.History = append(a.History, notifier.Float(float64(40+i)*(1<<30)*0.5))
	}
	a.History[3] = notifier.Float(math.NaN())
	if status == notifier.StatusResolved {
		a.EndsAt = Start.Add(18 * time.Minute)
		a.At = a.EndsAt
		a.TimeToFull = notifier.Float(math.NaN())
		a.Value, a.ValueText, a.ValueExpr = 0, "0 B", "memory.used"
		a.Summary, a.FiringSummary = "GPU 0 on node1: memory.used is 0 B now, under 1 GiB", a.Summary
		a.Exit = &notifier.Exit{At: a.EndsAt, MemoryPercent: 99.6, OOMLikely: true,
			Text: "pid 4242 (alice, python train.py --model llama-7b) exited with the GPU at 99.6% — a CUDA out-of-memory is likely"}
	}
	return &notifier.Notification{ID: 1, Receiver: "test", GroupKey: "test/GPUMemoryLeak/" + string(status),
		Status: status, Alerts: []notifier.Alert{a}, CreatedAt: a.At}
}

// SourceDown returns a notification of an alert that is about no GPU
// (GPU -1, no UUID): a hub that cannot read its Prometheus.
func SourceDown(status notifier.Status) *notifier.Notification {
	a := notifier.Alert{
		Key: "hub/GPUWatchSourceDown/", Name: "GPUWatchSourceDown", Status: status, Severity: "critical", Host: "hub", GPU: -1,
		Labels:  map[string]string{"alert": "GPUWatchSourceDown", "severity": "critical", "host": "hub"},
		Summary: "gpuwatch on hub cannot read its source: no GPU is watched until it answers", Description: "query prometheus at http://prometheus:9090: connection refused",
		Value: notifier.Float(math.NaN()), Trend: notifier.Float(math.NaN()), TimeToFull: notifier.Float(math.NaN()), StartsAt: Start, At: Start,
	}
	if status == notifier.StatusResolved {
		a.EndsAt = Start.Add(3 * time.Minute)
		a.At = a.EndsAt
	}
	return &notifier.Notification{ID: 1, Receiver: "test", GroupKey: "test/GPUWatchSourceDown/" + string(status),
		Status: status, Alerts: []notifier.Alert{a}, CreatedAt: a.At}
}

// NamesAGPU reports whether text names GPU -1 in any of the ways the
// formats name a GPU ("GPU -1", "gpu-1", "GPU:** -1", "gpu": -1).
func NamesAGPU(text string) bool {
	return regexp.MustCompile(`(?i)gpu\W{0,6}-1`).MatchString(text)
}

// AssertNoSecrets fails the test if any secret appears in text (errors,
// logs, API answers).
func AssertNoSecrets(t testing.TB, where, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("%s leaks a secret %q…: %s", where, s[:min(6, len(s))], text)
		}
	}
}

// Buffer is a bytes.Buffer that goroutines may write (a daemon's log, a
// console receiver) while a test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// RetryAt answers status with a Retry-After that is an HTTP date, wait
// after the answer's own Date, as a server that counts in dates does.
func RetryAt(status int, wait time.Duration) Response {
	now := time.Now().UTC().Truncate(time.Second)
	return Response{Status: status, Header: map[string]string{
		"Date": now.Format(http.TimeFormat), "Retry-After": now.Add(wait).Format(http.TimeFormat)}}
}
