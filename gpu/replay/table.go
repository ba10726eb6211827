package replay

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// tableFormat reads nvidia-smi's default output, printed again and again
// (watch, a shell loop, cron), each table under the date line nvidia-smi
// prints above it. Every driver generation's table is read: the 80-column
// one of old drivers, the wider one of 530 and later, with or without the
// MIG column, with or without the GI and CI columns in the processes:
//
//	Sun Nov 29 09:00:00 2026
//	+---------------------------------------------------------------------------------------+
//	| NVIDIA-SMI 535.129.03             Driver Version: 535.129.03   CUDA Version: 12.2     |
//	|-----------------------------------------+----------------------+----------------------+
//	| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
//	| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
//	|                                         |                      |               MIG M. |
//	|=========================================+======================+======================|
//	|   0  NVIDIA H100 80GB HBM3          On  | 00000000:18:00.0 Off |                    0 |
//	| N/A   31C    P0              71W / 700W |  40963MiB / 81559MiB |     97%      Default |
//	|                                         |                      |             Disabled |
//	+-----------------------------------------+----------------------+----------------------+
//	...
//	| Processes:                                                                            |
//	|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
//	|        ID   ID                                                             Usage      |
//	|=======================================================================================|
//	|    0   N/A  N/A   1234567      C   python train.py                           40950MiB |
//	+---------------------------------------------------------------------------------------+
//
// A table is one snapshot at its date line's time: each GPU's memory,
// utilization, temperature, power and power limit, and its compute
// processes (by PID and name; the table names no users). Graphics
// processes are not counted. A GPU in MIG mode has its instances in the
// "MIG devices" section, each with its memory, and the processes with a
// GI and CI ID are theirs:
//
//	| MIG devices:                                                                          |
//	+------------------+--------------------------------+-----------+-----------------------+
//	| GPU  GI  CI  MIG |                   Memory-Usage |        Vol|      Shared           |
//	|      ID  ID  Dev |                     BAR1-Usage | SM     Unc| CE ENC DEC OFA JPG    |
//	|==================+================================+===========+=======================|
//	|  0    1   0   0  |            9801MiB / 40192MiB  | 42      0 |  3   0    2    0    0 |
//	|                  |                 0MiB / 65535MiB |           |                       |
//
// The table says neither the instances' UUIDs nor their profiles: an
// instance is named after its GPU (gpu.InstanceUUID of "gpu0"), its
// profile left unsaid, and its GPU, which keeps the card's readings,
// leaves its memory and utilization to its instances.
type tableFormat struct {
	*input
	dateNS   int64
	haveDate bool
	section  tableSection
	gpus     []row // the current table's GPUs
	lastGPU  int   // the line naming the last GPU, whose readings are next
	out      []row // a finished table's GPUs, returned from outAt on
	outAt    int
	sample   int
	cells    []tableCell // of the line being read
	words    []span      // of the cell being read
	// then is the layout the log goes on in (a CSV block after the
	// tables), handed to the Reader once the tables' GPUs are out.
	then *layoutChange
}

// span is where a word is in the text it was cut from.
type span struct{ start, end int }

// splitWords appends where the words of b (apart by blanks) are to dst.
func splitWords(dst []span, b []byte) []span {
	dst = dst[:0]
	for i := 0; i < len(b); {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
		j := i
		for j < len(b) && b[j] != ' ' && b[j] != '\t' {
			j++
		}
		if j > i {
			dst = append(dst, span{i, j})
		}
		i = j
	}
	return dst
}

// tableSection says which part of a table the reader is in.
type tableSection uint8

const (
	outside     tableSection = iota
	banner                   // the version line
	gpuHeading               // the GPUs' column names
	gpuRows                  // the GPUs
	procHeading              // the processes' column names
	procRows                 // the processes
	migRows                  // MIG devices
)

func newTableFormat(in *input) *tableFormat { return &tableFormat{input: in} }

func (f *tableFormat) next(rw *row) error {
	for f.outAt == len(f.out) {
		if f.then != nil {
			then := f.then
			f.then = nil
			return then
		}
		if err := f.readLine(); err != nil {
			return err
		}
	}
	*rw = f.out[f.outAt]
	f.outAt++
	return nil
}

// readLine reads one line of the log and files what it says. A finished
// table moves to f.out.
func (f *tableFormat) readLine() error {
	line, err := f.lr.next()
	if err != nil {
		if err == io.EOF {
			f.flush()
			if f.outAt < len(f.out) {
				return nil
			}
		}
		return err
	}
	t := trimSpace(line)
	switch {
	case len(t) == 0:
		return nil
	case t[0] == '+':
		if f.section == procRows || f.section == procHeading && len(f.gpus) > 0 {
			f.flush()
		}
		return nil
	case t[0] != '|':
		return f.outsideLine(t)
	}
	inner := t[1:]
	switch {
	case bytes.Contains(inner, []byte("NVIDIA-SMI")) && !bytes.Contains(inner, []byte("has failed")):
		f.flush()
		f.section = banner
	case bytes.HasPrefix(inner, []byte("==")):
		switch f.section {
		case gpuHeading:
			f.section = gpuRows
		case procHeading:
			f.section = procRows
		}
	case bytes.HasPrefix(inner, []byte("--")):
		// a rule between the banner and the headings, or between GPUs
	case hasWord(inner, "GPU") && hasWord(inner, "Name") && f.section != procHeading:
		f.section = gpuHeading
	case bytes.Contains(inner, []byte("Processes:")):
		f.section = procHeading
	case bytes.Contains(inner, []byte("MIG devices:")):
		f.section = migRows
	case f.section == gpuRows:
		return f.gpuLine(line)
	case f.section == procRows:
		return f.processLine(line)
	case f.section == migRows:
		return f.migLine(line)
	}
	return nil
}

// migLine reads a line of the MIG devices: an instance's first ("|  0
// 1   0   0  |  9801MiB / 40192MiB  | 42  0 | ... |"), with its GPU, GI
// and CI IDs and its memory; its second (BAR1) and the headings are not
// read.
func (f *tableFormat) migLine(line []byte) error {
	f.cells = tableCells(f.cells, line)
	if len(f.cells) < 2 {
		return nil
	}
	text := f.cells[0].text
	f.words = splitWords(f.words, text)
	w := f.words
	if len(w) < 3 || !isDigits(text[w[0].start:w[0].end]) {
		return nil // a heading or a second line
	}
	index, _ := digits(text[w[0].start:w[0].end])
	gi, ok1 := digits(text[w[1].start:w[1].end])
	ci, ok2 := digits(text[w[2].start:w[2].end])
	parent := -1
	for i := range f.gpus {
		if f.gpus[i].dev.Index == index && f.gpus[i].dev.MIG == nil {
			parent = i
		}
	}
	if !ok1 || !ok2 || parent < 0 {
		return f.errorAt(&fieldError{f.cells[0].col, "a MIG device of nvidia-smi's table has its GPU, GI and CI IDs, and a GPU of the table above it"})
	}
	p := &f.gpus[parent].dev
	p.MIGEnabled = true
	p.MemUsed, p.MemTotal, p.MemReserved = 0, 0, 0 // its instances'
	p.UtilGPU, p.UtilMem = nanValue, nanValue
	var rw row
	rw.reset()
	rw.dev.Index, rw.dev.Name = index, p.Name
	rw.dev.UUID = gpu.InstanceUUID(instanceParent(p), gi, ci)
	rw.dev.MIG = &gpu.MIG{ParentUUID: p.UUID, GPUInstance: gi, ComputeInstance: ci}
	rw.ns, rw.line, rw.col, rw.sample = f.dateNS, f.lr.line, 1, 0
	mem := f.cells[1]
	used, total, ok := bytes.Cut(mem.text, []byte("/"))
	if !ok {
		return f.errorAt(&fieldError{mem.col, fmt.Sprintf("memory %q is not USED / TOTAL, as in 9801MiB / 40192MiB", trimSpace(mem.text))})
	}
	var m memReading
	var ferr *fieldError
	if m.used, m.haveUsed, ferr = memory(&tableMemUsed, mem.col+leadingSpace(used), trimSpace(used)); ferr != nil {
		return f.errorAt(ferr)
	}
	if m.total, m.haveTotal, ferr = memory(&tableMemTotal, mem.col+len(used)+1+leadingSpace(total), trimSpace(total)); ferr != nil {
		return f.errorAt(ferr)
	}
	m.fill(&rw)
	f.gpus = append(f.gpus, rw)
	return nil
}

// instanceParent is what names a MIG instance's GPU in the instance's
// UUID: the GPU's UUID, or without one (the table says none) its index.
func instanceParent(d *gpu.Device) string {
	if d.UUID != "" {
		return d.UUID
	}
	return "gpu" + strconv.Itoa(d.Index)
}

// outsideLine reads a line outside the table's frame: the date above it,
// watch's title, or nvidia-smi's message when it could not read the GPUs.
func (f *tableFormat) outsideLine(t []byte) error {
	if ns, ok, ferr := f.dateLine(t); ok {
		if ferr != nil {
			return f.errorAt(ferr)
		}
		f.flush()
		f.dateNS, f.haveDate = ns, true
		return nil
	}
	if isWatchTitle(t) {
		f.watchHost(t)
		return nil
	}
	if bytes.HasPrefix(t, []byte("NVIDIA-SMI has failed")) || bytes.HasPrefix(t, []byte("No devices were found")) ||
		bytes.HasPrefix(t, []byte("Failed to initialize NVML")) {
		return nil // no GPUs then: the next table's GPUs start again
	}
	if isShellOutput(t) {
		f.shellNote(t)
		return nil
	}
	if h, herr := parseHeader(t); herr == nil && bytes.IndexByte(t, ',') > 0 && !looksLikeData(t) {
		// A CSV block with its own header after the tables.
		f.flush()
		f.lr.unread()
		csv := newCSVFormat(f.input, h)
		if f.haveDate {
			csv.blockNS, csv.block = f.dateNS, 1
		}
		kind := formatCSV
		if h.gpuz {
			kind = formatGPUZ
		}
		f.then = &layoutChange{csv, kind}
		return nil
	}
	return f.errorAt(&fieldError{1, fmt.Sprintf("%q is not part of nvidia-smi's table, nor a date line above it; "+
		"is the log the output of nvidia-smi (printed again and again) and nothing else?", clip(t, 40))})
}

// watchHost takes the host from watch's title: "Every 2.0s: nvidia-smi
// node1: Sun Nov 29 09:00:00 2026".
func (f *tableFormat) watchHost(t []byte) {
	fields := bytes.Fields(t)
	for i, w := range fields {
		if i >= 3 && bytes.HasSuffix(w, []byte{':'}) && len(w) > 1 && f.host == "" {
			f.host = string(w[:len(w)-1])
			return
		}
	}
}

// gpuLine reads a line of a GPU: its first ("|   0  NVIDIA H100 ...  On  |
// bus | ecc |"), its second ("| N/A 31C P0 71W / 700W | 4MiB / 81559MiB |
// 0% Default |") or its third (MIG mode), which is not read.
func (f *tableFormat) gpuLine(line []byte) error {
	f.cells = tableCells(f.cells, line)
	cells := f.cells
	if len(cells) < 3 {
		return f.errorAt(&fieldError{1, "a GPU's line of nvidia-smi's table has three cells between |; this one has " +
			strconv.Itoa(len(cells))})
	}
	text := cells[0].text
	f.words = splitWords(f.words, text)
	w := f.words
	switch {
	case len(w) == 0:
		return nil // the MIG mode line
	case isDigits(text[w[0].start:w[0].end]) && !bytes.Contains(cells[1].text, []byte("MiB")):
		if !f.haveDate {
			return f.errorAt(&fieldError{1, "a table without its date line: nvidia-smi prints the date and time above each table; " +
				"keep that line in the log (or print `date` before each nvidia-smi)"})
		}
		var rw row
		rw.reset()
		rw.dev.Index, _ = digits(text[w[0].start:w[0].end])
		if len(w) > 2 {
			rw.dev.Name = f.names.intern(text[w[1].start:w[len(w)-2].end])
		}
		rw.ns, rw.line, rw.col = f.dateNS, f.lr.line, 1
		f.gpus = append(f.gpus, rw)
		f.lastGPU = f.lr.line
		return nil
	case len(f.gpus) == 0 || f.lastGPU != f.lr.line-1:
		return f.errorAt(&fieldError{cells[0].col, "a GPU's readings without the line naming the GPU above them"})
	}
	if err := f.readings(&f.gpus[len(f.gpus)-1], text, w, cells); err != nil {
		f.gpus = f.gpus[:len(f.gpus)-1] // a GPU without its readings is not in the sample
		return err
	}
	return nil
}

// readings reads a GPU's second line: fan, temperature, performance state,
// power draw and cap; memory used and total; utilization.
func (f *tableFormat) readings(rw *row, text []byte, w []span, cells []tableCell) error {
	d := &rw.dev
	if len(w) >= 2 {
		d.TempC = tableNumber(text[w[1].start:w[1].end], "C")
	}
	if slash := bytes.LastIndexByte(text, '/'); slash > 0 { // the fan may say N/A
		used, limit := trailingWord(text[:slash]), leadingWord(text[slash+1:])
		d.PowerW = tableNumber(used, "W")
		d.PowerLimitW = tableNumber(limit, "W")
	}
	used, total, ok := bytes.Cut(cells[1].text, []byte("/"))
	if !ok {
		return f.errorAt(&fieldError{cells[1].col, fmt.Sprintf("memory %q is not USED / TOTAL, as in 4MiB / 81559MiB", trimSpace(cells[1].text))})
	}
	var m memReading
	var ferr *fieldError
	if m.used, m.haveUsed, ferr = memory(&tableMemUsed, cells[1].col+leadingSpace(used), trimSpace(used)); ferr != nil {
		return f.errorAt(ferr)
	}
	at := cells[1].col + len(used) + 1
	if m.total, m.haveTotal, ferr = memory(&tableMemTotal, at+leadingSpace(total), trimSpace(total)); ferr != nil {
		return f.errorAt(ferr)
	}
	m.fill(rw)
	if util := leadingWord(cells[2].text); len(util) > 0 {
		d.UtilGPU = tableNumber(util, "%")
	}
	return nil
}

// The memory columns of the table, for reading its values and for errors.
var (
	tableMemUsed    = column{kind: colMemUsed, name: "memory used", scale: 1 << 20}
	tableMemTotal   = column{kind: colMemTotal, name: "memory total", scale: 1 << 20}
	tableProcMemory = column{kind: colMemUsed, name: "process memory", scale: 1 << 20}
)

// leadingWord and trailingWord return the first and the last word of b.
func leadingWord(b []byte) []byte {
	b = trimSpace(b)
	if i := bytes.IndexAny(b, " \t"); i >= 0 {
		return b[:i]
	}
	return b
}

func trailingWord(b []byte) []byte {
	b = trimSpace(b)
	if i := bytes.LastIndexAny(b, " \t"); i >= 0 {
		return b[i+1:]
	}
	return b
}

// tableNumber reads a reading such as "31C", "71W" or "97%"; NaN when the
// table says N/A, ERR! or the like.
func tableNumber(v []byte, unit string) float64 {
	num, ok := bytes.CutSuffix(v, []byte(unit))
	if !ok {
		return nanValue
	}
	f, ok := parseFloat(num)
	if !ok {
		return nanValue
	}
	return f
}

// isCompute reports whether a process type computes: C, and C+G (or M+C)
// for a process that also draws.
func isCompute(typ []byte) bool { return bytes.IndexByte(typ, 'C') >= 0 }

// processLine reads a process of the table: "|    0   N/A  N/A   1234567
// C   python train.py   40950MiB |" (the GI and CI columns are only in
// tables of drivers 450 and later).
func (f *tableFormat) processLine(line []byte) error {
	f.cells = tableCells(f.cells, line)
	if len(f.cells) == 0 {
		return nil
	}
	cell := f.cells[0]
	text := cell.text
	f.words = splitWords(f.words, text)
	w := f.words
	word := func(i int) []byte { return text[w[i].start:w[i].end] }
	if len(w) == 0 || !isDigits(word(0)) {
		return nil // "No running processes found"
	}
	typ := -1
	for i := 2; i < len(w)-1; i++ {
		if isProcessType(word(i)) && isDigits(word(i-1)) {
			typ = i
			break
		}
	}
	if typ < 0 {
		return f.errorAt(&fieldError{cell.col, "a process line of nvidia-smi's table has GPU, PID, Type, Process name and GPU Memory; " +
			"this one has no type (C, G or C+G) after its PID"})
	}
	if !isCompute(word(typ)) {
		return nil
	}
	gpuIndex, _ := digits(word(0))
	pid, _ := digits(word(typ - 1))
	// A process of a MIG instance has its GI and CI IDs after its GPU.
	gi, ci, inInstance := -1, -1, false
	if typ >= 4 {
		var ok1, ok2 bool
		gi, ok1 = digits(word(1))
		ci, ok2 = digits(word(2))
		inInstance = ok1 && ok2
	}
	p := gpu.Process{PID: pid}
	if typ+1 < len(w)-1 {
		p.Command = f.names.intern(text[w[typ+1].start:w[len(w)-2].end])
	}
	mem, _, ferr := memory(&tableProcMemory, cell.col+w[len(w)-1].start, word(len(w)-1))
	if ferr != nil {
		return f.errorAt(ferr)
	}
	p.MemUsed = mem
	for i := range f.gpus {
		d := &f.gpus[i].dev
		if d.Index != gpuIndex || d.MIGEnabled || (d.MIG != nil) != inInstance {
			continue
		}
		if inInstance && (d.MIG.GPUInstance != gi || d.MIG.ComputeInstance != ci) {
			continue
		}
		d.Processes = append(d.Processes, p)
		return nil
	}
	return nil // a process of a GPU the table does not list
}

func isProcessType(b []byte) bool {
	switch string(b) {
	case "C", "G", "C+G", "M", "M+C", "M+G", "M+C+G":
		return true
	}
	return false
}

// flush ends the current table: its GPUs are one sample.
func (f *tableFormat) flush() {
	f.section = outside
	if len(f.gpus) == 0 {
		return
	}
	f.sample++
	for i := range f.gpus {
		f.gpus[i].sample = f.sample
	}
	// Each GPU's MIG instances after it, as every source orders them.
	slices.SortStableFunc(f.gpus, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.dev.Index, b.dev.Index), gpu.CompareInstances(a.dev.MIG, b.dev.MIG))
	})
	if f.outAt == len(f.out) {
		f.out, f.outAt = f.out[:0], 0
	}
	f.out = append(f.out, f.gpus...)
	f.gpus = f.gpus[:0]
}

// tableCell is the text between two | of a table line, and the column
// (1-based) where it starts.
type tableCell struct {
	text []byte
	col  int
}

// tableCells splits a line of the table at its | marks, into cells.
func tableCells(cells []tableCell, line []byte) []tableCell {
	cells = cells[:0]
	start := bytes.IndexByte(line, '|')
	for start >= 0 {
		end := bytes.IndexByte(line[start+1:], '|')
		if end < 0 {
			break
		}
		cells = append(cells, tableCell{line[start+1 : start+1+end], start + 2})
		start += 1 + end
	}
	return cells
}

// hasWord reports whether w is one of the words of b.
func hasWord(b []byte, w string) bool {
	for i := bytes.Index(b, []byte(w)); i >= 0; {
		end := i + len(w)
		if (i == 0 || b[i-1] == ' ' || b[i-1] == '\t') && (end == len(b) || b[end] == ' ' || b[end] == '\t') {
			return true
		}
		next := bytes.Index(b[end:], []byte(w))
		if next < 0 {
			return false
		}
		i = end + next
	}
	return false
}

// isTableLine reports whether a line of a log's start is part of
// nvidia-smi's table: its frame or its version banner.
func isTableLine(t []byte) bool {
	return bytes.HasPrefix(t, []byte("+---")) || bytes.HasPrefix(t, []byte("| NVIDIA-SMI"))
}
