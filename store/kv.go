package store

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The key-value space holds everything that is not the outbox: alert
// states, silences, Slack message references. Each user picks a bucket
// name ("alerts", "silences", "slack-messages"); buckets are created on
// first write, and reading a bucket that does not exist finds nothing.

// Put sets key to value in bucket.
func (db *DB) Put(bucket, key string, value []byte) error {
	return db.PutMany(bucket, map[string][]byte{key: value}, nil)
}

// PutMany sets every key of kv and deletes every key of del in bucket, in
// one transaction. Deletes run after puts, so a key in both ends deleted.
func (db *DB) PutMany(bucket string, kv map[string][]byte, del []string) error {
	if err := checkName("bucket", bucket); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	for k := range kv {
		if err := checkName("key", k); err != nil {
			return fmt.Errorf("put in %q: %w", bucket, err)
		}
	}
	if len(kv) == 0 && len(del) == 0 {
		return nil
	}
	err := db.update(func(tx *bolt.Tx) error { return applyKV(tx, bucket, kv, del) })
	if err != nil {
		return fmt.Errorf("put in %q: %w", bucket, err)
	}
	return nil
}

// applyKV sets kv and then deletes del in bucket, inside tx.
func applyKV(tx *bolt.Tx, bucket string, kv map[string][]byte, del []string) error {
	b := tx.Bucket(bucketKV).Bucket([]byte(bucket))
	if b == nil {
		if len(kv) == 0 {
			return nil // only deletes in a bucket that was never written
		}
		var err error
		if b, err = tx.Bucket(bucketKV).CreateBucket([]byte(bucket)); err != nil {
			return err
		}
	}
	for k, v := range kv {
		if err := b.Put([]byte(k), v); err != nil {
			return fmt.Errorf("key %q: %w", k, err)
		}
	}
	for _, k := range del {
		if k == "" {
			continue // bbolt cannot hold an empty key, so it is not there
		}
		if err := b.Delete([]byte(k)); err != nil {
			return fmt.Errorf("delete key %q: %w", k, err)
		}
	}
	return nil
}

// Get returns the value of key in bucket and whether it is there. An empty
// value that is there reads as a non-nil empty slice.
func (db *DB) Get(bucket, key string) ([]byte, bool, error) {
	if err := checkName("bucket", bucket); err != nil {
		return nil, false, fmt.Errorf("get: %w", err)
	}
	var (
		val   []byte
		found bool
	)
	err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKV).Bucket([]byte(bucket))
		if b == nil || key == "" {
			return nil
		}
		k, v := b.Cursor().Seek([]byte(key))
		if found = bytes.Equal(k, []byte(key)); found {
			val = clone(v)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("get %q from %q: %w", key, bucket, err)
	}
	return val, found, nil
}

// Delete removes key from bucket; a key that is not there is no error.
func (db *DB) Delete(bucket, key string) error {
	return db.PutMany(bucket, nil, []string{key})
}

// All returns a copy of every key and value in bucket.
func (db *DB) All(bucket string) (map[string][]byte, error) {
	if err := checkName("bucket", bucket); err != nil {
		return nil, fmt.Errorf("all: %w", err)
	}
	out := make(map[string][]byte)
	err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKV).Bucket([]byte(bucket))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			out[string(k)] = clone(v)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read all of %q: %w", bucket, err)
	}
	return out, nil
}

// Count returns how many keys bucket holds.
func (db *DB) Count(bucket string) (int, error) {
	if err := checkName("bucket", bucket); err != nil {
		return 0, fmt.Errorf("count: %w", err)
	}
	n, err := db.keyCount(bucketKV, bucket)
	if err != nil {
		return 0, fmt.Errorf("count %q: %w", bucket, err)
	}
	return n, nil
}
