package store

import (
	"bytes"
	"maps"
	"testing"
)

func assertGet(t *testing.T, db *DB, bucket, key string, want []byte, wantOK bool) {
	t.Helper()
	got, ok, err := db.Get(bucket, key)
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", bucket, key, err)
	}
	if ok != wantOK || !bytes.Equal(got, want) || (ok && got == nil) {
		t.Errorf("Get(%q, %q): got %q, %v; want %q, %v", bucket, key, got, ok, want, wantOK)
	}
}

func assertAll(t *testing.T, db *DB, bucket string, want map[string][]byte) {
	t.Helper()
	got, err := db.All(bucket)
	if err != nil {
		t.Fatalf("All(%q): %v", bucket, err)
	}
	if !maps.EqualFunc(got, want, bytes.Equal) {
		t.Errorf("All(%q): got %q, want %q", bucket, got, want)
	}
	n, err := db.Count(bucket)
	if err != nil {
		t.Fatalf("Count(%q): %v", bucket, err)
	}
	if n != len(want) {
		t.Errorf("Count(%q): got %d, want %d", bucket, n, len(want))
	}
}

func TestKVRoundTrip(t *testing.T) {
	db := openTest(t, tempPath(t))
	assertGet(t, db, "alerts", "k", nil, false)
	assertAll(t, db, "alerts", map[string][]byte{})

	steps := []struct {
		name string
		do   func() error
		want map[string][]byte
	}{
		{"put", func() error { return db.Put("alerts", "a", []byte("firing")) },
			map[string][]byte{"a": []byte("firing")}},
		{"overwrite", func() error { return db.Put("alerts", "a", []byte("resolved")) },
			map[string][]byte{"a": []byte("resolved")}},
		{"empty value", func() error { return db.Put("alerts", "e", nil) },
			map[string][]byte{"a": []byte("resolved"), "e": {}}},
		{"delete", func() error { return db.Delete("alerts", "a") },
			map[string][]byte{"e": {}}},
		{"delete missing", func() error { return db.Delete("alerts", "nope") },
			map[string][]byte{"e": {}}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		assertAll(t, db, "alerts", s.want)
	}
	assertGet(t, db, "alerts", "e", []byte{}, true)
	assertGet(t, db, "alerts", "a", nil, false)
	if err := db.Delete("never-written", "k"); err != nil {
		t.Errorf("Delete in a bucket never written: got %v, want nil", err)
	}
}

func TestPutMany(t *testing.T) {
	db := openTest(t, tempPath(t))
	if err := db.PutMany("silences", map[string][]byte{"1": []byte("a"), "2": []byte("b"), "3": []byte("c")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.PutMany("silences", map[string][]byte{"4": []byte("d"), "2": []byte("B")}, []string{"1", "4", "missing", ""}); err != nil {
		t.Fatal(err)
	}
	// Deletes run after puts: 4 was put and deleted in one call.
	assertAll(t, db, "silences", map[string][]byte{"2": []byte("B"), "3": []byte("c")})
	if err := db.PutMany("silences", nil, nil); err != nil {
		t.Errorf("PutMany with nothing: got %v, want nil", err)
	}
	if err := db.PutMany("silences", map[string][]byte{"": []byte("x"), "5": []byte("e")}, nil); err == nil {
		t.Error("PutMany with an empty key: got nil, want an error")
	}
	assertAll(t, db, "silences", map[string][]byte{"2": []byte("B"), "3": []byte("c")})
}

// TestKVBucketsAreIndependent also checks that key-value buckets named like
// the store's own buckets do not touch the outbox or the schema stamp.
func TestKVBucketsAreIndependent(t *testing.T) {
	db := openTest(t, tempPath(t))
	mustEnqueue(t, db, "slack", "s")
	for _, b := range []string{"alerts", "silences", "outbox", "meta", "dead"} {
		if err := db.Put(b, "k", []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []string{"alerts", "silences", "outbox", "meta", "dead"} {
		assertAll(t, db, b, map[string][]byte{"k": []byte(b)})
	}
	assertPending(t, db, "slack", []Entry{{1, []byte("s")}})
	if got, err := db.Receivers(); err != nil || len(got) != 1 {
		t.Errorf("Receivers: got %q, %v; want [slack]", got, err)
	}
}

func TestKVValuesAreCopies(t *testing.T) {
	db := openTest(t, tempPath(t))
	in := []byte("value")
	if err := db.Put("b", "k", in); err != nil {
		t.Fatal(err)
	}
	in[0] = 'X'
	got, _, err := db.Get("b", "k")
	if err != nil {
		t.Fatal(err)
	}
	got[1] = 'Y'
	all, err := db.All("b")
	if err != nil {
		t.Fatal(err)
	}
	all["k"][2] = 'Z'
	assertGet(t, db, "b", "k", []byte("value"), true)
}

func TestKVEmptyNames(t *testing.T) {
	db := openTest(t, tempPath(t))
	errs := map[string]error{}
	errs["Put empty bucket"] = db.Put("", "k", nil)
	errs["Put empty key"] = db.Put("b", "", nil)
	_, _, errs["Get"] = db.Get("", "k")
	errs["Delete"] = db.Delete("", "k")
	_, errs["All"] = db.All("")
	_, errs["Count"] = db.Count("")
	for name, err := range errs {
		if err == nil {
			t.Errorf("%s: got nil, want an error", name)
		}
	}
}
