package replay

import (
	"io"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// format reads the rows of one layout of GPU log. Each layout lives in a
// file of its own: csv.go (nvidia-smi --query-gpu, scripts' CSVs, GPU-Z's
// log), table.go (nvidia-smi's default table), dmon.go (nvidia-smi dmon),
// gpustat.go (gpustat's text), afterburner.go (MSI Afterburner's log) and
// textlines.go (scripts' text lines); detect.go picks one from the first
// lines.
type format interface {
	// next reads lines until it has parsed one GPU's readings at one time
	// into rw. It returns io.EOF at the end of the log, a *ParseError for
	// a line it cannot read (a later call resumes after that line), or the
	// error of the underlying reader.
	next(rw *row) error
}

// row is one GPU's readings at one time, as a format read them.
type row struct {
	dev  gpu.Device
	ns   int64 // Unix nanoseconds
	line int   // where the row is
	col  int   // where its time is, for errors about it
	// sample, when above 0, numbers the samples of a format that knows
	// them (a table, a block under a date line): rows of one sample form
	// one snapshot. 0 leaves it to the rows' times and GPUs.
	sample int
	// ordinal says that the log does not name the GPU: its index is its
	// place among the rows of its sample.
	ordinal bool
	// usedOnly says that the log has memory.used but no total for it.
	usedOnly bool
}

// reset clears the row for the next reading: every reading unknown.
func (rw *row) reset() {
	nan := nanValue
	rw.dev = gpu.Device{UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan}
	rw.sample, rw.ordinal, rw.usedOnly = 0, false, false
}

// input is what every format reads with: the lines, the time parser, the
// options, and the strings seen.
type input struct {
	lr    *lineReader
	tp    timeParser
	opts  *Options
	names interner
	uuids interner
	notes notes
	host  string // the host the log names, if it does
	// reopen opens the log's file again, and says when it was last
	// written, for logs without times or dates; nil for a stream.
	reopen func() (io.ReadCloser, time.Time, error)
	day    clockDay // the day of the times of day the log has alone
	// peekDated says that the first lines of the log have a date line.
	peekDated bool
	shellSaid bool // lines a shell wrote were skipped, and a note said so
}

// layoutChange is what a format returns when the log goes on in another
// layout (nvidia-smi's tables, then a CSV with its own header): the Reader
// reads on with f, whose first line is the line just read.
type layoutChange struct {
	f    format
	kind string
}

func (*layoutChange) Error() string { return "the log changes layout" }

// errorAt makes a *ParseError of a problem on the line just read.
func (in *input) errorAt(ferr *fieldError) *ParseError {
	return &ParseError{File: in.lr.name, Line: in.lr.line, Col: ferr.col, Msg: ferr.msg}
}

// memReading gathers a row's memory columns, which determine each other.
type memReading struct {
	used, total, free, reserved                 uint64
	haveUsed, haveTotal, haveFree, haveReserved bool
}

// fill sets the device's memory from what the row had. memory.used,
// memory.total, memory.free and memory.reserved determine each other:
// nvidia-smi counts the driver's reserved memory in neither used nor free.
// Memory is known (MemTotal > 0) only when used and total are; a used
// without a total is kept (usedOnly), never a total without used, which
// would read as an empty GPU.
func (m *memReading) fill(rw *row) {
	d := &rw.dev
	var res uint64
	if m.haveReserved {
		res = m.reserved
		d.MemReserved = m.reserved
	}
	if !m.haveUsed && m.haveTotal && m.haveFree && m.free <= m.total-min(res, m.total) {
		m.used, m.haveUsed = m.total-min(res, m.total)-m.free, true
	}
	if !m.haveTotal && m.haveUsed && m.haveFree && m.free <= maxUint64-res && m.used <= maxUint64-m.free-res {
		m.total, m.haveTotal = m.used+m.free+res, true
	}
	if m.haveUsed {
		d.MemUsed = m.used
		if m.haveTotal {
			d.MemTotal = m.total
		} else {
			rw.usedOnly = true
		}
	}
	if d.MemTotal == 0 {
		d.MemReserved = 0
	}
}
