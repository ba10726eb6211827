package store

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"
)

var testAt = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func deadIDs(t *testing.T, db *DB, limit int) []uint64 {
	t.Helper()
	dl, err := db.DeadLetters(limit)
	if err != nil {
		t.Fatalf("DeadLetters(%d): %v", limit, err)
	}
	var ids []uint64
	for _, d := range dl {
		ids = append(ids, d.ID)
	}
	return ids
}

func TestBuryMovesEntry(t *testing.T) {
	db := openTest(t, tempPath(t))
	mustEnqueue(t, db, "webhook", "a", "b", "c")
	at := time.Date(2025, 3, 1, 13, 30, 0, 5, time.FixedZone("CET", 3600))
	if err := db.Bury("webhook", 2, "http 400: bad payload", at, 3); err != nil {
		t.Fatal(err)
	}
	assertPending(t, db, "webhook", []Entry{{1, []byte("a")}, {3, []byte("c")}})
	dl, err := db.DeadLetters(0)
	if err != nil {
		t.Fatal(err)
	}
	want := DeadLetter{Receiver: "webhook", ID: 2, Payload: []byte("b"), Reason: "http 400: bad payload", At: at, Attempts: 3}
	if len(dl) != 1 || !deadEqual(dl[0], want) {
		t.Fatalf("DeadLetters: got %+v, want [%+v]", dl, want)
	}
	if _, off := dl[0].At.Zone(); off != 3600 {
		t.Errorf("dead letter zone offset: got %d, want 3600 (kept as given)", off)
	}

	// Burying it again finds nothing and adds nothing.
	if err := db.Bury("webhook", 2, "again", at, 4); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Bury: got %v, want ErrNotFound", err)
	}
	if err := db.Bury("nobody", 1, "x", at, 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("Bury on a receiver without a queue: got %v, want ErrNotFound", err)
	}
	if got := deadIDs(t, db, 0); !slices.Equal(got, []uint64{2}) {
		t.Errorf("dead letters after failed Burys: got ids %v, want [2]", got)
	}
}

// TestBuryIsAtomic makes Bury fail after it began writing (a time that
// cannot be encoded) and checks that nothing moved.
func TestBuryIsAtomic(t *testing.T) {
	db := openTest(t, tempPath(t))
	mustEnqueue(t, db, "r", "a")
	unencodable := testAt.In(time.FixedZone("far", 40000*60)) // beyond MarshalBinary's offset range
	if err := db.Bury("r", 1, "x", unencodable, 1); err == nil {
		t.Fatal("Bury with an unencodable time: got nil, want an error")
	}
	assertPending(t, db, "r", []Entry{{1, []byte("a")}})
	if got := deadIDs(t, db, 0); len(got) != 0 {
		t.Errorf("dead letters after a failed Bury: got ids %v, want none", got)
	}
	// The dead-letter sequence taken by the failed Bury was rolled back too;
	// a later Bury works.
	if err := db.Bury("r", 1, "x", testAt, 1); err != nil {
		t.Fatal(err)
	}
	assertPending(t, db, "r", nil)
}

func TestDeadLettersNewestFirst(t *testing.T) {
	db := openTest(t, tempPath(t))
	mustEnqueue(t, db, "r", "1", "2", "3", "4", "5")
	// Buried out of time order; 3 and 4 share an instant, 4 buried later.
	for _, b := range []struct {
		id uint64
		at time.Time
	}{
		{1, testAt.Add(2 * time.Hour)},
		{2, testAt},
		{3, testAt.Add(time.Hour)},
		{4, testAt.Add(time.Hour)},
		{5, time.Time{}}, // the zero time sorts oldest
	} {
		if err := db.Bury("r", b.id, "x", b.at, 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		limit int
		want  []uint64
	}{
		{0, []uint64{1, 4, 3, 2, 5}},
		{2, []uint64{1, 4}},
		{9, []uint64{1, 4, 3, 2, 5}},
	} {
		if got := deadIDs(t, db, c.limit); !slices.Equal(got, c.want) {
			t.Errorf("DeadLetters(%d): got ids %v, want %v", c.limit, got, c.want)
		}
	}
}

func TestForgetDeadLetters(t *testing.T) {
	db := openTest(t, tempPath(t))
	mustEnqueue(t, db, "r", "1", "2", "3", "4")
	for i, at := range []time.Time{testAt.Add(-time.Hour), testAt.Add(-time.Nanosecond), testAt, testAt.Add(time.Hour)} {
		if err := db.Bury("r", uint64(i+1), "x", at, 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		before    time.Time
		wantN     int
		wantAfter []uint64
	}{
		{testAt.Add(-2 * time.Hour), 0, []uint64{4, 3, 2, 1}},
		{testAt, 2, []uint64{4, 3}}, // strictly before: the one at testAt stays
		{testAt, 0, []uint64{4, 3}},
		{testAt.Add(24 * time.Hour), 2, nil},
	} {
		n, err := db.ForgetDeadLetters(c.before)
		if err != nil {
			t.Fatal(err)
		}
		if n != c.wantN {
			t.Errorf("ForgetDeadLetters(%v): got %d, want %d", c.before, n, c.wantN)
		}
		if got := deadIDs(t, db, 0); !slices.Equal(got, c.wantAfter) {
			t.Errorf("after ForgetDeadLetters(%v): got ids %v, want %v", c.before, got, c.wantAfter)
		}
	}
}

func TestTimeKeyOrder(t *testing.T) {
	times := []time.Time{
		{},
		time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(-1, 999_999_999),
		time.Unix(0, 0),
		time.Unix(0, 1),
		testAt,
		testAt.Add(time.Nanosecond),
		time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for i := 1; i < len(times); i++ {
		a, b := timeKey(times[i-1]), timeKey(times[i])
		if bytes.Compare(a, b) >= 0 {
			t.Errorf("timeKey(%v) = %x, timeKey(%v) = %x: got not increasing, want increasing", times[i-1], a, times[i], b)
		}
	}
}

func deadEqual(a, b DeadLetter) bool {
	return a.Receiver == b.Receiver && a.ID == b.ID && bytes.Equal(a.Payload, b.Payload) &&
		a.Reason == b.Reason && a.At.Equal(b.At) && a.Attempts == b.Attempts
}
