package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// damagedStore writes a store the way a daemon fills one (outbox queues
// with acked entries, dead letters, key-value buckets), closes it and
// returns its bytes, its page size and the pages bbolt reaches (branch,
// leaf and freelist pages: damage there must be found). The file may be
// longer than its pages, bbolt grows it ahead.
func damagedStore(t *testing.T) (data []byte, pageSize int, inUse []int) {
	t.Helper()
	path := tempPath(t)
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	FillLikeADaemon(t, db)
	pageSize = db.bolt.Info().PageSize
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		for id := 2; int64(id)*int64(pageSize) < tx.Size(); id++ {
			info, err := tx.Page(id)
			if err != nil {
				return err
			}
			if info != nil && slices.Contains([]string{"branch", "leaf", "freelist"}, info.Type) {
				inUse = append(inUse, id)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if data, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	if len(inUse) < 20 {
		t.Fatalf("the test store reaches %d pages, want at least 20 to damage", len(inUse))
	}
	return data, pageSize, inUse
}

// FillLikeADaemon fills db the way a daemon does (outbox queues with
// acked entries, dead letters, key-value buckets), over enough pages for
// damage to find branch, leaf and freelist pages. The tests outside the
// package use it too.
func FillLikeADaemon(t testing.TB, db *DB) {
	t.Helper()
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for i := range 300 {
		receiver := fmt.Sprintf("receiver-%d", i%5)
		ids, err := db.Enqueue(receiver, bytes.Repeat([]byte{'n'}, 400))
		if err != nil {
			t.Fatal(err)
		}
		switch i % 4 {
		case 0:
			err = db.Ack(receiver, ids...)
		case 1:
			err = db.Bury(receiver, ids[0], "HTTP 400", at, 1)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Put("silences", fmt.Sprintf("silence-%03d", i), bytes.Repeat([]byte{'s'}, 200)); err != nil {
			t.Fatal(err)
		}
	}
}

// openDamaged writes data as a store file and opens it. A refused store
// must be refused with ErrCorrupt and a message that says what to do and
// what is lost, must be left exactly as it was, and must not keep its lock.
// A store that opens must answer every read without panicking. It reports
// whether Open refused the file.
func openDamaged(t *testing.T, data []byte) (refused bool) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := Open(path, Options{NoSync: true, Timeout: 50 * time.Millisecond})
	if err == nil {
		defer db.Close()
		for i := range 5 {
			if _, err := db.Pending(fmt.Sprintf("receiver-%d", i), 0); err != nil && !errors.Is(err, ErrCorrupt) {
				t.Errorf("Pending on a store that opened: %v, want nil or ErrCorrupt", err)
			}
		}
		if _, err := db.All("silences"); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("All on a store that opened: %v, want nil or ErrCorrupt", err)
		}
		if _, err := db.DeadLetters(0); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("DeadLetters on a store that opened: %v, want nil or ErrCorrupt", err)
		}
		return false
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("Open: got %v, want ErrCorrupt", err)
	}
	for _, want := range []string{path + " is damaged", "gpuwatch has not changed it", "mv " + path + " " + path + ".damaged",
		"new, empty store", "loses the notifications waiting in its outbox"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Errorf("a refused Open changed the damaged file (%d bytes, was %d): it must be kept for a person to look at", len(after), len(data))
	}
	if _, err := Open(path, Options{NoSync: true, Timeout: 50 * time.Millisecond}); errors.Is(err, ErrInUse) {
		t.Errorf("second Open of the damaged file: %v: the refused Open kept the lock", err)
	}
	return true
}

// TestOpenTruncatedStore: a store cut short (a full disk, a copy that
// stopped) is refused with a clear error, never a panic or a fault of the
// memory map.
func TestOpenTruncatedStore(t *testing.T) {
	data, pageSize, inUse := damagedStore(t)
	end := (inUse[len(inUse)-1] + 1) * pageSize // past the last page bbolt reaches
	for _, size := range []int{pageSize, 2 * pageSize, 2*pageSize + 100, 3 * pageSize, end / 2, end - pageSize} {
		t.Run(fmt.Sprintf("%d bytes of %d", size, len(data)), func(t *testing.T) {
			if !openDamaged(t, data[:size]) {
				t.Errorf("a store cut to %d of %d bytes opened: want it refused", size, len(data))
			}
		})
	}
}

// TestOpenStoreWithZeroedPages zeroes each page bbolt reaches, one at a
// time, as a lost disk block does: every one is refused with a clear error.
func TestOpenStoreWithZeroedPages(t *testing.T) {
	data, pageSize, inUse := damagedStore(t)
	for _, id := range inUse {
		b := slices.Clone(data)
		clear(b[id*pageSize : (id+1)*pageSize])
		if !openDamaged(t, b) {
			t.Errorf("a store with page %d zeroed opened: want it refused", id)
		}
	}
}

// TestOpenStoreWithRandomBytes writes random bytes mid-file: over the
// header of pages bbolt reaches (each must be refused), and at random
// places (each must be refused or read without a panic).
func TestOpenStoreWithRandomBytes(t *testing.T) {
	data, pageSize, inUse := damagedStore(t)
	r := rand.New(rand.NewPCG(9, 9))
	scribble := func(b []byte, off int) {
		for i := off; i < off+64 && i < len(b); i++ {
			b[i] = byte(r.Uint32())
		}
	}
	for range 20 {
		id := inUse[r.IntN(len(inUse))]
		b := slices.Clone(data)
		scribble(b, id*pageSize)
		if !openDamaged(t, b) {
			t.Errorf("a store with random bytes over the header of page %d opened: want it refused", id)
		}
	}
	for range 40 {
		b := slices.Clone(data)
		scribble(b, 2*pageSize+r.IntN(len(b)-2*pageSize))
		openDamaged(t, b)
	}
	t.Run("both meta pages", func(t *testing.T) {
		b := slices.Clone(data)
		scribble(b, 64) // after the magic and version, so bbolt reads them as a failed checksum
		scribble(b, pageSize+64)
		if !openDamaged(t, b) {
			t.Errorf("a store with both meta pages scribbled over opened: want it refused")
		}
	})
}

// TestDamageWhileOpen: pages damaged under a running store (another
// program writing into the file) make reads fail with ErrCorrupt instead
// of crashing gpuwatch.
func TestDamageWhileOpen(t *testing.T) {
	data, pageSize, inUse := damagedStore(t)
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db := openTest(t, path)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, id := range inUse {
		if _, err := f.WriteAt(make([]byte, pageSize), int64(id*pageSize)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = db.All("silences")
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("All on a store damaged while open: got %v, want ErrCorrupt", err)
	}
	if !strings.Contains(err.Error(), "move it aside") {
		t.Errorf("error %q does not say to move the file aside", err)
	}
}

// TestDamagedDeadLetterRecord: a dead letter whose record is garbage in a
// sound page (damage the page checks cannot see) is reported as ErrCorrupt.
func TestDamagedDeadLetterRecord(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketDead).Put([]byte("\x80\x00\x00\x00k"), []byte{deadRecordVersion, 0xff, 0xff, 0x01, 0x02})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.DeadLetters(0); !errors.Is(err, ErrCorrupt) {
		t.Errorf("DeadLetters over a garbage record: got %v, want ErrCorrupt", err)
	}
}

// TestOpenSetsAsideUnreadableDeadLetters: a dead letter whose record is
// garbage in a sound page is set aside when the store opens, which says
// so; the other dead letters read on.
func TestOpenSetsAsideUnreadableDeadLetters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Enqueue("slack", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := db.Bury("slack", 1, "HTTP 400", time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC), 1); err != nil {
		t.Fatal(err)
	}
	err = db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketDead).Put([]byte("\x80\x00\x00\x00k"), []byte{deadRecordVersion, 0xff, 0xff, 0x01, 0x02})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, path)
	if notes := db.Recovered(); len(notes) != 1 || !strings.Contains(notes[0], "set aside 1 unreadable records") {
		t.Errorf("Recovered(): %q, want the dead letter set aside said", notes)
	}
	if dl, err := db.DeadLetters(0); err != nil || len(dl) != 1 {
		t.Errorf("DeadLetters after the open: %d, %v; want the readable one", len(dl), err)
	}
	if list, _ := db.SetAsideRecords(); len(list) != 1 || list[0].Bucket != "dead letters" {
		t.Errorf("SetAsideRecords: %v, want the dead letter", list)
	}
}
