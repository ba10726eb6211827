package replay

import (
	"bytes"
	"cmp"
	"fmt"
	"strings"
	"time"
)

// dmonFormat reads nvidia-smi dmon's output: a header of column names and
// one of units, printed again every few screens, then a line per GPU per
// interval, columns apart by spaces and "-" for a reading the GPU does not
// have:
//
//	#Date       Time        gpu    pwr  gtemp  mtemp     sm    mem    enc    dec   mclk   pclk     fb   bar1
//	#YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      %      %      %    MHz    MHz     MB     MB
//	 20261129   09:00:00      0     71     31      -     97     43      0      0   2619   1980  40963      5
//
// gpu is the index, pwr the power, gtemp (temp in old drivers) the
// temperature, sm the utilization, mem the memory's utilization and fb
// (with -s m) the memory used, in MiB. dmon has no memory total (see
// Options.MemoryTotal) and no GPU names.
//
// Times come from the Date and Time columns (-o DT); without them, from a
// date line above the rows (`date; nvidia-smi dmon -c 1` in cron), the
// samples under it 1 s apart (dmon's -d default); and without either, the
// samples are taken 1 s apart, the last at the file's modification time,
// and a note says so.
type dmonFormat struct {
	*input
	cols      []column // of the last header
	dateCol   int      // -1 without
	timeCol   int
	sample    int   // samples so far
	lastIndex int   // the GPU of the previous row
	baseNS    int64 // the time of the sample at baseSample, when the rows have no times
	baseAt    int   // the sample baseNS is the time of
	haveBase  bool
}

// dmonColumns are dmon's column names that gpuwatch reads.
var dmonColumns = map[string]colKind{
	"gpu": colIndex, "pwr": colPower, "gtemp": colTemp, "temp": colTemp, "sm": colUtilGPU, "mem": colUtilMem, "fb": colMemUsed,
}

func newDmonFormat(in *input) *dmonFormat {
	return &dmonFormat{input: in, dateCol: -1, timeCol: -1, lastIndex: -1}
}

// isDmonHeader reports whether t is dmon's header line: "# gpu   pwr ..."
// or "#Date       Time        gpu ...".
func isDmonHeader(t []byte) bool {
	if len(t) == 0 || t[0] != '#' {
		return false
	}
	f := bytes.Fields(t[1:])
	return len(f) >= 2 && (string(f[0]) == "gpu" || string(f[0]) == "Date" || string(f[0]) == "Time") && hasWord(t[1:], "gpu")
}

func (f *dmonFormat) next(rw *row) error {
	for {
		line, err := f.lr.next()
		if err != nil {
			return err
		}
		t := trimSpace(line)
		switch {
		case len(t) == 0:
			continue
		case t[0] == '#':
			if isDmonHeader(t) {
				f.header(t)
			}
			continue // the units line, or a comment
		}
		if !isDmonRow(t) {
			if ns, ok, ferr := f.dateLine(t); ok {
				if ferr != nil {
					return f.errorAt(ferr)
				}
				f.baseNS, f.baseAt, f.haveBase = ns, f.sample+1, true
				f.lastIndex = -1
				continue
			}
		}
		if ferr := f.parseRow(line, rw); ferr != nil {
			return f.errorAt(ferr)
		}
		return nil
	}
}

// isDmonRow tells cheaply that t is a line of dmon's values, not a date
// line: its first word is a GPU index or dmon's YYYYMMDD.
func isDmonRow(t []byte) bool {
	end := 0
	for end < len(t) && t[end] >= '0' && t[end] <= '9' {
		end++
	}
	return end > 0 && (end <= 3 || end == 8) && (end == len(t) || t[end] == ' ' || t[end] == '\t')
}

// header reads dmon's column names.
func (f *dmonFormat) header(t []byte) {
	names := bytes.Fields(t[1:])
	f.cols, f.dateCol, f.timeCol = f.cols[:0], -1, -1
	var ignored []string
	for i, n := range names {
		name := string(n)
		switch name {
		case "Date":
			f.dateCol = i
		case "Time":
			f.timeCol = i
		}
		kind := dmonColumns[name]
		if kind == colIgnore && name != "Date" && name != "Time" {
			ignored = append(ignored, name)
		}
		f.cols = append(f.cols, column{kind: kind, name: name, scale: 1 << 20})
	}
	if len(ignored) > 0 {
		f.notes.add("dmon columns gpuwatch does not read, ignored: %s", strings.Join(ignored, ", "))
	}
}

// parseRow reads one GPU's line.
func (f *dmonFormat) parseRow(line []byte, rw *row) *fieldError {
	if f.cols == nil {
		return &fieldError{1, "a dmon line before dmon's header (# gpu pwr gtemp ...); keep the header in the log"}
	}
	rw.reset()
	rw.line = f.lr.line
	var mem memReading
	var date, clock []byte
	var dateAt int
	n, pos := 0, 0
	for pos < len(line) {
		for pos < len(line) && (line[pos] == ' ' || line[pos] == '\t') {
			pos++
		}
		if pos == len(line) {
			break
		}
		start := pos
		for pos < len(line) && line[pos] != ' ' && line[pos] != '\t' {
			pos++
		}
		v, col := line[start:pos], start+1
		if n >= len(f.cols) {
			return &fieldError{col, fmt.Sprintf("the line has more values than dmon's header has columns (%d)", len(f.cols))}
		}
		var ferr *fieldError
		switch {
		case n == f.dateCol:
			date, dateAt = v, col
		case n == f.timeCol:
			clock = v
			if dateAt == 0 {
				dateAt = col
			}
		default:
			ferr = f.value(rw, &mem, &f.cols[n], col, v)
		}
		if ferr != nil {
			return ferr
		}
		n++
	}
	if n < len(f.cols) {
		return &fieldError{len(line) + 1, fmt.Sprintf("the line has %d values, dmon's header has %d columns: the line is cut short", n, len(f.cols))}
	}
	mem.fill(rw)
	if rw.dev.Index <= f.lastIndex {
		f.sample++
	}
	if f.lastIndex < 0 {
		f.sample++
	}
	f.lastIndex = rw.dev.Index
	return f.rowTime(rw, date, clock, dateAt)
}

// value reads one value of a line.
func (f *dmonFormat) value(rw *row, mem *memReading, c *column, col int, v []byte) *fieldError {
	var ferr *fieldError
	switch c.kind {
	case colIndex:
		n, ok := digits(v)
		if !ok {
			return &fieldError{col, fmt.Sprintf("gpu: %q is not a GPU index", v)}
		}
		rw.dev.Index = n
	case colPower:
		rw.dev.PowerW, ferr = reading(c, col, v)
	case colTemp:
		rw.dev.TempC, ferr = reading(c, col, v)
	case colUtilGPU:
		rw.dev.UtilGPU, ferr = reading(c, col, v)
	case colUtilMem:
		rw.dev.UtilMem, ferr = reading(c, col, v)
	case colMemUsed:
		mem.used, mem.haveUsed, ferr = memory(c, col, v)
	}
	return ferr
}

// rowTime gives the row its time: its Date and Time, or its sample's place
// after the last date line (or the anchor at the file's end).
func (f *dmonFormat) rowTime(rw *row, date, clock []byte, col int) *fieldError {
	switch {
	case f.timeCol >= 0 && f.dateCol >= 0:
		var ts [32]byte // "20261129" "09:00:00" as "2026-11-29 09:00:00"
		ok := len(date) == 8 && len(clock) <= len(ts)-11
		if ok {
			b := append(append(append(append(append(append(ts[:0], date[:4]...), '-'), date[4:6]...), '-'), date[6:]...), ' ')
			rw.ns, ok = f.tp.parse(append(b, clock...))
		}
		if !ok {
			return &fieldError{col, fmt.Sprintf("date and time %q %q are not dmon's YYYYMMDD HH:MM:SS", date, clock)}
		}
		rw.col = col
		return nil
	case f.timeCol >= 0:
		return &fieldError{col, "dmon's Time column alone has no date: run dmon with -o DT (date and time)"}
	}
	if !f.haveBase {
		if ferr := f.anchor(); ferr != nil {
			return ferr
		}
	}
	rw.ns = f.baseNS + int64(f.sample-f.baseAt)*int64(f.step())
	rw.col, rw.sample = 1, f.sample
	return nil
}

// step is how far apart samples without times are: Options.Step, or dmon's
// default of 1 s.
func (f *dmonFormat) step() time.Duration { return cmp.Or(f.opts.Step, time.Second) }

// anchor times a log without times: samples a step apart, the last at
// the file's modification time.
func (f *dmonFormat) anchor() *fieldError {
	const why = "dmon output without times (no -o DT, no date line above it)"
	again, mod, done, ferr := f.reread(why)
	if ferr != nil {
		ferr.msg += "; or run dmon with -o DT"
		return ferr
	}
	samples := countDmonSamples(again.lr)
	done()
	f.baseNS, f.baseAt, f.haveBase = mod.UnixNano()-int64(max(samples-1, 0))*int64(f.step()), 1, true
	apart := "1 s apart (dmon's -d default)"
	if f.opts.Step > 0 {
		apart = f.opts.Step.String() + " apart (--step)"
	}
	f.notes.add("%s: taking its %d samples %s, the last at the file's modification time, %s; run dmon with -o DT to log times",
		why, samples, apart, mod.In(f.tp.loc).Format(time.DateTime))
	return nil
}

// countDmonSamples counts the samples of timeless dmon output: a sample
// starts at each line whose GPU index is not above the previous line's.
func countDmonSamples(lr *lineReader) int {
	samples, last := 0, -1
	for {
		line, err := lr.next()
		if err != nil {
			return samples
		}
		t := trimSpace(line)
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		f := bytes.Fields(t)
		i, ok := digits(f[0])
		if !ok {
			continue
		}
		if i <= last || last < 0 {
			samples++
		}
		last = i
	}
}
