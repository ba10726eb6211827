// Package store is gpuwatch's embedded state: one bbolt file that holds the
// notification outbox (one FIFO queue per receiver), the dead-letter list of
// notifications a receiver refused for good, and a small key-value space for
// everything else (alert states, silences, Slack message references).
//
// The store knows nothing of notifications or alerts: it stores bytes, and
// its users encode them. Every write is one transaction, fsynced before the
// call returns unless Options.NoSync is set, so what a write call accepted
// survives a crash (kill -9 included). Nothing here reads the clock: times
// are parameters. A DB is safe for concurrent use; bbolt serializes writers.
package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the layout version this gpuwatch writes into a store's
// "meta" bucket. Open refuses a store stamped with a newer version.
const SchemaVersion = 1

// DefaultTimeout is how long Open waits for the file lock when
// Options.Timeout is zero.
const DefaultTimeout = time.Second

// Top-level buckets. Key-value buckets live under bucketKV so that their
// names, chosen by users of the store, never collide with these.
var (
	bucketMeta   = []byte("meta")
	bucketOutbox = []byte("outbox")
	bucketDead   = []byte("dead")
	bucketKV     = []byte("kv")
	bucketAside  = []byte("aside")
	keySchema    = []byte("schema")
)

// Errors that Open and the other methods wrap; test them with errors.Is.
var (
	// ErrInUse means another process (usually another gpuwatch) holds the
	// store's file lock.
	ErrInUse = errors.New("store is in use")
	// ErrNotStore means the file exists but is not a gpuwatch store: not a
	// bbolt database at all, or a bbolt database of another program.
	ErrNotStore = errors.New("not a gpuwatch store")
	// ErrSchemaTooNew means the store was written by a newer gpuwatch.
	ErrSchemaTooNew = errors.New("store schema is newer than this gpuwatch")
	// ErrNotFound means an outbox entry does not exist (it was acked,
	// buried, or never enqueued).
	ErrNotFound = errors.New("entry not found")
)

// Options tune Open.
type Options struct {
	// Timeout is how long Open waits for the file lock held by another
	// process before it gives up with ErrInUse; zero means DefaultTimeout.
	Timeout time.Duration
	// NoSync skips fsync on commit. It is for tests only: a crash may lose
	// or corrupt what was written.
	NoSync bool
	// ReadOnly opens an existing store to read only: Open never creates,
	// changes or repairs the file, takes the lock shared with other
	// readers (a running gpuwatch holds it alone: ErrInUse), and every
	// write fails. A file that is missing or empty is ErrNotStore.
	ReadOnly bool
}

// DB is an open store. Create it with Open and release it with Close.
type DB struct {
	path     string
	bolt     *bolt.DB
	readOnly bool
	// recovered says what Open found wrong with the file and accepted,
	// and what that cost; see Recovered.
	recovered []string
}

// Open is OpenContext without a context: the check of an existing file
// runs to its end.
func Open(path string, opts Options) (*DB, error) {
	return OpenContext(context.Background(), path, opts)
}

// OpenContext opens the store at path, creating its parent folder (mode
// 0750) and the file (mode 0600) when they do not exist, and stamps a new
// store with SchemaVersion. It fails with a message that says what to do
// when another process holds the file (ErrInUse), when the file is not a
// gpuwatch store (ErrNotStore), when a newer gpuwatch wrote it
// (ErrSchemaTooNew) or when its pages are damaged (ErrCorrupt). An
// existing file is checked, page by page and within bounds of time and
// memory, before anything is written to it: a refused file is left as it
// was, and an accepted one is only written to when it lacks a bucket or
// holds records of the store's own formats that cannot be read, which
// are set aside (see SetAside). What Open accepted but a person must
// know (an empty file, a damaged meta page) is in Recovered. The check
// stops, and Open fails, when ctx ends.
func OpenContext(ctx context.Context, path string, opts Options) (*DB, error) {
	if path == "" {
		return nil, errors.New("open store: empty path: set storage.path to a file")
	}
	if opts.ReadOnly {
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			return nil, &openError{kind: ErrNotStore, cause: err,
				msg: fmt.Sprintf("%s holds no gpuwatch store yet: gpuwatch run makes it", path)}
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("open store: create the folder of %s: %w", path, err)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	notes, err := checkIntact(ctx, path, timeout)
	if err != nil {
		return nil, err
	}
	var (
		b    *bolt.DB
		file *os.File // closed when bbolt panics halfway, to release the lock
	)
	err = guard(func() error {
		var err error
		b, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, NoSync: opts.NoSync, ReadOnly: opts.ReadOnly,
			OpenFile: func(name string, flag int, mode os.FileMode) (*os.File, error) {
				f, err := os.OpenFile(name, flag, mode)
				file = f
				return f, err
			}})
		return err
	})
	if p := (panicError{}); errors.As(err, &p) {
		if file != nil {
			_ = file.Close()
		}
		return nil, damaged(path, p.Error(), nil)
	}
	if err != nil {
		return nil, openFailure(path, err)
	}
	db := &DB{path: path, bolt: b, readOnly: opts.ReadOnly, recovered: notes}
	if err := db.initSchema(); err != nil {
		_ = b.Close()
		return nil, err
	}
	if !opts.ReadOnly {
		if err := db.setAsideUnreadable(); err != nil {
			_ = b.Close()
			return nil, err
		}
	}
	return db, nil
}

// Recovered says, one sentence each, what Open found wrong with the file
// and accepted, and what it cost: an empty file made into a new store, a
// damaged meta page stepped back from, records set aside. Empty when the
// store was sound. The daemon logs them and shows them on /healthz.
func (db *DB) Recovered() []string { return slices.Clone(db.recovered) }

// openFailure turns bbolt's error from opening path into one that says what
// went wrong and what to do about it.
func openFailure(path string, err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return &openError{
			msg:  path + " is in use by another gpuwatch (or another program): stop it or set storage.path to another file",
			kind: ErrInUse, cause: err,
		}
	case errors.Is(err, berrors.ErrChecksum):
		return damaged(path, "both of its meta pages fail their checksum", err)
	case strings.HasPrefix(err.Error(), "file size too small"):
		return damaged(path, "it is shorter than two pages: it was cut short", err)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch):
		return &openError{
			msg:  fmt.Sprintf("%s is not a gpuwatch store: it is not a bbolt database (%v): move it away or set storage.path to another file", path, err),
			kind: ErrNotStore, cause: err,
		}
	}
	return fmt.Errorf("open store %s: %w", path, err)
}

// openError carries an exact, actionable message while still matching both
// the store's sentinel and bbolt's cause with errors.Is.
type openError struct {
	msg   string
	kind  error
	cause error
}

func (e *openError) Error() string   { return e.msg }
func (e *openError) Unwrap() []error { return []error{e.kind, e.cause} }

// initSchema checks the version of an existing store and, unless the
// store is read-only, stamps a new one and makes sure every top-level
// bucket exists. A store that has all it needs is not written to.
func (db *DB) initSchema() error {
	complete := false
	err := db.view(func(tx *bolt.Tx) error {
		var err error
		complete, err = db.checkSchema(tx)
		return err
	})
	switch {
	case err != nil, complete:
		return err
	case db.readOnly && db.hasOwnBuckets():
		return nil // made before the set-aside list: SetAsideRecords finds none
	case db.readOnly:
		return &openError{kind: ErrNotStore,
			msg: fmt.Sprintf("%s is not a whole gpuwatch store (it lacks some of its buckets): start gpuwatch run on it once, or set storage.path to another file", db.path)}
	}
	return db.update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			var err error
			if meta, err = tx.CreateBucket(bucketMeta); err != nil {
				return fmt.Errorf("open store %s: create meta bucket: %w", db.path, err)
			}
			if err := meta.Put(keySchema, binary.BigEndian.AppendUint64(nil, SchemaVersion)); err != nil {
				return fmt.Errorf("open store %s: stamp schema version: %w", db.path, err)
			}
		}
		for _, name := range topBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("open store %s: create bucket %q: %w", db.path, name, err)
			}
		}
		return nil
	})
}

// hasOwnBuckets reports whether the store has every top-level bucket that
// any gpuwatch made.
func (db *DB) hasOwnBuckets() bool {
	ok := false
	_ = db.view(func(tx *bolt.Tx) error {
		ok = tx.Bucket(bucketMeta) != nil && tx.Bucket(bucketOutbox) != nil && tx.Bucket(bucketDead) != nil && tx.Bucket(bucketKV) != nil
		return nil
	})
	return ok
}

// topBuckets are the top-level buckets every store has, but meta.
var topBuckets = [][]byte{bucketOutbox, bucketDead, bucketKV, bucketAside}

// checkSchema checks the schema version and reports whether the store has
// every top-level bucket. A file with no meta bucket is new when it is
// empty, and another program's when it holds anything.
func (db *DB) checkSchema(tx *bolt.Tx) (complete bool, err error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		// A bbolt file with buckets but no meta belongs to someone else:
		// writing into it would corrupt their data.
		if k, _ := tx.Cursor().First(); k != nil {
			return false, &openError{
				msg:  fmt.Sprintf("%s is a bbolt database of another program (it has no gpuwatch %q bucket): move it away or set storage.path to another file", db.path, bucketMeta),
				kind: ErrNotStore,
			}
		}
		return false, nil
	}
	v := meta.Get(keySchema)
	if len(v) != 8 {
		return false, &openError{
			msg:  fmt.Sprintf("%s has a broken schema version (%d bytes, want 8): move it away or set storage.path to another file", db.path, len(v)),
			kind: ErrNotStore,
		}
	}
	if got := binary.BigEndian.Uint64(v); got > SchemaVersion {
		return false, &openError{
			msg:  fmt.Sprintf("%s was written by a newer gpuwatch (store schema %d, this gpuwatch knows up to %d): upgrade gpuwatch or set storage.path to another file", db.path, got, SchemaVersion),
			kind: ErrSchemaTooNew,
		}
	}
	for _, name := range topBuckets {
		if tx.Bucket(name) == nil {
			return false, nil
		}
	}
	return true, nil
}

// Close releases the file and its lock. It waits for running transactions.
func (db *DB) Close() error {
	if err := db.bolt.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", db.path, err)
	}
	return nil
}

// Path returns the file the store lives in.
func (db *DB) Path() string { return db.path }

// itob encodes an id as a bbolt key whose byte order is its numeric order.
func itob(id uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), id) }

// clone copies bytes out of a bbolt transaction, whose memory is only valid
// inside it. It never returns nil, so an empty value reads as empty.
func clone(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }
