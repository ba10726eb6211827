package replay

import (
	"bytes"
	"fmt"
)

// A log without its header (--format=csv,noheader) read with --columns may
// have wider rows: the script that wrote it gained columns halfway. A
// wider row is the same columns with the extra ones in front of them or
// behind them, whichever way its values fit: times where the timestamp is,
// units that are the columns' (MiB, %, W), GPU indexes and UUIDs, and at
// least one value whose form says its column. The extra columns are not
// read, which a note says. A row whose values fit neither way, or both
// ways alike, is an error that names both widths; a narrower row is one cut
// short, an error as in a log with a header.

// placement is one way a row of another width may hold the columns.
type placement struct {
	offset int // extra fields in front of the columns (a wider row), or columns left out in front (a narrower one)
	fits   bool
	clues  int // values whose form says their column: a time, a unit, a UUID
}

// widthHeader returns the header of the rows of n fields, of which line is
// the first, where --columns names another number.
func (f *csvFormat) widthHeader(n int, line []byte) (*header, *fieldError) {
	if h, ok := f.widths[n]; ok {
		return h, nil
	}
	k := len(f.hdr.cols)
	if n < k {
		return nil, fieldCountError(line, n, k)
	}
	diff := n - k
	ways := [2]placement{{offset: 0}, {offset: diff}}
	for w := range ways {
		ways[w].fits, ways[w].clues = f.place(line, n, k, ways[w].offset)
	}
	var chosen *placement
	switch a, b := &ways[0], &ways[1]; {
	case a.fits && a.clues > 0 && (!b.fits || a.clues > b.clues):
		chosen = a
	case b.fits && b.clues > 0 && (!a.fits || b.clues > a.clues):
		chosen = b
	}
	if chosen == nil {
		how := "neither way"
		if ways[0].fits {
			how = "both ways alike"
		}
		return nil, &fieldError{1, fmt.Sprintf("rows of %d and %d fields: --columns names %d columns, and this row's values fit them "+
			"with the %d extra fields in front or behind %s; give --columns for these rows, or split the log where its rows change",
			k, n, k, diff, how)}
	}
	h := &header{cols: make([]column, n)}
	where := "behind"
	if chosen.offset > 0 {
		where = "in front of"
	}
	copy(h.cols[chosen.offset:], f.hdr.cols)
	f.notes.add("rows of %d fields (from line %d): the %d columns of --columns with %d more %s them, not read",
		n, f.lr.line, k, diff, where)
	h.count()
	if f.widths == nil {
		f.widths = make(map[int]*header)
	}
	f.widths[n] = h
	return h, nil
}

// place reports whether the n values of line fit the k columns placed at
// offset, and how many of them say their column by their form.
func (f *csvFormat) place(line []byte, n, k, offset int) (fits bool, clues int) {
	pos := 0
	for i := range n {
		var v []byte
		v, _, pos = nextValue(line, pos)
		j := i - offset // the column of value i
		if j < 0 || j >= k {
			continue // an extra field
		}
		ok, clue := f.fits(&f.hdr.cols[j], v)
		if !ok {
			return false, 0
		}
		if clue {
			clues++
		}
	}
	return true, clues
}

// fits reports whether v may be a value of column c, and whether its form
// says so (a time, a UUID, a unit of the column's).
func (f *csvFormat) fits(c *column, v []byte) (ok, clue bool) {
	if isUnknown(v) {
		return true, false
	}
	switch {
	case c.kind == colIgnore:
		return true, false
	case c.kind == colTimestamp:
		tp := timeParser{loc: f.tp.loc}
		_, ok := tp.parse(unquote(v))
		return ok, ok
	case c.kind == colIndex:
		_, ok := gpuIndex(v)
		return ok || isUUID(v), isUUID(v)
	case c.kind == colUUID:
		return isUUID(v), true
	case c.kind == colName:
		_, num := parseFloat(v)
		return !num && !isTimestamp(unquote(v)), false
	case c.kind.isMemory():
		if bytes.IndexByte(v, '/') > 0 {
			return false, false
		}
		_, _, ferr := memory(c, 1, v)
		_, unit := splitUnit(v)
		return ferr == nil, len(unit) > 0
	}
	_, ferr := reading(c, 1, v)
	_, unit := splitUnit(v)
	return ferr == nil, len(unit) > 0
}
