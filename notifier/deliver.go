package notifier

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gpuwatch/gpuwatch/store"
)

// Queue is a receiver's durable outbox, as the deliverer reads it.
type Queue interface {
	Pending(receiver string, limit int) ([]store.Entry, error)
	Ack(receiver string, ids ...uint64) error
	Bury(receiver string, id uint64, reason string, at time.Time, attempts int) error
}

// Backoff says how long to wait before the next try of a failed delivery.
type Backoff struct {
	Initial time.Duration // before the second try
	Max     time.Duration // the longest wait
	Jitter  float64       // ±share of each wait chosen at random, so retries spread
}

// DefaultBackoff waits 1s, 2s, 4s … up to 2 minutes, ±20%.
func DefaultBackoff() Backoff {
	return Backoff{Initial: time.Second, Max: 2 * time.Minute, Jitter: 0.2}
}

// Wait returns the wait after the given failed attempt (1 for the first),
// with random in [0,1) choosing the jitter.
func (b Backoff) Wait(attempt int, random float64) time.Duration {
	d := b.Initial
	for i := 1; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	return time.Duration(float64(d) * (1 + b.Jitter*(2*random-1)))
}

// Stats counts what a deliverer did, for logs and /metrics. Every field
// and method is safe to use from any goroutine.
type Stats struct {
	Sent    atomic.Int64 // notifications the receiver accepted
	Retried atomic.Int64 // failed tries that will be tried again
	Dead    atomic.Int64 // notifications refused for good (dead letters)
	// failed counts failed tries, retried or not, by FailureReason.
	failed [numFailureReasons]atomic.Int64
}

// AddFailure counts one failed try for its reason.
func (s *Stats) AddFailure(r FailureReason) {
	if r < 0 || r >= numFailureReasons {
		r = FailureOther
	}
	s.failed[r].Add(1)
}

// Failed returns the failed tries so far by reason name ("timeout",
// "http_5xx", …), every reason present, zero or not. The map is the
// caller's.
func (s *Stats) Failed() map[string]int64 {
	out := make(map[string]int64, numFailureReasons)
	for r := range numFailureReasons {
		out[r.String()] = s.failed[r].Load()
	}
	return out
}

// Snapshot reads every counter at once into a plain value.
func (s *Stats) Snapshot() DeliveryStats {
	return DeliveryStats{Sent: s.Sent.Load(), Retried: s.Retried.Load(), Dead: s.Dead.Load(), Failed: s.Failed()}
}

// DeliveryStats is a copy of a deliverer's Stats at one moment.
type DeliveryStats struct {
	Sent    int64
	Retried int64
	Dead    int64
	Failed  map[string]int64 // by FailureReason name, every reason present
}

// Deliverer delivers one receiver's outbox, oldest first, one notification
// at a time, so a receiver sees an alert's notifications in the order they
// were made. Retries live here and nowhere else: a failure worth a retry is
// tried again after a backoff (or the receiver's Retry-After) for as long as
// it takes; a permanent failure moves the notification to the dead letters.
//
// Delivered notifications leave the outbox together, in one transaction
// per batch read (and before every wait, and once a second while a batch
// takes longer), not one fsync each: a crash between a delivery and its
// ack sends again what the receiver took in the second before it, at
// most a batch, at least one notification. Each carries the same
// IdempotencyKey every time, for a receiver to drop what it has. When the
// outbox refuses the ack (a full or failing disk), the deliverer backs off
// as after a failed send and remembers what it delivered, so nothing is
// sent twice while the process lives.
type Deliverer struct {
	receiver string
	notifier Notifier
	queue    Queue
	logger   *slog.Logger
	backoff  Backoff
	wake     chan struct{}
	// unacked are delivered entries whose ack the outbox refused (a full
	// or failing disk): they are skipped, and their ack tried again, so a
	// sick store never makes a receiver get one notification twice.
	// Only Run touches it.
	unacked map[uint64]bool
	// Stats counts deliveries; read it any time.
	Stats Stats
	// now stamps dead letters; random picks jitter. Both replaceable in tests.
	now    func() time.Time
	random func() float64
}

// NewDeliverer makes the deliverer of one receiver.
func NewDeliverer(receiver string, n Notifier, q Queue, b Backoff, logger *slog.Logger) *Deliverer {
	return &Deliverer{receiver: receiver, notifier: n, queue: q, logger: logger.With("receiver", receiver),
		backoff: b, wake: make(chan struct{}, 1), unacked: map[uint64]bool{}, now: time.Now, random: rand.Float64}
}

// Receiver names the receiver.
func (d *Deliverer) Receiver() string { return d.receiver }

// Wake tells the deliverer that its outbox has something new. It never blocks.
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// batch is how many notifications the deliverer reads from its outbox at once.
const batch = 64

// ackAfter bounds how long a delivered notification waits to leave the
// outbox with the rest of its batch: a crash sends again at most what
// the receiver took in that time (and at least the last one).
const ackAfter = time.Second

// Run delivers until ctx ends, waiting for Wake when the outbox is empty.
func (d *Deliverer) Run(ctx context.Context) {
	failures := 0    // reads of the outbox in a row that failed
	ackFailures := 0 // acks in a row the outbox refused
	for ctx.Err() == nil {
		d.retryAcks()
		entries, err := d.queue.Pending(d.receiver, batch+len(d.unacked))
		if err != nil {
			failures++
			d.logger.Error("cannot read the outbox", "err", err)
			d.sleep(ctx, d.backoff.Wait(failures, d.random()))
			continue
		}
		failures = 0
		entries = slices.DeleteFunc(entries, func(e store.Entry) bool { return d.unacked[e.ID] })
		if len(entries) == 0 {
			if len(d.unacked) > 0 {
				// Nothing new, only acks the outbox refused: try them
				// again later, not in a loop.
				ackFailures++
				d.sleep(ctx, d.backoff.Wait(ackFailures, d.random()))
				continue
			}
			select {
			case <-ctx.Done():
			case <-d.wake:
			}
			continue
		}
		var delivered []uint64
		acked, since := true, time.Time{} // since: when the first of delivered went out
		for _, e := range entries {
			alive := d.deliver(ctx, e, &delivered)
			if len(delivered) == 1 {
				since = d.now()
			}
			if !alive {
				break
			}
			if len(delivered) > 0 && d.now().Sub(since) >= ackAfter {
				// A slow receiver: what it took leaves the outbox now,
				// not at the end of the batch.
				if acked = d.ack(delivered); !acked {
					break
				}
				delivered = delivered[:0]
			}
		}
		if acked && d.ack(delivered) {
			ackFailures = 0
			continue
		}
		// As after a failed send: the store is sick, do not hammer it.
		ackFailures++
		d.sleep(ctx, d.backoff.Wait(ackFailures, d.random()))
	}
	d.retryAcks()
	if n := len(d.unacked); n > 0 {
		d.logger.Error("stopping with delivered notifications the outbox would not let go of: they are sent again when gpuwatch starts",
			"notifications", n)
	}
}

// deliver tries one entry until the receiver accepts it or refuses it for
// good, adding it to delivered when accepted. It returns false when ctx
// ended first (the entry stays queued).
func (d *Deliverer) deliver(ctx context.Context, e store.Entry, delivered *[]uint64) bool {
	var n Notification
	if err := json.Unmarshal(e.Payload, &n); err != nil {
		d.bury(e.ID, "unreadable notification: "+err.Error(), 0)
		return true
	}
	n.ID = e.ID
	for attempt := 1; ; attempt++ {
		retry, err := d.notifier.Notify(ctx, &n)
		if err == nil {
			d.Stats.Sent.Add(1)
			*delivered = append(*delivered, e.ID)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		d.Stats.AddFailure(ClassifyFailure(err))
		if !retry {
			d.logger.Error("the receiver refused a notification for good; it is kept with the dead letters (gpuwatch outbox list)",
				"id", e.ID, "alert", alertName(&n), "attempts", attempt, "err", err)
			d.bury(e.ID, err.Error(), attempt)
			return true
		}
		d.Stats.Retried.Add(1)
		wait := d.backoff.Wait(attempt, d.random())
		if ra := (*RetryAfterError)(nil); errors.As(err, &ra) && ra.After > 0 {
			// The receiver's word, but no longer than our longest wait: a
			// Retry-After of a day must not hold an alert for a day.
			wait = ra.After
			if d.backoff.Max > 0 {
				wait = min(wait, d.backoff.Max)
			}
		}
		d.logger.Warn("delivery failed; will retry", "id", e.ID, "alert", alertName(&n), "attempt", attempt, "retry_in", wait, "err", err)
		// What went out before stays out, however long this one takes.
		d.ack(*delivered)
		*delivered = (*delivered)[:0]
		if !d.sleep(ctx, wait) {
			return false
		}
	}
}

// ack removes delivered entries from the outbox in one transaction and
// reports whether the outbox took the ack. Entries it refused stay in
// unacked: they are not delivered again while the process lives.
func (d *Deliverer) ack(ids []uint64) bool {
	if len(ids) == 0 {
		return true
	}
	if err := d.queue.Ack(d.receiver, ids...); err != nil {
		d.logger.Error("delivered, but the outbox cannot let go of them; they are not sent again while gpuwatch runs",
			"ids", len(ids), "first", ids[0], "err", err)
		for _, id := range ids {
			d.unacked[id] = true
		}
		return false
	}
	return true
}

// retryAcks tries again to ack what the outbox refused before.
func (d *Deliverer) retryAcks() {
	if len(d.unacked) == 0 {
		return
	}
	ids := slices.Sorted(maps.Keys(d.unacked))
	if err := d.queue.Ack(d.receiver, ids...); err != nil {
		return // logged when they were first refused; Run backs off
	}
	clear(d.unacked)
	d.logger.Info("the outbox took the delivered notifications it had refused", "notifications", len(ids))
}

func (d *Deliverer) bury(id uint64, reason string, attempts int) {
	d.Stats.Dead.Add(1)
	if err := d.queue.Bury(d.receiver, id, reason, d.now(), attempts); err != nil {
		d.logger.Error("cannot move a refused notification to the dead letters", "id", id, "err", err)
	}
}

// sleep waits for wait or until ctx ends; it reports whether ctx is alive.
func (d *Deliverer) sleep(ctx context.Context, wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func alertName(n *Notification) string {
	if len(n.Alerts) == 0 {
		return ""
	}
	return n.Alerts[0].Name
}
