package rules

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// BaseDim is the kind of thing a number measures.
type BaseDim int

// The base dimensions. A bare number in a condition is in the base unit of
// its dimension: bytes, percent, degrees Celsius, watts, a count, seconds
// or hertz.
const (
	Bytes BaseDim = iota + 1
	Percent
	Celsius
	Watts
	Count
	Seconds
	Hertz
)

// Dimension is what a value measures: a base dimension, or its rate of
// change per second (the dimension of slope).
type Dimension struct {
	Base      BaseDim
	PerSecond bool
}

// String names the dimension as error messages show it, such as "bytes" or
// "bytes per second".
func (d Dimension) String() string {
	var s string
	switch d.Base {
	case Bytes:
		s = "bytes"
	case Percent:
		s = "percent"
	case Celsius:
		s = "degrees Celsius"
	case Watts:
		s = "watts"
	case Count:
		s = "a count"
	case Seconds:
		s = "seconds"
	case Hertz:
		s = "hertz"
	default:
		s = "unknown"
	}
	if d.PerSecond {
		s += " per second"
	}
	return s
}

// Format writes v, a value of dimension d in its base unit, as people read
// it: "19.5 GiB", "97.3%", "86 C", "312 W", rates per minute such as
// "328 MiB/min", seconds as a duration such as "23m10s" ("never" for
// +Inf), and clocks in MHz ("1980 MHz"). NaN is "n/a".
func (d Dimension) Format(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	if math.IsInf(v, 0) && d != (Dimension{Base: Seconds}) {
		return formatNumber(v)
	}
	if d.PerSecond {
		return Dimension{Base: d.Base}.Format(v*60) + "/min"
	}
	switch d.Base {
	case Bytes:
		return formatBytes(v)
	case Percent:
		return formatNumber(v) + "%"
	case Celsius:
		return formatNumber(v) + " C"
	case Watts:
		return formatNumber(v) + " W"
	case Seconds:
		return formatSeconds(v)
	case Hertz:
		return formatNumber(v/1e6) + " MHz"
	}
	return formatNumber(v)
}

// precise writes v, a value of dimension d in its base unit, with every
// digit that matters: for a value that Format would round onto a
// threshold it is past ("1m" for the 60.4s of missing_for > 1m).
func (d Dimension) precise(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return d.Format(v)
	}
	if d.PerSecond {
		return Dimension{Base: d.Base}.precise(v*60) + "/min"
	}
	number := func(decimals int) string {
		s := strconv.FormatFloat(v, 'f', decimals, 64)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	switch d.Base {
	case Bytes:
		return number(0) + " B"
	case Percent:
		return number(4) + "%"
	case Celsius:
		return number(4) + " C"
	case Watts:
		return number(4) + " W"
	case Seconds:
		return number(3) + "s"
	case Hertz:
		v /= 1e6
		return number(6) + " MHz"
	}
	return number(4)
}

// formatNumber writes v with about three significant digits and no
// trailing zeros: 97.25 → "97.3", 86 → "86", 0.123 → "0.12".
func formatNumber(v float64) string {
	if math.IsInf(v, 0) {
		if v > 0 {
			return "+Inf"
		}
		return "-Inf"
	}
	decimals := 2
	switch a := math.Abs(v); {
	case a >= 100:
		decimals = 0
	case a >= 10:
		decimals = 1
	}
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// formatBytes writes a byte count with the largest binary unit that keeps
// the number at least 1: "512 B", "19.5 GiB".
func formatBytes(v float64) string {
	units := [...]string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for i < len(units)-1 && math.Abs(v) >= 1024 {
		v /= 1024
		i++
	}
	// Rounding can carry a value such as 1023.9 KiB up to "1024 KiB".
	if s := formatNumber(v); s != "1024" && s != "-1024" || i == len(units)-1 {
		return s + " " + units[i]
	}
	return formatNumber(v/1024) + " " + units[i+1]
}

// formatSeconds writes seconds as a duration: "350ms", "45s", "23m10s",
// "2h5m", "3d4h"; +Inf is "never". It shows at most two units, truncating
// the rest.
func formatSeconds(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "never"
	case v < 0:
		return "-" + formatSeconds(-v)
	case v == 0:
		return "0s"
	case v < 1:
		return formatNumber(v*1000) + "ms"
	case v >= 1e12:
		return formatNumber(v/86400) + "d"
	}
	s := int64(math.Round(v))
	parts := [...]struct {
		n    int64
		unit string
	}{{s / 86400, "d"}, {s % 86400 / 3600, "h"}, {s % 3600 / 60, "m"}, {s % 60, "s"}}
	first := 0
	for parts[first].n == 0 {
		first++
	}
	var b strings.Builder
	for _, p := range parts[first:min(first+2, len(parts))] {
		if p.n != 0 {
			b.WriteString(strconv.FormatInt(p.n, 10) + p.unit)
		}
	}
	return b.String()
}

// unit is a unit a quantity may carry: what it measures and how many base
// units one of it is.
type unit struct {
	dim    Dimension
	factor float64
}

// lookupUnit finds the unit spelled s: a size, %, C, W, a duration, or a
// rate "X/T" of any of those (or of a count, "/T") per a time T.
func lookupUnit(s string) (unit, bool) {
	if num, den, ok := strings.Cut(s, "/"); ok {
		per, ok := timeUnit(den)
		if !ok {
			return unit{}, false
		}
		u := unit{dim: Dimension{Base: Count}, factor: 1}
		if num != "" {
			if u, ok = plainUnit(num); !ok || u.dim.Base == Seconds {
				return unit{}, false
			}
		}
		return unit{dim: Dimension{Base: u.dim.Base, PerSecond: true}, factor: u.factor / per}, true
	}
	return plainUnit(s)
}

// plainUnit finds a unit that is not a rate.
func plainUnit(s string) (unit, bool) {
	if f, ok := timeUnit(s); ok {
		return unit{dim: Dimension{Base: Seconds}, factor: f}, true
	}
	if f, ok := sizeUnit(s); ok {
		return unit{dim: Dimension{Base: Bytes}, factor: f}, true
	}
	switch s {
	case "%":
		return unit{dim: Dimension{Base: Percent}, factor: 1}, true
	case "C":
		return unit{dim: Dimension{Base: Celsius}, factor: 1}, true
	case "W":
		return unit{dim: Dimension{Base: Watts}, factor: 1}, true
	case "Hz":
		return unit{dim: Dimension{Base: Hertz}, factor: 1}, true
	case "kHz":
		return unit{dim: Dimension{Base: Hertz}, factor: 1e3}, true
	case "MHz":
		return unit{dim: Dimension{Base: Hertz}, factor: 1e6}, true
	case "GHz":
		return unit{dim: Dimension{Base: Hertz}, factor: 1e9}, true
	}
	return unit{}, false
}

// sizeUnit returns the bytes in one of the size unit s: binary units (KiB)
// are powers of 1024, decimal ones (KB) powers of 1000.
func sizeUnit(s string) (float64, bool) {
	switch s {
	case "B":
		return 1, true
	case "KiB":
		return 1 << 10, true
	case "MiB":
		return 1 << 20, true
	case "GiB":
		return 1 << 30, true
	case "TiB":
		return 1 << 40, true
	case "KB":
		return 1e3, true
	case "MB":
		return 1e6, true
	case "GB":
		return 1e9, true
	case "TB":
		return 1e12, true
	}
	return 0, false
}

// timeUnit returns the seconds in one of the time unit s.
func timeUnit(s string) (float64, bool) {
	switch s {
	case "ms":
		return 1e-3, true
	case "s":
		return 1, true
	case "m", "min":
		return 60, true
	case "h":
		return 3600, true
	case "d":
		return 86400, true
	}
	return 0, false
}

// allUnits lists the unit spellings, for suggestions on a misspelt unit.
const allUnits = "% B KiB MiB GiB TiB KB MB GB TB C W Hz kHz MHz GHz ms s m min h d"

// suggestUnit returns the unit s probably meant, ignoring case, or "".
func suggestUnit(s string) string {
	num, den, rate := strings.Cut(s, "/")
	fix := func(part string) string {
		for _, u := range strings.Fields(allUnits) {
			if strings.EqualFold(u, part) {
				return u
			}
		}
		return ""
	}
	if !rate {
		return fix(s)
	}
	n, d := fix(num), fix(den)
	if (num != "" && n == "") || d == "" {
		return ""
	}
	if _, ok := lookupUnit(n + "/" + d); !ok {
		return ""
	}
	return n + "/" + d
}

// unitNoun describes what a unit of dimension d measures, for errors such
// as `unit "C" is a temperature`.
func unitNoun(d Dimension) string {
	if d.PerSecond {
		if d.Base == Count {
			return "a count per time"
		}
		return "a rate of " + Dimension{Base: d.Base}.String() + " per time"
	}
	switch d.Base {
	case Bytes:
		return "a size"
	case Percent:
		return "a percentage"
	case Celsius:
		return "a temperature"
	case Watts:
		return "a power"
	case Seconds:
		return "a duration"
	case Hertz:
		return "a frequency"
	}
	return "a count"
}

// unitHint says which units fit dimension d.
func unitHint(d Dimension) string {
	if d.PerSecond {
		switch d.Base {
		case Bytes:
			return "use a rate such as MiB/s, MiB/min or GiB/h"
		case Percent:
			return "use a rate such as %/min"
		case Celsius:
			return "use a rate such as C/min"
		case Watts:
			return "use a rate such as W/min"
		}
		return "use a plain number (per second) or a rate such as 2/min"
	}
	switch d.Base {
	case Bytes:
		return "use B, KiB, MiB, GiB, TiB"
	case Percent:
		return "use %"
	case Celsius:
		return "use C"
	case Watts:
		return "use W"
	case Seconds:
		return "use ms, s, m, h or d"
	case Hertz:
		return "use MHz or GHz"
	}
	return "use a plain number"
}

// maxWindow is the longest window a function may use. Windows keep their
// samples, so a longer one would hold too many; and spans up to it convert
// to and from float seconds exactly.
const maxWindow = 31 * 24 * time.Hour
