package rules

import (
	"math"
	"time"
)

// history keeps a metric's last half hour as one average a minute, for the
// sparklines of notifications. It costs a few nanoseconds a sample, far less
// than a Window, because it keeps no individual samples.
type history struct {
	buckets [historySteps]historyBucket
	newest  int64 // the latest minute with a sample
}

// historyBucket is one minute of a history: a sample touches one bucket,
// so its fields lie together.
type historyBucket struct {
	sum    float64
	minute int32 // the minute (Unix time / 60s) the bucket holds, as minuteOf says it
	count  int32
}

// latest returns the start of the latest minute with a sample.
func (h *history) latest() time.Time { return time.Unix(h.newest*60, 0) }

func (h *history) add(t time.Time, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	m := minuteOf(t)
	b := &h.buckets[bucket(m)]
	if int64(b.minute) != m || b.count == 0 {
		*b = historyBucket{minute: int32(m)}
	}
	b.sum += v
	b.count++
	h.newest = max(h.newest, m)
}

// series returns the averages of the historySteps minutes up to and
// including end's minute, oldest first; NaN for a minute without samples.
func (h *history) series(end time.Time) []float64 {
	out := make([]float64, historySteps)
	last := minuteOf(end)
	for k := range out {
		m := last - int64(historySteps-1-k)
		if b := &h.buckets[bucket(m)]; int64(b.minute) == m && b.count > 0 {
			out[k] = b.sum / float64(b.count)
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
