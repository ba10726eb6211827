package store

import (
	"strings"
	"testing"
	"time"
)

// FuzzDecodeDeadLetter feeds arbitrary records to the dead-letter decoder:
// it must never panic, and what it accepts must survive a round trip.
func FuzzDecodeDeadLetter(f *testing.F) {
	for _, d := range []DeadLetter{
		{Receiver: "slack", ID: 7, Payload: []byte(`{"id":7}`), Reason: "http 400", At: testAt, Attempts: 3},
		{Receiver: "w", ID: 1 << 60, At: time.Time{}, Attempts: -1},
		{Receiver: "teams", ID: 2, Payload: []byte{0, 1, 2}, Reason: "gone", At: testAt.In(time.FixedZone("CET", 3600))},
	} {
		rec, err := encodeDeadLetter(d)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(rec)
	}
	f.Add([]byte{})
	f.Add([]byte{2})
	f.Add([]byte{1, 0xff})
	f.Add([]byte{1, 5, 'a'})
	f.Fuzz(func(t *testing.T, rec []byte) {
		d, err := decodeDeadLetter(rec)
		if err != nil {
			return
		}
		again, err := encodeDeadLetter(d)
		if err != nil {
			t.Fatalf("encode of a decoded record %+v: %v", d, err)
		}
		d2, err := decodeDeadLetter(again)
		if err != nil {
			t.Fatalf("decode of a re-encoded record: %v", err)
		}
		if !deadEqual(d, d2) {
			t.Errorf("round trip: got %+v, want %+v", d2, d)
		}
	})
}

func TestDecodeDeadLetterErrors(t *testing.T) {
	good, err := encodeDeadLetter(DeadLetter{Receiver: "r", ID: 1, Reason: "why", At: testAt, Attempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		rec  []byte
		want string
	}{
		{"empty", nil, "record ends early"},
		{"other version", []byte{9}, "record version 9, want 1"},
		{"no receiver", []byte{1}, "dead-letter receiver length: bad or missing varint"},
		{"receiver longer than record", []byte{1, 5, 'a'}, "dead-letter receiver: 5 bytes announced, 1 left"},
		{"cut before the time", good[:10], "dead-letter time: 15 bytes announced, 0 left"},
		{"broken time", append(good[:len(good)-16:len(good)-16], 1, 0), "dead-letter time"},
	} {
		_, err := decodeDeadLetter(c.rec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
