package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrCorrupt means the file is a gpuwatch store (or was one) whose pages
// are damaged: cut short, overwritten or zeroed. Open refuses it before
// writing anything, so the file stays as it was for a person to look at.
var ErrCorrupt = errors.New("store is damaged")

// lost is what a person loses by starting over with a new store; every
// message about a damaged store says it.
const lost = "the notifications waiting in its outbox, the dead letters, silences, acknowledgements, " +
	"alert states (alerts still true are announced again), Slack message references (the next update " +
	"of an alert posts a new message) and usage rollups (digests start over)"

// damaged makes the error of a damaged store: what is wrong, what to do
// and what doing it loses.
func damaged(path, what string, cause error) error {
	return &openError{cause: cause,
		msg: fmt.Sprintf("%s is damaged (%s): gpuwatch has not changed it; move it aside (mv %s %s.damaged) "+
			"and start gpuwatch again with a new, empty store, which loses %s", path, what, path, path, lost),
		kind: ErrCorrupt,
	}
}

// guard runs fn and turns a panic, or a memory fault, in it into an error:
// bbolt reacts to damaged pages with assertion panics ("Page expected to
// be …", "invalid freelist page …"), and to pages beyond the end of a
// truncated file with a fault of its memory map.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = panicError{r}
		}
	}()
	return fn()
}

// panicError is a panic guard caught.
type panicError struct{ value any }

func (e panicError) Error() string { return problem(fmt.Sprint(e.value)) }

// problem strips the words of bbolt's panics that tell a reader nothing.
func problem(s string) string {
	s = strings.TrimPrefix(s, "panic: ")
	return strings.TrimPrefix(s, "assertion failed: ")
}

// view is bbolt's View under guard: a damaged page read at run time is an
// ErrCorrupt error, not a crash.
func (db *DB) view(fn func(*bolt.Tx) error) error {
	return db.guarded(func() error { return db.bolt.View(fn) })
}

// update is bbolt's Update under guard. bbolt rolls the transaction back
// when fn panics, so the store stays usable for what is not damaged.
func (db *DB) update(fn func(*bolt.Tx) error) error {
	return db.guarded(func() error { return db.bolt.Update(fn) })
}

func (db *DB) guarded(fn func() error) error {
	err := guard(fn)
	if p := (panicError{}); errors.As(err, &p) {
		return damaged(db.path, p.Error(), nil)
	}
	return err
}

// maxProblems is how many of bbolt's consistency problems a message quotes.
const maxProblems = 3

// checkIntact checks an existing store file before Open writes anything:
// it takes the file's shared lock (as bbolt does for a reader), walks
// every page bbolt can reach within bounds (see walkPages), then runs
// bbolt's own consistency check. A damaged store is refused with
// ErrCorrupt and left as it is. It returns what a person must be told of
// a store it accepts: an empty file, or a damaged meta page bbolt
// silently steps back from. It stops when ctx ends.
func checkIntact(ctx context.Context, path string, timeout time.Duration) (notes []string, err error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil // Open creates it
	case err != nil:
		return nil, fmt.Errorf("open store: %w", err)
	case !fi.Mode().IsRegular():
		return nil, &openError{kind: ErrNotStore,
			msg: fmt.Sprintf("%s is not a regular file (%s): set storage.path to a file", path, fi.Mode().Type())}
	case fi.Size() == 0:
		return []string{fmt.Sprintf("%s was an empty file (0 bytes): gpuwatch made a new store in it. If it held gpuwatch's state "+
			"before (a disk or a program emptied it), that state was lost before this start: %s", path, lost)}, nil
	}
	var b *bolt.DB
	err = guard(func() error {
		var err error
		b, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, ReadOnly: true})
		return err
	})
	if p := (panicError{}); errors.As(err, &p) {
		return nil, damaged(path, p.Error(), nil)
	}
	if err != nil {
		return nil, openFailure(path, err)
	}
	closeStore := b.Close
	defer func() { _ = closeStore() }()
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	defer f.Close()
	size, err := fileSize(f)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	use, which, other, pageSize, err := metas(f, size)
	if err != nil {
		return nil, damaged(path, err.Error(), nil)
	}
	if err := walkPages(ctx, f, size, use, pageSize); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("open store %s: stopped while checking it: %w", path, context.Cause(ctx))
		}
		return nil, damaged(path, err.Error(), nil)
	}
	problems, err := boltCheck(ctx, b, &closeStore)
	if err != nil {
		return nil, fmt.Errorf("open store %s: stopped while checking it: %w", path, err)
	}
	if len(problems) > 0 {
		return nil, damaged(path, strings.Join(problems, "; "), nil)
	}
	if other.err != nil {
		notes = append(notes, metaNote(path, 1-which, other, use))
	}
	return notes, nil
}

// boltCheck runs bbolt's consistency check (key order, pages neither used
// nor free), which walkPages made safe to run, and returns up to
// maxProblems of what it found. When ctx ends first it returns ctx's
// error at once and leaves the check to finish, and b to be closed, in
// the background: *closeStore becomes a no-op.
func boltCheck(ctx context.Context, b *bolt.DB, closeStore *func() error) ([]string, error) {
	tx, err := b.Begin(false)
	if err != nil {
		return nil, err
	}
	errs := tx.Check()
	var problems []string
	for {
		select {
		case err, ok := <-errs:
			if !ok {
				_ = tx.Rollback()
				return problems, nil
			}
			if len(problems) < maxProblems {
				problems = append(problems, problem(err.Error()))
			}
		case <-ctx.Done():
			*closeStore = func() error { return nil }
			go func() {
				for range errs {
				}
				_ = tx.Rollback()
				_ = b.Close()
			}()
			return nil, context.Cause(ctx)
		}
	}
}

// metaNote says what stepping back from a damaged meta page cost.
func metaNote(path string, page int, damaged, used meta) string {
	what := "the write after it, if there was one, is lost: at most one sample's decisions (notifications queued, " +
		"alert states), one delivery's acknowledgement or one silence"
	switch damaged.txid {
	case used.txid - 1:
		what = "nothing is lost: the damaged page held the transaction before it"
	case used.txid + 1:
		what = fmt.Sprintf("the last write (transaction %d) is lost: at most one sample's decisions (notifications queued, "+
			"alert states), one delivery's acknowledgement or one silence", damaged.txid)
	}
	return fmt.Sprintf("%s: its meta page %d is damaged (%v); gpuwatch opened the store as meta page %d left it, at transaction %d, "+
		"and the next write repairs the damaged page; %s", path, page, damaged.err, 1-page, used.txid, what)
}
