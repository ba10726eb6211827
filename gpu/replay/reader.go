// Package replay reads nvidia-smi CSV logs, the kind users already collect
// with
//
//	nvidia-smi --query-gpu=timestamp,index,name,uuid,memory.used,memory.total,... --format=csv -l 5
//
// and plays them back as a gpu.Source, at the log's own times, so that rules
// can be evaluated over a day of data in a fraction of a second.
//
// Columns may come in any order and any subset, with or without units in the
// values (--format=csv,nounits), but the log needs a timestamp column and an
// index or uuid column. Readings nvidia-smi reports as "[N/A]",
// "[Not Supported]" and the like are NaN (memory: unknown).
//
// # Grouping rows into snapshots
//
// nvidia-smi writes one row per GPU per sample, the GPUs of one sample a few
// milliseconds apart. The reader groups consecutive rows into one snapshot
// and starts a new snapshot at a row whose GPU is already in the current
// group, or whose time is more than one second (the grouping slack) after
// the group's first row. A snapshot's time is its first row's time.
//
// Rows must be in time order: a row more than the slack before the group's
// first row, or a row that starts a snapshot earlier than the previous
// snapshot, is an error.
package replay

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// Slack is how far apart in time the rows of one sample may be.
const Slack = time.Second

const (
	maxLine       = 1 << 20 // longest line read; an nvidia-smi row is ~200 bytes
	maxInterned   = 4096    // distinct names and UUIDs kept; more means garbage input
	logFirstSkips = 5       // bad rows logged one by one under SkipBad
	numRecent     = 8       // names and UUIDs tried before the intern map
)

var errClosed = errors.New("replay: reader is closed")

var _ gpu.Source = (*Reader)(nil)

// Options configures a Reader.
type Options struct {
	// Host is the Snapshot.Host of every snapshot.
	Host string
	// Location is the time zone of the log's timestamps, which nvidia-smi
	// writes as local wall-clock time without a zone; nil means UTC.
	// RFC 3339 timestamps carry their own zone and ignore it.
	Location *time.Location
	// SkipBad skips malformed rows instead of failing on them; Skipped
	// counts them and the first few are logged.
	SkipBad bool
	// Logger receives warnings about skipped rows; nil discards them.
	Logger *slog.Logger
	// Warnings, when set, receives the warnings about skipped rows instead
	// of Logger, as plain lines ("warning: FILE:LINE:COL: …; row
	// skipped"), for commands that print their warnings for people.
	Warnings io.Writer
}

// Reader reads snapshots from an nvidia-smi CSV log. It implements
// gpu.Source. A Reader is used by one goroutine.
type Reader struct {
	name   string
	opts   Options
	log    *slog.Logger
	br     *bufio.Reader
	closer io.Closer
	closed bool
	eof    bool
	ioErr  error

	hdr  header
	tp   timeParser
	line int    // number of the last line read
	long []byte // holds lines longer than the bufio buffer

	strs        map[string]string // interned names and UUIDs
	recentUUIDs [numRecent]string
	recentNames [numRecent]string
	uuidIndex   map[string]int // GPU index by UUID, for logs without an index column

	// The row just parsed, and where.
	row      gpu.Device
	rowNS    int64 // Unix nanoseconds
	rowLine  int
	rowTSCol int
	pending  bool // row starts the next snapshot and is not in a group yet

	// The snapshot being gathered.
	group     []gpu.Device
	groupNS   int64
	groupLine int
	lastCap   int

	// The previous snapshot.
	lastNS   int64
	lastLine int
	haveLast bool

	skipped   int
	skipLines []int
}

// NewReader returns a Reader of the log in r, whose header it reads and
// checks. name names the log in errors, as in "gpu.csv:12:5: ...".
func NewReader(r io.Reader, name string, opts Options) (*Reader, error) {
	if name == "" {
		name = "-"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	loc := opts.Location
	if loc == nil {
		loc = time.UTC
	}
	rd := &Reader{
		name:      name,
		opts:      opts,
		log:       log,
		br:        bufio.NewReaderSize(r, 64<<10),
		tp:        timeParser{loc: loc},
		strs:      make(map[string]string),
		uuidIndex: make(map[string]int),
	}
	for {
		line, err := rd.readLine()
		if err == io.EOF {
			return nil, &ParseError{name, max(rd.line, 1), 1,
				"the log is empty; want an nvidia-smi CSV log starting with its header line, " +
					"as nvidia-smi --query-gpu=timestamp,index,name,uuid,memory.used,memory.total --format=csv writes it"}
		}
		if err != nil {
			return nil, err
		}
		if rd.line == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // a byte order mark from an editor
		}
		if len(trimSpace(line)) == 0 {
			continue
		}
		h, ferr := parseHeader(line)
		if ferr != nil {
			return nil, rd.errorAt(rd.line, ferr)
		}
		rd.hdr = h
		return rd, nil
	}
}

// Open opens the nvidia-smi CSV log at path, gzip-compressed or not, and
// reads its header. Close closes the file.
func Open(path string, opts Options) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open nvidia-smi log: %w", err)
	}
	in, err := maybeGunzip(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r, err := NewReader(in, path, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

// Close closes the file opened by Open; after it, Next fails.
func (r *Reader) Close() error {
	r.closed = true
	if r.closer == nil {
		return nil
	}
	err := r.closer.Close()
	r.closer = nil
	return err
}

// Skipped returns the number of bad rows skipped so far under
// Options.SkipBad.
func (r *Reader) Skipped() int { return r.skipped }

// Next returns the next snapshot of the log, or io.EOF after the last one.
// A bad row is a *ParseError (unless Options.SkipBad is set); the Reader
// then resumes at the next line if called again.
func (r *Reader) Next(ctx context.Context) (*gpu.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.closed {
		return nil, errClosed
	}
	for {
		if !r.pending {
			err := r.nextRow()
			if err == io.EOF {
				if len(r.group) > 0 {
					return r.emit(), nil
				}
				r.finish()
				return nil, io.EOF
			}
			if err != nil {
				if perr, ok := errors.AsType[*ParseError](err); ok && r.opts.SkipBad {
					r.skip(perr)
					continue
				}
				return nil, err
			}
		}
		r.pending = false
		next, perr := r.place()
		if perr != nil {
			if r.opts.SkipBad {
				r.skip(perr)
				continue
			}
			return nil, perr
		}
		switch {
		case next:
			r.pending = true
			return r.emit(), nil
		case len(r.group) == 0:
			r.group = make([]gpu.Device, 0, max(r.lastCap, 1))
			r.group = append(r.group, r.row)
			r.groupNS, r.groupLine = r.rowNS, r.rowLine
		default:
			r.group = append(r.group, r.row)
		}
	}
}

// place decides whether the row just read starts the next snapshot or joins
// the current group (or starts the first one). It is an error for the row
// to go back in time: more than the slack before the group's first row, or,
// when it starts a snapshot, before the previous one.
func (r *Reader) place() (next bool, _ *ParseError) {
	if len(r.group) == 0 {
		if r.haveLast && r.rowNS < r.lastNS {
			return false, r.backwards(r.lastNS, r.lastLine)
		}
		return false, nil
	}
	if r.rowNS < r.groupNS-int64(Slack) {
		return false, r.backwards(r.groupNS, r.groupLine)
	}
	next = r.rowNS-r.groupNS > int64(Slack) || r.inGroup(r.row.Index)
	if next && r.rowNS < r.groupNS {
		return false, r.backwards(r.groupNS, r.groupLine)
	}
	return next, nil
}

// inGroup reports whether the current group has the GPU with index i.
func (r *Reader) inGroup(i int) bool {
	for j := range r.group {
		if r.group[j].Index == i {
			return true
		}
	}
	return false
}

// backwards is the error for a row earlier than the row at line refLine.
func (r *Reader) backwards(ref int64, refLine int) *ParseError {
	return &ParseError{r.name, r.rowLine, r.rowTSCol, fmt.Sprintf(
		"timestamp %s goes back %s from %s at line %d; rows must be in time order (concatenate logs oldest first)",
		r.time(r.rowNS).Format(timeLayout), time.Duration(ref-r.rowNS), r.time(ref).Format(timeLayout), refLine)}
}

// time turns Unix nanoseconds into a time in the log's location.
func (r *Reader) time(ns int64) time.Time {
	return time.Unix(0, ns).In(r.tp.loc)
}

// emit hands the gathered group out as a snapshot. The Devices slice is the
// caller's to keep; the next group gets a new one sized like this one.
func (r *Reader) emit() *gpu.Snapshot {
	devs := r.group
	for i := 1; i < len(devs); i++ {
		if devs[i-1].Index > devs[i].Index {
			slices.SortFunc(devs, func(a, b gpu.Device) int { return cmp.Compare(a.Index, b.Index) })
			break
		}
	}
	r.group = nil
	r.lastCap = len(devs)
	r.lastNS, r.lastLine, r.haveLast = r.groupNS, r.groupLine, true
	return &gpu.Snapshot{Time: r.time(r.groupNS), Host: r.opts.Host, Devices: devs}
}

// skip counts a bad row and logs the first few.
func (r *Reader) skip(err *ParseError) {
	r.skipped++
	if len(r.skipLines) < logFirstSkips {
		r.skipLines = append(r.skipLines, err.Line)
		if r.opts.Warnings != nil {
			fmt.Fprintf(r.opts.Warnings, "warning: %v; row skipped\n", err)
			return
		}
		r.log.Warn("replay: skipping bad row", "err", err)
	}
}

// finish logs, once, how many bad rows were skipped.
func (r *Reader) finish() {
	if r.eof {
		return
	}
	r.eof = true
	switch {
	case r.skipped == 0:
	case r.opts.Warnings != nil:
		if more := r.skipped - len(r.skipLines); more > 0 {
			fmt.Fprintf(r.opts.Warnings, "warning: %s: %d more malformed rows skipped\n", r.name, more)
		}
	default:
		r.log.Warn("replay: skipped bad rows", "file", r.name, "rows", r.skipped, "first_lines", r.skipLines)
	}
}

// nextRow reads lines until it has parsed a row into r.row, skipping blank
// lines and reprinted headers. It returns io.EOF at the end of the log.
func (r *Reader) nextRow() error {
	for {
		line, err := r.readLine()
		if err != nil {
			return err
		}
		if len(trimSpace(line)) == 0 || bytes.Equal(line, r.hdr.raw) {
			continue
		}
		ferr := r.parseRow(line)
		if ferr == nil {
			r.rowLine = r.line
			return nil
		}
		// nvidia-smi -l reprints its header now and then, and logs of
		// different queries may have been concatenated: a header line
		// replaces the current one.
		if h, herr := parseHeader(line); herr == nil {
			if !h.sameColumns(&r.hdr) {
				r.hdr = h
			}
			continue
		}
		return r.errorAt(r.line, ferr)
	}
}

// readLine returns the next line without its line ending, or io.EOF at the
// end. The line is valid until the next call.
func (r *Reader) readLine() ([]byte, error) {
	if r.ioErr != nil {
		return nil, r.ioErr
	}
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.long = append(r.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = r.br.ReadSlice('\n')
			if len(r.long) <= maxLine {
				r.long = append(r.long, line...)
			}
		}
		line = r.long
	}
	if err != nil && err != io.EOF {
		r.ioErr = fmt.Errorf("read %s: %w", r.name, err)
		return nil, r.ioErr
	}
	if len(line) == 0 {
		return nil, io.EOF
	}
	r.line++
	if len(line) > maxLine {
		return nil, &ParseError{r.name, r.line, 1,
			"line is longer than 1 MiB; is this an nvidia-smi CSV log (--format=csv)?"}
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	return bytes.TrimSuffix(line, []byte{'\r'}), nil
}

// errorAt makes a *ParseError of a problem on line n.
func (r *Reader) errorAt(n int, ferr *fieldError) *ParseError {
	return &ParseError{File: r.name, Line: n, Col: ferr.col, Msg: ferr.msg}
}
