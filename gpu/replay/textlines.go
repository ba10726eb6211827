package replay

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"
)

// formatText names scripts' own text lines for people.
const formatText = "script lines"

// textFormat reads the lines scripts print about the GPUs, whatever their
// decoration, when they carry a time and readings with names and units
// gpuwatch knows:
//
//	[2026-11-29 09:00:00] GPU 0: NVIDIA GeForce RTX 3090 - Memory: 8595MB/24576MB - Utilization: 45%
//	2026-11-29 09:00:00 | gpu0 | util 45% | mem 8.4/24.0 GB | temp 60C | power 250W
//	2026-11-29 09:00:00,123 - INFO - GPU 1: 30% util, 4096 MiB used
//
// blocks of "key: value" lines under a date line:
//
//	=== Sun Nov 29 09:00:00 UTC 2026 ===
//	GPU 0: NVIDIA A100-SXM4-40GB
//	  Memory Used: 8595 MiB
//	  Memory Total: 40960 MiB
//	  GPU Utilization: 45 %
//
// and rows of values without names under a status line, read by their
// units (one percentage is the utilization, of two amounts of memory the
// smaller is the used, of two powers the smaller the draw):
//
//	[2026-11-29 09:00:00] GPU Status:
//	0, NVIDIA GeForce RTX 3090, 45 %, 8595 MiB, 24576 MiB
//
// A line's time is its own (at its start), or else the last date line's.
// A GPU is named by "GPU 0", "gpu0", "cuda:0", "device 0", or, without a
// name, by its place among the lines of one time. Labels are looked up as
// CSV columns' names are. A value whose label names no reading ("loss:",
// "step"), or whose unit does not fit its label ("Memory: 35%", a share),
// is not read; nor are a PyTorch allocator's figures (allocated, reserved,
// cached), which are a process's, not the GPU's. Lines without readings
// are skipped, which a note says once; another note says which readings
// were taken from where.
type textFormat struct {
	*input
	blockNS  int64 // the time of the last date (or status) line
	block    int
	rec      textRecord // the GPU being gathered
	out      []row      // records finished, returned from outAt on
	outAt    int
	fields   []textField
	values   []textValue
	kinds    []textKind   // of values, as classify found them
	loose    []*textValue // values without a label, read by their units
	said     bool         // where the readings come from was said
	skipSaid bool
}

// textRecord is one GPU's readings being gathered from a line or a block.
type textRecord struct {
	rw       row
	mem      memReading
	set      [numKinds]bool
	indexed  bool // a GPU index was given
	readings int
	from     []string // where each reading came from, for the note
}

func newTextFormat(in *input) *textFormat { return &textFormat{input: in} }

func (f *textFormat) next(rw *row) error {
	for f.outAt == len(f.out) {
		f.out, f.outAt = f.out[:0], 0
		line, err := f.lr.next()
		if err == io.EOF {
			f.end()
			if len(f.out) > 0 {
				continue
			}
		}
		if err != nil {
			return err
		}
		if err := f.readLine(line); err != nil {
			f.rec = textRecord{}
			return err
		}
	}
	*rw = f.out[f.outAt]
	f.outAt++
	return nil
}

// readLine files what one line says.
func (f *textFormat) readLine(line []byte) error {
	t := trimSpace(stripEscapes(line))
	if len(t) == 0 {
		f.end()
		return nil
	}
	if len(bytes.Trim(t, decorations+" .")) == 0 {
		return nil // a rule between blocks
	}
	if ns, ok, ferr := f.dateLine(t); ok {
		if ferr != nil {
			return f.errorAt(ferr)
		}
		f.end()
		f.blockNS, f.block = ns, f.block+1
		return nil
	}
	lt, rest, timed := f.tp.leadingTime(t)
	var ns int64
	if timed {
		if lt.alone {
			var ferr *fieldError
			if ns, ferr = f.clock(lt.clock, textClock); ferr != nil {
				return f.errorAt(ferr)
			}
		} else {
			ns = lt.ns
			f.dated(ns)
		}
	}
	if isAllocatorLine(rest) {
		f.skipNote(t, "lines of PyTorch's allocator (allocated, reserved) are not the GPU's readings")
		return nil
	}
	f.fields, f.values = scanText(rest, f.fields[:0], f.values[:0])
	if f.classify() == 0 {
		if timed {
			f.end() // a status line: "[…] GPU Status:", or a time alone with its label
			f.blockNS, f.block = ns, f.block+1
			return nil
		}
		f.skipNote(t, "lines that hold no GPU readings are skipped")
		return nil
	}
	if timed {
		f.end()
	} else if f.block == 0 {
		return f.errorAt(&fieldError{1, "the line has GPU readings but no time: none at its start, and no date line above it; " +
			"log the time on each line, or print `date` before each sample"})
	}
	return f.gather(ns, timed, lt.text)
}

// skipNote says, once, that lines were skipped, and which was the first.
func (f *textFormat) skipNote(t []byte, why string) {
	if !f.skipSaid {
		f.skipSaid = true
		f.notes.add("%s (the first, line %d: %q)", why, f.lr.line, clip(t, 60))
	}
}

// textKind is what a value of a line is, as classify finds it.
type textKind struct {
	kind  colKind // a reading, colIndex, or colIgnore for a value not read
	col   column
	loose bool // no label: read by its unit, once the line is seen
}

// classify finds what the line's values are, and counts those that are
// GPU readings, indexes or values without a label that have a unit.
func (f *textFormat) classify() int {
	n := 0
	f.kinds = f.kinds[:0]
	for i := range f.values {
		k := textKindOf(&f.values[i])
		if k.loose || k.kind != colIgnore {
			n++
		}
		f.kinds = append(f.kinds, k)
	}
	return n
}

// textKindOf finds what a value is by its label and unit.
func textKindOf(v *textValue) textKind {
	unit := valueUnit(v.v)
	if len(unit) == 0 {
		unit = v.unit
	}
	if len(v.label) == 0 {
		if len(unit) > 0 {
			return textKind{loose: true}
		}
		return textKind{}
	}
	cn := normalizeName(string(v.label))
	if cn.unit == "" {
		cn.unit = string(unit)
	}
	kind, _ := lookupColumn(cn)
	switch kind {
	case colIndex:
		if _, ok := gpuIndex(v.v); !ok || len(unit) > 0 {
			return textKind{}
		}
	case colMemUsed, colMemTotal, colMemFree:
		if _, ok := memoryScale(unit); !ok && len(unit) > 0 || len(unit) == 0 && vagueMemory(cn.key) {
			return textKind{} // not an amount, or maybe a share ("Memory: 35")
		}
	case colTemp, colUtilGPU, colUtilMem, colPower, colPowerLimit:
		if len(unit) > 0 && !unitFits(kind, unit) {
			return textKind{}
		}
	default:
		return textKind{} // a time, a name, memory.reserved, or no reading at all
	}
	return textKind{kind: kind, col: column{kind: kind, name: cn.key, label: string(v.label), scale: 1 << 20, gpu: -1}}
}

// unitFits reports whether u is a unit of reading k.
func unitFits(k colKind, u []byte) bool {
	for _, x := range readingUnits[k] {
		if x.unit == string(u) {
			return true
		}
	}
	return false
}

// valueUnit returns the unit a value ends with ("8595MB/24576MB" is in MB).
func valueUnit(v []byte) []byte {
	i := len(v)
	for i > 0 && !isDigit(v[i-1]) {
		i--
	}
	return trimSpace(v[i:])
}

// gather adds the line's values to the GPUs being gathered. A GPU index
// starts another GPU; the values without a label after it, up to the next
// index, are read by their units for it.
func (f *textFormat) gather(ns int64, timed bool, timeText []byte) error {
	f.begin(ns, timed, timeText)
	before, named := f.rec.readings, false
	loose := f.loose[:0]
	for i := range f.values {
		v, k := &f.values[i], f.kinds[i]
		switch {
		case k.loose:
			loose = append(loose, v)
		case k.kind == colIndex:
			if ferr := f.readLoose(loose); ferr != nil {
				return f.errorAt(ferr)
			}
			loose = loose[:0]
			if f.rec.indexed || f.rec.readings > 0 {
				f.end()
				f.begin(ns, timed, timeText)
				before = 0
			}
			f.rec.rw.dev.Index, _ = gpuIndex(v.v)
			f.rec.indexed, named = true, true
			f.rec.from = append(f.rec.from, fmt.Sprintf("the GPU from %q", v.src))
			if name := f.nameAfter(i); len(name) > 0 {
				f.rec.rw.dev.Name = f.names.intern(name)
				f.rec.from = append(f.rec.from, fmt.Sprintf("its name from %q", name))
			}
		case k.kind != colIgnore:
			if f.rec.set[k.kind] {
				f.end()
				f.begin(ns, timed, timeText)
				before = 0
			}
			if ferr := f.rec.read(k, v); ferr != nil {
				return f.errorAt(ferr)
			}
		}
	}
	if !named && len(loose) > 0 && f.values[0].label == nil {
		if i, ok := gpuIndex(f.values[0].v); ok && len(valueUnit(f.values[0].v)) == 0 && i < 64 && !f.rec.indexed {
			f.rec.rw.dev.Index, f.rec.indexed, named = i, true, true // a row of values: "0, NVIDIA …, 45 %, 8595 MiB"
			f.rec.from = append(f.rec.from, fmt.Sprintf("the GPU from its first value, %q", f.values[0].v))
		}
	}
	if ferr := f.readLoose(loose); ferr != nil {
		return f.errorAt(ferr)
	}
	if f.rec.rw.dev.Name == "" {
		if name := gpuNameField(f.fields); len(name) > 0 {
			f.rec.rw.dev.Name = f.names.intern(name)
		}
	}
	f.loose = loose
	if f.rec.readings > 0 && (timed || named && f.rec.readings > before || len(loose) > 0) {
		f.end() // a line that is a whole GPU
	}
	return nil
}

// begin starts gathering a GPU of the time the line or block gives,
// unless one is being gathered.
func (f *textFormat) begin(ns int64, timed bool, timeText []byte) {
	r := &f.rec
	if r.readings > 0 || r.indexed {
		return
	}
	r.rw.reset()
	r.rw.line, r.rw.col = f.lr.line, 1
	if timed {
		r.rw.ns, r.rw.sample = ns, 0
		r.from = append(r.from, fmt.Sprintf("the time from %q", timeText))
	} else {
		r.rw.ns, r.rw.sample = f.blockNS, f.block
		r.from = append(r.from, "the time from the date line above")
	}
}

// read sets one reading of the GPU being gathered.
func (r *textRecord) read(k textKind, v *textValue) *fieldError {
	d := &r.rw.dev
	c := &k.col
	var ferr *fieldError
	slash := bytes.IndexByte(v.v, '/')
	switch k.kind {
	case colMemUsed:
		if slash > 0 {
			var total uint64
			var haveTotal bool
			r.mem.used, r.mem.haveUsed, total, haveTotal, ferr = memoryPair(c, 1, v.v, slash)
			if haveTotal {
				r.mem.total, r.mem.haveTotal = total, true
				r.set[colMemTotal] = true
			}
			break
		}
		r.mem.used, r.mem.haveUsed, ferr = memory(c, 1, v.v)
	case colMemTotal:
		r.mem.total, r.mem.haveTotal, ferr = memory(c, 1, firstOfPair(v.v, slash))
	case colMemFree:
		r.mem.free, r.mem.haveFree, ferr = memory(c, 1, firstOfPair(v.v, slash))
	case colTemp:
		d.TempC, ferr = reading(c, 1, firstOfPair(v.v, slash))
	case colUtilGPU:
		d.UtilGPU, ferr = reading(c, 1, firstOfPair(v.v, slash))
	case colUtilMem:
		d.UtilMem, ferr = reading(c, 1, firstOfPair(v.v, slash))
	case colPower:
		d.PowerW, ferr = reading(c, 1, firstOfPair(v.v, slash))
		if ferr == nil && slash > 0 {
			limit := column{kind: colPowerLimit, name: c.name}
			d.PowerLimitW, ferr = reading(&limit, 1, trimSpace(v.v[slash+1:]))
			r.set[colPowerLimit] = true
		}
	case colPowerLimit:
		d.PowerLimitW, ferr = reading(c, 1, firstOfPair(v.v, slash))
	}
	if ferr != nil {
		ferr.msg = fmt.Sprintf("%q: %s", v.src, ferr.msg)
		return ferr
	}
	r.set[k.kind] = true
	r.readings++
	r.from = append(r.from, fmt.Sprintf("%s from %q", readingName(k.kind, slash > 0), v.src))
	return nil
}

// firstOfPair is the first of "A / B", or v.
func firstOfPair(v []byte, slash int) []byte {
	if slash > 0 {
		return trimSpace(v[:slash])
	}
	return v
}

// readingName names a reading for notes.
func readingName(k colKind, pair bool) string {
	switch k {
	case colMemUsed:
		if pair {
			return "memory.used and memory.total"
		}
		return "memory.used"
	case colMemTotal:
		return "memory.total"
	case colMemFree:
		return "memory.free"
	case colTemp:
		return "temperature.gpu"
	case colUtilGPU:
		return "utilization.gpu"
	case colUtilMem:
		return "utilization.memory"
	case colPower:
		if pair {
			return "power.draw and its limit"
		}
		return "power.draw"
	case colPowerLimit:
		return "the power limit"
	}
	return "?"
}

// readLoose reads the values without a label by their units: one
// percentage is the utilization; one amount of memory the memory used, or
// of two the smaller is the used and the larger the total; one power the
// draw, or of two the smaller the draw and the larger the limit; a
// temperature the temperature. Values whose units leave their reading in
// doubt (two percentages, three amounts) are an error.
func (f *textFormat) readLoose(loose []*textValue) *fieldError {
	if len(loose) == 0 {
		return nil
	}
	var pct, mem, pwr, temp []*textValue
	for _, v := range loose {
		u := valueUnit(v.v)
		if len(u) == 0 {
			u = v.unit
		}
		switch {
		case string(u) == "%":
			pct = append(pct, v)
		case unitFits(colTemp, u):
			temp = append(temp, v)
		case unitFits(colPower, u):
			pwr = append(pwr, v)
		default:
			if _, ok := memoryScale(u); ok {
				mem = append(mem, v)
			}
		}
	}
	if len(pct) > 1 || len(mem) > 2 || len(pwr) > 2 || len(temp) > 1 {
		return &fieldError{1, "values without names whose units leave their readings in doubt (several percentages, or more than " +
			"two amounts of memory); give --columns, the --query-gpu list that wrote them"}
	}
	r := &f.rec
	set := func(k colKind, v *textValue) *fieldError {
		if r.set[k] {
			return &fieldError{1, fmt.Sprintf("%q: %s is in the line twice", v.src, readingName(k, false))}
		}
		c := column{kind: k, name: readingName(k, false), scale: 1 << 20, gpu: -1}
		if ferr := r.read(textKind{kind: k, col: c}, v); ferr != nil {
			return ferr
		}
		r.from[len(r.from)-1] += " (by its unit)"
		return nil
	}
	var ferr *fieldError
	if len(pct) == 1 {
		ferr = set(colUtilGPU, pct[0])
	}
	if len(temp) == 1 && ferr == nil {
		ferr = set(colTemp, temp[0])
	}
	switch {
	case ferr != nil:
	case len(mem) == 1:
		ferr = set(colMemUsed, mem[0])
	case len(mem) == 2:
		used, total := mem[0], mem[1]
		c := column{kind: colMemUsed, scale: 1 << 20}
		a, _, _ := memory(&c, 1, used.v)
		b, _, _ := memory(&c, 1, total.v)
		if a > b {
			used, total = total, used
		}
		if ferr = set(colMemUsed, used); ferr == nil {
			ferr = set(colMemTotal, total)
		}
	}
	switch {
	case ferr != nil:
	case len(pwr) == 1:
		ferr = set(colPower, pwr[0])
	case len(pwr) == 2:
		draw, limit := pwr[0], pwr[1]
		c := column{kind: colPower}
		a, _ := reading(&c, 1, draw.v)
		b, _ := reading(&c, 1, limit.v)
		if a > b {
			draw, limit = limit, draw
		}
		if ferr = set(colPower, draw); ferr == nil {
			ferr = set(colPowerLimit, limit)
		}
	}
	return ferr
}

// nameAfter returns a GPU's name written after its index, value i, in
// the same field ("GPU 0: NVIDIA GeForce RTX 3090"), or nil.
func (f *textFormat) nameAfter(i int) []byte {
	v := &f.values[i]
	fld := f.fields[v.field].text
	at := cap(fld) - cap(v.src) // where the value is in its field, which it is cut from
	if at < 0 || at+len(v.src) > len(fld) {
		return nil
	}
	rest := bytes.TrimLeft(fld[at+len(v.src):], " :-=")
	for j := i + 1; j < len(f.values) && f.values[j].field == v.field; j++ {
		if f.kinds[j].loose || f.kinds[j].kind != colIgnore {
			return nil // the field goes on with readings
		}
	}
	if len(rest) == 0 || !isLetter(rest[0]) {
		return nil
	}
	return trimSpace(rest)
}

// gpuVendors start the names of GPUs.
var gpuVendors = []string{"NVIDIA", "Tesla", "GeForce", "Quadro", "TITAN", "Titan", "RTX", "GTX"}

// gpuNameField returns a field that is a GPU's name on its own ("NVIDIA
// GeForce RTX 3090" in a row of values), or nil.
func gpuNameField(fields []textField) []byte {
	for _, fl := range fields {
		t := bytes.Trim(fl.text, `"' `)
		for _, v := range gpuVendors {
			if bytes.HasPrefix(t, []byte(v)) && bytes.IndexAny(t, ":=") < 0 {
				return t
			}
		}
	}
	return nil
}

// end finishes the GPU being gathered: a GPU with readings is a row. The
// first says, in a note, where its readings were read from.
func (f *textFormat) end() {
	r := &f.rec
	if r.readings > 0 {
		if !f.said {
			f.said = true
			f.notes.add("read as a script's lines: %s (line %d)", strings.Join(r.from, ", "), r.rw.line)
		}
		r.mem.fill(&r.rw)
		r.rw.ordinal = !r.indexed
		if r.rw.ordinal {
			r.rw.dev.Index = 0
		}
		f.out = append(f.out, r.rw)
	}
	from := r.from[:0]
	*r = textRecord{from: from}
}

// textClock reads the time of day a script's line has alone, at its start
// or on its own, for dating the log from its file.
func textClock(line []byte) (time.Duration, bool) {
	if tod, ok := clockLine(line); ok {
		return tod, true
	}
	var p timeParser
	p.loc = time.UTC
	lt, _, ok := p.leadingTime(line)
	return lt.clock, ok && lt.alone
}

// isAllocatorLine reports whether a line holds a PyTorch allocator's
// figures (torch.cuda.memory_allocated, memory_reserved, the caching
// allocator's "cached"): a process's tensors, not the GPU's memory.
func isAllocatorLine(b []byte) bool {
	for _, w := range [][]byte{[]byte("alloc"), []byte("reserved"), []byte("cached"), []byte("Alloc"), []byte("Reserved"), []byte("Cached")} {
		if bytes.Contains(b, w) {
			return true
		}
	}
	return false
}

// looksLikeTextLines reports whether the first lines of a log are a
// script's lines that textFormat reads: some line has GPU readings with
// names, or values with units under a status line ("[…] GPU Status:"),
// and a time on it or above it.
func looksLikeTextLines(loc *time.Location, lines [][]byte) bool {
	p := timeParser{loc: loc}
	var fields []textField
	var values []textValue
	dated := false
	for _, line := range lines {
		t := trimSpace(stripEscapes(line))
		if len(t) == 0 {
			continue
		}
		if p.isDateLine(t) {
			dated = true
			continue
		}
		_, rest, timed := p.leadingTime(t)
		if isAllocatorLine(rest) {
			continue
		}
		fields, values = scanText(rest, fields[:0], values[:0])
		named, loose, indexes := 0, 0, 0
		for i := range values {
			switch k := textKindOf(&values[i]); {
			case k.loose:
				loose++
			case k.kind == colIndex:
				indexes++
			case k.kind != colIgnore:
				named++
			}
		}
		switch {
		case (named > 0 || indexes > 0 && loose > 0) && (timed || dated):
			return true
		case loose > 0 && !timed && dated:
			return true // values by their units, under a status line
		case named == 0 && loose == 0 && timed:
			dated = true // a status line
		}
	}
	return false
}
