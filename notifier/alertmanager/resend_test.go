package alertmanager

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// pushes is what a server got so far: per request, the endsAt of each
// alert, in the bubble's time since start.
func pushes(t *testing.T, srv *notifiertest.Server, start time.Time) [][]time.Duration {
	t.Helper()
	var out [][]time.Duration
	for _, r := range srv.Requests() {
		var ends []time.Duration
		for _, a := range decoded(t, r) {
			ends = append(ends, a.EndsAt.Sub(start))
		}
		out = append(out, ends)
	}
	return out
}

// TestResendWhileFiring: every resend_interval the firing alert goes again
// with endsAt four intervals ahead, until it resolves; after the resolve,
// nothing more. Time is synctest's: each minute passes at once.
func TestResendWhileFiring(t *testing.T) {
	srv := notifiertest.NewServer(t, nil) // outside the bubble: it answers in real time
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := newNotifier(t, Config{URLs: []string{srv.URL}}, Options{})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go n.Run(ctx)
		synctest.Wait()
		if got := len(srv.Requests()); got != 0 {
			t.Fatalf("with nothing firing: got %d requests, want none", got)
		}

		time.Sleep(30 * time.Second) // fires between two re-sends
		if _, err := n.Notify(ctx, firingNow(notifier.StatusFiring, time.Now())); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Minute) // re-sends at 1m and 2m; now 2m30s
		resolved := firingNow(notifier.StatusResolved, time.Now())
		resolved.ID = 2
		if _, err := n.Notify(ctx, resolved); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		m := time.Minute
		want := [][]time.Duration{
			{30*time.Second + 4*m},          // the notification: 4 × resend_interval ahead
			{m + 4*m},                       // re-sent at 1m
			{2*m + 4*m},                     // at 2m
			{150*time.Second - time.Second}, // resolved at 2m30s: endsAt when it resolved
		}
		if got := pushes(t, srv, start); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("got pushes with endsAt (since start) %v, want %v", got, want)
		}
	})
}

// TestResendResumesAfterRestart: the firing alerts are in the store, so a
// new notifier on it (gpuwatch restarted) re-sends them at once, without
// a new transition; another receiver's records stay its own.
func TestResendResumesAfterRestart(t *testing.T) {
	srv := notifiertest.NewServer(t, nil)
	synctest.Test(t, func(t *testing.T) {
		store := newMemStore()
		store.Put("other/node1/GPUHot/GPU-x", []byte(`{"labels":{"alertname":"GPUHot"}}`))
		first := newNotifier(t, Config{URLs: []string{srv.URL}}, Options{Firing: store})
		fired := firingNow(notifier.StatusFiring, time.Now())
		if _, err := first.Notify(t.Context(), fired); err != nil {
			t.Fatal(err)
		}
		key := "am/" + fired.Alerts[0].Key
		if got := store.Keys(); !slices.Equal(got, []string{key, "other/node1/GPUHot/GPU-x"}) {
			t.Fatalf("store: got keys %q, want the firing alert's under the receiver's name and the other receiver's", got)
		}

		time.Sleep(10 * time.Minute) // gpuwatch was down: Alertmanager let the alert expire
		restarted := newNotifier(t, Config{URLs: []string{srv.URL}}, Options{Firing: store})
		ctx, cancel := context.WithCancel(t.Context())
		go restarted.Run(ctx)
		synctest.Wait()
		cancel()
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("got %d requests, want the notification and one re-send at start", len(reqs))
		}
		got := decoded(t, reqs[1])
		if len(got) != 1 || got[0].Labels["alertname"] != "GPUMemoryLeak" || !got[0].StartsAt.Equal(fired.Alerts[0].StartsAt) ||
			!got[0].EndsAt.Equal(time.Now().Add(4*time.Minute)) {
			t.Errorf("re-sent after the restart: got %+v, want GPUMemoryLeak as it fired, ending 4m from now", got)
		}

		resolved := firingNow(notifier.StatusResolved, time.Now())
		resolved.ID = 2
		if _, err := restarted.Notify(t.Context(), resolved); err != nil {
			t.Fatal(err)
		}
		if got := store.Keys(); !slices.Equal(got, []string{"other/node1/GPUHot/GPU-x"}) {
			t.Errorf("store after the resolve: got keys %q, want only the other receiver's", got)
		}
	})
}

// TestResolveStopsResendsAtOnce: once a resolve is tried, the alert is
// re-sent no more, even while the resolve waits for an Alertmanager that
// is down: a re-send after it would make the alert fire again.
func TestResolveStopsResendsAtOnce(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	srv := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
		if down.Load() {
			return notifiertest.Response{Status: http.StatusBadGateway}
		}
		return notifiertest.Response{}
	})
	synctest.Test(t, func(t *testing.T) {
		n := newNotifier(t, Config{URLs: []string{srv.URL}}, Options{})
		down.Store(false)
		if _, err := n.Notify(t.Context(), firingNow(notifier.StatusFiring, time.Now())); err != nil {
			t.Fatal(err)
		}
		down.Store(true)
		resolved := firingNow(notifier.StatusResolved, time.Now())
		resolved.ID = 2
		if _, err := n.Notify(t.Context(), resolved); err == nil {
			t.Fatal("got no error from an Alertmanager that is down")
		}
		ctx, cancel := context.WithCancel(t.Context())
		go n.Run(ctx)
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		cancel()
		if got := len(srv.Requests()); got != 2 {
			t.Errorf("got %d requests, want 2 (the firing, the failed resolve) and no re-send", got)
		}
	})
}

// TestResendSurvivesAStoreThatRefuses: a store that refuses writes delays
// the record, never the push; once the store takes writes again the
// record is written at the next re-send.
func TestResendSurvivesAStoreThatRefuses(t *testing.T) {
	srv := notifiertest.NewServer(t, nil)
	synctest.Test(t, func(t *testing.T) {
		store := newMemStore()
		store.SetFail(true)
		logs := &notifiertest.Buffer{}
		n := newNotifier(t, Config{URLs: []string{srv.URL}}, Options{Firing: store, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		m := firingNow(notifier.StatusFiring, time.Now())
		if _, err := n.Notify(t.Context(), m); err != nil {
			t.Fatalf("a refusing store failed the push: %v", err)
		}
		if !strings.Contains(logs.String(), "the store refused a firing alert record") {
			t.Errorf("the log does not say the store refused the record:\n%s", logs)
		}
		ctx, cancel := context.WithCancel(t.Context())
		go n.Run(ctx)
		synctest.Wait()
		store.SetFail(false)
		time.Sleep(time.Minute)
		synctest.Wait()
		cancel()
		if got := store.Keys(); !slices.Equal(got, []string{"am/" + m.Alerts[0].Key}) {
			t.Errorf("store once it works again: got keys %q, want the firing alert's", got)
		}
		if got := len(srv.Requests()); got != 3 {
			t.Errorf("got %d requests, want 3: the notification and re-sends at start and at 1m", got)
		}
	})
}

// TestResendLogsOnceItWorksAgain: a failed re-send is logged with the
// Alertmanager it failed at; the first one that works again says so.
func TestResendLogsOnceItWorksAgain(t *testing.T) {
	var down atomic.Bool
	srv := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
		if down.Load() {
			return notifiertest.Response{Status: http.StatusServiceUnavailable}
		}
		return notifiertest.Response{}
	})
	synctest.Test(t, func(t *testing.T) {
		logs := &notifiertest.Buffer{}
		n := newNotifier(t, Config{URLs: []string{srv.URL}}, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if _, err := n.Notify(t.Context(), firingNow(notifier.StatusFiring, time.Now())); err != nil {
			t.Fatal(err)
		}
		down.Store(true)
		ctx, cancel := context.WithCancel(t.Context())
		go n.Run(ctx)
		time.Sleep(90 * time.Second) // re-sends at 0 and 1m fail
		synctest.Wait()
		down.Store(false)
		time.Sleep(time.Minute) // the one at 2m works
		synctest.Wait()
		cancel()
		text := logs.String()
		if got := strings.Count(text, "cannot re-send the firing alerts"); got != 2 {
			t.Errorf("got %d failed re-sends logged, want 2:\n%s", got, text)
		}
		if got := strings.Count(text, "works again"); got != 1 || !strings.Contains(text, "alertmanager=\"urls[0]") {
			t.Errorf("got %d recoveries logged, want 1 naming urls[0]:\n%s", got, text)
		}
	})
}

// TestUnreadableFiringRecordSetAside: a firing alert record that cannot
// be read is set aside, its bytes kept, and the others are re-sent.
func TestUnreadableFiringRecordSetAside(t *testing.T) {
	srv := notifiertest.NewServer(t, nil)
	store := newMemStore()
	store.Put("am/node1/GPUHot/GPU-x", []byte(`{"labels":{"alertname":"GPUHot"}}`))
	store.Put("am/node1/GPUHot/GPU-y", []byte(`{"labels":`))
	n := newNotifier(t, Config{URLs: []string{srv.URL}}, Options{Firing: store})
	if _, ok := n.firing.alerts["node1/GPUHot/GPU-x"]; !ok || len(n.firing.alerts) != 1 {
		t.Errorf("loaded firing alerts %v, want the readable one", n.firing.alerts)
	}
	if got := string(store.aside["am/node1/GPUHot/GPU-y"]); got != `{"labels":` {
		t.Errorf("set aside %q, want the unreadable record as it was", got)
	}
}
