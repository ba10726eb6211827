package notifier_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
	"github.com/gpuwatch/gpuwatch/notifier/webhook"
)

// timeoutErr is a net.Error that says it timed out, as a client's
// deadline does.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o deadline reached" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func checkResponse(t *testing.T, code int, header http.Header) error {
	t.Helper()
	if header == nil {
		header = http.Header{}
	}
	_, err := notifier.CheckResponse(&http.Response{StatusCode: code, Header: header, Body: http.NoBody}, time.Time{})
	if err == nil {
		t.Fatalf("CheckResponse(%d): got nil, want an error", code)
	}
	return err
}

func TestClassifyFailure(t *testing.T) {
	opErr := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, "other"},
		{"429 from CheckResponse", checkResponse(t, 429, http.Header{"Retry-After": {"3"}}), "rate_limited"},
		{"RetryAfterError wrapped", fmt.Errorf("slack: %w", &notifier.RetryAfterError{After: time.Second, Err: errors.New("rate limited")}), "rate_limited"},
		{"503 from CheckResponse", checkResponse(t, 503, nil), "http_5xx"},
		{"503 with Retry-After", checkResponse(t, 503, http.Header{"Retry-After": {"3"}}), "http_5xx"},
		{"500 wrapped", fmt.Errorf("generic: %w", checkResponse(t, 500, nil)), "http_5xx"},
		{"400 from CheckResponse", checkResponse(t, 400, nil), "http_4xx"},
		{"404 as text only", errors.New("generic: HTTP 404 Not Found: no such hook"), "http_4xx"},
		{"context deadline", fmt.Errorf("post: %w", context.DeadlineExceeded), "timeout"},
		{"net timeout", fmt.Errorf("post: %w", &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}), "timeout"},
		{"client timeout as text", errors.New("Post \"https://x/…\": net/http: request canceled (Client.Timeout exceeded while awaiting headers)"), "timeout"},
		{"dial refused", fmt.Errorf("post: %w", opErr), "connection"},
		{"dns", &net.DNSError{Err: "no such host", Name: "hooks.example"}, "connection"},
		{"refused as text only", errors.New("generic: Post https://h/…: dial tcp 127.0.0.1:1: connect: connection refused"), "connection"},
		{"slack ok:false", errors.New("slack chat.postMessage: ok:false channel_not_found: check slack.channel"), "rejected"},
		{"slack ok:false ratelimited", errors.New("slack chat.postMessage: ok:false ratelimited"), "rate_limited"},
		{"chat bot error code", errors.New("dingtalk: refused with code 310000: sign not match"), "rejected"},
		{"anything else", errors.New("webhook: notification has no alerts"), "other"},
		{"a body that mentions HTTP inside a word", errors.New("xHTTP 500y"), "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := notifier.ClassifyFailure(tt.err).String(); got != tt.want {
				t.Errorf("ClassifyFailure(%v): got %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

// TestClassifyFailureWebhook classifies what a real webhook integration
// returns (its errors are redacted: only the text and errors.Is remain).
func TestClassifyFailureWebhook(t *testing.T) {
	tests := []struct {
		name   string
		answer func(n int, r *notifiertest.Request) notifiertest.Response
		want   string
	}{
		{"503", func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 503} }, "http_5xx"},
		{"400", func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 400} }, "http_4xx"},
		{"429", func(int, *notifiertest.Request) notifiertest.Response {
			return notifiertest.Response{Status: 429, Header: map[string]string{"Retry-After": "1"}}
		}, "rate_limited"},
		{"slow", nil, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answer := tt.answer
			if answer == nil {
				// Slower than the hook's timeout; released before the
				// server closes (cleanups run last-in first-out).
				release := make(chan struct{})
				answer = func(int, *notifiertest.Request) notifiertest.Response { <-release; return notifiertest.Response{} }
				defer close(release)
			}
			srv := notifiertest.NewServer(t, answer)
			hook, err := webhook.New("test", webhook.Config{URL: srv.URL + "/hook/s3cret", Timeout: 50 * time.Millisecond}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = hook.Notify(context.Background(), notifiertest.Notification(notifier.StatusFiring))
			if got := notifier.ClassifyFailure(err).String(); got != tt.want {
				t.Errorf("ClassifyFailure(%v): got %q, want %q", err, got, tt.want)
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		hook, err := webhook.New("test", webhook.Config{URL: "http://" + addr + "/hook"}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = hook.Notify(context.Background(), notifiertest.Notification(notifier.StatusFiring))
		if got := notifier.ClassifyFailure(err).String(); got != "connection" {
			t.Errorf("ClassifyFailure(%v): got %q, want connection", err, got)
		}
	})
}

func TestFailureReasons(t *testing.T) {
	var names []string
	for _, r := range notifier.FailureReasons() {
		names = append(names, r.String())
	}
	want := "other timeout connection rate_limited http_4xx http_5xx rejected"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("FailureReasons: got %q, want %q", got, want)
	}
}

func TestStatsFailed(t *testing.T) {
	var s notifier.Stats
	s.AddFailure(notifier.FailureHTTP5xx)
	s.AddFailure(notifier.FailureHTTP5xx)
	s.AddFailure(notifier.FailureTimeout)
	s.AddFailure(notifier.FailureReason(99)) // out of range: counted as other
	s.Sent.Add(3)
	snap := s.Snapshot()
	want := map[string]int64{"other": 1, "timeout": 1, "connection": 0, "rate_limited": 0, "http_4xx": 0, "http_5xx": 2, "rejected": 0}
	if len(snap.Failed) != len(want) {
		t.Errorf("Failed: got %v, want %v", snap.Failed, want)
	}
	for k, v := range want {
		if snap.Failed[k] != v {
			t.Errorf("Failed[%s]: got %d, want %d", k, snap.Failed[k], v)
		}
	}
	if snap.Sent != 3 {
		t.Errorf("Sent: got %d, want 3", snap.Sent)
	}
	// The snapshot is a copy: later failures do not change it.
	s.AddFailure(notifier.FailureHTTP5xx)
	if snap.Failed["http_5xx"] != 2 {
		t.Errorf("snapshot changed after a later failure: got %d, want 2", snap.Failed["http_5xx"])
	}
}

// TestRetryAfterDate: a Retry-After given as an HTTP date counts from the
// answer's Date header (the server's clock), else from the caller's now;
// without either it leaves the wait to the backoff.
func TestRetryAfterDate(t *testing.T) {
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	for _, c := range []struct {
		name   string
		header http.Header
		now    time.Time
		want   time.Duration
	}{
		{"seconds", http.Header{"Retry-After": {"7"}}, time.Time{}, 7 * time.Second},
		{"a date, from now", http.Header{"Retry-After": {at(5 * time.Second)}}, now, 5 * time.Second},
		{"a date, from the answer's Date", http.Header{"Retry-After": {at(time.Hour + 5*time.Second)}, "Date": {at(time.Hour)}}, now, 5 * time.Second},
		{"a date past", http.Header{"Retry-After": {at(-time.Minute)}}, now, 0},
		{"a date and no clock", http.Header{"Retry-After": {at(5 * time.Second)}}, time.Time{}, 0},
	} {
		_, err := notifier.CheckResponse(&http.Response{StatusCode: http.StatusTooManyRequests, Header: c.header, Body: http.NoBody}, c.now)
		var ra *notifier.RetryAfterError
		if !errors.As(err, &ra) || ra.After != c.want {
			t.Errorf("%s: got %v, want a retry after %v", c.name, err, c.want)
		}
	}
}
