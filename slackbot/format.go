package slackbot

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/sparkline"
)

// spark draws percentages (0 to 100) as one bar each on a fixed scale, so
// that two sparklines compare at a glance; NaN is a gap.
func spark(percents []float64) string { return sparkline.Draw(percents, 0, 100) }

// downsample averages values into at most n buckets, ignoring NaN (a bucket
// of NaN only stays NaN). Slack shows about 60 characters on a line.
func downsample(values []float64, n int) []float64 {
	if len(values) <= n {
		return values
	}
	out := make([]float64, n)
	for i := range out {
		lo, hi := i*len(values)/n, (i+1)*len(values)/n
		sum, cnt := 0.0, 0
		for _, v := range values[lo:hi] {
			if !math.IsNaN(v) {
				sum += v
				cnt++
			}
		}
		out[i] = math.NaN()
		if cnt > 0 {
			out[i] = sum / float64(cnt)
		}
	}
	return out
}

// meter is a 10-cell bar of a percentage, "▰▰▰▱▱▱▱▱▱▱".
func meter(pct float64) string {
	if math.IsNaN(pct) {
		return "▱▱▱▱▱▱▱▱▱▱"
	}
	full := max(0, min(10, int(math.Round(pct/10))))
	return strings.Repeat("▰", full) + strings.Repeat("▱", 10-full)
}

// gib writes a byte count in GiB with one decimal.
func gib(b uint64) string {
	return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
}

// reading writes a measurement with its unit, or "n/a" when unknown.
func reading(v float64, format string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return fmt.Sprintf(format, v)
}

// since writes how long ago t was, coarsely: "42s", "17m", "3h5m", "2d4h".
func since(now, t time.Time) string {
	d := max(0, now.Sub(t)).Truncate(time.Second)
	h := int(d / time.Hour)
	m := int(d%time.Hour) / int(time.Minute)
	switch {
	case h >= 24:
		return fmt.Sprintf("%dd%dh", h/24, h%24)
	case h > 0:
		return fmt.Sprintf("%dh%dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm", m)
	}
	return fmt.Sprintf("%ds", int(d/time.Second))
}

// span writes a duration the way users type it: "1h", "90m", "2d".
func span(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// localTime is a Slack date token: each reader sees t in their own zone.
func localTime(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", t.Unix(), t.UTC().Format(time.DateTime+" UTC"))
}
