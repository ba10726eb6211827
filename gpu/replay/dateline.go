package replay

import (
	"bytes"
	"time"
)

// Dates in words are what `date` prints before each sample in a cron job or
// a shell loop, and what nvidia-smi prints above its table:
//
//	Sun Nov 29 09:00:00 UTC 2026        date, C locale
//	Sun Nov 29 09:00:00 2026            nvidia-smi, ctime
//	Sun 29 Nov 2026 09:00:00 AM UTC     date, en_US
//	Sun 29 Nov 09:00:00 GMT 2026        date, en_GB
//	Sun, 29 Nov 2026 09:00:00 +0000     date -R
//
// parseWordDate reads them in any order of their parts: an optional week
// day, a month name, the day, the time of day (with AM or PM or not), the
// year and an optional zone. UTC, GMT, Z and numeric offsets are exact;
// another zone's abbreviation (CET, PST) is taken as loc, the zone the log
// is read in, since abbreviations are ambiguous across the world.
func parseWordDate(b []byte, loc *time.Location) (int64, bool) {
	var (
		year, month, day       = -1, -1, -1
		hour, minute, sec      = -1, 0, 0
		frac, offset           int64
		zoned, pm, am, weekday bool
	)
	n := 0
	for rest := b; len(rest) > 0; {
		var f []byte
		f, rest = nextWord(rest)
		if len(f) == 0 {
			continue
		}
		if n++; n > 8 {
			return 0, false
		}
		switch {
		case len(f) >= 8 && f[2] == ':' && f[5] == ':' && hour < 0:
			h, ok1 := digits(f[0:2])
			m, ok2 := digits(f[3:5])
			s, ok3 := digits(f[6:8])
			fr, _, z, ok4 := timeSuffix(f[8:])
			if !ok1 || !ok2 || !ok3 || !ok4 || z || h > 23 || m > 59 || s > 59 {
				return 0, false
			}
			hour, minute, sec, frac = h, m, s, fr
		case isDigits(f) && len(f) == 4 && year < 0:
			year, _ = digits(f)
		case isDigits(bytes.TrimSuffix(f, []byte{'.'})) && len(f) <= 3 && day < 0:
			day, _ = digits(bytes.TrimSuffix(f, []byte{'.'}))
		case (f[0] == '+' || f[0] == '-') && !zoned:
			_, off, z, ok := timeSuffix(f)
			if !ok || !z {
				return 0, false
			}
			offset, zoned = off, true
		case isLetters(f):
			switch {
			case equalFold(f, "am") && !am && !pm:
				am = true
			case equalFold(f, "pm") && !am && !pm:
				pm = true
			case monthOf(f) > 0 && month < 0:
				month = monthOf(f)
			case isWeekday(f) && !weekday:
				weekday = true
			case (equalFold(f, "utc") || equalFold(f, "gmt") || equalFold(f, "z")) && !zoned:
				zoned = true
			case len(f) >= 2 && len(f) <= 5 && isUpper(f) && !zoned:
				// Another zone's abbreviation: the log's zone.
			default:
				return 0, false
			}
		default:
			return 0, false
		}
	}
	if n < 4 {
		return 0, false
	}
	if year < 0 || month < 0 || day < 0 || hour < 0 {
		return 0, false
	}
	if am || pm {
		if hour < 1 || hour > 12 {
			return 0, false
		}
		hour %= 12
		if pm {
			hour += 12
		}
	}
	if !validDate(year, month, day, hour) {
		return 0, false
	}
	if zoned {
		loc = time.UTC
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, 0, loc).UnixNano() + frac - offset, true
}

// months are the month names' first three letters, lower-case.
var months = [12]string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}

// fullMonths are the month names that are more than their first three
// letters.
var fullMonths = [12]string{"january", "february", "march", "april", "may", "june", "july", "august", "september",
	"october", "november", "december"}

// monthOf returns the month (1–12) a name or abbreviation names, in any
// case, or 0.
func monthOf(w []byte) int {
	for i := range months {
		if equalFold(w, months[i]) || equalFold(w, fullMonths[i]) || i == 8 && equalFold(w, "sept") {
			return i + 1
		}
	}
	return 0
}

// weekdays are the week days' names, lower-case, short and long.
var weekdays = [...]string{"mon", "tue", "wed", "thu", "fri", "sat", "sun",
	"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}

func isWeekday(w []byte) bool {
	for _, d := range weekdays {
		if equalFold(w, d) {
			return true
		}
	}
	return false
}

// equalFold reports whether the ASCII letters of b are lower, a lower-case
// word, in any case.
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		if b[i]|0x20 != lower[i] {
			return false
		}
	}
	return true
}

// nextWord returns the first word of b, words apart by spaces, tabs or
// commas, and what follows it.
func nextWord(b []byte) (word, rest []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == ',' || b[i] == '\t') {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != ',' && b[j] != '\t' {
		j++
	}
	return b[i:j], b[j:]
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

func isLetters(b []byte) bool {
	for _, c := range b {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return len(b) > 0
}

func isUpper(b []byte) bool {
	for _, c := range b {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// dateLine parses a line that holds nothing but a date and time, as
// `date` (in any of its forms, `date +%s` included) or a script writes it
// before each sample, decorations and a label around it aside (see
// undecorate). It returns the time as Unix nanoseconds.
func (p *timeParser) dateLine(line []byte) (int64, bool) {
	line = trimSpace(line)
	if len(line) < 9 {
		return 0, false
	}
	if ns, ok := p.parse(line); ok {
		return ns, true
	}
	core, ok := undecorate(line)
	if !ok {
		return 0, false
	}
	return p.parse(core)
}

// decorations are the characters scripts print around a date line:
// "==== Sun May 4 04:27:32 AM EDT 2025 ====", "--- 2026-11-29 09:00:00 ---",
// "[2026-11-29 09:00:00]", "### 13:25:50".
const decorations = "=-*#~<>[](){}|_+"

// undecorate returns the time a decorated date line holds: the line
// without the decorations around it, and without a label before or after
// it ("Date: …", "Timestamp = …", "[…] GPU Status:"). ok is false when
// nothing was taken away.
func undecorate(t []byte) ([]byte, bool) {
	core := bytes.Trim(t, decorations+" \t")
	if len(core) == 0 {
		return nil, false
	}
	if c := t[0]; c == '[' || c == '(' {
		closer := byte(']')
		if c == '(' {
			closer = ')'
		}
		if end := bytes.IndexByte(t, closer); end > 0 && isLabel(t[end+1:]) {
			return trimSpace(t[1:end]), true
		}
	}
	if colon := bytes.IndexAny(core, ":="); colon > 0 && isLabel(core[:colon]) && !isDigits(trimSpace(core[:colon])) {
		core = bytes.Trim(core[colon+1:], decorations+" \t")
	} else if i := bytes.LastIndexAny(core, "0123456789"); i >= 0 && i+1 < len(core) && core[len(core)-1] == ':' && isLabel(core[i+1:]) {
		core = trimSpace(core[:i+1]) // "2026-11-29 09:00:00 GPU Status:"
	}
	return core, len(core) < len(t)
}

// isLabel reports whether b is a label scripts print beside a time ("Date",
// "GPU Status:", "- Sampling -"): a few words of letters, no digits.
func isLabel(b []byte) bool {
	words := 0
	inWord := false
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			if !inWord {
				words++
			}
			inWord = true
		case c == ' ' || c == '\t' || c == ':' || c == '-' || c == '_' || c == '.' || c == '=' || c == '/':
			inWord = false
		default:
			return false
		}
	}
	return words <= 4
}

// parseClock parses a time of day alone, as `date +%T` prints it:
// "13:25:50", with a fraction or not, "1:25:50 PM". It returns the time
// since midnight.
func parseClock(b []byte) (time.Duration, bool) {
	pm, am := false, false
	if n := len(b); n > 3 && b[n-3] == ' ' {
		switch {
		case equalFold(b[n-2:], "pm"):
			pm = true
		case equalFold(b[n-2:], "am"):
			am = true
		}
		if am || pm {
			b = b[:n-3]
		}
	}
	if len(b) == 7 && b[1] == ':' {
		b = append([]byte{'0'}, b...)
	}
	if len(b) < 8 || b[2] != ':' || b[5] != ':' {
		return 0, false
	}
	h, ok1 := digits(b[0:2])
	m, ok2 := digits(b[3:5])
	s, ok3 := digits(b[6:8])
	frac, _, zoned, ok4 := timeSuffix(b[8:])
	if !ok1 || !ok2 || !ok3 || !ok4 || zoned || h > 23 || m > 59 || s > 59 {
		return 0, false
	}
	if am || pm {
		if h < 1 || h > 12 {
			return 0, false
		}
		h %= 12
		if pm {
			h += 12
		}
	}
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second + time.Duration(frac), true
}

// clockLine parses a line that holds nothing but a time of day,
// decorations aside: "13:25:50", "=== 13:25:50 ===".
func clockLine(line []byte) (time.Duration, bool) {
	t := trimSpace(line)
	if len(t) < 7 {
		return 0, false
	}
	if d, ok := parseClock(t); ok {
		return d, true
	}
	core, ok := undecorate(t)
	if !ok {
		return 0, false
	}
	return parseClock(core)
}

// isDateLine reports whether a line holds nothing but a time: a date line
// or a time of day.
func (p *timeParser) isDateLine(line []byte) bool {
	if _, ok := p.dateLine(line); ok {
		return true
	}
	_, ok := clockLine(line)
	return ok
}

// maybeDateLine tells cheaply whether a line of a CSV log may be a date
// line: a CSV row has commas, and a date has none but after the week day
// of `date -R` ("Sun, 29 Nov 2026 09:00:00 +0000").
func maybeDateLine(line []byte) bool {
	i := bytes.IndexByte(line, ',')
	if i < 0 {
		return true
	}
	if bytes.IndexByte(line[i+1:], ',') >= 0 {
		return false
	}
	day := bytes.TrimLeft(line[:i], decorations+" \t")
	return len(day) >= 3 && isWeekday(day)
}
