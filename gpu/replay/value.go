package replay

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
)

// isUnknown reports whether v says a reading is not available: nvidia-smi's
// "[N/A]", "[Not Supported]", "[Unknown Error]" and the like, its table's
// "N/A" and "ERR!", dmon's "-", and what scripts write for a missing value:
// nothing, "nan", "None", "null".
func isUnknown(v []byte) bool {
	if len(v) >= 2 && v[0] == '[' && v[len(v)-1] == ']' {
		return true
	}
	switch string(v) {
	case "", "N/A", "n/a", "NA", "ERR!", "-", "nan", "NaN", "None", "null":
		return true
	}
	return false
}

// splitUnit splits a value such as "500 MiB" or "71%" into its number and
// its unit. Values written with --format=csv,nounits have no unit.
func splitUnit(v []byte) (num, unit []byte) {
	for i, c := range v {
		if (c < '0' || c > '9') && c != '.' && (i > 0 || c != '-' && c != '+') {
			return v[:i], trimSpace(v[i:])
		}
	}
	return v, nil
}

// parseFloat parses a plain decimal such as "60.81" or "-3". Exponents,
// infinities and NaN are not numbers here: nvidia-smi never writes them.
func parseFloat(b []byte) (float64, bool) {
	i, neg := 0, false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		i++
	}
	var m uint64
	nd, frac, dot := 0, 0, false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			if nd >= 19 {
				return slowFloat(b)
			}
			m = m*10 + uint64(c-'0')
			nd++
			if dot {
				frac++
			}
		case c == '.' && !dot:
			dot = true
		default:
			return 0, false
		}
	}
	if nd == 0 {
		return 0, false
	}
	if m > 1<<53 || frac > 22 {
		return slowFloat(b)
	}
	// Both m and 10^frac are exact in a float64, so one division gives the
	// correctly rounded result, the same as strconv.ParseFloat.
	p := 1.0
	for range frac {
		p *= 10
	}
	f := float64(m) / p
	if neg {
		f = -f
	}
	return f, true
}

// slowFloat parses decimals too long for parseFloat's exact fast path; b
// holds only a sign, digits and at most one dot.
func slowFloat(b []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil && !math.IsInf(f, 0)
}

// parseBytes parses a memory amount in units of scale bytes ("81559" MiB) and
// returns it in bytes.
func parseBytes(b []byte, scale uint64) (uint64, bool) {
	var m uint64
	for i, c := range b {
		if c < '0' || c > '9' || i >= 19 {
			return parseFracBytes(b, scale)
		}
		m = m*10 + uint64(c-'0')
	}
	if len(b) == 0 || m > math.MaxUint64/scale {
		return 0, false
	}
	return m * scale, true
}

// parseFracBytes parses a memory amount with a fraction ("1.5" GiB).
func parseFracBytes(b []byte, scale uint64) (uint64, bool) {
	if len(b) > 0 && b[0] == '-' {
		return 0, false
	}
	f, ok := parseFloat(b)
	if !ok {
		return 0, false
	}
	v := math.Round(f * float64(scale))
	if v >= math.MaxUint64 {
		return 0, false
	}
	return uint64(v), true
}

// readingUnits are the units a reading's values may carry, and what one
// of each is in gpuwatch's unit.
var readingUnits = [numKinds][]struct {
	unit   string
	factor float64
}{
	colTemp:       {{"C", 1}, {"°C", 1}, {"degC", 1}, {"'C", 1}, {"℃", 1}},
	colUtilGPU:    {{"%", 1}},
	colUtilMem:    {{"%", 1}},
	colPower:      {{"W", 1}, {"mW", 0.001}},
	colPowerLimit: {{"W", 1}, {"mW", 0.001}},
}

// isUnit reports whether u is a unit of some reading or of memory.
func isUnit(u []byte) bool {
	for _, units := range readingUnits {
		for _, x := range units {
			if x.unit == string(u) {
				return true
			}
		}
	}
	_, ok := memoryScale(u)
	return ok
}

// examples are values of each reading, for messages.
var examples = [numKinds]string{
	colTemp: "36", colUtilGPU: "71 %", colUtilMem: "43 %", colPower: "60.81 W", colPowerLimit: "700.00 W",
}

// reading parses a float column: a number, optionally followed by its unit
// (or by no unit at all, as nounits logs write it). Unknown readings are
// NaN.
func reading(c *column, col int, v []byte) (float64, *fieldError) {
	if isUnknown(v) {
		return math.NaN(), nil
	}
	num, u := splitUnit(v)
	f, ok := parseFloat(num)
	if !ok || bytes.IndexByte(u, ' ') >= 0 {
		return 0, notNumber(c, col, v, examples[c.kind])
	}
	if len(u) > 0 {
		units := readingUnits[c.kind]
		i := 0
		for i < len(units) && units[i].unit != string(u) {
			i++
		}
		if i == len(units) && !isUnit(u) {
			return 0, notNumber(c, col, v, examples[c.kind])
		}
		if i == len(units) {
			return 0, &fieldError{col, fmt.Sprintf("%s: unit %q in %q does not fit the column; want %s, as in %q",
				c.name, u, v, units[0].unit, examples[c.kind])}
		}
		return f * units[i].factor, nil
	}
	if c.factor != 0 {
		f *= c.factor
	}
	return f, nil
}

// memory parses a memory column. known is false for unknown readings.
func memory(c *column, col int, v []byte) (n uint64, known bool, _ *fieldError) {
	if isUnknown(v) {
		return 0, false, nil
	}
	num, u := splitUnit(v)
	scale := c.scale
	if len(u) == 0 && c.unitless {
		return 0, false, nil // an amount or a share? not read (a note says so)
	}
	if len(u) > 0 {
		s, ok := memoryScale(u)
		if !ok && (bytes.IndexByte(u, ' ') >= 0 || len(num) == 0) {
			return 0, false, notNumber(c, col, v, "500 MiB")
		}
		if !ok {
			return 0, false, &fieldError{col, fmt.Sprintf("%s: unit %q in %q is not a memory unit; want MiB, as in %q",
				c.name, u, v, "500 MiB")}
		}
		scale = s
	}
	n, ok := parseBytes(num, scale)
	if !ok {
		return 0, false, notNumber(c, col, v, "500 MiB")
	}
	return n, true, nil
}

// notNumber is the error for a value that should be a number and is not.
func notNumber(c *column, col int, v []byte, example string) *fieldError {
	return &fieldError{col, fmt.Sprintf("%s: %q is not a number; want a value such as %q (or %q in nounits logs), or [N/A] when unknown",
		c.name, v, example, string(firstWord(example)))}
}

func firstWord(s string) []byte {
	num, _ := splitUnit([]byte(s))
	return num
}

// memoryPair parses a memory value written as USED / TOTAL, as scripts
// write it in one column or field ("8595 / 24576 MiB", "8.4GB/24GB"); v's
// slash is at slash. A unit after the total alone is the used amount's
// too.
func memoryPair(c *column, col int, v []byte, slash int) (used uint64, haveUsed bool, total uint64, haveTotal bool, ferr *fieldError) {
	a, b := trimSpace(v[:slash]), trimSpace(v[slash+1:])
	first := *c
	if _, ua := splitUnit(a); len(ua) == 0 {
		if _, ub := splitUnit(b); len(ub) > 0 {
			if s, ok := memoryScale(ub); ok {
				first.scale, first.unitless = s, false
			}
		}
	}
	if used, haveUsed, ferr = memory(&first, col, a); ferr != nil {
		return 0, false, 0, false, ferr
	}
	if total, haveTotal, ferr = memory(c, col+slash+1, b); ferr != nil {
		return 0, false, 0, false, ferr
	}
	return used, haveUsed, total, haveTotal, nil
}
