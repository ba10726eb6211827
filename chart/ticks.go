package chart

import (
	"math"
	"strconv"
	"time"
)

// timeSteps are the spacings time ticks may take, shortest first.
var timeSteps = []time.Duration{
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
	2 * 24 * time.Hour, 7 * 24 * time.Hour,
}

// maxTimeTicks is the most time ticks an axis of the figure's width
// carries, so labels never touch on a phone.
const maxTimeTicks = 7

// timeTick is one labelled time on an axis.
type timeTick struct {
	At    time.Time
	Label string
}

// timeTicks returns round times between from and to in loc (at most
// most), labelled as clock times, or as dates with the clock when the
// span crosses days.
func timeTicks(from, to time.Time, loc *time.Location, most int) []timeTick {
	span := to.Sub(from)
	if span <= 0 {
		return nil
	}
	step := timeSteps[len(timeSteps)-1]
	for _, s := range timeSteps {
		if span/s <= time.Duration(most-1) {
			step = s
			break
		}
	}
	local := from.In(loc)
	// Round up to the step in local time: 14:00, 14:15, … on the wall clock.
	midnight := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, loc)
	first := midnight
	if step < 24*time.Hour {
		first = midnight.Add(local.Sub(midnight).Truncate(step))
	}
	for first.Before(from) {
		first = first.Add(step)
	}
	layout := "15:04"
	if span > 24*time.Hour {
		layout = "Mon 15:04"
	}
	if step >= 24*time.Hour {
		layout = "Mon 2 Jan"
	}
	var out []timeTick
	for t := first; !t.After(to); t = t.Add(step) {
		out = append(out, timeTick{At: t, Label: t.In(loc).Format(layout)})
	}
	return out
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten: an axis's
// top.
func niceCeil(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 0) {
		return 1
	}
	exp := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*exp*(1+1e-9) {
			return m * exp
		}
	}
	return 10 * exp
}

// niceTop rounds v up to a whole number of the step its axis ticks take:
// 104 becomes 120, not 200.
func niceTop(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 0) {
		return 1
	}
	step := niceCeil(v / 5)
	return math.Ceil(v/step*(1-1e-9)) * step
}

// valueTicks returns about five round values from lo to hi.
func valueTicks(lo, hi float64) []float64 { return valueTicksN(lo, hi, 5) }

// valueTicksN returns about n+1 round values from lo to hi.
func valueTicksN(lo, hi float64, n int) []float64 {
	if !(hi > lo) {
		return []float64{lo}
	}
	step := niceCeil((hi - lo) / float64(n))
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi*(1+1e-9); v += step {
		out = append(out, v)
	}
	return out
}

// formatValue writes a tick's value without needless digits.
func formatValue(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 100 || a == math.Trunc(a):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
