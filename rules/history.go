package rules

import (
	"math"
	"time"
)

// history keeps a metric's last half hour as one average a minute, for the
// sparklines of notifications. It costs a few nanoseconds a sample, far less
// than a Window, because it keeps no individual samples.
//
// The minute being added to lies in the history itself (current), and
// goes to its place among the others when the next minute starts: a
// sample reads nothing far away. The histories of a GPU's metrics share
// one block of places (newHistories), one minute of each metric side by
// side, written together. The zero history is empty and usable.
type history struct {
	// current is the minute of the latest samples; while it has samples,
	// it stands for its place in buckets (see place).
	current historyBucket
	newest  int64 // the latest minute with a sample
	// buckets holds minute m at buckets[bucket(m)*stride].
	buckets []historyBucket
	stride  int
}

// newHistories makes n empty histories whose minutes lie side by side.
func newHistories(n int) []history {
	hs := make([]history, n)
	block := make([]historyBucket, historySteps*n)
	for i := range hs {
		hs[i] = history{buckets: block[i:], stride: n}
	}
	return hs
}

// historyBucket is one minute of a history.
type historyBucket struct {
	sum    float64
	minute int32 // the minute (Unix time / 60s) the bucket holds, as minuteOf says it
	count  int32
}

// place returns where h keeps minute m: current while it has samples and
// m falls on its place, else that place in buckets.
func (h *history) place(m int64) *historyBucket {
	if h.current.count > 0 && bucket(m) == bucket(int64(h.current.minute)) {
		return &h.current
	}
	if h.stride == 0 {
		h.buckets, h.stride = make([]historyBucket, historySteps), 1
	}
	return &h.buckets[bucket(m)*h.stride]
}

// settle puts the current minute in its place in buckets.
func (h *history) settle() {
	if h.current.count > 0 {
		c := h.current
		h.current = historyBucket{}
		*h.place(int64(c.minute)) = c
	}
}

// latest returns the start of the latest minute with a sample.
func (h *history) latest() time.Time { return time.Unix(h.newest*60, 0) }

func (h *history) add(t time.Time, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	m := minuteOf(t)
	b := &h.current
	switch {
	case b.count > 0 && int64(b.minute) == m:
	case m > h.newest:
		// A minute without samples yet, where time goes on.
		h.settle()
		b.minute = int32(m)
	default:
		// A minute seen before: time went back.
		h.settle()
		if b = h.place(m); int64(b.minute) != m || b.count == 0 {
			*b = historyBucket{minute: int32(m)}
		}
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
		out[k] = h.average(last - int64(historySteps-1-k))
	}
	return out
}

// average is the average of minute m, NaN when it has no samples.
func (h *history) average(m int64) float64 {
	if h.current.count == 0 && h.stride == 0 {
		return math.NaN() // no sample yet
	}
	if b := h.place(m); int64(b.minute) == m && b.count > 0 {
		return b.sum / float64(b.count)
	}
	return math.NaN()
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
