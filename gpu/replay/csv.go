package replay

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// csvFormat reads CSV logs: nvidia-smi --query-gpu ... --format=csv (with
// or without units, with or without its header when the columns are
// given), logs of scripts (pynvml, GPUtil, nvitop, gpustat) with their own
// column names, and all of these with the time on a line of its own
// (`date`) before each sample when the rows have none.
//
// A header line printed again (a loop that runs nvidia-smi once per sample)
// is skipped; a header of other columns (logs of another query appended)
// replaces the current one. A log without an index column numbers its GPUs
// by UUID, in order of appearance, or, without UUIDs either, by their place
// among the rows of a sample. A wide layout, with a column per GPU and
// reading (nvitop's collector, "gpu0_util,gpu1_util"), gives a row per GPU.
type csvFormat struct {
	*input
	hdr header
	// fromColumns says that the header is Options.Columns: the log has
	// none, and its rows may have other widths (widths.go).
	fromColumns bool
	widths      map[int]*header // by the width of the rows they fit
	// The time of the rows of a log without a timestamp column: the last
	// date line, and how many there were.
	blockNS   int64
	block     int
	untimed   untimed        // the samples of a log without any time (untimed.go)
	twinVals  [][]byte       // of the row being read, by column, for columns that have a twin
	uuidIndex map[string]int // GPU index by UUID, for logs without an index column
	wide      []row          // the GPUs of the last wide row, returned from wideAt on
	wideAt    int
	wideRows  []row
	wideMems  []memReading
}

func newCSVFormat(in *input, hdr header) *csvFormat {
	f := &csvFormat{input: in, uuidIndex: make(map[string]int)}
	f.setHeader(hdr)
	f.untimed.repeats = headerRepeats(in.lr.peekLines(detectLines), hdr.raw)
	return f
}

// newColumnsFormat returns the format of a CSV log without its header,
// whose columns Options.Columns names.
func newColumnsFormat(in *input, hdr header) *csvFormat {
	f := newCSVFormat(in, hdr)
	f.fromColumns = true
	return f
}

// setHeader makes hdr the header of the rows that follow, and says which
// columns it ignores, and which it has twice.
func (f *csvFormat) setHeader(hdr header) {
	f.hdr = hdr
	if len(hdr.ignored) > 0 {
		f.notes.add("columns gpuwatch does not read, ignored: %s", listNames(hdr.ignored))
	}
	for i := range hdr.cols {
		if c := &hdr.cols[i]; c.unitless {
			f.notes.add("column %s names memory but not whether used or a share of it, and has no unit: its values are read "+
				"where they carry a memory unit (MiB, GiB), else not; give the header a unit, as in %q", c.label, c.label+" [MiB]")
		}
	}
	if hdr.twins > 0 {
		f.twinVals = make([][]byte, len(hdr.cols))
		for i := range hdr.cols {
			if c := &hdr.cols[i]; c.twin > 0 {
				f.notes.add("column %s is in the log twice (columns %d and %d): read once, as long as the two agree",
					c.label, c.twin, i+1)
			}
		}
	}
}

func (f *csvFormat) next(rw *row) error {
	if f.wideAt < len(f.wide) {
		*rw = f.wide[f.wideAt]
		f.wideAt++
		return nil
	}
	for {
		line, err := f.lr.next()
		if err != nil {
			return err
		}
		if len(trimSpace(line)) == 0 {
			continue
		}
		if bytes.Equal(line, f.hdr.raw) {
			f.untimed.reprinted = true
			continue
		}
		dated := !f.hdr.has[colTimestamp]
		if dated && maybeDateLine(line) {
			if ns, ok, ferr := f.dateLine(line); ok {
				if ferr != nil {
					return f.errorAt(ferr)
				}
				f.blockNS, f.block = ns, f.block+1
				continue
			}
		}
		ferr := f.parseRow(line, rw)
		if ferr == nil {
			if len(f.hdr.gpus) > 0 {
				return f.next(rw)
			}
			return nil
		}
		if h, herr := parseHeader(line); herr == nil && !isTimestamp(trimSpace(firstField(line))) {
			if !h.sameColumns(&f.hdr) {
				f.setHeader(h)
				f.widths = nil
			}
			f.untimed.reprinted = true
			continue
		}
		if !dated && f.tp.isDateLine(line) {
			continue // a date line in a log whose rows have their own times
		}
		if t := trimSpace(line); isTableLine(t) || isDmonHeader(t) {
			return f.leave(t)
		}
		if isShellOutput(trimSpace(line)) {
			f.shellNote(line)
			continue
		}
		return f.errorAt(ferr)
	}
}

// leave hands the log over to nvidia-smi's table or dmon, which start at
// the line just read: a log that is CSV blocks, then tables.
func (f *csvFormat) leave(t []byte) error {
	f.lr.unread()
	if isDmonHeader(t) {
		return &layoutChange{newDmonFormat(f.input), formatDmon}
	}
	table := newTableFormat(f.input)
	if f.block > 0 {
		table.dateNS, table.haveDate = f.blockNS, true
	}
	return &layoutChange{table, formatTable}
}

// parseRow parses one data row into rw, or, for a wide layout, into f.wide.
func (f *csvFormat) parseRow(line []byte, rw *row) *fieldError {
	hdr := &f.hdr
	if n := bytes.Count(line, []byte{','}) + 1; n != len(hdr.cols) {
		if !f.fromColumns {
			return fieldCountError(line, n, len(hdr.cols))
		}
		var ferr *fieldError
		if hdr, ferr = f.widthHeader(n, line); ferr != nil {
			return ferr
		}
	}
	if len(hdr.gpus) > 0 {
		return f.parseWideRow(line)
	}
	cols := hdr.cols
	rw.reset()
	rw.line = f.lr.line
	var (
		mem     memReading
		uuidCol int
		uuidRaw []byte
	)
	pos := 0
	for i := range cols {
		var v []byte
		var col int
		v, col, pos = nextValue(line, pos)
		c := &cols[i]
		if c.kind == colUUID {
			uuidCol, uuidRaw = col, v
		}
		if hdr.twins > 0 {
			if ferr := f.twinValue(hdr, i, col, v); ferr != nil {
				return ferr
			}
		}
		if ferr := f.field(rw, &rw.dev, &mem, c, col, v); ferr != nil {
			return ferr
		}
	}
	mem.fill(rw)
	if ferr := f.identify(rw, uuidCol, uuidRaw); ferr != nil {
		return ferr
	}
	return f.rowTime(rw)
}

// twinValue keeps the value of a column that has a twin, and checks the
// twin's value against it.
func (f *csvFormat) twinValue(hdr *header, i, col int, v []byte) *fieldError {
	c := &hdr.cols[i]
	if c.twin == 0 {
		f.twinVals[i] = v
		return nil
	}
	first := &hdr.cols[c.twin-1]
	if ok := f.sameValue(first, f.twinVals[c.twin-1], v); !ok {
		return &fieldError{col, fmt.Sprintf("%s is in columns %d and %d, and they differ: %q and %q; query it once in --query-gpu",
			c.label, c.twin, i+1, f.twinVals[c.twin-1], v)}
	}
	return nil
}

// sameValue reports whether two values of a column are the same reading,
// written alike or not ("500 MiB" and "500").
func (f *csvFormat) sameValue(c *column, a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	switch {
	case c.kind.isMemory():
		x, okx, e1 := memory(c, 1, a)
		y, oky, e2 := memory(c, 1, b)
		return e1 == nil && e2 == nil && x == y && okx == oky
	case c.kind >= colTemp && c.kind <= colPowerLimit:
		x, e1 := reading(c, 1, a)
		y, e2 := reading(c, 1, b)
		return e1 == nil && e2 == nil && (x == y || x != x && y != y)
	}
	return bytes.Equal(unquote(a), unquote(b))
}

// field parses one value of a row into d (and the row's time into rw).
func (f *csvFormat) field(rw *row, d *gpu.Device, mem *memReading, c *column, col int, v []byte) *fieldError {
	var ferr *fieldError
	switch c.kind {
	case colIgnore:
	case colTimestamp:
		v = unquote(v)
		t, ok := f.tp.parse(v)
		if !ok {
			return &fieldError{col, fmt.Sprintf("%s: %q is not a time; want %s", c.name, v, timeFormats)}
		}
		rw.ns, rw.col = t, col
	case colIndex:
		n, ok := gpuIndex(v)
		if !ok {
			if isUUID(v) {
				d.UUID, d.Index = f.uuids.intern(v), -1 // numbered by identify
				return nil
			}
			return &fieldError{col, fmt.Sprintf("%s: %q is not a GPU index; want a whole number such as 0", c.name, v)}
		}
		d.Index = n
	case colUUID:
		if !isUnknown(v) {
			d.UUID = f.uuids.intern(v)
		}
	case colName:
		if v = unquote(v); !isUnknown(v) {
			d.Name = f.names.intern(v)
		}
	case colTemp:
		d.TempC, ferr = reading(c, col, v)
	case colUtilGPU:
		d.UtilGPU, ferr = reading(c, col, v)
	case colUtilMem:
		d.UtilMem, ferr = reading(c, col, v)
	case colPower:
		d.PowerW, ferr = reading(c, col, v)
	case colPowerLimit:
		d.PowerLimitW, ferr = reading(c, col, v)
	case colMemUsed:
		if slash := bytes.IndexByte(v, '/'); slash > 0 { // "8595 / 24576 MiB": used and total
			var total uint64
			var haveTotal bool
			mem.used, mem.haveUsed, total, haveTotal, ferr = memoryPair(c, col, v, slash)
			if haveTotal && !mem.haveTotal {
				mem.total, mem.haveTotal = total, true
			}
			return ferr
		}
		mem.used, mem.haveUsed, ferr = memory(c, col, v)
	case colMemTotal:
		mem.total, mem.haveTotal, ferr = memory(c, col, v)
	case colMemFree:
		mem.free, mem.haveFree, ferr = memory(c, col, v)
	case colMemReserved:
		mem.reserved, mem.haveReserved, ferr = memory(c, col, v)
	case colHealth:
		ferr = healthField(d, c, col, v)
	}
	return ferr
}

// rowTime gives a row of a log without a timestamp column the time of the
// date line above it, or, in a log without any, of its sample (untimed.go).
func (f *csvFormat) rowTime(rw *row) *fieldError {
	if f.hdr.has[colTimestamp] {
		return nil
	}
	if f.block == 0 {
		return f.untimedRow(rw)
	}
	rw.ns, rw.col, rw.sample = f.blockNS, 1, f.block
	return nil
}

// identify gives the row its GPU index: the index column's, or the UUID's
// number in order of appearance, or its place in its sample.
func (f *csvFormat) identify(rw *row, uuidCol int, uuidRaw []byte) *fieldError {
	d := &rw.dev
	switch {
	case f.hdr.has[colIndex] && d.Index >= 0:
		return nil
	case d.UUID != "":
		idx, ok := f.uuidIndex[d.UUID]
		if !ok {
			idx = len(f.uuidIndex)
			f.uuidIndex[d.UUID] = idx
		}
		d.Index = idx
		return nil
	case f.hdr.has[colUUID]:
		return &fieldError{uuidCol, fmt.Sprintf(
			"uuid: %q does not name a GPU, and without an index column the uuid is what tells GPUs apart; add index to the nvidia-smi --query-gpu list",
			uuidRaw)}
	}
	d.Index = 0
	rw.ordinal = !f.hdr.gpuz // GPU-Z logs one GPU
	return nil
}

// parseWideRow parses a row of a wide layout into one row per GPU.
func (f *csvFormat) parseWideRow(line []byte) *fieldError {
	cols := f.hdr.cols
	var shared row
	shared.reset()
	shared.line = f.lr.line
	n := len(f.hdr.gpus)
	if cap(f.wideRows) < n {
		f.wideRows, f.wideMems = make([]row, n), make([]memReading, n)
	}
	rows, mems := f.wideRows[:n], f.wideMems[:n]
	clear(mems)
	var sharedMem memReading
	for i := range rows {
		rows[i].reset()
	}
	pos := 0
	for i := range cols {
		var v []byte
		var col int
		v, col, pos = nextValue(line, pos)
		c := &cols[i]
		if c.gpu < 0 {
			if ferr := f.field(&shared, &shared.dev, &sharedMem, c, col, v); ferr != nil {
				return ferr
			}
			continue
		}
		g := indexOf(f.hdr.gpus, c.gpu)
		if ferr := f.field(&shared, &rows[g].dev, &mems[g], c, col, v); ferr != nil {
			return ferr
		}
	}
	if ferr := f.rowTime(&shared); ferr != nil {
		return ferr
	}
	f.wide, f.wideAt = f.wide[:0], 0
	for i := range rows {
		rw := &rows[i]
		rw.dev.Index = f.hdr.gpus[i]
		if rw.dev.Name == "" {
			rw.dev.Name = shared.dev.Name
		}
		mems[i].fill(rw)
		rw.ns, rw.col, rw.line, rw.sample = shared.ns, shared.col, shared.line, shared.sample
		f.wide = append(f.wide, *rw)
	}
	return nil
}

// listNames lists names for a note, the first few.
func listNames(names []string) string {
	const most = 8
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
}

func indexOf(s []int, v int) int {
	for i := range s {
		if s[i] == v {
			return i
		}
	}
	return -1
}

// gpuIndex parses a GPU index as logs write it: "0", or "gpu0", "GPU 0",
// "cuda:0".
func gpuIndex(v []byte) (int, bool) {
	if n, ok := digits(v); ok {
		return n, true
	}
	i := 0
	for i < len(v) && (v[i] < '0' || v[i] > '9') {
		i++
	}
	switch strings.ToLower(strings.TrimSpace(string(v[:i]))) {
	case "gpu", "gpu:", "gpu_", "cuda:", "cuda", "#":
		return digits(v[i:])
	}
	return 0, false
}

// isUUID reports whether v is a GPU's UUID, "GPU-cd613e30-…" (or a MIG
// device's, "MIG-…").
func isUUID(v []byte) bool {
	return len(v) > 4 && (bytes.HasPrefix(v, []byte("GPU-")) || bytes.HasPrefix(v, []byte("MIG-")))
}

// nextValue returns the value of the CSV field at pos, without blanks
// around it, the column it starts at (1-based) and where the next field
// starts.
func nextValue(line []byte, pos int) (v []byte, col, next int) {
	for pos < len(line) && (line[pos] == ' ' || line[pos] == '\t') {
		pos++
	}
	end := indexComma(line, pos)
	return trimSpace(line[pos:end]), pos + 1, end + 1
}

// fieldCountError explains a row with n fields where the header has want.
func fieldCountError(line []byte, n, want int) *fieldError {
	col := len(line) + 1
	hint := "the row is cut short (was the log still being written?)"
	if n > want {
		hint = "a value contains a comma or the row belongs to another header"
		pos := 0
		for range want {
			_, pos = nextField(line, pos)
		}
		col = pos + leadingSpace(line[pos:]) + 1
	}
	return &fieldError{col, fmt.Sprintf("row has %d fields, the header has %d: %s; fix or delete the row, or skip bad rows",
		n, want, hint)}
}
