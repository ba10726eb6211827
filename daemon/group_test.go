package daemon_test

import (
	"slices"
	"testing"
	"time"
)

// TestGroupWait: alerts of one rule on three GPUs within the route's
// group_wait go out as one webhook request with three alerts, when the
// first one's group_wait is over; so do their resolutions.
func TestGroupWait(t *testing.T) {
	h := newHook(t, nil)
	r := start(t, webhookConfig(t, t.TempDir(), h.URL, "30s"), nil)

	steps := []struct {
		at      time.Duration // after base
		temps   []float64
		pending int // notifications made so far
	}{
		{0, []float64{90, 50, 50}, 0},
		{5 * time.Second, []float64{90, 90, 50}, 0},
		{10 * time.Second, []float64{90, 90, 90}, 0},
		{29 * time.Second, []float64{90, 90, 90}, 0},
		{30 * time.Second, []float64{90, 90, 90}, 1}, // group_wait of the first is over
		{40 * time.Second, []float64{50, 50, 50}, 1},
		{69 * time.Second, []float64{50, 50, 50}, 1},
		{70 * time.Second, []float64{50, 50, 50}, 2},
	}
	for _, s := range steps {
		r.D.Step(snapshot(base.Add(s.at), s.temps...))
		// Step has committed what it made; once the outbox is empty, all
		// of it was accepted.
		r.Drain()
		if got := len(h.Accepted()); got != s.pending {
			t.Fatalf("after the snapshot at +%v: got %d notifications, want %d", s.at, got, s.pending)
		}
	}
	msgs := h.Accepted()
	if got, want := h.Summary(), []string{"firing[0,1,2]", "resolved[0,1,2]"}; !slices.Equal(got, want) {
		t.Fatalf("accepted: got %v, want %v", got, want)
	}
	if got := len(h.Requests()); got != 2 {
		t.Errorf("webhook requests: got %d, want 2", got)
	}
	for i, a := range msgs[0].Alerts {
		if want := base.Add(time.Duration(i) * 5 * time.Second); !a.Starts.Equal(want) {
			t.Errorf("GPU %d starts_at: got %v, want %v (when it fired, not when the group went out)", a.GPU, a.Starts, want)
		}
	}
	if got, want := msgs[0].GroupKey, "hook/GPUHot/firing"; got != want {
		t.Errorf("group_key: got %q, want %q", got, want)
	}
}
