package replay

import (
	"fmt"
	"time"
)

// A log that does not say when its samples were taken (dmon without -o DT,
// a CSV without a timestamp column, times of day without a date) is dated
// by its file: the file was last written when its last sample was. Knowing
// how many samples come before the last, or how many midnights pass,
// takes reading the file once more, which is what reopen is for.

// reread opens the log's file again, from its start, as a new input with
// the same options, and says when the file was last written. close closes
// the file.
func (in *input) reread(why string) (again *input, mod time.Time, closeFile func(), ferr *fieldError) {
	if in.reopen == nil {
		return nil, time.Time{}, nil, &fieldError{1, fmt.Sprintf("%s, read from a stream: replay the file itself, "+
			"whose modification time dates its last sample", why)}
	}
	r, mod, err := in.reopen()
	if err != nil {
		return nil, time.Time{}, nil, &fieldError{1, fmt.Sprintf("%s: reading the file again to date it from its modification time: %v", why, err)}
	}
	text, err := openText(r, in.lr.name)
	if err != nil {
		r.Close()
		return nil, time.Time{}, nil, &fieldError{1, fmt.Sprintf("%s: reading the file again to date it: %v", why, err)}
	}
	// The second reading says nothing: the first says it all.
	again = &input{lr: newLineReader(text, in.lr.name), tp: timeParser{loc: in.tp.loc}, opts: in.opts, notes: notes{quiet: true}}
	return again, mod, func() { r.Close() }, nil
}

// clockDay dates the times of day a log has alone ("13:25:50", `date +%T`
// before each sample): on the day of the last full date line, or, before
// any, on the day the file's modification time gives the first one (the
// last time of day of the file being on the day it was last written, or
// the day before when that time of day is later than the file's). A time
// of day earlier than the one before is on the next day.
type clockDay struct {
	y, d int
	m    time.Month
	have bool
	last time.Duration // the last time of day
	// dateNS is the last full date, whose day the next time of day takes
	// (worked out then: most logs have no times of day alone).
	dateNS   int64
	haveDate bool
}

// dated sets the day from a full date line at ns.
func (in *input) dated(ns int64) {
	in.day.dateNS, in.day.haveDate = ns, true
}

// clock dates a time of day the log has alone. clockOf tells, for the
// reading again when the file dates it, which lines hold a time of day.
func (in *input) clock(tod time.Duration, clockOf func([]byte) (time.Duration, bool)) (int64, *fieldError) {
	c := &in.day
	if c.haveDate {
		t := time.Unix(0, c.dateNS).In(in.tp.loc)
		c.y, c.m, c.d, c.have, c.haveDate = t.Year(), t.Month(), t.Day(), true, false
		c.last = time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second
	}
	if !c.have {
		if ferr := in.anchorClock(clockOf); ferr != nil {
			return 0, ferr
		}
	} else if tod < c.last {
		next := time.Date(c.y, c.m, c.d+1, 0, 0, 0, 0, in.tp.loc)
		c.y, c.m, c.d = next.Year(), next.Month(), next.Day()
	}
	c.last = tod
	return time.Date(c.y, c.m, c.d, 0, 0, 0, int(tod), in.tp.loc).UnixNano(), nil
}

// anchorClock finds the day of the log's first time of day: it counts the
// midnights its times of day pass, back from the file's modification
// time.
func (in *input) anchorClock(clockOf func([]byte) (time.Duration, bool)) *fieldError {
	const why = "times of day without a date"
	again, mod, done, ferr := in.reread(why)
	if ferr != nil {
		return ferr
	}
	defer done()
	var first, last time.Duration
	seen, midnights := false, 0
	for {
		line, err := again.lr.next()
		if err != nil {
			break
		}
		tod, ok := clockOf(line)
		if !ok {
			continue
		}
		if !seen {
			first = tod
		} else if tod < last {
			midnights++
		}
		seen, last = true, tod
	}
	m := mod.In(in.tp.loc)
	day := time.Date(m.Year(), m.Month(), m.Day(), 0, 0, 0, 0, in.tp.loc)
	if seen && last > m.Sub(day)+time.Minute {
		day = day.AddDate(0, 0, -1) // the last sample was before midnight, the file written after
	}
	day = day.AddDate(0, 0, -midnights)
	in.day = clockDay{y: day.Year(), m: day.Month(), d: day.Day(), have: true, last: first}
	in.notes.add("%s: dated from the file's modification time, %s (the first on %s)", why,
		mod.In(in.tp.loc).Format(time.DateTime), day.Format(time.DateOnly))
	return nil
}

// dateLine reads a line that holds nothing but a time: a full date, which
// sets the day of the times of day to come, or a time of day alone, dated
// as clockDay says. ok is false for any other line; ferr says why a time
// of day cannot be dated.
func (in *input) dateLine(line []byte) (ns int64, ok bool, ferr *fieldError) {
	if ns, ok := in.tp.dateLine(line); ok {
		in.dated(ns)
		return ns, true, nil
	}
	if tod, ok := clockLine(line); ok {
		ns, ferr := in.clock(tod, clockLine)
		return ns, true, ferr
	}
	return 0, false, nil
}
