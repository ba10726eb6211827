package store

import (
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

// checkIntact opens an existing store file read-only and checks every page
// bbolt can reach, before Open writes anything: a damaged store is refused
// with ErrCorrupt and left as it is. A file that is empty or missing has
// nothing to check.
func checkIntact(path string, timeout time.Duration) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() == 0 {
		return nil // Open creates it, or reports why it cannot
	}
	var b *bolt.DB
	err = guard(func() error {
		var err error
		b, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, ReadOnly: true})
		return err
	})
	if p := (panicError{}); errors.As(err, &p) {
		return damaged(path, p.Error(), nil)
	}
	if err != nil {
		return openFailure(path, err)
	}
	defer b.Close()
	var problems []string
	err = guard(func() error {
		return b.View(func(tx *bolt.Tx) error {
			// A file shorter than its own high-water mark was cut off;
			// reading the pages past its end would fault.
			if want := tx.Size(); fi.Size() < want {
				problems = append(problems, fmt.Sprintf("the file has %d bytes, its pages need %d: it was cut short", fi.Size(), want))
				return nil
			}
			for err := range tx.Check() {
				if len(problems) < maxProblems {
					problems = append(problems, problem(err.Error()))
				}
			}
			return nil
		})
	})
	if p := (panicError{}); errors.As(err, &p) {
		problems = append(problems, p.Error())
	} else if err != nil {
		return openFailure(path, err)
	}
	if len(problems) > 0 {
		return damaged(path, strings.Join(problems, "; "), nil)
	}
	return nil
}
