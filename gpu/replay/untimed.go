package replay

import (
	"bytes"
	"time"
)

// A CSV log without any time, no timestamp column and no date line (a loop
// of nvidia-smi --query-gpu=index,... --format=csv and sleep 1), is read
// with the step it was sampled at (Options.Step, --step): its samples are
// taken that far apart, the last at the file's modification time. Its
// samples are told apart by the header printed before each one, or else
// by a GPU index that does not rise, or else, without an index, a row is a
// sample of one GPU.

// noTimes says what such a log lacks, and what to do, when no step is given.
const noTimes = "no times in this log: give --step, how often it was sampled (as in --step 5s), and its samples are taken " +
	"that far apart, the last at the file's modification time; or log times: add timestamp to the nvidia-smi --query-gpu list, " +
	"or print `date` before each sample"

// untimed numbers the samples of a log without times.
type untimed struct {
	repeats   bool // the header is printed again before each sample
	reprinted bool // a header line came since the last row
	sample    int  // samples so far
	lastIndex int
	baseNS    int64 // the time of the first sample
	anchored  bool
	counting  bool // counts the samples, for the anchor: no time is given
}

// untimedRow gives a row of a log without any time the time of its sample.
func (f *csvFormat) untimedRow(rw *row) *fieldError {
	u := &f.untimed
	step := f.opts.Step
	if step <= 0 && !u.counting {
		if f.peekDated {
			return &fieldError{1, "the row has no time: the header has no timestamp column and no date line came before the row; " +
				"add timestamp to the nvidia-smi --query-gpu list, or print `date` before each sample"}
		}
		return &fieldError{1, noTimes}
	}
	next := u.sample == 0
	switch {
	case u.repeats:
		next = next || u.reprinted
	case len(f.hdr.gpus) > 0 || rw.ordinal:
		next = true
	default:
		next = next || rw.dev.Index <= u.lastIndex
	}
	u.reprinted = false
	if next {
		u.sample++
	}
	u.lastIndex = rw.dev.Index
	if u.counting {
		return nil
	}
	if !u.anchored {
		if ferr := f.anchorUntimed(); ferr != nil {
			return ferr
		}
	}
	rw.ns = u.baseNS + int64(u.sample-1)*int64(step)
	rw.col, rw.sample = 1, u.sample
	return nil
}

// anchorUntimed counts the samples of the log, reading it again, and takes
// the last at the file's modification time.
func (f *csvFormat) anchorUntimed() *fieldError {
	const why = "no times in this log"
	again, mod, done, ferr := f.reread(why)
	if ferr != nil {
		return ferr
	}
	defer done()
	count := newCSVFormat(again, f.hdr)
	count.fromColumns = f.fromColumns
	count.untimed.counting = true
	var rw row
	for {
		err := count.next(&rw)
		if _, ok := err.(*ParseError); ok {
			continue
		}
		if err != nil {
			break // the end, or another layout
		}
	}
	samples := count.untimed.sample
	u := &f.untimed
	u.baseNS, u.anchored = mod.UnixNano()-int64(max(samples-1, 0))*int64(f.opts.Step), true
	f.notes.add("%s: taking its %d samples %s apart (--step), the last at the file's modification time, %s",
		why, samples, f.opts.Step.String(), mod.In(f.tp.loc).Format(time.DateTime))
	return nil
}

// headerRepeats reports whether the first lines of a log print its header
// again after rows: before each sample.
func headerRepeats(lines [][]byte, raw []byte) bool {
	if raw == nil {
		return false
	}
	rows := false
	for _, line := range lines {
		switch {
		case bytes.Equal(line, raw):
			if rows {
				return true
			}
		case len(trimSpace(line)) > 0:
			rows = true
		}
	}
	return false
}
