package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// DeadLetter is an outbox entry that its receiver refused for good (a
// permanent error), kept so that a person can see what was lost and why.
type DeadLetter struct {
	Receiver string
	// ID is the entry's id in the receiver's outbox queue.
	ID      uint64
	Payload []byte
	// Reason is why the receiver refused it; callers redact secrets first.
	Reason   string
	At       time.Time
	Attempts int
}

// Bury moves entry id of receiver's queue to the dead-letter list, with
// why, when and after how many attempts it failed, in one transaction: the
// entry is in exactly one of the two places whatever happens. It fails
// with ErrNotFound when the entry is not in the queue.
func (db *DB) Bury(receiver string, id uint64, reason string, at time.Time, attempts int) error {
	if err := checkName("receiver", receiver); err != nil {
		return fmt.Errorf("bury: %w", err)
	}
	err := db.update(func(tx *bolt.Tx) error {
		q := tx.Bucket(bucketOutbox).Bucket([]byte(receiver))
		key := itob(id)
		if q == nil || !has(q, key) {
			return ErrNotFound
		}
		dead := tx.Bucket(bucketDead)
		seq, err := dead.NextSequence()
		if err != nil {
			return err
		}
		rec, err := encodeDeadLetter(DeadLetter{
			Receiver: receiver, ID: id, Payload: q.Get(key),
			Reason: reason, At: at, Attempts: attempts,
		})
		if err != nil {
			return err
		}
		if err := dead.Put(deadKey(at, seq), rec); err != nil {
			return err
		}
		return q.Delete(key)
	})
	if err != nil {
		return fmt.Errorf("bury entry %d of %q: %w", id, receiver, err)
	}
	return nil
}

// DeadLetters returns up to limit dead letters, newest first (by At, then
// by the order they were buried); a limit of zero or less returns them all.
func (db *DB) DeadLetters(limit int) ([]DeadLetter, error) {
	var out []DeadLetter
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketDead).Cursor()
		for k, v := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Prev() {
			// decodeDeadLetter copies everything out of bbolt's memory.
			d, err := decodeDeadLetter(v)
			if err != nil {
				// The page is sound but the record in it is not: damage
				// the page checks cannot see.
				return fmt.Errorf("dead letter %x is damaged: %w: %w", k, ErrCorrupt, err)
			}
			out = append(out, d)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	return out, nil
}

// ForgetDeadLetters deletes the dead letters buried with an At before
// before and returns how many it deleted.
func (db *DB) ForgetDeadLetters(before time.Time) (int, error) {
	limit := timeKey(before)
	var n int
	err := db.update(func(tx *bolt.Tx) error {
		dead := tx.Bucket(bucketDead)
		// Collect first: deleting under a bbolt cursor can skip keys.
		var old [][]byte
		c := dead.Cursor()
		for k, _ := c.First(); k != nil && bytes.Compare(k, limit) < 0; k, _ = c.Next() {
			old = append(old, clone(k))
		}
		for _, k := range old {
			if err := dead.Delete(k); err != nil {
				return err
			}
		}
		n = len(old)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("forget dead letters before %s: %w", before.Format(time.RFC3339), err)
	}
	return n, nil
}

// timeKey encodes t so that byte order is time order over the whole range
// of time.Time: seconds with the sign bit flipped, then nanoseconds.
func timeKey(t time.Time) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 20), uint64(t.Unix())^(1<<63))
	return binary.BigEndian.AppendUint32(k, uint32(t.Nanosecond()))
}

// deadKey orders dead letters by time, then by burial sequence, so that
// two burials at the same instant both stay.
func deadKey(at time.Time, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(timeKey(at), seq)
}

// deadRecordVersion is the first byte of an encoded dead letter.
const deadRecordVersion = 1

// encodeDeadLetter lays out d as: version byte, receiver (length-prefixed),
// id (uvarint), attempts (varint), reason (length-prefixed), at
// (time.MarshalBinary, length-prefixed), then the payload to the end.
func encodeDeadLetter(d DeadLetter) ([]byte, error) {
	at, err := d.At.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("encode time %v: %w", d.At, err)
	}
	b := make([]byte, 0, 1+4*binary.MaxVarintLen64+len(d.Receiver)+len(d.Reason)+len(at)+len(d.Payload))
	b = append(b, deadRecordVersion)
	b = appendBytes(b, []byte(d.Receiver))
	b = binary.AppendUvarint(b, d.ID)
	b = binary.AppendVarint(b, int64(d.Attempts))
	b = appendBytes(b, []byte(d.Reason))
	b = appendBytes(b, at)
	return append(b, d.Payload...), nil
}

func appendBytes(b, s []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var errShortRecord = errors.New("record ends early")

// decodeDeadLetter parses what encodeDeadLetter wrote. The result shares no
// memory with rec.
func decodeDeadLetter(rec []byte) (DeadLetter, error) {
	var d DeadLetter
	if len(rec) == 0 {
		return d, errShortRecord
	}
	if rec[0] != deadRecordVersion {
		return d, fmt.Errorf("dead-letter record version %d, want %d: written by another gpuwatch version", rec[0], deadRecordVersion)
	}
	r := recordReader{b: rec[1:], what: "dead-letter"}
	receiver := r.bytes("receiver")
	d.ID = r.uvarint("id")
	attempts := r.varint("attempts")
	reason := r.bytes("reason")
	at := r.bytes("time")
	if r.err != nil {
		return DeadLetter{}, r.err
	}
	if err := d.At.UnmarshalBinary(at); err != nil {
		return DeadLetter{}, fmt.Errorf("dead-letter time: %w", err)
	}
	d.Receiver, d.Reason, d.Attempts = string(receiver), string(reason), int(attempts)
	d.Payload = clone(r.b)
	return d, nil
}

// recordReader reads the fields of a record in order and keeps the first
// error, so that a caller checks once at the end. what names the record
// in errors.
type recordReader struct {
	b    []byte
	what string
	err  error
}

func (r *recordReader) uvarint(field string) uint64 { return readVarint(r, field, binary.Uvarint) }

func (r *recordReader) varint(field string) int64 { return readVarint(r, field, binary.Varint) }

// readVarint reads one varint with read (binary.Uvarint or binary.Varint).
func readVarint[T uint64 | int64](r *recordReader, field string, read func([]byte) (T, int)) T {
	if r.err != nil {
		return 0
	}
	v, n := read(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%s %s: bad or missing varint: %w", r.what, field, errShortRecord)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recordReader) bytes(field string) []byte {
	n := r.uvarint(field + " length")
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("%s %s: %d bytes announced, %d left: %w", r.what, field, n, len(r.b), errShortRecord)
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}
