package daemon

import (
	"sync/atomic"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/store"
)

// outboxDepth is how many notifications wait in each receiver's outbox,
// kept in memory so that /metrics and the API answer while a stalled disk
// holds the store (a commit that grows the file blocks bbolt's readers).
// It is read from the store once at start, then follows the writes that
// change it: a commit adds what it queued, an ack or a burial takes away
// what it removed, and a read of the outbox that finds fewer entries than
// it asked for counts them exactly.
type outboxDepth map[string]*atomic.Int64 // receiver → waiting notifications; fixed at start

// read reads each queue's waiting count from the store.
func (o outboxDepth) read(db Store, queues []string) error {
	for _, q := range queues {
		n, err := db.PendingCount(q)
		if err != nil {
			return err
		}
		o[q] = &atomic.Int64{}
		o[q].Store(int64(n))
	}
	return nil
}

// add counts n notifications more (or fewer) for receiver.
func (o outboxDepth) add(receiver string, n int) {
	if c, ok := o[receiver]; ok {
		c.Add(int64(n))
	}
}

// committed counts what a commit the store took queued.
func (o outboxDepth) committed(c *notifier.Commit) {
	for receiver, payloads := range c.Outbox {
		o.add(receiver, len(payloads))
	}
}

// snapshot returns every receiver's count.
func (o outboxDepth) snapshot() map[string]int {
	out := make(map[string]int, len(o))
	for r, c := range o {
		out[r] = int(max(c.Load(), 0))
	}
	return out
}

// countingQueue is a deliverer's outbox that keeps the count.
type countingQueue struct {
	notifier.Queue
	depth outboxDepth
}

func (q countingQueue) Pending(receiver string, limit int) ([]store.Entry, error) {
	entries, err := q.Queue.Pending(receiver, limit)
	if err == nil && (limit <= 0 || len(entries) < limit) {
		if c, ok := q.depth[receiver]; ok {
			c.Store(int64(len(entries))) // all of them: the exact count
		}
	}
	return entries, err
}

func (q countingQueue) Ack(receiver string, ids ...uint64) error {
	err := q.Queue.Ack(receiver, ids...)
	if err == nil {
		q.depth.add(receiver, -len(ids))
	}
	return err
}

func (q countingQueue) Bury(receiver string, id uint64, reason string, at time.Time, attempts int) error {
	err := q.Queue.Bury(receiver, id, reason, at, attempts)
	if err == nil {
		q.depth.add(receiver, -1)
	}
	return err
}
