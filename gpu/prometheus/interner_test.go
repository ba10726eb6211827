package prometheus

import (
	"testing"
	"unsafe"
)

// TestInterner checks that the interner hands out one copy of each value,
// the right value when an answer's series shift, and lets go of values
// no longer seen.
func TestInterner(t *testing.T) {
	in := newInterner()
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	evaluate := func(values ...string) []string {
		in.next()
		var out []string
		for _, v := range values {
			s := in.of([]byte(v))
			if s != v {
				t.Fatalf("of(%q) = %q", v, s)
			}
			out = append(out, s)
		}
		return out
	}
	first := evaluate("node-a", "GPU-1", "node-b", "GPU-2", "node-a")
	if !same(first[0], first[4]) {
		t.Error("the same value read twice in an evaluation is two strings")
	}
	// A series less at the front: every value moves.
	shifted := evaluate("node-b", "GPU-2", "node-a", "GPU-1")
	if !same(shifted[0], first[2]) || !same(shifted[2], first[0]) || !same(shifted[3], first[1]) {
		t.Error("values read at other places than the last evaluation's are copies, not shared")
	}
	// GPU-1 and node-a are gone; after forgetEvery evaluations, so are
	// their strings.
	for range forgetEvery {
		evaluate("node-b", "GPU-2")
	}
	if _, ok := in.known["GPU-1"]; ok || len(in.known) != 2 {
		t.Errorf("the interner keeps %d values (%v) after GPU-1 and node-a went", len(in.known), in.known)
	}
}
