package replay

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseFloat(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true},
		{"60.81", 60.81, true},
		{"-3.5", -3.5, true},
		{"+7", 7, true},
		{".5", 0.5, true},
		{"5.", 5, true},
		{"0.1", 0.1, true},
		{"123456789012345678901234", 123456789012345678901234, true},
		{"1.00000000000000000000000001", 1, true},
		{"", 0, false},
		{"-", 0, false},
		{".", 0, false},
		{"1.2.3", 0, false},
		{"1e3", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"12x", 0, false},
		{"0x10", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseFloat([]byte(tt.in))
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("parseFloat(%q): got %v, %v, want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in    string
		scale uint64
		want  uint64
		ok    bool
	}{
		{"500", 1 << 20, 500 << 20, true},
		{"0", 1 << 20, 0, true},
		{"1.5", 1 << 30, 3 << 29, true},
		{"17592186044415", 1 << 20, 17592186044415 << 20, true},
		{"17592186044416", 1 << 20, 0, false}, // 2^44 MiB overflows
		{"99999999999999999999", 1, 0, false},
		{"-1", 1, 0, false},
		{"", 1 << 20, 0, false},
		{"1,5", 1 << 20, 0, false},
	}
	for _, tt := range tests {
		got, ok := parseBytes([]byte(tt.in), tt.scale)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseBytes(%q, %d): got %d, %v, want %d, %v", tt.in, tt.scale, got, ok, tt.want, tt.ok)
		}
	}
}

func TestIsUnknown(t *testing.T) {
	for in, want := range map[string]bool{
		"[N/A]": true, "[Not Supported]": true, "N/A": true, "[Unknown Error]": true,
		"[GPU requires reset]": true, "[]": true, "": true, "n/a": true, "-": true, "ERR!": true, "nan": true, "None": true,
		"0": false, "[": false, "[N/A": false, "x": false,
	} {
		if got := isUnknown([]byte(in)); got != want {
			t.Errorf("isUnknown(%q): got %v, want %v", in, got, want)
		}
	}
}

func TestIndexComma(t *testing.T) {
	tests := []struct {
		in   string
		from int
		want int
	}{
		{"", 0, 0},
		{",", 0, 0},
		{"abc", 0, 3},
		{"abcdefgh,", 0, 8},
		{"abcdefghijklmnop,q", 3, 16},
		{"a,b,c", 2, 3},
		{"\xac\xac\xac\xac\xac\xac\xac\xac,", 0, 8}, // bytes just above ',' do not fool the 8-byte test
		{"-------,", 0, 7},
	}
	for _, tt := range tests {
		if got := indexComma([]byte(tt.in), tt.from); got != tt.want {
			t.Errorf("indexComma(%q, %d): got %d, want %d", tt.in, tt.from, got, tt.want)
		}
	}
}

func TestTimestamps(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2026/11/29 09:00:00.000", time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC), true},
		{"2026/11/29 09:00:05.123", time.Date(2026, 11, 29, 9, 0, 5, 123e6, time.UTC), true},
		{"2026/11/29 23:59:59", time.Date(2026, 11, 29, 23, 59, 59, 0, time.UTC), true},
		{"2026/11/29 09:00:00.5", time.Date(2026, 11, 29, 9, 0, 0, 500e6, time.UTC), true},
		{"2026/11/29 09:00:00.123456789", time.Date(2026, 11, 29, 9, 0, 0, 123456789, time.UTC), true},
		{"2028/02/29 00:00:00", time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC), true},
		{"2026-11-29T09:00:00Z", time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC), true},
		{"2026-11-29T10:00:00.25+01:00", time.Date(2026, 11, 29, 9, 0, 0, 250e6, time.UTC), true},
		{"2026/02/29 00:00:00", time.Time{}, false},
		{"2026/11/31 00:00:00", time.Time{}, false},
		{"2026/00/29 00:00:00", time.Time{}, false},
		{"2026/11/29 24:00:00", time.Time{}, false},
		{"2026/11/29 09:60:00", time.Time{}, false},
		{"2026/11/29 09:00:60", time.Time{}, false},
		{"2026/11/29 09:00:00.", time.Time{}, false},
		{"2026/11/29 09:00:00,000", time.Time{}, false},
		{"2026/11/29 09:00:00.1234567890", time.Time{}, false},
		{"2026/11/29 09:0a:00", time.Time{}, false},
		{"1969/12/31 23:59:59", time.Time{}, false},
		{"2201/01/01 00:00:00", time.Time{}, false},
		{"2026/11/29", time.Time{}, false},
		{"timestamp", time.Time{}, false},
		{"", time.Time{}, false},
	}
	for _, tt := range tests {
		p := timeParser{loc: time.UTC}
		// Parse twice: the second time the hour comes from the cache.
		for range 2 {
			ns, ok := p.parse([]byte(tt.in))
			if ok != tt.ok || ok && ns != tt.want.UnixNano() {
				t.Errorf("parse(%q): got %v, %v, want %v, %v", tt.in, time.Unix(0, ns).UTC(), ok, tt.want, tt.ok)
			}
		}
	}
}

// FuzzParseFloat checks parseFloat against strconv.ParseFloat: whatever
// parseFloat accepts, strconv reads as the same number.
func FuzzParseFloat(f *testing.F) {
	for _, s := range []string{"60.81", "0", "-3.5", "123456789012345678901234.5", "1.2.3", "", ".5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseFloat([]byte(s))
		if !ok {
			return
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("parseFloat(%q) = %v, but strconv says %v", s, got, err)
		}
		if got != want {
			t.Fatalf("parseFloat(%q): got %v, want %v", s, got, want)
		}
	})
}

// FuzzTimestamp checks the hand-written timestamp parser against the
// time package: whatever it reads in a layout with digits only, one of the
// layouts it stands for reads as the same time; the dates in words must
// not make it panic, and stay in the years a log may have.
func FuzzTimestamp(f *testing.F) {
	for _, s := range []string{"2026/11/29 09:00:00.000", "2026/11/29 09:00:00", "2026/02/30 09:00:00.5", "2026-11-29T09:00:00Z",
		"2026-11-29 09:00:00.123456", "2026-11-29T09:00:00+0130", "11-29-2026 09:00:00", "1795942800.25", "1795942800123",
		"Sun Nov 29 09:00:00 UTC 2026", "Sun 29 Nov 2026 09:00:00 AM CET", "Sun, 29 Nov 2026 09:00:00 +0000", "x"} {
		f.Add(s)
	}
	zone := time.FixedZone("UTC-5", -5*3600)
	layouts := []string{"2006/01/02 15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999",
		"01-02-2006 15:04:05.999999999", "01/02/2006 15:04:05.999999999"}
	var zoned []string
	for _, l := range layouts {
		for _, z := range []string{"Z07:00", "Z0700", "Z07"} {
			zoned = append(zoned, l+z)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := timeParser{loc: zone}
		got, ok := p.parse([]byte(s))
		if !ok {
			return
		}
		if y := time.Unix(0, got).UTC().Year(); y < minYear-1 || y > maxYear+1 {
			t.Fatalf("parse(%q) = %v, outside the years a log may have", s, time.Unix(0, got).UTC())
		}
		if strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXY") {
			return // a date in words
		}
		if sec, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "-+ :/") {
			if want := time.Unix(0, int64(sec*1e9)); math.Abs(float64(got-want.UnixNano())) > 1e3 && math.Abs(float64(got-int64(sec*1e6))) > 1e3 {
				t.Fatalf("parse(%q) = %v, want epoch %v", s, time.Unix(0, got).UTC(), want.UTC())
			}
			return
		}
		for _, l := range layouts {
			if want, err := time.ParseInLocation(l, s, zone); err == nil && want.UnixNano() == got {
				return
			}
		}
		for _, l := range zoned {
			if want, err := time.Parse(l, s); err == nil && want.UnixNano() == got {
				return
			}
		}
		t.Fatalf("parse(%q) = %v, which no layout of the time package reads alike", s, time.Unix(0, got).In(zone))
	})
}

func TestTimestampFormats(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	want := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		in   string
		want time.Time
	}{
		{"2026/11/29 09:00:00.000", want},
		{"2026-11-29T09:00:00", want},
		{"2026-11-29 09:00:00.250000", want.Add(250 * time.Millisecond)},
		{"2026-11-29T10:00:00+01:00", want},
		{"2026-11-29T10:00:00+0100", want},
		{"2026-11-29T09:00:00Z", want},
		{"2026-11-29T04:00:00.5-05", want.Add(500 * time.Millisecond)},
		{"11-29-2026 09:00:00", want},
		{"11/29/2026 09:00:00.5", want.Add(500 * time.Millisecond)},
		{"1795942800", want},
		{"1795942800.25", want.Add(250 * time.Millisecond)},
		{"1795942800250", want.Add(250 * time.Millisecond)},
		{"Sun Nov 29 09:00:00 2026", want},
		{"Sun Nov 29 09:00:00 UTC 2026", want},
		{"Sun 29 Nov 2026 09:00:00 AM GMT", want},
		{"Sun 29 Nov 2026 09:00:00 PM UTC", want.Add(12 * time.Hour)},
		{"Sun, 29 Nov 2026 10:00:00 +0100", want},
		{"Sun Nov 29 10:00:00 CET 2026", want.Add(time.Hour).In(cet).Add(0)}, // another zone's name: the log's zone (UTC here)
		{"November 29 2026 09:00:00", want},
	} {
		p := timeParser{loc: time.UTC}
		got, ok := p.parse([]byte(tt.in))
		if !ok || got != tt.want.UnixNano() {
			t.Errorf("parse(%q): got %v, %v, want %v", tt.in, time.Unix(0, got).UTC(), ok, tt.want.UTC())
		}
	}
	for _, bad := range []string{"Sun Nov 31 09:00:00 2026", "Sun Nov 29 25:00:00 2026", "Nov 29 09:00:00", "13 PM Nov 29 2026 01:00:00",
		"2026-11-29T09:00:00+25:00", "1795942800.1234567891", "12345", "Sun Nov 29 09:00:00 2026 2027"} {
		p := timeParser{loc: time.UTC}
		if _, ok := p.parse([]byte(bad)); ok {
			t.Errorf("parse(%q) = ok, want not a time", bad)
		}
	}
}
