package store

import (
	"testing"
)

func TestCommit(t *testing.T) {
	db := openTest(t, tempPath(t))
	mustEnqueue(t, db, "slack", "s1")
	if err := db.PutMany("alerts", map[string][]byte{"old": []byte("x")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Put("silences", "gone", []byte("y")); err != nil {
		t.Fatal(err)
	}
	err := db.Commit(
		map[string][][]byte{"slack": {[]byte("s2"), []byte("s3")}, "webhook": {[]byte("w1")}},
		map[string]map[string][]byte{"alerts": {"a": []byte("firing"), "b": []byte("pending")}},
		map[string][]string{"alerts": {"old", "b"}, "silences": {"gone"}, "never-written": {"k"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	assertPending(t, db, "slack", []Entry{{1, []byte("s1")}, {2, []byte("s2")}, {3, []byte("s3")}})
	assertPending(t, db, "webhook", []Entry{{1, []byte("w1")}})
	// Deletes of a bucket run after its puts: b was put and deleted.
	assertAll(t, db, "alerts", map[string][]byte{"a": []byte("firing")})
	assertAll(t, db, "silences", map[string][]byte{})
	assertAll(t, db, "never-written", map[string][]byte{})
}

func TestCommitRejectsBadNamesBeforeWriting(t *testing.T) {
	db := openTest(t, tempPath(t))
	for _, c := range []struct {
		name   string
		outbox map[string][][]byte
		put    map[string]map[string][]byte
	}{
		{"empty receiver", map[string][][]byte{"": {[]byte("x")}}, map[string]map[string][]byte{"alerts": {"a": nil}}},
		{"empty bucket", map[string][][]byte{"slack": {[]byte("x")}}, map[string]map[string][]byte{"": {"a": nil}}},
		{"empty key", map[string][][]byte{"slack": {[]byte("x")}}, map[string]map[string][]byte{"alerts": {"": nil}}},
	} {
		if err := db.Commit(c.outbox, c.put, nil); err == nil {
			t.Errorf("%s: Commit got nil, want an error", c.name)
		}
		assertPending(t, db, "slack", nil)
		assertAll(t, db, "alerts", map[string][]byte{})
	}
}
