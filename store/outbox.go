package store

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Entry is one payload waiting in a receiver's outbox queue.
type Entry struct {
	// ID is the entry's place in its receiver's queue. IDs increase per
	// receiver and are never reused, not even after Ack or a restart.
	ID      uint64
	Payload []byte
}

// Enqueue appends payloads, in order, to receiver's queue, creating the
// queue on first use, and returns their ids. All payloads are written in
// one fsynced transaction: either all are in the outbox when Enqueue
// returns or none is. Enqueue with no payloads does nothing.
func (db *DB) Enqueue(receiver string, payloads ...[]byte) ([]uint64, error) {
	if err := checkName("receiver", receiver); err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	if len(payloads) == 0 {
		return nil, nil
	}
	ids := make([]uint64, 0, len(payloads))
	err := db.update(func(tx *bolt.Tx) error { return enqueue(tx, receiver, payloads, &ids) })
	if err != nil {
		return nil, fmt.Errorf("enqueue to %q: %w", receiver, err)
	}
	return ids, nil
}

// enqueue appends payloads to receiver's queue inside tx, adding their ids
// to ids when it is not nil.
func enqueue(tx *bolt.Tx, receiver string, payloads [][]byte, ids *[]uint64) error {
	q, err := tx.Bucket(bucketOutbox).CreateBucketIfNotExists([]byte(receiver))
	if err != nil {
		return err
	}
	for _, p := range payloads {
		// The bucket's sequence is persisted with the bucket, so an id is
		// never handed out twice, even after its entry is gone.
		id, err := q.NextSequence()
		if err != nil {
			return err
		}
		if err := q.Put(itob(id), p); err != nil {
			return fmt.Errorf("entry %d: %w", id, err)
		}
		if ids != nil {
			*ids = append(*ids, id)
		}
	}
	return nil
}

// Pending returns up to limit entries of receiver's queue, oldest first;
// a limit of zero or less returns them all. A receiver without a queue has
// no pending entries.
func (db *DB) Pending(receiver string, limit int) ([]Entry, error) {
	if err := checkName("receiver", receiver); err != nil {
		return nil, fmt.Errorf("pending: %w", err)
	}
	var out []Entry
	err := db.view(func(tx *bolt.Tx) error {
		q := tx.Bucket(bucketOutbox).Bucket([]byte(receiver))
		if q == nil {
			return nil
		}
		c := q.Cursor()
		for k, v := c.First(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Next() {
			id, err := entryID(k)
			if err != nil {
				return err
			}
			out = append(out, Entry{ID: id, Payload: clone(v)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pending of %q: %w", receiver, err)
	}
	return out, nil
}

// Ack removes delivered entries from receiver's queue in one transaction.
// Ids that are not in the queue (already acked or buried) are ignored, so
// acking twice is harmless.
func (db *DB) Ack(receiver string, ids ...uint64) error {
	if err := checkName("receiver", receiver); err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	if len(ids) == 0 {
		return nil
	}
	err := db.update(func(tx *bolt.Tx) error {
		q := tx.Bucket(bucketOutbox).Bucket([]byte(receiver))
		if q == nil {
			return nil
		}
		for _, id := range ids {
			if err := q.Delete(itob(id)); err != nil {
				return fmt.Errorf("entry %d: %w", id, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ack in %q: %w", receiver, err)
	}
	return nil
}

// Replace rewrites the payload of entry id in receiver's queue, keeping its
// place (to record an attempt count, say). It fails with ErrNotFound when
// the entry is gone.
func (db *DB) Replace(receiver string, id uint64, payload []byte) error {
	if err := checkName("receiver", receiver); err != nil {
		return fmt.Errorf("replace: %w", err)
	}
	err := db.update(func(tx *bolt.Tx) error {
		q := tx.Bucket(bucketOutbox).Bucket([]byte(receiver))
		key := itob(id)
		if q == nil || !has(q, key) {
			return ErrNotFound
		}
		return q.Put(key, payload)
	})
	if err != nil {
		return fmt.Errorf("replace entry %d in %q: %w", id, receiver, err)
	}
	return nil
}

// PendingCount returns how many entries wait in receiver's queue.
func (db *DB) PendingCount(receiver string) (int, error) {
	if err := checkName("receiver", receiver); err != nil {
		return 0, fmt.Errorf("pending count: %w", err)
	}
	n, err := db.keyCount(bucketOutbox, receiver)
	if err != nil {
		return 0, fmt.Errorf("pending count of %q: %w", receiver, err)
	}
	return n, nil
}

// keyCount returns how many keys the bucket name under parent holds; a
// bucket that does not exist holds none.
func (db *DB) keyCount(parent []byte, name string) (int, error) {
	var n int
	err := db.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(parent).Bucket([]byte(name)); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	})
	return n, err
}

// Receivers returns, sorted, the receivers that have a queue, including
// those whose queue is empty now.
func (db *DB) Receivers() ([]string, error) {
	var out []string
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketOutbox).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil { // a nested bucket: a receiver's queue
				out = append(out, string(k))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list receivers: %w", err)
	}
	return out, nil
}

// entryID decodes an outbox key.
func entryID(k []byte) (uint64, error) {
	if len(k) != 8 {
		return 0, fmt.Errorf("corrupt outbox key %x: %d bytes, want 8", k, len(k))
	}
	return binary.BigEndian.Uint64(k), nil
}

// has reports whether b holds key. bbolt's Get cannot tell an empty value
// from a missing key, a cursor can.
func has(b *bolt.Bucket, key []byte) bool {
	k, _ := b.Cursor().Seek(key)
	return bytes.Equal(k, key)
}

// checkName rejects names bbolt cannot use as keys.
func checkName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty %s name", what)
	case len(name) > bolt.MaxKeySize:
		return fmt.Errorf("%s name of %d bytes is longer than %d", what, len(name), bolt.MaxKeySize)
	}
	return nil
}
