// Package replay reads the GPU logs people keep and plays them back as a
// gpu.Source, at the log's own times, so that rules can be evaluated over a
// day of data in a fraction of a second. It reads:
//
//   - nvidia-smi --query-gpu=... --format=csv, with or without units, with
//     or without its header (the columns are then given), with or without
//     the index, uuid and timestamp columns, its header printed again and
//     again by a loop, and the time on a line of its own (`date`) above
//     each sample when the rows have none;
//   - scripts' own CSVs (pynvml, GPUtil, nvitop, gpustat), whatever they
//     call their columns (gpu_util, vram_used_mb, "Memory Used (MiB)"),
//     one GPU a row or one column per GPU and reading;
//   - nvidia-smi's default table, printed again and again (watch, a loop,
//     cron), of every driver generation from the old 80-column table to
//     today's wider one with its MIG column, processes included, and a
//     terminal's capture of it with the screen redrawn in place;
//   - nvidia-smi dmon, with or without its date and time columns;
//   - gpustat's text, its host line and process lists included;
//   - GPU-Z's sensor log and MSI Afterburner's hardware monitoring log;
//   - scripts' own text lines that carry a time and named readings, in
//     lines, blocks of "key: value" lines, or rows of values read by their
//     units (textlines.go).
//
// One file may hold several layouts (tables, then a CSV), with the shell's
// words between its samples; date lines may be decorated, or times of day
// alone; a log without any time is read with Options.Step. Files that are
// no GPU log but that gpuwatch recognises (JSON, nvidia-smi -q, a PyTorch
// allocator's log) are named in the error.
//
// Whatever wrote the text: gzip-compressed or not, CRLF line ends, UTF-8
// with a byte order mark, UTF-16 (PowerShell) or Latin-1 (Windows tools).
// The format is detected from the first lines (detect.go), never from the
// file's name.
//
// Readings a log does not have, or reports as "[N/A]", "[Not Supported]",
// "N/A", "-" and the like, are NaN (memory: unknown): they stay missing,
// never zero.
//
// # Grouping rows into snapshots
//
// A format that knows its samples (a table, a block under a date line)
// makes each one a snapshot. Otherwise, as nvidia-smi writes one row per
// GPU per sample, the GPUs of one sample a few milliseconds apart, the
// reader groups consecutive rows into one snapshot and starts a new
// snapshot at a row whose GPU is already in the current group, or whose
// time is more than one second (the grouping slack) after the group's first
// row. Rows that do not say which GPU they are about (no index, no UUID)
// are GPUs 0, 1, … in row order among rows less than SameSample apart. A
// snapshot's time is its first row's time.
//
// Rows must be in time order: a row more than the slack before the group's
// first row, or a row that starts a snapshot earlier than the previous
// snapshot, is an error. Snapshots of a log whose times say seconds that
// share a second are spread over it (bursts.go).
package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// Slack is how far apart in time the rows of one sample may be.
const Slack = time.Second

// SameSample is how close in time consecutive rows that do not name their
// GPU must be to be GPUs of one sample: nvidia-smi queries the GPUs of a
// sample one after the other, milliseconds apart.
const SameSample = 250 * time.Millisecond

const logFirstSkips = 5 // bad rows logged one by one under SkipBad

var errClosed = errors.New("replay: reader is closed")

var nanValue = math.NaN()

const maxUint64 = math.MaxUint64

var _ gpu.Source = (*Reader)(nil)

// Options configures a Reader.
type Options struct {
	// Host is the Snapshot.Host of every snapshot. Empty: the host the log
	// names (gpustat's first line), or else the file's name without its
	// extensions (HostFromPath), as a log is usually named after its host.
	Host string
	// Location is the time zone of the log's timestamps that carry none,
	// as nvidia-smi writes local wall-clock time; nil means UTC.
	// Timestamps with a zone (RFC 3339, epoch seconds) ignore it.
	Location *time.Location
	// Columns names the columns of a CSV log written without its header
	// (--format=csv,noheader), as --query-gpu lists them:
	// "timestamp,index,memory.used,memory.total". A log with a header
	// ignores it.
	Columns string
	// MemoryTotal is the memory of each GPU in bytes, for logs that record
	// memory.used but not memory.total; 0 takes it from the GPU's name
	// where gpuwatch knows it (KnownMemory).
	MemoryTotal uint64
	// SkipBad skips malformed rows instead of failing on them; Skipped
	// counts them and the first few are logged.
	SkipBad bool
	// Logger receives warnings about skipped rows and notes about the log;
	// nil discards them.
	Logger *slog.Logger
	// Warnings, when set, receives the warnings about skipped rows and the
	// notes about the log (columns not read, memory totals taken from GPU
	// names) instead of Logger, as plain lines ("warning: FILE:LINE:COL:
	// …; row skipped", "note: …"), for commands that print them for people.
	Warnings io.Writer
	// Step is how often a log without times was sampled (a loop with
	// `sleep 1`): its samples are taken Step apart, the last at the file's
	// modification time. 0 leaves such a log an error; nvidia-smi dmon
	// output without times is taken 1 s apart, dmon's default.
	Step time.Duration
}

// Reader reads snapshots from a GPU log. It implements gpu.Source. A Reader
// is used by one goroutine.
type Reader struct {
	in     *input
	f      format
	kinds  []string // the formats' names, for people, in the order the log has them
	host   string
	log    *slog.Logger
	closer io.Closer
	closed bool
	eof    bool

	rw      row  // the row just parsed
	pending bool // rw starts the next snapshot and is not in a group yet
	prevNS  int64
	// cut says that the log changed layout since the group began: the
	// next row starts a snapshot of its own.
	cut bool

	// The snapshot being gathered.
	group       []gpu.Device
	groupNS     int64
	groupLine   int
	groupSample int
	lastCap     int

	// The previous snapshot.
	lastNS   int64
	lastLine int
	haveLast bool

	skipped   int
	skipLines []int

	bursts     bursts // snapshots that share a second, spread over it
	spreadSaid bool

	totals map[string]uint64 // GPU memory by name, for logs without memory.total; 0 when unknown
}

// NewReader returns a Reader of the log in r, whose first lines it reads to
// tell its format. name names the log in errors, as in "gpu.csv:12:5: ...",
// and is the host's name by default (see Options.Host).
func NewReader(r io.Reader, name string, opts Options) (*Reader, error) {
	return newReader(r, name, opts, nil)
}

// newReader is NewReader for a log that reopen can open again (nil for a
// stream).
func newReader(r io.Reader, name string, opts Options, reopen func() (io.ReadCloser, time.Time, error)) (*Reader, error) {
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
	text, err := openText(r, name)
	if err != nil {
		return nil, err
	}
	in := &input{lr: newLineReader(text, name), tp: timeParser{loc: loc}, opts: &opts, reopen: reopen}
	in.notes = notes{name: name, opts: &opts, log: log}
	f, kind, err := detect(in)
	if err != nil {
		return nil, err
	}
	return &Reader{in: in, f: f, kinds: []string{kind}, log: log}, nil
}

// Open opens the GPU log at path, gzip-compressed or not, and reads its
// first lines to tell its format. Close closes the file.
func Open(path string, opts Options) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open GPU log: %w", err)
	}
	reopen := func() (io.ReadCloser, time.Time, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, time.Time{}, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, time.Time{}, err
		}
		return f, st.ModTime(), nil
	}
	r, err := newReader(f, path, opts, reopen)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

// HostFromPath is the host a log is about when nothing else says: its file
// name without directories and the extensions of logs ("logs/node8.csv.gz"
// is node8; "node1.example.com.log" is node1.example.com).
func HostFromPath(path string) string {
	base := filepath.Base(path)
	if base == "-" || base == "." || base == string(filepath.Separator) {
		return ""
	}
	for {
		switch ext := filepath.Ext(base); strings.ToLower(ext) {
		case ".csv", ".log", ".txt", ".tsv", ".out", ".hml", ".gz", ".bz2", ".xz", ".zst":
			if ext == base {
				return base
			}
			base = strings.TrimSuffix(base, ext)
		default:
			return base
		}
	}
}

// Format names the log's format as detected, for people: "nvidia-smi CSV",
// "nvidia-smi table", "nvidia-smi dmon", "gpustat", "GPU-Z sensor log",
// "MSI Afterburner log", "script lines"; a log that changes layout names
// each, in order ("nvidia-smi table, then nvidia-smi CSV").
func (r *Reader) Format() string { return strings.Join(r.kinds, ", then ") }

// Host is the host of the snapshots: Options.Host, or the host the log
// names, or its file's name. It is known once the first snapshot is read.
func (r *Reader) Host() string {
	if r.host == "" {
		r.host = cmp.Or(r.in.opts.Host, r.in.host, HostFromPath(r.in.lr.name))
	}
	return r.host
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
		if s, ok := r.bursts.pop(); ok {
			return s, nil
		}
		s, err := r.read()
		switch {
		case err == io.EOF:
			r.bursts.flush()
		case err != nil:
			return nil, err // the snapshots held stay held: the reader goes on after a bad row
		case r.in.tp.fine && r.bursts.empty():
			return s, nil // times to the millisecond: the log's own, as they come
		default:
			r.bursts.add(s, !r.in.tp.fine)
		}
		if r.bursts.spread && !r.spreadSaid {
			r.spreadSaid = true
			r.in.notes.add("the log has several samples of a GPU within one second (its times say seconds, not less): " +
				"they are taken evenly apart within their second")
		}
		if err == io.EOF && !r.bursts.flush() {
			return nil, io.EOF
		}
	}
}

// read reads the next snapshot of the log from its rows.
func (r *Reader) read() (*gpu.Snapshot, error) {
	for {
		if !r.pending {
			err := r.f.next(&r.rw)
			if err == io.EOF {
				if len(r.group) > 0 {
					return r.emit(), nil
				}
				r.finish()
				return nil, io.EOF
			}
			if sw, ok := err.(*layoutChange); ok {
				r.f = sw.f
				r.kinds = append(r.kinds, sw.kind)
				r.cut = len(r.group) > 0
				continue
			}
			if err != nil {
				if perr, ok := errors.AsType[*ParseError](err); ok && r.in.opts.SkipBad {
					r.skip(perr)
					continue
				}
				return nil, err
			}
			r.complete(&r.rw)
		}
		r.pending = false
		next, perr := r.place()
		if perr != nil {
			if r.in.opts.SkipBad {
				r.skip(perr)
				continue
			}
			return nil, perr
		}
		if next {
			r.pending = true
			return r.emit(), nil
		}
		if len(r.group) == 0 {
			r.group = make([]gpu.Device, 0, max(r.lastCap, 1))
			r.groupNS, r.groupLine, r.groupSample = r.rw.ns, r.rw.line, r.rw.sample
		}
		if len(r.group) == gpu.MaxDevices {
			perr := &ParseError{r.in.lr.name, r.rw.line, 1, fmt.Sprintf(
				"a sample of more than %d GPUs, the most gpuwatch watches on one host: split the log by host, or check that its rows have their time", gpu.MaxDevices)}
			if r.in.opts.SkipBad {
				r.skip(perr)
				continue
			}
			return nil, perr
		}
		if r.rw.ordinal {
			r.rw.dev.Index = len(r.group)
		}
		r.group = append(r.group, r.rw.dev)
		r.prevNS = r.rw.ns
	}
}

// complete fills in what a row's log left out and gpuwatch knows otherwise:
// the memory total of a GPU whose log records only the memory used.
func (r *Reader) complete(rw *row) {
	if !rw.usedOnly {
		return
	}
	d := &rw.dev
	if r.in.opts.MemoryTotal > 0 {
		d.MemTotal = r.in.opts.MemoryTotal
		return
	}
	total, seen := r.totals[d.Name]
	if !seen {
		var known bool
		total, known = KnownMemory(d.Name)
		switch {
		case known:
			r.in.notes.add("memory.total is not in the log: taking %s for %s from its name (give --memory-total to say otherwise)",
				formatGiB(total), d.Name)
		default:
			r.in.notes.add("memory.total is not in the log: memory.used_percent and memory.free are unknown; " +
				"give the GPUs' memory with --memory-total (as in --memory-total 80GiB), or log memory.total")
		}
		if r.totals == nil {
			r.totals = make(map[string]uint64)
		}
		r.totals[d.Name] = total
	}
	d.MemTotal = total
}

// place decides whether the row just read starts the next snapshot or joins
// the current group (or starts the first one). It is an error for the row
// to go back in time: more than the slack before the group's first row, or,
// when it starts a snapshot, before the previous one.
func (r *Reader) place() (next bool, _ *ParseError) {
	rw := &r.rw
	if len(r.group) == 0 {
		if r.haveLast && rw.ns < r.lastNS {
			return false, r.backwards(r.lastNS, r.lastLine)
		}
		return false, nil
	}
	if rw.ns < r.groupNS-int64(Slack) {
		return false, r.backwards(r.groupNS, r.groupLine)
	}
	switch {
	case r.cut:
		r.cut = false
		next = true
	case rw.sample > 0:
		next = rw.sample != r.groupSample || !rw.ordinal && rw.dev.MIG == nil && r.inGroup(rw.dev.Index)
	case rw.ordinal:
		next = rw.ns-r.prevNS > int64(SameSample) || rw.ns-r.groupNS > int64(Slack)
	default:
		next = rw.ns-r.groupNS > int64(Slack) || r.inGroup(rw.dev.Index)
	}
	if next && rw.ns < r.groupNS {
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
	return &ParseError{r.in.lr.name, r.rw.line, max(r.rw.col, 1), fmt.Sprintf(
		"timestamp %s goes back %s from %s at line %d; rows must be in time order (concatenate logs oldest first)",
		r.time(r.rw.ns).Format(timeLayout), time.Duration(ref-r.rw.ns), r.time(ref).Format(timeLayout), refLine)}
}

// time turns Unix nanoseconds into a time in the log's location.
func (r *Reader) time(ns int64) time.Time {
	return time.Unix(0, ns).In(r.in.tp.loc)
}

// emit hands the gathered group out as a snapshot. The Devices slice is the
// caller's to keep; the next group gets a new one sized like this one.
func (r *Reader) emit() *gpu.Snapshot {
	devs := r.group
	for i := 1; i < len(devs); i++ {
		if devs[i-1].Index > devs[i].Index {
			gpu.SortInstances(devs) // by index, each GPU's MIG instances after it
			break
		}
	}
	r.group = nil
	r.lastCap = len(devs)
	r.lastNS, r.lastLine, r.haveLast = r.groupNS, r.groupLine, true
	return &gpu.Snapshot{Time: r.time(r.groupNS), Host: r.Host(), Devices: devs}
}

// skip counts a bad row and logs the first few.
func (r *Reader) skip(err *ParseError) {
	r.skipped++
	if len(r.skipLines) < logFirstSkips {
		r.skipLines = append(r.skipLines, err.Line)
		if w := r.in.opts.Warnings; w != nil {
			fmt.Fprintf(w, "warning: %v; row skipped\n", err)
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
	case r.in.opts.Warnings != nil:
		if more := r.skipped - len(r.skipLines); more > 0 {
			fmt.Fprintf(r.in.opts.Warnings, "warning: %s: %d more malformed rows skipped\n", r.in.lr.name, more)
		}
	default:
		r.log.Warn("replay: skipped bad rows", "file", r.in.lr.name, "rows", r.skipped, "first_lines", r.skipLines)
	}
}
