package store

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A record its reader cannot decode (one damaged byte in a silence, a
// rollup written by a gpuwatch that had a bug) must not stop gpuwatch,
// nor be thrown away: it is set aside. SetAside moves it, bytes and all,
// out of its bucket to a list of its own, with where it came from, why
// and when, so that gpuwatch starts without it and a person can look at
// it later. The store sets aside the records of its own format (dead
// letters) when Open finds them; its users set aside theirs.

// SetAsideRecord is a record that was set aside.
type SetAsideRecord struct {
	// Bucket and Key are where the record was: a key-value bucket, or
	// "dead letters" for the store's own.
	Bucket, Key string
	// Value is what the record held, as it was.
	Value []byte
	// Why is what its reader said of it.
	Why string
	// At is when it was set aside; zero when Open set it aside.
	At time.Time
}

// String says where the record was, why it was set aside and how big it
// is, without its bytes (they may be anything).
func (r SetAsideRecord) String() string {
	return fmt.Sprintf("%s %q (%d bytes): %s", r.Bucket, r.Key, len(r.Value), r.Why)
}

// SetAside moves the record key of the key-value bucket to the set-aside
// list, with why (what its reader said) and at, in one transaction, and
// returns it. It fails with ErrNotFound when the record is not there.
func (db *DB) SetAside(bucket, key, why string, at time.Time) (SetAsideRecord, error) {
	if err := checkName("bucket", bucket); err != nil {
		return SetAsideRecord{}, fmt.Errorf("set aside: %w", err)
	}
	rec := SetAsideRecord{Bucket: bucket, Key: key, Why: why, At: at}
	err := db.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKV).Bucket([]byte(bucket))
		if b == nil || key == "" || !has(b, []byte(key)) {
			return ErrNotFound
		}
		rec.Value = clone(b.Get([]byte(key)))
		return moveAside(tx, b, []byte(key), rec)
	})
	if err != nil {
		return SetAsideRecord{}, fmt.Errorf("set aside %q of %q: %w", key, bucket, err)
	}
	return rec, nil
}

// SetAsideRecords returns every record set aside, oldest first.
func (db *DB) SetAsideRecords() ([]SetAsideRecord, error) {
	var out []SetAsideRecord
	err := db.view(func(tx *bolt.Tx) error {
		aside := tx.Bucket(bucketAside)
		if aside == nil {
			return nil // a store opened read-only, made before the list was
		}
		return aside.ForEach(func(k, v []byte) error {
			rec, err := decodeAside(v)
			if err != nil {
				// Damage in the list of damage: say what is left of it.
				rec = SetAsideRecord{Bucket: "set-aside records", Key: fmt.Sprintf("%x", k), Value: clone(v), Why: err.Error()}
			}
			out = append(out, rec)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list set-aside records: %w", err)
	}
	return out, nil
}

// moveAside deletes key from b and adds rec to the set-aside list, inside tx.
func moveAside(tx *bolt.Tx, b *bolt.Bucket, key []byte, rec SetAsideRecord) error {
	aside := tx.Bucket(bucketAside)
	seq, err := aside.NextSequence()
	if err != nil {
		return err
	}
	v, err := encodeAside(rec)
	if err != nil {
		return err
	}
	if err := aside.Put(itob(seq), v); err != nil {
		return err
	}
	return b.Delete(key)
}

// setAsideUnreadable sets aside, in one transaction, the dead letters
// whose records cannot be read, and says so in Recovered. Open calls it;
// it writes nothing when all is readable. (An outbox entry that cannot be
// read is the deliverer's to bury: a dead letter keeps its bytes.)
func (db *DB) setAsideUnreadable() error {
	type bad struct {
		key []byte
		rec SetAsideRecord
	}
	var found []bad
	err := db.view(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketDead).ForEach(func(k, v []byte) error {
			if _, err := decodeDeadLetter(v); err != nil {
				found = append(found, bad{clone(k), SetAsideRecord{Bucket: "dead letters", Key: string(k), Value: clone(v), Why: err.Error()}})
			}
			return nil
		})
		return err
	})
	if err != nil || len(found) == 0 {
		return err
	}
	err = db.update(func(tx *bolt.Tx) error {
		for _, f := range found {
			if err := moveAside(tx, tx.Bucket(bucketDead), f.key, f.rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("open store %s: set aside unreadable records: %w", db.path, err)
	}
	what := make([]string, len(found))
	for i, f := range found {
		what[i] = f.rec.String()
	}
	db.recovered = append(db.recovered, fmt.Sprintf("%s: set aside %d unreadable records, kept as they were: %s",
		db.path, len(found), strings.Join(what, "; ")))
	return nil
}

// asideRecordVersion is the first byte of an encoded set-aside record.
const asideRecordVersion = 1

// encodeAside lays out rec as: version byte, bucket, key, why, at
// (time.MarshalBinary), each length-prefixed, then the value to the end.
func encodeAside(rec SetAsideRecord) ([]byte, error) {
	at, err := rec.At.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("encode time %v: %w", rec.At, err)
	}
	b := make([]byte, 0, 1+4*binary.MaxVarintLen64+len(rec.Bucket)+len(rec.Key)+len(rec.Why)+len(at)+len(rec.Value))
	b = append(b, asideRecordVersion)
	b = appendBytes(b, []byte(rec.Bucket))
	b = appendBytes(b, []byte(rec.Key))
	b = appendBytes(b, []byte(rec.Why))
	b = appendBytes(b, at)
	return append(b, rec.Value...), nil
}

// decodeAside parses what encodeAside wrote; the result shares no memory
// with v.
func decodeAside(v []byte) (SetAsideRecord, error) {
	if len(v) == 0 || v[0] != asideRecordVersion {
		return SetAsideRecord{}, fmt.Errorf("set-aside record: unknown version")
	}
	r := recordReader{b: v[1:], what: "set-aside record"}
	bucket, key, why, at := r.bytes("bucket"), r.bytes("key"), r.bytes("why"), r.bytes("time")
	if r.err != nil {
		return SetAsideRecord{}, r.err
	}
	rec := SetAsideRecord{Bucket: string(bucket), Key: string(key), Why: string(why), Value: clone(r.b)}
	if err := rec.At.UnmarshalBinary(at); err != nil {
		return SetAsideRecord{}, fmt.Errorf("set-aside record time: %w", err)
	}
	return rec, nil
}
