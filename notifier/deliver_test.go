package notifier_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
	"github.com/gpuwatch/gpuwatch/notifier/webhook"
	"github.com/gpuwatch/gpuwatch/store"
)

// discard is a logger that writes nothing.
func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// attempt is one Notify call the fake saw.
type attempt struct {
	at     time.Duration // since the fake was made (fake time in a bubble)
	id     uint64
	status notifier.Status
	ok     bool
}

// fakeNotifier records every attempt and answers with fail, which decides
// the n-th attempt (0-based); nil delivers everything.
type fakeNotifier struct {
	start time.Time
	fail  func(n int, m *notifier.Notification) (retry bool, err error)

	mu       sync.Mutex
	attempts []attempt
}

func newFake(fail func(n int, m *notifier.Notification) (bool, error)) *fakeNotifier {
	return &fakeNotifier{start: time.Now(), fail: fail}
}

func (f *fakeNotifier) Notify(_ context.Context, m *notifier.Notification) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var retry bool
	var err error
	if f.fail != nil {
		retry, err = f.fail(len(f.attempts), m)
	}
	f.attempts = append(f.attempts, attempt{at: time.Since(f.start), id: m.ID, status: m.Status, ok: err == nil})
	return retry, err
}

func (f *fakeNotifier) seen() []attempt {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.attempts)
}

// delivered lists the ids the fake accepted, in order.
func (f *fakeNotifier) delivered() []uint64 {
	var ids []uint64
	for _, a := range f.seen() {
		if a.ok {
			ids = append(ids, a.id)
		}
	}
	return ids
}

func openStore(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "outbox.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// enqueue puts notifications of the given statuses in the test receiver's
// outbox and returns their ids.
func enqueue(t testing.TB, db *store.DB, statuses ...notifier.Status) []uint64 {
	t.Helper()
	payloads := make([][]byte, len(statuses))
	for i, s := range statuses {
		b, err := json.Marshal(notifiertest.Notification(s))
		if err != nil {
			t.Fatal(err)
		}
		payloads[i] = b
	}
	ids, err := db.Enqueue("test", payloads...)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// start runs d until the returned stop is called; stop waits for Run to
// return.
func start(d *notifier.Deliverer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

func checkPending(t testing.TB, db *store.DB, want int) {
	t.Helper()
	if n, err := db.PendingCount("test"); err != nil || n != want {
		t.Errorf("got %d pending (%v), want %d", n, err, want)
	}
}

// noJitter waits 1s, 2s, 4s … 1m, without jitter.
var noJitter = notifier.Backoff{Initial: time.Second, Max: time.Minute}

func TestDelivererDeliversInOrderAndAcks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t)
		ids := enqueue(t, db, notifier.StatusFiring, notifier.StatusFiring, notifier.StatusResolved)
		fake := newFake(nil)
		d := notifier.NewDeliverer("test", fake, db, noJitter, discard())
		if d.Receiver() != "test" {
			t.Errorf("Receiver(): got %q, want test", d.Receiver())
		}
		stop := start(d)
		defer stop()
		synctest.Wait()
		if got := fake.delivered(); !slices.Equal(got, ids) {
			t.Errorf("got ids %v delivered, want %v", got, ids)
		}
		checkPending(t, db, 0)

		// Idle: a new entry waits for Wake.
		more := enqueue(t, db, notifier.StatusFiring)
		synctest.Wait()
		if got := len(fake.seen()); got != len(ids) {
			t.Errorf("idle, not woken: got %d attempts, want %d", got, len(ids))
		}
		d.Wake()
		d.Wake() // never blocks
		synctest.Wait()
		if got, want := fake.delivered(), append(ids, more...); !slices.Equal(got, want) {
			t.Errorf("after Wake: got ids %v delivered, want %v", got, want)
		}
		checkPending(t, db, 0)
		if got := d.Stats.Sent.Load(); got != 4 {
			t.Errorf("Stats.Sent: got %d, want 4", got)
		}
	})
}

func TestDelivererRetries(t *testing.T) {
	errDown := errors.New("HTTP 503: down")
	tests := []struct {
		name string
		err  error
		want []time.Duration // when the fake sees each attempt
	}{
		{"backoff doubles", errDown, []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second}},
		{"Retry-After wins", &notifier.RetryAfterError{After: 7 * time.Second, Err: errDown},
			[]time.Duration{0, 7 * time.Second, 14 * time.Second, 21 * time.Second, 28 * time.Second}},
		{"a Retry-After of 0 leaves it to the backoff", &notifier.RetryAfterError{Err: errDown},
			[]time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second}},
		{"a Retry-After over the backoff's longest wait waits that long", &notifier.RetryAfterError{After: 24 * time.Hour, Err: errDown},
			[]time.Duration{0, time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				db := openStore(t)
				ids := enqueue(t, db, notifier.StatusFiring)
				failures := len(tt.want) - 1
				fake := newFake(func(n int, _ *notifier.Notification) (bool, error) {
					if n < failures {
						return true, tt.err
					}
					return false, nil
				})
				d := notifier.NewDeliverer("test", fake, db, noJitter, discard())
				stop := start(d)
				defer stop()
				time.Sleep(time.Hour)
				synctest.Wait()
				var got []time.Duration
				for _, a := range fake.seen() {
					got = append(got, a.at)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("got attempts at %v, want %v", got, tt.want)
				}
				if got := fake.delivered(); !slices.Equal(got, ids) {
					t.Errorf("got ids %v delivered, want %v exactly once", got, ids)
				}
				checkPending(t, db, 0)
				if got := d.Stats.Retried.Load(); got != int64(failures) {
					t.Errorf("Stats.Retried: got %d, want %d", got, failures)
				}
			})
		})
	}
}

func TestDelivererDeadLetter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t)
		ids := enqueue(t, db, notifier.StatusFiring, notifier.StatusFiring)
		garbage, err := db.Enqueue("test", []byte("{not json"))
		if err != nil {
			t.Fatal(err)
		}
		last := enqueue(t, db, notifier.StatusResolved)
		// The first entry fails twice, the second time for good.
		fake := newFake(func(n int, m *notifier.Notification) (bool, error) {
			if m.ID != ids[0] {
				return false, nil
			}
			if n == 0 {
				return true, errors.New("HTTP 502: bad gateway")
			}
			return false, errors.New("HTTP 400: invalid payload")
		})
		d := notifier.NewDeliverer("test", fake, db, noJitter, discard())
		stop := start(d)
		defer stop()
		time.Sleep(time.Minute)
		synctest.Wait()
		if got, want := fake.delivered(), []uint64{ids[1], last[0]}; !slices.Equal(got, want) {
			t.Errorf("got ids %v delivered, want %v", got, want)
		}
		checkPending(t, db, 0)
		if got := d.Stats.Dead.Load(); got != 2 {
			t.Errorf("Stats.Dead: got %d, want 2", got)
		}
		// The unreadable entry was never tried: two failed tries, by reason.
		if got := d.Stats.Failed(); got["http_5xx"] != 1 || got["http_4xx"] != 1 || got["other"] != 0 {
			t.Errorf("Stats.Failed: got %v, want http_5xx 1, http_4xx 1, other 0", got)
		}
		dead, err := db.DeadLetters(0)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(dead, func(a, b store.DeadLetter) int { return int(a.ID) - int(b.ID) })
		want := []struct {
			id       uint64
			reason   string
			attempts int
		}{{ids[0], "HTTP 400: invalid payload", 2}, {garbage[0], "unreadable notification", 0}}
		if len(dead) != len(want) {
			t.Fatalf("got %d dead letters, want %d", len(dead), len(want))
		}
		for i, w := range want {
			got := dead[i]
			if got.Receiver != "test" || got.ID != w.id || !strings.Contains(got.Reason, w.reason) || got.Attempts != w.attempts {
				t.Errorf("dead letter %d: got receiver %q id %d reason %q attempts %d, want test, %d, %q, %d",
					i, got.Receiver, got.ID, got.Reason, got.Attempts, w.id, w.reason, w.attempts)
			}
			if got.At.IsZero() {
				t.Errorf("dead letter %d: got no time", i)
			}
		}
	})
}

func TestDelivererOrderUnderOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t)
		ids := enqueue(t, db, notifier.StatusFiring, notifier.StatusResolved)
		fake := newFake(func(n int, _ *notifier.Notification) (bool, error) {
			if n < 12 {
				return true, errors.New("HTTP 503: down for maintenance")
			}
			return false, nil
		})
		d := notifier.NewDeliverer("test", fake, db, notifier.Backoff{Initial: time.Second, Max: 5 * time.Minute, Jitter: 0.2}, discard())
		stop := start(d)
		defer stop()
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		for _, a := range fake.seen()[:12] {
			if a.status != notifier.StatusFiring {
				t.Errorf("attempt at %v: got %s tried during the outage, want only the firing", a.at, a.status)
			}
		}
		if got := fake.delivered(); !slices.Equal(got, ids) {
			t.Errorf("got ids %v delivered, want %v: firing then resolved, each once", got, ids)
		}
		checkPending(t, db, 0)
	})
}

func TestDelivererStopsOnCancel(t *testing.T) {
	tests := []struct {
		name     string
		blocking bool // Notify waits for ctx rather than failing at once
	}{{"while waiting to retry", false}, {"while a try is in flight", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				db := openStore(t)
				ids := enqueue(t, db, notifier.StatusFiring, notifier.StatusResolved)
				fake := newFake(func(int, *notifier.Notification) (bool, error) {
					return true, errors.New("HTTP 503")
				})
				blocking := &blockingNotifier{}
				var n notifier.Notifier = fake
				if tt.blocking {
					n = blocking
				}
				d := notifier.NewDeliverer("test", n, db, noJitter, discard())
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					d.Run(ctx)
				}()
				time.Sleep(10 * time.Minute)
				synctest.Wait()
				before := time.Now()
				cancel()
				<-done
				if waited := time.Since(before); waited != 0 {
					t.Errorf("Run returned %v after cancel, want at once", waited)
				}
				checkPending(t, db, 2)
				tried := blocking.ids
				for _, a := range fake.seen() {
					tried = append(tried, a.id)
				}
				if slices.ContainsFunc(tried, func(id uint64) bool { return id != ids[0] }) {
					t.Errorf("got ids %v tried, want only %d: nothing after the cancel", tried, ids[0])
				}
			})
		})
	}
}

// blockingNotifier holds every try until its context ends. It records
// the ids it was given; read them once Run has returned.
type blockingNotifier struct{ ids []uint64 }

func (b *blockingNotifier) Notify(ctx context.Context, m *notifier.Notification) (bool, error) {
	b.ids = append(b.ids, m.ID)
	<-ctx.Done()
	return true, ctx.Err()
}

// flakyQueue fails its first reads, then reads the store; it records
// every Ack.
type flakyQueue struct {
	*store.DB
	failReads int
	mu        sync.Mutex
	acks      [][]uint64
}

func (q *flakyQueue) Pending(receiver string, limit int) ([]store.Entry, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failReads > 0 {
		q.failReads--
		return nil, errors.New("disk on fire")
	}
	return q.DB.Pending(receiver, limit)
}

func (q *flakyQueue) Ack(receiver string, ids ...uint64) error {
	q.mu.Lock()
	q.acks = append(q.acks, slices.Clone(ids))
	q.mu.Unlock()
	return q.DB.Ack(receiver, ids...)
}

func TestDelivererOutboxReadFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t)
		ids := enqueue(t, db, notifier.StatusFiring)
		fake := newFake(nil)
		d := notifier.NewDeliverer("test", fake, &flakyQueue{DB: db, failReads: 2}, noJitter, discard())
		stop := start(d)
		defer stop()
		time.Sleep(time.Minute)
		synctest.Wait()
		got := fake.seen()
		if len(got) != 1 || got[0].id != ids[0] || got[0].at != 3*time.Second {
			t.Errorf("got attempts %+v, want one of id %d after 1s+2s of failed reads", got, ids[0])
		}
	})
}

// TestDelivererAcksInBatches checks that delivered entries leave the
// outbox a batch at a time, in order, and before every wait to retry, so a
// crash sends at most one batch again.
func TestDelivererAcksInBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t)
		statuses := make([]notifier.Status, 100)
		for i := range statuses {
			statuses[i] = notifier.StatusFiring
		}
		ids := enqueue(t, db, statuses...)
		failed := false
		fake := newFake(func(_ int, m *notifier.Notification) (bool, error) {
			if m.ID == ids[9] && !failed {
				failed = true
				return true, errors.New("HTTP 503")
			}
			return false, nil
		})
		q := &flakyQueue{DB: db}
		d := notifier.NewDeliverer("test", fake, q, noJitter, discard())
		stop := start(d)
		defer stop()
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := fake.delivered(); !slices.Equal(got, ids) {
			t.Errorf("got ids %v delivered, want %v", got, ids)
		}
		q.mu.Lock()
		acks := slices.Clone(q.acks)
		q.mu.Unlock()
		want := [][]uint64{ids[:9], ids[9:64], ids[64:]}
		if !slices.EqualFunc(acks, want, slices.Equal) {
			t.Errorf("got acks %v, want %v: the 9 before the retry, then the rest of the first batch of 64, then the second batch", acks, want)
		}
		checkPending(t, db, 0)
	})
}

func TestBackoffWait(t *testing.T) {
	b := notifier.Backoff{Initial: time.Second, Max: 2 * time.Minute}
	jittery := notifier.Backoff{Initial: time.Second, Max: 2 * time.Minute, Jitter: 0.2}
	tests := []struct {
		b       notifier.Backoff
		attempt int
		random  float64
		want    time.Duration
	}{
		{b, 0, 0.5, time.Second},
		{b, 1, 0.5, time.Second},
		{b, 2, 0.5, 2 * time.Second},
		{b, 3, 0, 4 * time.Second},
		{b, 7, 0.9, 64 * time.Second},
		{b, 8, 0.5, 2 * time.Minute},
		{b, 1000, 0.5, 2 * time.Minute},
		{notifier.Backoff{Initial: 3 * time.Second, Max: 10 * time.Second}, 3, 0.5, 10 * time.Second},
		{jittery, 1, 0.5, time.Second},
		{jittery, 1, 0, 800 * time.Millisecond},
		{jittery, 3, 0.75, 4400 * time.Millisecond},
		{jittery, 9, 0, 96 * time.Second},
		{jittery, 9, 0.5, 2 * time.Minute},
	}
	for _, tt := range tests {
		if got := tt.b.Wait(tt.attempt, tt.random); got != tt.want {
			t.Errorf("%+v.Wait(%d, %v): got %v, want %v", tt.b, tt.attempt, tt.random, got, tt.want)
		}
	}
	// Jitter stays within ±20% of the unjittered wait for every random in [0,1).
	for attempt := 1; attempt <= 12; attempt++ {
		base := b.Wait(attempt, 0.5)
		lo, hi := time.Duration(float64(base)*0.8), time.Duration(float64(base)*1.2)
		for _, r := range []float64{0, 0.1, 0.5, 0.9, 0.999999} {
			if got := jittery.Wait(attempt, r); got < lo || got >= hi {
				t.Errorf("Wait(%d, %v) with jitter 0.2: got %v, want within [%v, %v)", attempt, r, got, lo, hi)
			}
		}
	}
	if got, want := notifier.DefaultBackoff(), jittery; got != want {
		t.Errorf("DefaultBackoff(): got %+v, want %+v", got, want)
	}
}

// TestDelivererOutageWebhook runs the outage over a real transport: a
// loopback webhook answers 503 to its first tries, then 200.
func TestDelivererOutageWebhook(t *testing.T) {
	db := openStore(t)
	enqueue(t, db, notifier.StatusFiring, notifier.StatusResolved)
	done := make(chan struct{})
	srv := notifiertest.NewServer(t, func(n int, _ *notifiertest.Request) notifiertest.Response {
		switch {
		case n < 4:
			return notifiertest.Response{Status: 503, Body: "maintenance"}
		case n == 5:
			close(done)
		}
		return notifiertest.Response{}
	})
	hook, err := webhook.New("test", webhook.Config{URL: srv.URL + "/hook"}, srv.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := notifier.NewDeliverer("test", hook, db, notifier.Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond}, discard())
	stop := start(d)
	<-done
	// The last answer is in; its ack follows at once.
	for n, err := db.PendingCount("test"); n > 0 && err == nil; n, err = db.PendingCount("test") {
		time.Sleep(time.Millisecond)
	}
	stop()
	var got []string
	for _, r := range srv.Requests() {
		var body struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("request body: %v", err)
		}
		got = append(got, body.Status)
	}
	want := []string{"firing", "firing", "firing", "firing", "firing", "resolved"}
	if !slices.Equal(got, want) {
		t.Errorf("got requests %q, want %q", got, want)
	}
	checkPending(t, db, 0)
}

// BenchmarkDeliverThroughput measures the outbox end to end: b.N
// notifications wait in a store with real fsync; one deliverer posts each
// to a loopback webhook (generic format) and acks it. It reports
// notifications per second.
func BenchmarkDeliverThroughput(b *testing.B) {
	db, err := store.Open(filepath.Join(b.TempDir(), "bench.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	var got atomic.Int64
	done := make(chan struct{})
	want := int64(b.N)
	srv := notifiertest.NewServer(b, func(int, *notifiertest.Request) notifiertest.Response {
		if got.Add(1) == want {
			close(done)
		}
		return notifiertest.Response{}
	})
	hook, err := webhook.New("bench", webhook.Config{URL: srv.URL + "/hook"}, srv.Client(), nil)
	if err != nil {
		b.Fatal(err)
	}
	payload, err := json.Marshal(notifiertest.Notification(notifier.StatusFiring))
	if err != nil {
		b.Fatal(err)
	}
	const chunk = 1000
	for queued := 0; queued < b.N; queued += chunk {
		payloads := make([][]byte, min(chunk, b.N-queued))
		for i := range payloads {
			payloads[i] = payload
		}
		if _, err := db.Enqueue("bench", payloads...); err != nil {
			b.Fatal(err)
		}
	}
	d := notifier.NewDeliverer("bench", hook, db, notifier.DefaultBackoff(), discard())
	ctx, cancel := context.WithCancel(b.Context())
	stopped := make(chan struct{})
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	go func() {
		defer close(stopped)
		d.Run(ctx)
	}()
	<-done
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	<-stopped
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "notifications/s")
	if n, err := db.PendingCount("bench"); err != nil || n > 64 {
		b.Errorf("after delivery: got %d pending (%v), want at most one batch left to ack", n, err)
	}
}

// refusingQueue is the real outbox with a disk that refuses the ack
// (full, read-only, failing) while refuse is set.
type refusingQueue struct {
	*store.DB
	refuse atomic.Bool
	acks   atomic.Int64 // Ack calls, refused or not
}

func (q *refusingQueue) Ack(receiver string, ids ...uint64) error {
	q.acks.Add(1)
	if q.refuse.Load() {
		return errors.New("write state.db: no space left on device")
	}
	return q.DB.Ack(receiver, ids...)
}

// TestDelivererAckRefused: with the receiver up and the store refusing
// the ack, every notification reaches the receiver once, the ack is tried
// again with a backoff rather than in a loop, and the outbox empties once
// the store takes writes again.
func TestDelivererAckRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := &refusingQueue{DB: openStore(t)}
		ids := enqueue(t, q.DB, notifier.StatusFiring, notifier.StatusFiring, notifier.StatusResolved)
		q.refuse.Store(true)
		fake := newFake(nil)
		d := notifier.NewDeliverer("test", fake, q, noJitter, discard())
		stop := start(d)
		defer stop()

		time.Sleep(30 * time.Second)
		synctest.Wait()
		if got := fake.delivered(); !slices.Equal(got, ids) {
			t.Errorf("in 30s with the ack refused: got ids %v delivered, want %v, each once", got, ids)
		}
		// 1s, 2s, 4s, 8s, 16s apart: six tries in 30s, not thousands.
		if got := q.acks.Load(); got > 8 {
			t.Errorf("in 30s with the ack refused: got %d acks tried, want a backoff (at most 8)", got)
		}
		checkPending(t, q.DB, len(ids))

		// A new notification still goes out, once, and alone.
		more := enqueue(t, q.DB, notifier.StatusFiring)
		d.Wake()
		time.Sleep(time.Minute)
		synctest.Wait()
		if got, want := fake.delivered(), append(slices.Clone(ids), more...); !slices.Equal(got, want) {
			t.Errorf("after a new notification: got ids %v delivered, want %v, each once", got, want)
		}

		q.refuse.Store(false)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		checkPending(t, q.DB, 0)
		if got := len(fake.seen()); got != len(ids)+1 {
			t.Errorf("after the store recovered: got %d attempts, want %d: nothing sent twice", got, len(ids)+1)
		}
	})
}
