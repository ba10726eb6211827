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
	m := t.Unix() / 60
	i := int(m % historySteps)
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
	last := end.Unix() / 60
	for k := range out {
		m := last - int64(historySteps-1-k)
		i := int(m % historySteps)
		if h.minute[i] == m && h.count[i] > 0 {
			out[k] = h.sum[i] / float64(h.count[i])
		} else {
			out[k] = math.NaN()
		}
	}
	return out
}
