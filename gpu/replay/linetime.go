package replay

import (
	"bytes"
	"time"
)

// lineTime is the time a script's line starts with, as its logger or its
// own print writes it:
//
//	[2026-11-29 09:00:00] GPU 0: ...             a bracketed date and time
//	2026-11-29 09:00:00,123 - INFO - GPU 0 ...   Python's logging (a comma before the milliseconds)
//	Sun Nov 29 09:00:00 UTC 2026 | GPU 0 | ...   date's words
//	1764406800.25 gpu0 ...                       epoch seconds
//	[09:00:00] GPU 0 ...                         a time of day alone
type lineTime struct {
	ns    int64         // Unix nanoseconds, for a date and time
	clock time.Duration // since midnight, for a time of day alone
	alone bool          // a time of day alone: clock is set, ns is not
	text  []byte        // as written, for notes
}

// leadingTime takes the time a line starts with, and returns what follows
// it. ok is false for a line that does not start with a time.
func (p *timeParser) leadingTime(b []byte) (lt lineTime, rest []byte, ok bool) {
	b = trimSpace(b)
	if len(b) < 8 {
		return lineTime{}, b, false
	}
	if c := b[0]; c == '[' || c == '(' {
		closer := byte(']')
		if c == '(' {
			closer = ')'
		}
		end := bytes.IndexByte(b, closer)
		if end < 0 {
			return lineTime{}, b, false
		}
		lt, ok = p.timeOf(trimSpace(b[1:end]))
		lt.text = b[:end+1]
		return lt, b[end+1:], ok
	}
	// A date and time first: 19 characters, a fraction after a dot or a
	// comma, a zone.
	if len(b) >= 19 && (b[4] == '-' || b[4] == '/') && b[7] == b[4] && (b[10] == ' ' || b[10] == 'T') && b[13] == ':' {
		end := 19
		if end < len(b) && (b[end] == '.' || b[end] == ',') {
			end++
			for end < len(b) && b[end] >= '0' && b[end] <= '9' {
				end++
			}
		}
		if end < len(b) && (b[end] == 'Z' || b[end] == '+' || b[end] == '-' && end+1 < len(b) && b[end+1] >= '0' && b[end+1] <= '9') {
			z := end + 1
			for z < len(b) && (b[z] >= '0' && b[z] <= '9' || b[z] == ':') {
				z++
			}
			end = z
		}
		var buf [40]byte
		ts := append(buf[:0], b[:min(end, len(buf))]...)
		if len(ts) > 19 && ts[19] == ',' {
			ts[19] = '.'
		}
		if ns, ok := p.parse(ts); ok {
			return lineTime{ns: ns, text: b[:end]}, b[end:], true
		}
		return lineTime{}, b, false
	}
	first, after := nextWord(b)
	if tod, ok := parseClock(bytes.Replace(first, []byte{','}, []byte{'.'}, 1)); ok {
		return lineTime{clock: tod, alone: true, text: first}, after, true
	}
	if len(first) >= 9 {
		if ns, ok := parseEpoch(first); ok {
			return lineTime{ns: ns, text: first}, after, true
		}
	}
	// date's words: the longest start of the line that is a date.
	words, end := 0, 0
	for rest := b; len(rest) > 0 && words < 7; words++ {
		w, after := nextWord(rest)
		if len(w) == 0 {
			break
		}
		end = len(b) - len(after)
		rest = after
	}
	for ; words >= 4; words-- {
		if ns, ok := parseWordDate(b[:end], p.loc); ok {
			return lineTime{ns: ns, text: b[:end]}, b[end:], true
		}
		end = bytes.LastIndexAny(trimSpace(b[:end]), " \t,")
		if end < 0 {
			break
		}
	}
	return lineTime{}, b, false
}

// timeOf reads a time alone: a date and time, or a time of day.
func (p *timeParser) timeOf(b []byte) (lineTime, bool) {
	if ns, ok := p.parse(b); ok {
		return lineTime{ns: ns}, true
	}
	if len(b) > 19 && b[19] == ',' {
		var buf [40]byte
		ts := append(buf[:0], b[:min(len(b), len(buf))]...)
		ts[19] = '.'
		if ns, ok := p.parse(ts); ok {
			return lineTime{ns: ns}, true
		}
	}
	if tod, ok := parseClock(bytes.Replace(b, []byte{','}, []byte{'.'}, 1)); ok {
		return lineTime{clock: tod, alone: true}, true
	}
	return lineTime{}, false
}
