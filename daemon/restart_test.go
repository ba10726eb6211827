package daemon_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestRestartKeepsFiringAlert: an alert fired and delivered before a clean
// stop is not announced again by the next daemon on the same store, and
// its resolution is delivered exactly once.
func TestRestartKeepsFiringAlert(t *testing.T) {
	h := newHook(t, nil)
	cfg := webhookConfig(t, t.TempDir(), h.URL, "1ns")
	first := start(t, cfg, nil)
	first.Steps(base, 10*time.Second, []float64{90}, []float64{90})
	h.WaitAccepted(t, 1)
	first.Drain()
	first.Stop()

	second := start(t, cfg, nil)
	at := base.Add(time.Minute)
	second.Steps(at, 10*time.Second, []float64{90}, []float64{91}, []float64{92})
	// Step commits what it decides before it returns, so anything the
	// restart announced is in the outbox or already accepted.
	if n, got := second.Pending(), h.Summary(); n != 0 || !slices.Equal(got, []string{"firing[0]"}) {
		t.Fatalf("after restart with the alert still firing: got %d pending and %v accepted, want 0 and [firing[0]]", n, got)
	}
	second.Steps(at.Add(time.Minute), 10*time.Second, []float64{50}, []float64{50}, []float64{50})
	msgs := h.WaitAccepted(t, 2)
	second.Drain()
	if got, want := h.Summary(), []string{"firing[0]", "resolved[0]"}; !slices.Equal(got, want) {
		t.Fatalf("accepted: got %v, want %v", got, want)
	}
	fired, resolved := msgs[0].Alerts[0], msgs[1].Alerts[0]
	if !resolved.Starts.Equal(fired.Starts) || !fired.Starts.Equal(base) {
		t.Errorf("resolved alert starts_at: got %v, want %v (when it fired, before the restart)", resolved.Starts, base)
	}
	if resolved.Key != fired.Key {
		t.Errorf("resolved alert key: got %q, want the firing one's %q", resolved.Key, fired.Key)
	}
}

// TestRestartResolvedWhileDown: an alert that resolved while gpuwatch was
// down is resolved on the first evaluation after the restart.
func TestRestartResolvedWhileDown(t *testing.T) {
	h := newHook(t, nil)
	cfg := webhookConfig(t, t.TempDir(), h.URL, "1ns")
	first := start(t, cfg, nil)
	first.Steps(base, 10*time.Second, []float64{90, 90}, []float64{90, 90})
	h.WaitAccepted(t, 1)
	first.Drain()
	first.Stop()

	second := start(t, cfg, nil)
	down := base.Add(time.Hour)
	// GPU 0 cooled down while gpuwatch was stopped; GPU 1 is still hot.
	second.Steps(down, 10*time.Second, []float64{50, 95}, []float64{50, 95})
	msgs := h.WaitAccepted(t, 2)
	second.Drain()
	if got, want := h.Summary(), []string{"firing[0,1]", "resolved[0]"}; !slices.Equal(got, want) {
		t.Fatalf("accepted: got %v, want %v", got, want)
	}
	a := msgs[1].Alerts[0]
	if a.Ends == nil || !a.Ends.Equal(down) {
		t.Errorf("resolved ends_at: got %v, want %v (the first snapshot after the restart)", a.Ends, down)
	}
}

// TestRestartAfterKill: a daemon that dies without Close (kill -9) after a
// commit loses nothing: a notification it had not delivered yet is
// delivered by the next daemon, one it had delivered is not announced
// again, and both alerts resolve once. bbolt's lock is only released by
// Close in-process, so the crash is a copy of the store taken while the
// first daemon still held it.
func TestRestartAfterKill(t *testing.T) {
	release := make(chan struct{})
	h := newHook(t, func(n int) int {
		if n == 1 {
			<-release // the second notification is in flight at the crash
			return 503
		}
		return 200
	})
	dir := t.TempDir()
	cfg := webhookConfig(t, dir, h.URL, "1ns")
	first := start(t, cfg, nil)
	first.Steps(base, 10*time.Second, []float64{90, 50}, []float64{90, 50})
	h.WaitAccepted(t, 1)
	first.Steps(base.Add(20*time.Second), 10*time.Second, []float64{90, 90}, []float64{90, 90})
	waitFor(t, "the second notification to be tried", func() bool { return len(h.Requests()) == 2 })

	crashed := filepath.Join(dir, "crashed.db")
	copyFile(t, cfg.Storage.Path, crashed)
	first.Stop()
	close(release)

	cfg2 := webhookConfig(t, dir, h.URL, "1ns")
	cfg2.Storage.Path = crashed
	second := start(t, cfg2, nil)
	h.WaitAccepted(t, 2) // the notification the crash interrupted
	second.Drain()
	at := base.Add(time.Hour)
	second.Steps(at, 10*time.Second, []float64{91, 92})
	if n, got := second.Pending(), h.Summary(); n != 0 || !slices.Equal(got, []string{"firing[0]", "firing[1]"}) {
		t.Fatalf("after the crash with both alerts firing: got %d pending and %v accepted, want 0 and [firing[0] firing[1]]", n, got)
	}
	second.Steps(at.Add(10*time.Second), 10*time.Second, []float64{50, 95}, []float64{50, 95}, []float64{50, 50}, []float64{50, 50})
	h.WaitAccepted(t, 4)
	second.Drain()
	if got, want := h.Summary(), []string{"firing[0]", "firing[1]", "resolved[0]", "resolved[1]"}; !slices.Equal(got, want) {
		t.Fatalf("accepted: got %v, want %v", got, want)
	}
}
