package replay

import "time"

// timeLayout is how nvidia-smi writes the timestamp field: local wall-clock
// time without a zone, milliseconds optional.
const timeLayout = "2006/01/02 15:04:05.000"

// Years a timestamp may have. Times are kept as int64 Unix nanoseconds, and
// the difference of any two must fit too.
const (
	minYear = 1970
	maxYear = 2200
)

// timeParser turns timestamp fields into Unix nanoseconds. nvidia-smi's
// layout is parsed by hand and the date and hour are cached, because rows of
// one log share them and time.Date on every row would cost more than the rest
// of the row. Timestamps in RFC 3339 (with their own zone) are accepted too.
type timeParser struct {
	loc  *time.Location
	key  [13]byte // "2006/01/02 15" of the cached hour
	base int64    // the start of the cached hour in loc, in Unix nanoseconds
	ok   bool
}

// parse returns the time in b as Unix nanoseconds and whether b is a valid
// timestamp.
func (p *timeParser) parse(b []byte) (int64, bool) {
	if len(b) < 19 || b[4] != '/' || b[7] != '/' || b[10] != ' ' || b[13] != ':' || b[16] != ':' {
		return parseRFC3339(b)
	}
	if !p.ok || string(b[:13]) != string(p.key[:]) {
		if !p.setHour(b) {
			return 0, false
		}
	}
	mi, ok1 := digits(b[14:16])
	s, ok2 := digits(b[17:19])
	if !ok1 || !ok2 || mi > 59 || s > 59 {
		return 0, false
	}
	ns := 0
	if len(b) > 19 {
		frac := b[20:]
		if b[19] != '.' || len(frac) == 0 || len(frac) > 9 {
			return 0, false
		}
		f, ok := digits(frac)
		if !ok {
			return 0, false
		}
		for range 9 - len(frac) {
			f *= 10
		}
		ns = f
	}
	return p.base + int64(mi*60+s)*int64(time.Second) + int64(ns), true
}

// setHour validates the date and hour at the start of b and caches the start
// of that hour. DST changes fall on whole hours, so minutes and seconds can
// be added to it as a duration.
func (p *timeParser) setHour(b []byte) bool {
	y, ok1 := digits(b[0:4])
	mo, ok2 := digits(b[5:7])
	d, ok3 := digits(b[8:10])
	h, ok4 := digits(b[11:13])
	if !ok1 || !ok2 || !ok3 || !ok4 || y < minYear || y > maxYear ||
		mo < 1 || mo > 12 || d < 1 || h > 23 || d > daysIn(time.Month(mo), y) {
		return false
	}
	p.base = time.Date(y, time.Month(mo), d, h, 0, 0, 0, p.loc).UnixNano()
	copy(p.key[:], b[:13])
	p.ok = true
	return true
}

// parseRFC3339 parses an RFC 3339 timestamp such as
// "2026-11-29T09:00:00.5+01:00" into Unix nanoseconds.
func parseRFC3339(b []byte) (int64, bool) {
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil || t.Year() < minYear || t.Year() > maxYear {
		return 0, false
	}
	return t.UnixNano(), true
}

// daysIn returns the number of days in month m of year y.
func daysIn(m time.Month, y int) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// digits parses b as an unsigned decimal of at most 9 digits.
func digits(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// isTimestamp reports whether b is a timestamp.
func isTimestamp(b []byte) bool {
	p := timeParser{loc: time.UTC}
	_, ok := p.parse(b)
	return ok
}
