package daemon_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestOutage: a receiver that hangs, then answers 503 to its first tries,
// then 200, gets every notification exactly once and in order, and the
// snapshots are evaluated and committed while it is down.
func TestOutage(t *testing.T) {
	const failures = 4
	release := make(chan struct{})
	h := newHook(t, func(n int) int {
		if n == 0 {
			<-release // down: the first request hangs until every snapshot is in
		}
		if n < failures {
			return 503
		}
		return 200
	})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	r := start(t, webhookConfig(t, t.TempDir(), h.URL+"/hook", "1ns"), nil)

	// Each transition waits one snapshot for its 1ns group_wait.
	rows := [][]float64{
		{90, 50}, {90, 50}, // GPU 0 fires
		{90, 90}, {90, 90}, // GPU 1 fires
		{50, 90}, {50, 90}, // GPU 0 resolves
		{90, 90}, {90, 90}, // GPU 0 fires again
		{90, 50}, {90, 50}, // GPU 1 resolves
		{50, 50}, {50, 50}, // GPU 0 resolves
		{90, 90}, {90, 90}, // both fire, together
		{50, 50}, {50, 50}, // both resolve, together
	}
	want := []string{"firing[0]", "firing[1]", "resolved[0]", "firing[0]", "resolved[1]", "resolved[0]", "firing[0,1]", "resolved[0,1]"}
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		r.Steps(base, 10*time.Second, rows...)
	}()
	select {
	case <-stepped:
	case <-time.After(patience):
		t.Fatalf("Step did not return while the receiver hung: evaluation waits on delivery")
	}
	// Everything is durable before anything is accepted.
	if got := r.Pending(); got != len(want) {
		t.Errorf("pending while the receiver is down: got %d, want %d", got, len(want))
	}
	if got := h.Accepted(); len(got) != 0 {
		t.Errorf("accepted while the receiver is down: got %v, want none", got)
	}

	close(release)
	h.WaitAccepted(t, len(want))
	r.Drain()
	if got := h.Summary(); !slices.Equal(got, want) {
		t.Errorf("accepted notifications: got %v, want %v", got, want)
	}
	reqs := h.Requests()
	if got := len(reqs); got != failures+len(want) {
		t.Errorf("requests: got %d, want %d (%d refused tries, then one per notification)", got, failures+len(want), failures)
	}
	// The refused tries were all of the first notification, retried.
	for i := 1; i <= failures && i < len(reqs); i++ {
		if !bytes.Equal(reqs[i].Body, reqs[0].Body) {
			t.Errorf("request %d: got a different body than request 0, want the same notification retried:\n%s\n%s", i, reqs[i].Body, reqs[0].Body)
		}
	}
	if got := strings.Count(r.Logs.String(), "delivery failed; will retry"); got != failures {
		t.Errorf("retry warnings in the log: got %d, want %d (one per refused try)\n%s", got, failures, r.Logs)
	}
	// Resolutions say when they resolved: the snapshot that saw it.
	for _, m := range h.Accepted() {
		for _, a := range m.Alerts {
			if m.Status == "resolved" && (a.Ends == nil || a.Ends.Before(a.Starts)) {
				t.Errorf("%v: alert on GPU %d: got ends_at %v, want a time after starts_at %v", m, a.GPU, a.Ends, a.Starts)
			}
		}
	}
}
