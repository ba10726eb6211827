package replay

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// formatAfterburner names MSI Afterburner's log for people.
const formatAfterburner = "MSI Afterburner log"

// afterburnerFormat reads MSI Afterburner's hardware monitoring log
// (HardwareMonitoring.hml, Windows), where each line starts with its
// record's type and time (day first):
//
//	00, 29-11-2026 09:00:00, Hardware monitoring log v1.6
//	01, 29-11-2026 09:00:00, NVIDIA GeForce RTX 3090
//	02, 29-11-2026 09:00:00, GPU temperature ,GPU usage ,FB usage ,Memory usage ,Core clock ,Power ,CPU usage
//	03, 29-11-2026 09:00:00, 0 ,°C ,0.000 ,100.000 ,10 , ,
//	80, 29-11-2026 09:00:00, 45.000 ,97.000 ,43.000 ,8595.000 ,1905.000 ,250.300 ,12.000
//
// 00 opens a log (Afterburner appends a new one at each start), 01 names
// the GPUs, 02 the sources, 03 each source's unit and range, and 80 is a
// sample. Of the sources, "GPU temperature", "GPU usage", "FB usage" (the
// memory controller's load), "Memory usage" (the memory used, in MB) and
// "Power" (when in W; in % it is a share of the board's limit) are read; on
// a machine with several GPUs their sources are "GPU1 temperature", "GPU2
// usage", and so on. Afterburner logs no memory total: the GPU's name (or
// --memory-total) gives it.
type afterburnerFormat struct {
	*input
	cols   []abColumn // of the last 02 line
	names  [][]byte   // the GPUs' names, of the last 01 line
	gpus   int        // how many GPUs the sources name
	sample int
	out    []row
	outAt  int
}

// abColumn is one source of an Afterburner log.
type abColumn struct {
	column
	gpu int // 0-based; -1 for a source that is not a GPU's
}

// isAfterburnerLine reports whether t is the first line of an Afterburner
// log: "00, <time>, Hardware monitoring log v1.6", or, of a copy saved
// without it, its 01 or 02 record at a day-first time.
func isAfterburnerLine(t []byte) bool {
	typ, rest, ok := bytes.Cut(t, []byte{','})
	if !ok {
		return false
	}
	switch string(typ) {
	case "00":
		return bytes.Contains(rest, []byte("Hardware monitoring log"))
	case "01", "02":
		stamp, _, ok := bytes.Cut(rest, []byte{','})
		_, isTime := parseDayFirst(trimSpace(stamp), time.UTC)
		return ok && isTime
	}
	return false
}

func newAfterburnerFormat(in *input) *afterburnerFormat { return &afterburnerFormat{input: in} }

func (f *afterburnerFormat) next(rw *row) error {
	for f.outAt == len(f.out) {
		f.out, f.outAt = f.out[:0], 0
		line, err := f.lr.next()
		if err != nil {
			return err
		}
		if err := f.readLine(trimSpace(line)); err != nil {
			return err
		}
	}
	*rw = f.out[f.outAt]
	f.outAt++
	return nil
}

// readLine files one record.
func (f *afterburnerFormat) readLine(t []byte) error {
	if len(t) == 0 {
		return nil
	}
	typ, rest, ok := bytes.Cut(t, []byte{','})
	if !ok {
		return f.errorAt(&fieldError{1, fmt.Sprintf("%q is not a record of an Afterburner log (TYPE, TIME, …)", clip(t, 40))})
	}
	stamp, rest, _ := bytes.Cut(rest, []byte{','})
	switch string(trimSpace(typ)) {
	case "00":
		f.cols, f.names, f.gpus = nil, nil, 0
	case "01":
		f.names = f.names[:0]
		for _, n := range bytes.Split(rest, []byte{','}) {
			if n = trimSpace(n); len(n) > 0 {
				f.names = append(f.names, n)
			}
		}
	case "02":
		f.sources(rest)
	case "03":
		f.unit(rest)
	case "80":
		return f.sampleLine(stamp, rest)
	}
	return nil // other records: the log's own marks
}

// sources reads the names of the sources (02).
func (f *afterburnerFormat) sources(rest []byte) {
	f.cols, f.gpus = f.cols[:0], 0
	var ignored []string
	for _, n := range bytes.Split(rest, []byte{','}) {
		name := string(trimSpace(n))
		c := abColumn{column: column{name: name, label: name, scale: 1 << 20}, gpu: -1}
		c.kind, c.gpu = afterburnerSource(name)
		if c.kind == colIgnore && name != "" {
			ignored = append(ignored, name)
		}
		f.gpus = max(f.gpus, c.gpu+1)
		f.cols = append(f.cols, c)
	}
	if len(ignored) > 0 {
		f.notes.add("Afterburner sources gpuwatch does not read, ignored: %s", listNames(ignored))
	}
}

// afterburnerSource finds the reading a source holds, and its GPU.
func afterburnerSource(name string) (colKind, int) {
	gpu := 0
	lower := strings.ToLower(name)
	if rest, ok := strings.CutPrefix(lower, "gpu"); ok {
		if num, what, ok := strings.Cut(rest, " "); ok && num != "" {
			if n, err := strconv.Atoi(num); err == nil && n >= 1 && n <= 64 {
				gpu, lower = n-1, what
			}
		}
	}
	switch strings.TrimPrefix(lower, "gpu ") {
	case "temperature":
		return colTemp, gpu
	case "usage":
		return colUtilGPU, gpu
	case "fb usage":
		return colUtilMem, gpu
	case "memory usage":
		return colMemUsed, gpu
	case "power":
		return colPower, gpu
	}
	return colIgnore, -1
}

// unit reads a source's unit (03: index, unit, min, max, …): memory in MB
// is MiB, as NVIDIA's tools mean it; power in % is not a power.
func (f *afterburnerFormat) unit(rest []byte) {
	fields := bytes.Split(rest, []byte{','})
	if len(fields) < 2 {
		return
	}
	i, ok := digits(trimSpace(fields[0]))
	if !ok || i >= len(f.cols) {
		return
	}
	c := &f.cols[i]
	u := trimSpace(fields[1])
	switch {
	case c.kind.isMemory():
		if s, ok := memoryScale(u); ok {
			c.scale = s
		}
	case c.kind == colPower && !unitFits(colPower, u):
		c.kind, c.gpu = colIgnore, -1
		f.notes.add("Afterburner's %s is in %s, a share of the power limit, not watts: not read", c.name, u)
	}
}

// sampleLine reads a sample (80): one row per GPU.
func (f *afterburnerFormat) sampleLine(stamp, rest []byte) error {
	if f.cols == nil {
		return f.errorAt(&fieldError{1, "a sample (80) before the names of the sources (02): the log's head is missing"})
	}
	ns, ok := parseDayFirst(trimSpace(stamp), f.tp.loc)
	if !ok {
		ns, ok = f.tp.parse(trimSpace(stamp))
	}
	if !ok {
		return f.errorAt(&fieldError{5, fmt.Sprintf("%q is not a time; want Afterburner's 29-11-2026 09:00:00", trimSpace(stamp))})
	}
	f.sample++
	first := len(f.out)
	for g := range f.gpus {
		var rw row
		rw.reset()
		rw.dev.Index, rw.ns, rw.line, rw.col, rw.sample = g, ns, f.lr.line, 5, f.sample
		if g < len(f.names) {
			rw.dev.Name = f.input.names.intern(f.names[g])
		}
		f.out = append(f.out, rw)
	}
	mems := make([]memReading, f.gpus)
	pos := cap(f.lr.last) - cap(rest) // where rest starts in the line
	for i := 0; len(rest) > 0 || i < len(f.cols); i++ {
		v, after, _ := bytes.Cut(rest, []byte{','})
		rest = after
		if i >= len(f.cols) {
			break
		}
		c := &f.cols[i]
		v = trimSpace(v)
		col := pos + 1
		pos += len(v) + 1
		if c.gpu < 0 || c.kind == colIgnore {
			continue
		}
		d := &f.out[first+c.gpu].dev
		var ferr *fieldError
		switch c.kind {
		case colMemUsed:
			mems[c.gpu].used, mems[c.gpu].haveUsed, ferr = memory(&c.column, col, v)
		case colTemp:
			d.TempC, ferr = reading(&c.column, col, v)
		case colUtilGPU:
			d.UtilGPU, ferr = reading(&c.column, col, v)
		case colUtilMem:
			d.UtilMem, ferr = reading(&c.column, col, v)
		case colPower:
			d.PowerW, ferr = reading(&c.column, col, v)
		}
		if ferr != nil {
			f.out = f.out[:first]
			return f.errorAt(ferr)
		}
	}
	for g := range mems {
		mems[g].fill(&f.out[first+g])
	}
	return nil
}

// parseDayFirst parses a time with the day first, as Afterburner writes
// it: "29-11-2026 09:00:00" (or with dots or slashes).
func parseDayFirst(b []byte, loc *time.Location) (int64, bool) {
	if len(b) != 19 || b[2] != b[5] || (b[2] != '-' && b[2] != '.' && b[2] != '/') || b[10] != ' ' || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	d, ok1 := digits(b[0:2])
	mo, ok2 := digits(b[3:5])
	y, ok3 := digits(b[6:10])
	h, ok4 := digits(b[11:13])
	mi, ok5 := digits(b[14:16])
	s, ok6 := digits(b[17:19])
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || !validDate(y, mo, d, h) || mi > 59 || s > 59 {
		return 0, false
	}
	return time.Date(y, time.Month(mo), d, h, mi, s, 0, loc).UnixNano(), true
}
