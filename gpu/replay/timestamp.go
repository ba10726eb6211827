package replay

import (
	"bytes"
	"time"
)

// timeLayout is how nvidia-smi writes the timestamp field: local wall-clock
// time without a zone, milliseconds optional. Messages show times this way.
const timeLayout = "2006/01/02 15:04:05.000"

// Years a timestamp may have. Times are kept as int64 Unix nanoseconds, and
// the difference of any two must fit too.
const (
	minYear = 1970
	maxYear = 2200
)

// timeFormats names the timestamps a log may hold, for messages.
const timeFormats = `nvidia-smi's "2026/11/29 09:00:00.000", ISO 8601 ("2026-11-29T09:00:00", with or without a fraction ` +
	`and a zone), "11-29-2026 09:00:00", epoch seconds ("1764406800.25"), or date's "Sun Nov 29 09:00:00 UTC 2026"`

// timeParser turns timestamps into Unix nanoseconds. The layouts of a
// date, then the time of day (nvidia-smi's 2026/11/29 09:00:00.000 and ISO
// 8601's 2026-11-29T09:00:00) are parsed by hand and the date and hour are
// cached, because rows of one log share them and time.Date on every row
// would cost more than the rest of the row. Timestamps without a zone are
// wall-clock time in loc.
type timeParser struct {
	loc   *time.Location
	local hourCache // hours in loc
	utc   hourCache // hours of timestamps that carry a zone, in UTC
	// fine says that a timestamp had a fraction of a second written
	// (".000" included): the log's times are not whole seconds.
	fine bool
}

// hourCache remembers the start of the last hour parsed.
type hourCache struct {
	key  [13]byte // "2006/01/02 15" as written (the date's separators included)
	base int64    // the start of that hour, Unix nanoseconds
	ok   bool
}

// parse returns the time in b as Unix nanoseconds and whether b is a
// timestamp in one of the layouts of timeFormats.
func (p *timeParser) parse(b []byte) (int64, bool) {
	if len(b) >= 19 && (b[4] == '/' || b[4] == '-') && b[7] == b[4] && (b[10] == ' ' || b[10] == 'T') &&
		b[13] == ':' && b[16] == ':' {
		return p.dateFirst(b)
	}
	if ns, ok := parseEpoch(b); ok {
		if len(b) > 10 {
			p.fine = true // a fraction, or milliseconds
		}
		return ns, true
	}
	if len(b) >= 19 && (b[2] == '-' || b[2] == '/') && b[5] == b[2] && b[10] == ' ' && b[13] == ':' && b[16] == ':' {
		return p.monthFirst(b)
	}
	return parseWordDate(b, p.loc)
}

// dateFirst parses "2006/01/02 15:04:05", with '-' for '/' and 'T' for the
// space as well, a fraction of up to nine digits, and a zone: Z, +07:00,
// +0700 or +07.
func (p *timeParser) dateFirst(b []byte) (int64, bool) {
	rest, off, zoned, ok := timeSuffix(b[19:])
	if !ok {
		return 0, false
	}
	if len(b) > 19 && b[19] == '.' {
		p.fine = true
	}
	c, loc := &p.local, p.loc
	if zoned {
		c, loc = &p.utc, time.UTC
	}
	if !c.ok || string(b[:13]) != string(c.key[:]) {
		y, ok1 := digits(b[0:4])
		mo, ok2 := digits(b[5:7])
		d, ok3 := digits(b[8:10])
		h, ok4 := digits(b[11:13])
		if !ok1 || !ok2 || !ok3 || !ok4 || !validDate(y, mo, d, h) {
			return 0, false
		}
		c.base = time.Date(y, time.Month(mo), d, h, 0, 0, 0, loc).UnixNano()
		copy(c.key[:], b[:13])
		c.ok = true
	}
	mi, ok1 := digits(b[14:16])
	s, ok2 := digits(b[17:19])
	if !ok1 || !ok2 || mi > 59 || s > 59 {
		return 0, false
	}
	return c.base + int64(mi*60+s)*int64(time.Second) + rest - off, true
}

// monthFirst parses "11-29-2026 09:00:00" and "11/29/2026 09:00:00", as
// some spreadsheets and Windows scripts write dates, with an optional
// fraction and zone.
func (p *timeParser) monthFirst(b []byte) (int64, bool) {
	rest, off, zoned, ok := timeSuffix(b[19:])
	mo, ok1 := digits(b[0:2])
	d, ok2 := digits(b[3:5])
	y, ok3 := digits(b[6:10])
	h, ok4 := digits(b[11:13])
	mi, ok5 := digits(b[14:16])
	s, ok6 := digits(b[17:19])
	if !ok || !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || !validDate(y, mo, d, h) || mi > 59 || s > 59 {
		return 0, false
	}
	loc := p.loc
	if zoned {
		loc = time.UTC
	}
	if len(b) > 19 && b[19] == '.' {
		p.fine = true
	}
	return time.Date(y, time.Month(mo), d, h, mi, s, 0, loc).UnixNano() + rest - off, true
}

// timeSuffix parses what may follow the seconds of a timestamp: a fraction
// (".123", up to nine digits, as nanoseconds) and a zone ("Z", "+07:00",
// "+0700", "+07", "-05:00", as its offset from UTC in nanoseconds).
func timeSuffix(b []byte) (frac, offset int64, zoned, ok bool) {
	if len(b) > 0 && b[0] == '.' {
		n := 1
		for n < len(b) && b[n] >= '0' && b[n] <= '9' {
			n++
		}
		if n == 1 || n > 10 {
			return 0, 0, false, false
		}
		f, _ := digits(b[1:n])
		for range 10 - n {
			f *= 10
		}
		frac, b = int64(f), b[n:]
	}
	switch {
	case len(b) == 0:
		return frac, 0, false, true
	case len(b) == 1 && (b[0] == 'Z' || b[0] == 'z'):
		return frac, 0, true, true
	case b[0] != '+' && b[0] != '-':
		return 0, 0, false, false
	}
	sign, z := int64(1), b[1:]
	if b[0] == '-' {
		sign = -1
	}
	var h, m int
	var ok1, ok2 bool
	switch len(z) {
	case 2:
		h, ok1 = digits(z)
		ok2 = true
	case 4:
		h, ok1 = digits(z[:2])
		m, ok2 = digits(z[2:])
	case 5:
		h, ok1 = digits(z[:2])
		m, ok2 = digits(z[3:])
		ok2 = ok2 && z[2] == ':'
	}
	if !ok1 || !ok2 || h > 23 || m > 59 {
		return 0, 0, false, false
	}
	return frac, sign * int64(h*3600+m*60) * int64(time.Second), true, true
}

// parseEpoch parses Unix time: seconds ("1764406800", with a fraction or
// not) or milliseconds ("1764406800123"), as time.time() and Date.now()
// write it.
func parseEpoch(b []byte) (int64, bool) {
	intPart, frac, _ := bytes.Cut(b, []byte{'.'})
	sec, ok := digits64(intPart)
	if !ok || len(frac) > 9 {
		return 0, false
	}
	var ns int64
	if len(frac) > 0 {
		f, ok := digits64(frac)
		if !ok {
			return 0, false
		}
		for range 9 - len(frac) {
			f *= 10
		}
		ns = f
	}
	switch len(intPart) {
	case 9, 10:
		ns += sec * int64(time.Second)
	case 12, 13:
		if len(frac) > 0 {
			return 0, false
		}
		ns = sec * int64(time.Millisecond)
	default:
		return 0, false
	}
	if y := time.Unix(0, ns).UTC().Year(); y < minYear || y > maxYear {
		return 0, false
	}
	return ns, true
}

// validDate reports whether y-mo-d h:00 is a real date in the years a log
// may have.
func validDate(y, mo, d, h int) bool {
	return y >= minYear && y <= maxYear && mo >= 1 && mo <= 12 && d >= 1 && h <= 23 && d <= daysIn(time.Month(mo), y)
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

// digits64 parses b as an unsigned decimal of at most 18 digits.
func digits64(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// isTimestamp reports whether b is a timestamp.
func isTimestamp(b []byte) bool {
	p := timeParser{loc: time.UTC}
	_, ok := p.parse(b)
	return ok
}
