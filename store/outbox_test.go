package store

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

func assertPending(t *testing.T, db *DB, receiver string, want []Entry) {
	t.Helper()
	got, err := db.Pending(receiver, 0)
	if err != nil {
		t.Fatalf("Pending(%q): %v", receiver, err)
	}
	if !entriesEqual(got, want) {
		t.Errorf("Pending(%q): got %s, want %s", receiver, fmtEntries(got), fmtEntries(want))
	}
	n, err := db.PendingCount(receiver)
	if err != nil {
		t.Fatalf("PendingCount(%q): %v", receiver, err)
	}
	if n != len(want) {
		t.Errorf("PendingCount(%q): got %d, want %d", receiver, n, len(want))
	}
}

func entriesEqual(a, b []Entry) bool {
	return slices.EqualFunc(a, b, func(x, y Entry) bool {
		return x.ID == y.ID && bytes.Equal(x.Payload, y.Payload)
	})
}

func fmtEntries(es []Entry) string {
	var b bytes.Buffer
	for _, e := range es {
		fmt.Fprintf(&b, "[%d %q]", e.ID, e.Payload)
	}
	return b.String()
}

func mustEnqueue(t *testing.T, db *DB, receiver string, payloads ...string) []uint64 {
	t.Helper()
	ps := make([][]byte, len(payloads))
	for i, p := range payloads {
		ps[i] = []byte(p)
	}
	ids, err := db.Enqueue(receiver, ps...)
	if err != nil {
		t.Fatalf("Enqueue(%q): %v", receiver, err)
	}
	return ids
}

func TestOutboxFIFOPerReceiver(t *testing.T) {
	db := openTest(t, tempPath(t))
	steps := []struct {
		receiver string
		payloads []string
		wantIDs  []uint64
	}{
		{"slack", []string{"s1", "s2"}, []uint64{1, 2}},
		{"webhook", []string{"w1"}, []uint64{1}},
		{"slack", []string{"s3"}, []uint64{3}},
		{"webhook", []string{"w2", "w3"}, []uint64{2, 3}},
	}
	for _, s := range steps {
		if got := mustEnqueue(t, db, s.receiver, s.payloads...); !slices.Equal(got, s.wantIDs) {
			t.Errorf("Enqueue(%q, %q): got ids %v, want %v", s.receiver, s.payloads, got, s.wantIDs)
		}
	}
	assertPending(t, db, "slack", []Entry{{1, []byte("s1")}, {2, []byte("s2")}, {3, []byte("s3")}})
	assertPending(t, db, "webhook", []Entry{{1, []byte("w1")}, {2, []byte("w2")}, {3, []byte("w3")}})
	assertPending(t, db, "nobody", nil)

	// Acking one receiver leaves the other alone.
	if err := db.Ack("slack", 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	assertPending(t, db, "slack", nil)
	assertPending(t, db, "webhook", []Entry{{1, []byte("w1")}, {2, []byte("w2")}, {3, []byte("w3")}})
}

func TestPendingLimit(t *testing.T) {
	db := openTest(t, tempPath(t))
	mustEnqueue(t, db, "r", "a", "b", "c")
	for _, c := range []struct {
		limit   int
		wantIDs []uint64
	}{
		{-1, []uint64{1, 2, 3}},
		{0, []uint64{1, 2, 3}},
		{1, []uint64{1}},
		{2, []uint64{1, 2}},
		{10, []uint64{1, 2, 3}},
	} {
		es, err := db.Pending("r", c.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []uint64
		for _, e := range es {
			got = append(got, e.ID)
		}
		if !slices.Equal(got, c.wantIDs) {
			t.Errorf("Pending(r, %d): got ids %v, want %v", c.limit, got, c.wantIDs)
		}
	}
}

func TestIDsNeverReused(t *testing.T) {
	path := tempPath(t)
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, db, "r", "a", "b", "c")
	if err := db.Ack("r", 3); err != nil { // the newest: a reused id would be 3
		t.Fatal(err)
	}
	if got := mustEnqueue(t, db, "r", "d"); !slices.Equal(got, []uint64{4}) {
		t.Errorf("id after acking the newest: got %v, want [4]", got)
	}
	if err := db.Ack("r", 1, 2, 4); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, path)
	if got := mustEnqueue(t, db, "r", "e"); !slices.Equal(got, []uint64{5}) {
		t.Errorf("id after emptying the queue and reopening: got %v, want [5]", got)
	}
}

func TestAck(t *testing.T) {
	db := openTest(t, tempPath(t))
	mustEnqueue(t, db, "r", "a", "b", "c")
	for _, c := range []struct {
		name string
		ids  []uint64
		want []Entry
	}{
		{"none", nil, []Entry{{1, []byte("a")}, {2, []byte("b")}, {3, []byte("c")}}},
		{"middle", []uint64{2}, []Entry{{1, []byte("a")}, {3, []byte("c")}}},
		{"again, and unknown ids", []uint64{2, 99}, []Entry{{1, []byte("a")}, {3, []byte("c")}}},
		{"the rest", []uint64{3, 1}, nil},
	} {
		if err := db.Ack("r", c.ids...); err != nil {
			t.Errorf("%s: Ack(%v): got %v, want nil", c.name, c.ids, err)
		}
		assertPending(t, db, "r", c.want)
	}
	if err := db.Ack("nobody", 1); err != nil {
		t.Errorf("Ack on a receiver without a queue: got %v, want nil", err)
	}
}

func TestReplace(t *testing.T) {
	db := openTest(t, tempPath(t))
	mustEnqueue(t, db, "r", "a", "b", "c")
	if err := db.Replace("r", 2, []byte("b, attempt 2")); err != nil {
		t.Fatal(err)
	}
	assertPending(t, db, "r", []Entry{{1, []byte("a")}, {2, []byte("b, attempt 2")}, {3, []byte("c")}})

	if err := db.Ack("r", 2); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		receiver string
		id       uint64
	}{{"r", 2}, {"r", 99}, {"nobody", 1}} {
		if err := db.Replace(c.receiver, c.id, []byte("x")); !errors.Is(err, ErrNotFound) {
			t.Errorf("Replace(%q, %d): got %v, want ErrNotFound", c.receiver, c.id, err)
		}
	}
	// A failed Replace must not bring an acked entry back.
	assertPending(t, db, "r", []Entry{{1, []byte("a")}, {3, []byte("c")}})
}

func TestReceivers(t *testing.T) {
	db := openTest(t, tempPath(t))
	if got, err := db.Receivers(); err != nil || len(got) != 0 {
		t.Errorf("Receivers of a new store: got %v, %v; want none", got, err)
	}
	mustEnqueue(t, db, "webhook", "w")
	mustEnqueue(t, db, "slack", "s")
	if err := db.Ack("webhook", 1); err != nil {
		t.Fatal(err)
	}
	got, err := db.Receivers()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"slack", "webhook"}; !slices.Equal(got, want) {
		t.Errorf("Receivers: got %q, want %q (an emptied queue stays)", got, want)
	}
}

func TestEmptyPayloads(t *testing.T) {
	db := openTest(t, tempPath(t))
	if ids, err := db.Enqueue("r"); err != nil || ids != nil {
		t.Errorf("Enqueue without payloads: got %v, %v; want nil, nil", ids, err)
	}
	if _, err := db.Enqueue("r", nil, []byte{}); err != nil {
		t.Fatal(err)
	}
	es, err := db.Pending("r", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Payload == nil || len(es[0].Payload) != 0 || len(es[1].Payload) != 0 {
		t.Errorf("Pending of empty payloads: got %s, want two non-nil empty payloads", fmtEntries(es))
	}
	if err := db.Replace("r", 1, []byte("x")); err != nil {
		t.Errorf("Replace of an empty payload: got %v, want nil", err)
	}
}

func TestEmptyReceiverName(t *testing.T) {
	db := openTest(t, tempPath(t))
	errs := map[string]error{}
	_, errs["Enqueue"] = db.Enqueue("", []byte("x"))
	_, errs["Pending"] = db.Pending("", 0)
	errs["Ack"] = db.Ack("", 1)
	errs["Replace"] = db.Replace("", 1, nil)
	_, errs["PendingCount"] = db.PendingCount("")
	errs["Bury"] = db.Bury("", 1, "", testAt, 1)
	for name, err := range errs {
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte("empty receiver name")) {
			t.Errorf("%s with an empty receiver: got %v, want an \"empty receiver name\" error", name, err)
		}
	}
}

// TestConcurrentEnqueueAck runs producers and a consumer at once, as the
// dispatcher and the outbox workers do, and checks that every payload is
// delivered exactly once and each producer's payloads in its order.
func TestConcurrentEnqueueAck(t *testing.T) {
	db := openTest(t, tempPath(t))
	const producers, each = 6, 40
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				if _, err := db.Enqueue("shared", fmt.Appendf(nil, "%d/%d", p, i)); err != nil {
					t.Errorf("Enqueue: %v", err)
					return
				}
				// Each producer also has a queue of its own, so that writers
				// to different receivers race too.
				if _, err := db.Enqueue(fmt.Sprint("own", p), []byte("x")); err != nil {
					t.Errorf("Enqueue: %v", err)
					return
				}
			}
		})
	}

	seen := map[string]bool{}
	next := make([]int, producers)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; ; {
		select {
		case <-done:
			finished = true
		default:
		}
		es, err := db.Pending("shared", 7)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]uint64, 0, len(es))
		for _, e := range es {
			var p, i int
			if _, err := fmt.Sscanf(string(e.Payload), "%d/%d", &p, &i); err != nil {
				t.Fatalf("payload %q: %v", e.Payload, err)
			}
			if seen[string(e.Payload)] {
				t.Errorf("payload %q delivered twice", e.Payload)
			}
			seen[string(e.Payload)] = true
			if i != next[p] {
				t.Errorf("producer %d: got payload %d, want %d (out of order)", p, i, next[p])
			}
			next[p] = i + 1
			ids = append(ids, e.ID)
		}
		if err := db.Ack("shared", ids...); err != nil {
			t.Fatal(err)
		}
		if finished && len(es) == 0 {
			break
		}
	}
	if len(seen) != producers*each {
		t.Errorf("delivered: got %d payloads, want %d", len(seen), producers*each)
	}
	for p := range producers {
		if n, err := db.PendingCount(fmt.Sprint("own", p)); err != nil || n != each {
			t.Errorf("PendingCount(own%d): got %d, %v; want %d", p, n, err, each)
		}
	}
}
