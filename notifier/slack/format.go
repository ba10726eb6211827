package slack

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/sparkline"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/rules"
)

// Sparkline draws values as bars scaled between their smallest and largest
// known value; an unknown value (NaN, ±Inf) is a space. A flat series sits
// at mid height. It returns "" when no value is known.
func Sparkline(values []notifier.Float) string {
	lo, hi, ok := historyRange(values)
	if !ok {
		return ""
	}
	return sparkline.Draw(floats(values), lo, hi)
}

// historyRange returns the smallest and largest known value of a series.
func historyRange(values []notifier.Float) (lo, hi float64, ok bool) {
	return sparkline.Range(floats(values))
}

func floats(values []notifier.Float) []float64 {
	out := make([]float64, len(values))
	for i, v := range values {
		out[i] = float64(v)
	}
	return out
}

// formatValue writes v in unit ("bytes", "percent", "C", "W", "seconds",
// or anything else, printed after the number).
func formatValue(v float64, unit string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	switch strings.ToLower(unit) {
	case "bytes", "byte", "b":
		return formatBytes(v)
	case "percent", "%":
		return fmt.Sprintf("%.0f%%", v)
	case "c", "celsius", "degrees celsius":
		return fmt.Sprintf("%.0f C", v)
	case "w", "watts":
		return fmt.Sprintf("%.0f W", v)
	case "seconds", "s":
		return shortDuration(time.Duration(v * float64(time.Second)))
	case "":
		return fmt.Sprintf("%.4g", v)
	}
	return fmt.Sprintf("%.4g %s", v, unit)
}

// formatBytes writes a byte count as every gpuwatch message does: "61 GiB".
func formatBytes(v float64) string { return rules.Dimension{Base: rules.Bytes}.Format(v) }

// shortDuration writes a duration to the second, without the zero parts a
// person does not need: "45s", "12m", "18m5s", "4h", "4h5m", "2d3h".
func shortDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Round(time.Second)
	days, hours := d/(24*time.Hour), (d%(24*time.Hour))/time.Hour
	mins, secs := (d%time.Hour)/time.Minute, (d%time.Minute)/time.Second
	parts := func(a time.Duration, ua string, b time.Duration, ub string) string {
		if b == 0 {
			return fmt.Sprintf("%d%s", a, ua)
		}
		return fmt.Sprintf("%d%s%d%s", a, ua, b, ub)
	}
	switch {
	case days > 0:
		return parts(days, "d", hours, "h")
	case hours > 0:
		return parts(hours, "h", mins, "m")
	case mins > 0:
		return parts(mins, "m", secs, "s")
	}
	return fmt.Sprintf("%ds", secs)
}

// slackDate formats t so each reader sees it in their own time zone, with
// UTC for clients that cannot.
func slackDate(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", t.Unix(), t.UTC().Format("2006-01-02 15:04 UTC"))
}
