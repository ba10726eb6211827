// Package sparkline draws a series of numbers as a line of block
// characters (▁▂▃▄▅▆▇█), the small charts gpuwatch puts in Slack messages,
// /gpu answers and digests.
package sparkline

import (
	"math"
	"strings"
)

// levels are the eight heights, lowest first.
const levels = "▁▂▃▄▅▆▇█"

// Draw draws each value as one bar on the scale lo..hi: lo is the lowest
// bar, hi the highest, values outside are clamped. An unknown value (NaN,
// ±Inf) is a space. With lo == hi every known value sits at mid height.
func Draw(values []float64, lo, hi float64) string {
	bars := []rune(levels)
	n := len(bars)
	var b strings.Builder
	b.Grow(3 * len(values))
	for _, v := range values {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			b.WriteByte(' ')
		case hi <= lo:
			b.WriteRune(bars[n/2-1])
		default:
			i := int(math.Floor((v - lo) / (hi - lo) * float64(n)))
			b.WriteRune(bars[max(0, min(n-1, i))])
		}
	}
	return b.String()
}

// Range returns the smallest and largest known value of values; ok is false
// when none is known.
func Range(values []float64) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			lo, hi, ok = math.Min(lo, v), math.Max(hi, v), true
		}
	}
	return lo, hi, ok
}
