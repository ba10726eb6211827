package notifier_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// TestDelivererAcksSlowReceiverEachSecond: with a receiver that takes
// 600 ms a notification, what it took leaves the outbox about once a
// second, not at the end of the batch: a crash would send again what it
// took in the second before, not the whole batch.
func TestDelivererAcksSlowReceiverEachSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t)
		ids := enqueue(t, db, notifier.StatusFiring, notifier.StatusFiring, notifier.StatusFiring, notifier.StatusFiring, notifier.StatusFiring)
		fake := newFake(func(int, *notifier.Notification) (bool, error) {
			time.Sleep(600 * time.Millisecond)
			return false, nil
		})
		q := &flakyQueue{DB: db}
		stop := start(notifier.NewDeliverer("test", fake, q, noJitter, discard()))
		defer stop()
		time.Sleep(time.Minute)
		synctest.Wait()
		q.mu.Lock()
		acks := slices.Clone(q.acks)
		q.mu.Unlock()
		if want := [][]uint64{ids[:3], ids[3:]}; !slices.EqualFunc(acks, want, slices.Equal) {
			t.Errorf("got acks %v, want %v: the three taken within a second of the first, then the rest", acks, want)
		}
		checkPending(t, db, 0)
	})
}
