package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// openTest opens a store at path without fsync (tests only) and closes it
// when the test ends.
func openTest(t testing.TB, path string) *DB {
	t.Helper()
	db, err := Open(path, Options{NoSync: true, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func tempPath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "state.db")
}

func TestOpenCreatesFolderAndFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "state.db")
	db := openTest(t, path)
	if got := db.Path(); got != path {
		t.Errorf("Path(): got %q, want %q", got, path)
	}
	for _, c := range []struct {
		path string
		max  os.FileMode // the umask may clear bits, never add them
	}{
		{filepath.Dir(path), 0o750},
		{path, 0o600},
	} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatalf("stat %s: %v", c.path, err)
		}
		if got := fi.Mode().Perm(); got&^c.max != 0 || got&0o600 != 0o600 {
			t.Errorf("mode of %s: got %v, want at most %v and owner read-write", c.path, got, c.max)
		}
	}
}

func TestOpenStampsSchema(t *testing.T) {
	db := openTest(t, tempPath(t))
	var got []byte
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		got = clone(tx.Bucket(bucketMeta).Get(keySchema))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := binary.BigEndian.AppendUint64(nil, SchemaVersion); !bytes.Equal(got, want) {
		t.Errorf("schema stamp: got %x, want %x", got, want)
	}
}

func TestOpenEmptyPath(t *testing.T) {
	_, err := Open("", Options{})
	if err == nil || !strings.Contains(err.Error(), "storage.path") {
		t.Errorf("Open(\"\"): got %v, want an error that names storage.path", err)
	}
}

func TestOpenInUse(t *testing.T) {
	path := tempPath(t)
	first, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, Options{Timeout: 50 * time.Millisecond})
	want := path + " is in use by another gpuwatch (or another program): stop it or set storage.path to another file"
	if err == nil || err.Error() != want {
		t.Fatalf("second Open: got %v, want %q", err, want)
	}
	if !errors.Is(err, ErrInUse) {
		t.Errorf("errors.Is(%v, ErrInUse): got false, want true", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := Open(path, Options{Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open after the first closed: got %v, want no error", err)
	}
	_ = second.Close()
}

func TestOpenNotAStore(t *testing.T) {
	for _, c := range []struct {
		name  string
		write func(t *testing.T, path string)
		want  string
	}{
		{"short text", writeFile([]byte("storage: {path: x}\n")), "is not a bbolt database"},
		{"garbage of two pages", writeFile(bytes.Repeat([]byte("x"), 8192)), "is not a bbolt database"},
		{"bbolt db of another program", foreignBolt, "is a bbolt database of another program"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := tempPath(t)
			c.write(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			db, err := Open(path, Options{Timeout: 50 * time.Millisecond})
			if err == nil {
				_ = db.Close()
				t.Fatalf("Open: got no error, want %q", c.want)
			}
			if !errors.Is(err, ErrNotStore) {
				t.Errorf("errors.Is(%v, ErrNotStore): got false, want true", err)
			}
			for _, want := range []string{path, c.want, "set storage.path to another file"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error: got %q, want it to contain %q", err, want)
				}
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("file changed by a refused Open: got %d bytes, want the same %d", len(after), len(before))
			}
		})
	}
}

func writeFile(data []byte) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// foreignBolt writes a bbolt file as another program would: buckets, no meta.
func foreignBolt(t *testing.T, path string) {
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucket([]byte("users"))
		if err != nil {
			return err
		}
		return bk.Put([]byte("ada"), []byte("admin"))
	}); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := tempPath(t)
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keySchema, binary.BigEndian.AppendUint64(nil, SchemaVersion+1))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, Options{Timeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of a newer store: got %v, want ErrSchemaTooNew", err)
	}
	for _, want := range []string{path, "store schema 2", "knows up to 1", "upgrade gpuwatch"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error: got %q, want it to contain %q", err, want)
		}
	}
	// The refused Open must have released the lock.
	again, err := Open(path, Options{Timeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("second Open of a newer store: got %v, want ErrSchemaTooNew, not a lock error", err)
	}
	if again != nil {
		_ = again.Close()
	}
}

// TestRestartKeepsEverything closes and reopens a store, as a restart does,
// and checks that the outbox, dead letters, key-value space and id
// sequences all survive.
func TestRestartKeepsEverything(t *testing.T) {
	path := tempPath(t)
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Enqueue("slack", []byte("a"), []byte("b"), []byte("c")); err != nil {
		t.Fatal(err)
	}
	if err := db.Bury("slack", 2, "400 bad request", at, 1); err != nil {
		t.Fatal(err)
	}
	if err := db.Put("alerts", "host/rule/GPU-1", []byte("firing")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openTest(t, path)
	assertPending(t, db, "slack", []Entry{{1, []byte("a")}, {3, []byte("c")}})
	dl, err := db.DeadLetters(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(dl) != 1 || dl[0].ID != 2 || string(dl[0].Payload) != "b" {
		t.Errorf("dead letters after restart: got %+v, want entry 2 with payload b", dl)
	}
	v, ok, err := db.Get("alerts", "host/rule/GPU-1")
	if err != nil || !ok || string(v) != "firing" {
		t.Errorf("Get after restart: got %q, %v, %v; want \"firing\", true, nil", v, ok, err)
	}
	ids, err := db.Enqueue("slack", []byte("d"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != 4 {
		t.Errorf("id after restart: got %v, want [4]", ids)
	}
}

// TestOpenWritesNothingToASoundStore: opening and closing a store that has
// all it needs leaves the file byte for byte as it was (its transaction id
// included), read-only or not.
func TestOpenWritesNothingToASoundStore(t *testing.T) {
	path := tempPath(t)
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put("silences", "a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []Options{{}, {ReadOnly: true}} {
		db, err := Open(path, opts)
		if err != nil {
			t.Fatalf("Open(%+v): %v", opts, err)
		}
		if _, err := db.All("silences"); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Errorf("Open(%+v) and Close changed the file of a sound store", opts)
		}
	}
}

// TestOpenReadOnly: a read-only store reads, refuses every write, creates
// nothing, and takes the lock shared, so a running gpuwatch (which holds
// it alone) makes it fail with ErrInUse.
func TestOpenReadOnly(t *testing.T) {
	path := tempPath(t)
	if _, err := Open(path, Options{ReadOnly: true, Timeout: 50 * time.Millisecond}); !errors.Is(err, ErrNotStore) {
		t.Errorf("read-only Open of a missing store: %v, want ErrNotStore", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read-only Open made %s", path)
	}
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put("rollups", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{ReadOnly: true, Timeout: 50 * time.Millisecond}); !errors.Is(err, ErrInUse) {
		t.Errorf("read-only Open of a store in use: %v, want ErrInUse", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if v, ok, err := ro.Get("rollups", "k"); err != nil || !ok || string(v) != "v" {
		t.Errorf("Get on a read-only store: %q %v %v", v, ok, err)
	}
	if err := ro.Put("rollups", "k", []byte("w")); err == nil {
		t.Errorf("Put on a read-only store: got no error")
	}
}

// TestSetAside: a record its reader cannot read moves, bytes and all, to
// the set-aside list, and survives a restart there.
func TestSetAside(t *testing.T) {
	path := tempPath(t)
	db := openTest(t, path)
	if err := db.Put("silences", "bad", []byte("{\xff not json")); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	rec, err := db.SetAside("silences", "bad", "invalid character", at)
	if err != nil {
		t.Fatal(err)
	}
	want := SetAsideRecord{Bucket: "silences", Key: "bad", Value: []byte("{\xff not json"), Why: "invalid character", At: at}
	if rec.String() != want.String() || !bytes.Equal(rec.Value, want.Value) {
		t.Errorf("SetAside: got %v, want %v", rec, want)
	}
	if _, ok, _ := db.Get("silences", "bad"); ok {
		t.Errorf("the record set aside is still in its bucket")
	}
	if _, err := db.SetAside("silences", "bad", "again", at); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetAside of a record that is gone: %v, want ErrNotFound", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, path)
	list, err := db.SetAsideRecords()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || !bytes.Equal(list[0].Value, want.Value) || !list[0].At.Equal(at) || list[0].Key != "bad" {
		t.Errorf("SetAsideRecords after a restart: %+v, want %+v", list, want)
	}
}
