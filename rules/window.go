// Package rules reads alert rule files, evaluates their conditions on GPU
// snapshots, keeps the sliding-window statistics that window functions need,
// and runs each alert's state machine.
package rules

import (
	"math"
	"time"
)

// Rounding errors of the incremental updates scale with the values and the
// number of updates since the last exact rebuild, so a Window rebuilds its
// sums from the stored samples
//   - after rebuildEvery × (ring capacity) updates, and
//   - when the range of the values falls below 1/rebuildOnDrop of the largest
//     range since the last rebuild (a large value left the window: its
//     rounding error would dwarf what remains).
//
// A rebuild costs O(len). The first rule runs it once per ≥ len updates.
// The second needs the range to shrink 256-fold: once after a large value
// passes through the window (≥ len evictions), as when a job frees its
// memory. Only a series whose range shrinks 256-fold sample after sample
// triggers it more often, and the float64 range bounds that run to about
// 260 rebuilds per window length, so the cost stays O(1) amortized.
const (
	rebuildEvery  = 2
	rebuildOnDrop = 256
)

// Window holds the samples of one series that lie in the sliding window
// (t−span, t], where t is the time of the latest Add, and answers avg, min,
// max, least-squares slope and linear prediction over them in O(1).
//
// A window the engine makes keeps up to date only the statistics its
// rules read (windowStats): a window only max() reads keeps no minimum
// and no regression sums. A statistic asked for that the window did not
// keep is built from the stored samples first, so every query is always
// answered, and the window keeps it from then on.
//
// Each Add costs O(1) amortized, whatever the span: the mean and the centred
// regression sums are updated in place (Welford's method, with removal) and
// rebuilt exactly from the stored samples every few window lengths; min and
// max come from monotonic deques. Storage is a ring buffer that grows to the
// largest number of samples the window has held and is then reused, so a
// Window in steady state allocates nothing.
//
// The zero Window is not usable; call NewWindow. A Window is not safe for
// concurrent use.
type Window struct {
	span  int64       // nanoseconds, ≥ 0
	keeps windowStats // the statistics kept up to date

	// samples holds the stored samples in time order. Their sequence
	// numbers, samples.head ≤ s < samples.tail, are what the deques hold.
	samples windowRing[windowSample]
	// minq holds sequence numbers of samples whose values strictly increase
	// from front to back; its front is the minimum. maxq is the mirror.
	minq, maxq windowRing[uint64]

	now    int64 // time of the latest accepted Add, stored or not
	hasNow bool

	// Regression state over x = seconds since origin and y = value: the
	// means and the centred sums Σ(x−x̄)² and Σ(x−x̄)(y−ȳ). origin is the
	// oldest stored sample at the last rebuild, so x stays small.
	origin   int64
	mx, my   float64
	sxx, sxy float64
	updates  int     // incremental updates since the last rebuild
	peak     float64 // largest range of the values since the last rebuild

	// A counter window (NewCounterWindow) stores each value plus offset,
	// the sum of the values the counter had before each reset, so that a
	// reset is a restart from 0, not a fall. last is the latest value as
	// added.
	counter bool
	offset  float64
	last    float64
	hasLast bool
}

// windowStats is a set of the statistics a Window keeps up to date as
// samples come and go.
type windowStats uint8

const (
	statMin  windowStats = 1 << iota // the minimum's deque: Min
	statMax                          // the maximum's deque: Max
	statSums                         // the regression sums; only with both deques

	// statAll is what Avg, Slope and Predict need: the sums, and both
	// deques, which say whether the window is constant.
	statAll = statMin | statMax | statSums
)

// windowSample is one stored observation: Unix nanoseconds and value.
type windowSample struct {
	t int64
	v float64
}

// NewWindow returns an empty window of the given span, which keeps every
// statistic up to date. A span ≤ 0 gives a window that holds only the
// newest sample and is never Ready.
func NewWindow(span time.Duration) *Window { return newWindowOf(span, statAll) }

// newWindowOf returns an empty window of the given span that keeps the
// statistics stats up to date (see Window).
func newWindowOf(span time.Duration, stats windowStats) *Window {
	w := windowOf(span, stats)
	return &w
}

// windowOf is an empty window of the given span that keeps the
// statistics stats up to date.
func windowOf(span time.Duration, stats windowStats) Window {
	return Window{span: max(int64(span), 0), keeps: stats}
}

// keep makes the window keep the statistics stats from now on.
func (w *Window) keep(stats windowStats) {
	if stats&^w.keeps != 0 {
		w.build(stats &^ w.keeps)
	}
}

// build starts keeping the statistics stats, which the window did not
// keep: it builds them from the stored samples, the deques first, since
// the sums read them.
func (w *Window) build(stats windowStats) {
	w.keeps |= stats
	for seq := w.samples.head; seq != w.samples.tail; seq++ {
		v := w.samples.at(seq).v
		if stats&statMin != 0 {
			w.pushMin(seq, v)
		}
		if stats&statMax != 0 {
			w.pushMax(seq, v)
		}
	}
	if stats&statSums != 0 {
		w.rebuild()
	}
}

// NewCounterWindow returns an empty window of a counter, for Rate: a value
// below the one before means the counter was reset (the driver reloaded,
// the GPU was reset) and counts up from 0 again, as Prometheus's rate()
// takes it.
func NewCounterWindow(span time.Duration) *Window {
	w := NewWindow(span)
	w.counter = true
	return w
}

// Span returns the window's length.
func (w *Window) Span() time.Duration { return time.Duration(w.span) }

// Add records the value v observed at t. It first evicts the samples with
// time ≤ t−span, then stores v unless it is NaN or ±Inf. A t earlier than
// the latest accepted Add (stored or not) is ignored, so times never go
// backwards; an equal t is accepted.
func (w *Window) Add(t time.Time, v float64) {
	ts := t.UnixNano()
	if w.hasNow && ts < w.now {
		return
	}
	w.now, w.hasNow = ts, true
	w.evict(ts)
	if !math.IsNaN(v) && !math.IsInf(v, 0) {
		if w.counter {
			if w.hasLast && v < w.last {
				w.offset += w.last
			}
			w.last, w.hasLast = v, true
			v += w.offset
		}
		w.store(ts, v)
	}
	if w.keeps&statSums == 0 || w.samples.len() < 2 {
		return
	}
	spread := w.samples.at(w.maxq.front()).v - w.samples.at(w.minq.front()).v
	w.peak = max(w.peak, spread)
	if w.updates >= rebuildEvery*len(w.samples.buf) || spread*rebuildOnDrop < w.peak {
		w.rebuild()
	}
}

// evict drops the samples with time ≤ ts−span.
func (w *Window) evict(ts int64) {
	cutoff := ts - w.span
	if cutoff > ts { // ts−span underflowed: nothing is that old
		return
	}
	for w.samples.len() > 0 && w.samples.front().t <= cutoff {
		seq := w.samples.head
		old := w.samples.front()
		w.samples.popFront()
		if w.keeps&statMin != 0 && w.minq.front() == seq {
			w.minq.popFront()
		}
		if w.keeps&statMax != 0 && w.maxq.front() == seq {
			w.maxq.popFront()
		}
		if w.keeps&statSums != 0 {
			w.exclude(old)
		}
	}
}

// store appends a finite sample and updates the deques and the sums it
// keeps.
func (w *Window) store(ts int64, v float64) {
	seq := w.samples.tail
	w.samples.pushBack(windowSample{t: ts, v: v})
	if w.keeps&statMin != 0 {
		w.pushMin(seq, v)
	}
	if w.keeps&statMax != 0 {
		w.pushMax(seq, v)
	}
	if w.keeps&statSums != 0 {
		w.include(windowSample{t: ts, v: v})
	}
}

// pushMin and pushMax append the stored sample seq, of value v, to the
// minimum's and the maximum's deque. Dropping older equal values keeps the
// deques short; the newer equal sample carries the same value and is
// evicted later.
func (w *Window) pushMin(seq uint64, v float64) {
	for w.minq.len() > 0 && w.samples.at(w.minq.back()).v >= v {
		w.minq.popBack()
	}
	w.minq.pushBack(seq)
}

func (w *Window) pushMax(seq uint64, v float64) {
	for w.maxq.len() > 0 && w.samples.at(w.maxq.back()).v <= v {
		w.maxq.popBack()
	}
	w.maxq.pushBack(seq)
}

// x converts a Unix-nanosecond time to seconds since the origin.
func (w *Window) x(t int64) float64 { return float64(t-w.origin) / 1e9 }

// include adds the newest sample, already stored, to the regression sums.
func (w *Window) include(s windowSample) {
	n := w.samples.len()
	if n == 1 {
		w.rebuild()
		return
	}
	x, inv := w.x(s.t), 1/float64(n)
	dx := x - w.mx
	w.mx += dx * inv
	w.my += (s.v - w.my) * inv
	w.sxx += dx * (x - w.mx)
	w.sxy += dx * (s.v - w.my)
	w.updates++
}

// exclude removes the just-evicted sample s from the regression sums: the
// exact inverse of include.
func (w *Window) exclude(s windowSample) {
	n := w.samples.len() // count after the removal
	if n <= 1 {
		w.rebuild()
		return
	}
	x, inv := w.x(s.t), 1/float64(n)
	dxBefore, dyBefore := x-w.mx, s.v-w.my
	w.mx -= dxBefore * inv
	w.my -= dyBefore * inv
	dxAfter := x - w.mx
	w.sxx -= dxAfter * dxBefore
	w.sxy -= dxAfter * dyBefore
	w.updates++
}

// rebuild recomputes the regression sums from the stored samples with the
// corrected two-pass algorithm and moves the origin to the oldest sample.
func (w *Window) rebuild() {
	n := w.samples.len()
	w.mx, w.my, w.sxx, w.sxy, w.updates, w.peak = 0, 0, 0, 0, 0, 0
	if n == 0 {
		return
	}
	w.origin = w.samples.front().t
	w.peak = w.samples.at(w.maxq.front()).v - w.samples.at(w.minq.front()).v
	var sx, sy float64
	for seq := w.samples.head; seq != w.samples.tail; seq++ {
		s := w.samples.at(seq)
		sx += w.x(s.t)
		sy += s.v
	}
	fn := float64(n)
	mx, my := sx/fn, sy/fn
	var cx, cy, sxx, sxy float64
	for seq := w.samples.head; seq != w.samples.tail; seq++ {
		s := w.samples.at(seq)
		dx, dy := w.x(s.t)-mx, s.v-my
		cx += dx
		cy += dy
		sxx += dx * dx
		sxy += dx * dy
	}
	w.mx, w.my = mx+cx/fn, my+cy/fn
	w.sxx, w.sxy = sxx-cx*cx/fn, sxy-cx*cy/fn
}

// Len returns the number of samples in the window.
func (w *Window) Len() int { return w.samples.len() }

// Ready reports whether the window holds a value: at least two samples,
// spread over at least half the span. Every query returns NaN until then.
func (w *Window) Ready() bool {
	if w.samples.len() < 2 {
		return false
	}
	return w.samples.back().t-w.samples.front().t >= w.span-w.span/2
}

// constant reports whether every sample in the window has the same value.
func (w *Window) constant() bool {
	return w.samples.at(w.minq.front()).v == w.samples.at(w.maxq.front()).v
}

// Avg returns the mean of the values in the window, or NaN when !Ready.
func (w *Window) Avg() float64 {
	w.keep(statAll)
	switch {
	case !w.Ready():
		return math.NaN()
	case w.constant():
		return w.samples.front().v
	}
	return w.my
}

// Min returns the smallest value in the window, or NaN when !Ready.
func (w *Window) Min() float64 {
	w.keep(statMin)
	if !w.Ready() {
		return math.NaN()
	}
	return w.samples.at(w.minq.front()).v
}

// Max returns the largest value in the window, or NaN when !Ready.
func (w *Window) Max() float64 {
	w.keep(statMax)
	if !w.Ready() {
		return math.NaN()
	}
	return w.samples.at(w.maxq.front()).v
}

// Slope returns the least-squares slope of the values over time, in units of
// the value per second: the number Prometheus deriv() gives over the same
// samples. It is exactly 0 for a constant series and NaN when !Ready.
func (w *Window) Slope() float64 {
	w.keep(statAll)
	switch {
	case !w.Ready():
		return math.NaN()
	case w.constant():
		return 0
	case w.sxx <= 0: // cannot happen while Ready; guards against a bad division
		return math.NaN()
	}
	return w.sxy / w.sxx
}

// Rate returns how fast a counter rose over the window, per second: its
// increase from the oldest sample to the newest over the time between
// them (resets counted as restarts, for a counter window). NaN when
// !Ready.
func (w *Window) Rate() float64 {
	if !w.Ready() {
		return math.NaN()
	}
	first, last := w.samples.front(), w.samples.back()
	return (last.v - first.v) / (float64(last.t-first.t) / 1e9)
}

// Predict returns the value of the regression line at t (before, inside or
// after the window), or NaN when !Ready. Prometheus predict_linear(m[W], d)
// is Predict(now+d). The time until the line reaches a limit L is
// (L − Predict(now)) / Slope() seconds when Slope() > 0.
func (w *Window) Predict(t time.Time) float64 {
	slope := w.Slope() // keeps what Predict needs too
	switch {
	case math.IsNaN(slope):
		return math.NaN()
	case w.constant():
		return w.samples.front().v
	}
	return w.my + slope*(w.x(t.UnixNano())-w.mx)
}

// Last returns the newest sample in the window, its time in UTC. When the
// window is empty it returns the zero time and NaN.
func (w *Window) Last() (time.Time, float64) {
	if w.samples.len() == 0 {
		return time.Time{}, math.NaN()
	}
	s := w.samples.back()
	return time.Unix(0, s.t).UTC(), s.v
}

// Reset empties the window and forgets the latest time, keeping its storage.
func (w *Window) Reset() {
	w.samples.clear()
	w.minq.clear()
	w.maxq.clear()
	w.now, w.hasNow = 0, false
	w.offset, w.last, w.hasLast = 0, 0, false
	w.rebuild()
}

// windowRing is a double-ended queue on a power-of-two ring buffer. head and
// tail run freely; the element with sequence number s, head ≤ s < tail, is
// at buf[s&(len(buf)-1)]. Growing keeps every sequence number valid.
type windowRing[T any] struct {
	buf        []T
	head, tail uint64
}

func (r *windowRing[T]) len() int           { return int(r.tail - r.head) }
func (r *windowRing[T]) slot(seq uint64) *T { return &r.buf[seq&uint64(len(r.buf)-1)] }
func (r *windowRing[T]) at(seq uint64) T    { return *r.slot(seq) }
func (r *windowRing[T]) front() T           { return r.at(r.head) }
func (r *windowRing[T]) back() T            { return r.at(r.tail - 1) }
func (r *windowRing[T]) popFront()          { r.head++ }
func (r *windowRing[T]) popBack()           { r.tail-- }
func (r *windowRing[T]) clear()             { r.head, r.tail = 0, 0 }

// pushBack appends v, doubling the buffer first when it is full.
func (r *windowRing[T]) pushBack(v T) {
	if r.len() == len(r.buf) {
		old := *r
		r.buf = make([]T, max(8, 2*len(old.buf)))
		for seq := old.head; seq != old.tail; seq++ {
			*r.slot(seq) = old.at(seq)
		}
	}
	*r.slot(r.tail) = v
	r.tail++
}
