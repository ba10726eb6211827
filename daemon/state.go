package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/store"
)

// Store is the state store as the daemon uses it. gpuwatch runs on a
// *store.DB; tests wrap one to play a disk that refuses or stalls writes.
type Store interface {
	All(bucket string) (map[string][]byte, error)
	Get(bucket, key string) ([]byte, bool, error)
	Put(bucket, key string, value []byte) error
	Delete(bucket, key string) error
	Commit(outbox map[string][][]byte, put map[string]map[string][]byte, del map[string][]string) error
	Pending(receiver string, limit int) ([]store.Entry, error)
	PendingCount(receiver string) (int, error)
	Ack(receiver string, ids ...uint64) error
	Bury(receiver string, id uint64, reason string, at time.Time, attempts int) error
	DeadLetters(limit int) ([]store.DeadLetter, error)
	SetAside(bucket, key, why string, at time.Time) (store.SetAsideRecord, error)
	SetAsideRecords() ([]store.SetAsideRecord, error)
	Recovered() []string
	Close() error
}

// openStore opens the store at path, the way Options.OpenStore does when
// it is nil.
func openStore(ctx context.Context, path string) (Store, error) {
	return store.OpenContext(ctx, path, store.Options{})
}

// watchedStore is the daemon's Store with its writes watched: when the
// oldest unfinished one began, when writes began to fail and why. /healthz
// and the watchdog read it: a disk that stalls or refuses writes makes
// gpuwatch unhealthy and says so, while reads go on.
type watchedStore struct {
	Store
	now func() time.Time

	mu           sync.Mutex
	writing      map[uint64]time.Time // writes in flight: when each began
	next         uint64
	failingSince time.Time // zero while the last write succeeded
	lastErr      error
}

func watch(s Store, now func() time.Time) *watchedStore {
	return &watchedStore{Store: s, now: now, writing: map[uint64]time.Time{}}
}

// write runs one write and notes how it went.
func (w *watchedStore) write(f func() error) error {
	w.mu.Lock()
	id := w.next
	w.next++
	w.writing[id] = w.now()
	w.mu.Unlock()
	err := f()
	w.mu.Lock()
	delete(w.writing, id)
	switch {
	case err == nil:
		w.failingSince, w.lastErr = time.Time{}, nil
	case w.failingSince.IsZero():
		w.failingSince, w.lastErr = w.now(), err
	default:
		w.lastErr = err
	}
	w.mu.Unlock()
	return err
}

func (w *watchedStore) Put(bucket, key string, value []byte) error {
	return w.write(func() error { return w.Store.Put(bucket, key, value) })
}

func (w *watchedStore) Delete(bucket, key string) error {
	return w.write(func() error { return w.Store.Delete(bucket, key) })
}

func (w *watchedStore) Commit(outbox map[string][][]byte, put map[string]map[string][]byte, del map[string][]string) error {
	return w.write(func() error { return w.Store.Commit(outbox, put, del) })
}

func (w *watchedStore) Ack(receiver string, ids ...uint64) error {
	return w.write(func() error { return w.Store.Ack(receiver, ids...) })
}

func (w *watchedStore) Bury(receiver string, id uint64, reason string, at time.Time, attempts int) error {
	return w.write(func() error { return w.Store.Bury(receiver, id, reason, at, attempts) })
}

// writeState is how the store's writes stand.
type writeState struct {
	stuckSince   time.Time // when the oldest unfinished write began; zero when none
	failingSince time.Time // when writes began to fail; zero while they succeed
	lastErr      error
}

func (w *watchedStore) state() writeState {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := writeState{failingSince: w.failingSince, lastErr: w.lastErr}
	for _, began := range w.writing {
		if s.stuckSince.IsZero() || began.Before(s.stuckSince) {
			s.stuckSince = began
		}
	}
	return s
}

// ErrStoreStalled is the error of a request whose write the store did not
// take within Options.WriteWait: its disk is stalled. The write goes on,
// and is done if the disk finishes it.
var ErrStoreStalled = errors.New("the store did not take the write in time: its disk is stalled (see GET /healthz)")

// bounded runs the write f, returning its error, or ErrStoreStalled when
// it has not finished within Options.WriteWait: a request waits seconds
// for a stalled disk, not as long as the disk takes.
func (d *Daemon) bounded(f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	t := time.NewTimer(d.opts.WriteWait)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%w: waited %v; the change is made if the disk finishes the write", ErrStoreStalled, d.opts.WriteWait)
	}
}
