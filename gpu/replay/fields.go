package replay

import (
	"encoding/binary"
	"math/bits"
)

// nextField returns the field of line that starts at pos and the position of
// the field after it, or -1 when it is the last one.
func nextField(line []byte, pos int) (field []byte, next int) {
	i := indexComma(line, pos)
	if i == len(line) {
		return line[pos:], -1
	}
	return line[pos:i], i + 1
}

// indexComma returns the position of the first comma in b at or after i, or
// len(b). It tests eight bytes at a time: fields are too short for a call to
// bytes.IndexByte to pay off, and too long for a byte-by-byte loop.
func indexComma(b []byte, i int) int {
	const (
		ones   = 0x0101010101010101
		highs  = 0x8080808080808080
		commas = ',' * ones
	)
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:]) ^ commas // comma bytes become zero
		// The lowest byte flagged here is the first zero byte; bytes
		// above it may be flagged falsely, which does not matter.
		if z := (x - ones) &^ x & highs; z != 0 {
			return i + bits.TrailingZeros64(z)/8
		}
	}
	for ; i < len(b); i++ {
		if b[i] == ',' {
			return i
		}
	}
	return len(b)
}

func firstField(line []byte) []byte {
	f, _ := nextField(line, 0)
	return f
}

// leadingSpace counts the blanks at the start of b.
func leadingSpace(b []byte) int {
	n := 0
	for n < len(b) && (b[n] == ' ' || b[n] == '\t') {
		n++
	}
	return n
}

// trimSpace drops blanks (spaces, tabs, carriage returns) from both ends of b.
func trimSpace(b []byte) []byte {
	b = b[leadingSpace(b):]
	for len(b) > 0 {
		c := b[len(b)-1]
		if c != ' ' && c != '\t' && c != '\r' {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}
