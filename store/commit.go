package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Commit writes, in one fsynced transaction, payloads to the end of
// receivers' outbox queues (in order) and records to put and delete in
// buckets of the key-value space: a caller's decisions about one moment are
// all durable, or none is. Deletes of a bucket run after its puts.
func (db *DB) Commit(outbox map[string][][]byte, put map[string]map[string][]byte, del map[string][]string) error {
	for receiver := range outbox {
		if err := checkName("receiver", receiver); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
	for bucket, kv := range put {
		if err := checkName("bucket", bucket); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		for k := range kv {
			if err := checkName("key", k); err != nil {
				return fmt.Errorf("commit in %q: %w", bucket, err)
			}
		}
	}
	err := db.update(func(tx *bolt.Tx) error {
		for receiver, payloads := range outbox {
			if err := enqueue(tx, receiver, payloads, nil); err != nil {
				return err
			}
		}
		for bucket, kv := range put {
			if err := applyKV(tx, bucket, kv, del[bucket]); err != nil {
				return err
			}
		}
		for bucket, keys := range del {
			if _, done := put[bucket]; !done {
				if err := applyKV(tx, bucket, nil, keys); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
