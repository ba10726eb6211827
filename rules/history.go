package rules

import (
	"math"
	"time"
)

// history keeps a metric's last half hour as one average a minute, for the
// sparklines of notifications. It costs a few nanoseconds a sample, far less
// than a Window, because it keeps no individual samples.
type history struct {
	minute [historySteps]int64 // the minute (Unix time / 60s) each bucket holds
	sum    [historySteps]float64
	count  [historySteps]int32
	newest int64 // the latest minute with a sample
}

// latest returns the start of the latest minute with a sample.
func (h *history) latest() time.Time { return time.Unix(h.newest*60, 0) }

func (h *history) add(t time.Time, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	m := minuteOf(t)
	i := bucket(m)
	if h.minute[i] != m || h.count[i] == 0 {
		h.minute[i], h.sum[i], h.count[i] = m, 0, 0
	}
	h.sum[i] += v
	h.count[i]++
	h.newest = max(h.newest, m)
}

// series returns the averages of the historySteps minutes up to and
// including end's minute, oldest first; NaN for a minute without samples.
func (h *history) series(end time.Time) []float64 {
	out := make([]float64, historySteps)
	last := minuteOf(end)
	for k := range out {
		m := last - int64(historySteps-1-k)
		i := bucket(m)
		if h.minute[i] == m && h.count[i] > 0 {
			out[k] = h.sum[i] / float64(h.count[i])
		} else {
			out[k] = math.NaN()
		}
	}
	return out
}

// minuteOf is the minute of t since the epoch, counted down before it.
func minuteOf(t time.Time) int64 {
	s := t.Unix()
	if s < 0 && s%60 != 0 {
		return s/60 - 1
	}
	return s / 60
}

// bucket is where minute m is kept.
func bucket(m int64) int {
	return int((m%historySteps + historySteps) % historySteps)
}
