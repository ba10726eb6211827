package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/storedamage"
	"github.com/gpuwatch/gpuwatch/store"
)

// soundStore writes a store the way a daemon fills one and returns its
// path.
func soundStore(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sound.db")
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	store.FillLikeADaemon(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// heapLimit is far above what opening a store of a few hundred kilobytes
// takes, and far below what an unbounded walk of a damaged one does.
const heapLimit = 256 << 20

// openBounded opens path as gpuwatch run does, watching the heap while it
// does: a walk without bounds over a damaged page would otherwise eat the
// machine's memory before the test could fail. It also gives up after a
// minute, which only a hang takes.
func openBounded(t *testing.T, path string) (*store.DB, error) {
	t.Helper()
	type result struct {
		db  *store.DB
		err error
	}
	done := make(chan result, 1)
	go func() {
		db, err := store.OpenContext(t.Context(), path, store.Options{NoSync: true, Timeout: 100 * time.Millisecond})
		done <- result{db, err}
	}()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	giveUp := time.After(time.Minute)
	for {
		select {
		case r := <-done:
			return r.db, r.err
		case <-giveUp:
			t.Fatalf("Open of a damaged store did not return within a minute")
		case <-tick.C:
			metrics.Read(sample)
			if heap := sample[0].Value.Uint64(); heap > heapLimit {
				// Stop the whole test binary: the walk goes on in its
				// goroutine and would take all memory.
				panic(fmt.Sprintf("Open of a damaged store (%s) took %d MiB of heap and kept growing: its walk has no bound", path, heap>>20))
			}
		}
	}
}

// TestOpenEveryKindOfDamage damages a sound store in each of the 37 ways
// the fault-injection run does, and checks that Open refuses each with
// the clear error (and leaves the file as it was), or opens it and says
// what was lost.
func TestOpenEveryKindOfDamage(t *testing.T) {
	s, err := storedamage.Load(soundStore(t))
	if err != nil {
		t.Fatal(err)
	}
	kinds := storedamage.Kinds()
	if len(kinds) != 37 {
		t.Errorf("%d kinds of damage, want the 37 the fault-injection run knows", len(kinds))
	}
	for _, k := range kinds {
		t.Run(k.Group+": "+k.Name, func(t *testing.T) {
			data, err := k.Damage(s)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "state.db")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := openBounded(t, path)
			switch {
			case k.Want == storedamage.Refused && err == nil:
				db.Close()
				t.Fatalf("Open accepted the store: want it refused")
			case k.Want == storedamage.Refused:
				checkRefused(t, path, data, err)
			case err != nil:
				t.Fatalf("Open: %v; want the store opened, saying what was lost", err)
			default:
				defer db.Close()
				notes := db.Recovered()
				if len(notes) == 0 || !strings.Contains(strings.Join(notes, " "), "lost") {
					t.Errorf("Recovered(): %q; want what the damage cost said", notes)
				}
				if _, err := db.All("silences"); err != nil {
					t.Errorf("All on the recovered store: %v", err)
				}
				if err := db.Put("silences", "after", []byte("x")); err != nil {
					t.Errorf("Put on the recovered store: %v", err)
				}
			}
		})
	}
}

// checkRefused checks the error of a refused store: damaged (or no store
// any more), saying what to do, the file as it was.
func checkRefused(t *testing.T, path string, data []byte, err error) {
	t.Helper()
	switch {
	case errors.Is(err, store.ErrCorrupt):
		for _, want := range []string{path + " is damaged", "gpuwatch has not changed it", "mv " + path + " " + path + ".damaged",
			"loses the notifications waiting in its outbox"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	case errors.Is(err, store.ErrNotStore):
		if !strings.Contains(err.Error(), "move it away or set storage.path to another file") {
			t.Errorf("error %q does not say what to do", err)
		}
	default:
		t.Errorf("Open: %v; want ErrCorrupt (or ErrNotStore)", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Errorf("the refused Open changed the file")
	}
}

// TestOpenStopsWhenAsked: a stop (SIGTERM) while Open checks a store
// ends the check at once.
func TestOpenStopsWhenAsked(t *testing.T) {
	path := soundStore(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("terminated"))
	db, err := store.OpenContext(ctx, path, store.Options{NoSync: true})
	if err == nil {
		db.Close()
		t.Fatal("Open with its context ended: got a store, want an error")
	}
	if !strings.Contains(err.Error(), "stopped while checking it: terminated") {
		t.Errorf("Open with its context ended: %v; want it to say it stopped and why", err)
	}
}
