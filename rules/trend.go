package rules

import (
	"math"
	"time"
)

// trendSlices is how many slices a Trend cuts its window into. Of the
// trendSlices−1 rates from one slice to the next, the (steadyRank+1)-th
// smallest (the 4th of 11) is the rate at least two-thirds of them reach,
// and medianRank is the median's rank.
const (
	trendSlices = 12
	steadyRank  = 3
	medianRank  = (trendSlices - 1) / 2
)

// Trend answers trend(m, W): how fast a series rises steadily, robustly
// against the shapes that fool a least-squares slope on GPU memory.
//
// The window (t−W, t] is cut into trendSlices slices of W/12, aligned to
// multiples of W/12 since the Unix epoch so that every replay cuts them
// alike. Each slice's floor is its smallest sample, and each pair of
// neighbouring slices gives a rate: the change of floor per second between
// the times the floors were sampled. The trend (Value) is the rate that at
// least two-thirds of the eleven reach, so it is positive only when memory
// rose in at least two-thirds of the window; when it is, Rate says how fast,
// as the median of the rates:
//   - a short spike (an evaluation pass lifting memory for a minute) leaves
//     every floor where it was: the newest slice counts only once half of
//     it is in, so a spike at its start cannot be its floor;
//   - a few large steps (a caching allocator warming up in ever rarer
//     steps, a job starting on an empty GPU) change a few floors, and are
//     outvoted by the slices that did not grow;
//   - noise moves floors up and down alike, and the two-thirds change is
//     then at or below zero;
//   - a leak raises every floor, and the trend is its rate.
//
// Slices without samples (a logger that was down) take the rate across
// them; slices before the first sample count as no change, so
// a trend needs most of its window to show growth before it is positive.
// Like Window, a Trend is Ready once its samples span half the window, and
// NaN until then. The engine resets a GPU's trends when a job takes the GPU
// or leaves it, so one job's growth is never blamed on the next.
//
// Add costs O(1); a query sorts nothing larger than the eleven changes and
// is cached until the floors change. A Trend never allocates after
// NewTrend. It is not safe for concurrent use.
type Trend struct {
	span, slice int64 // nanoseconds; slice = span / trendSlices, ≥ 1

	// floors holds the floors of slices newest−11 … newest at
	// floors[(k mod trendSlices)], and floorAt when they were sampled; NaN
	// for a slice without samples.
	floors  [trendSlices]float64
	floorAt [trendSlices]int64
	newest  int64 // the slice number of the latest Add
	hasAny  bool  // a sample has been stored since Reset
	now     int64 // time of the latest Add
	hasNow  bool
	last    float64 // the latest sample stored

	value, rate float64 // cached results
	valid       bool    // value and rate are up to date
	young       bool    // they were computed without the newest slice (see isYoung)
	// afresh says a new series started (a new job): until the trend is
	// Ready it is known to be zero, not unknown, since nothing has grown
	// yet.
	afresh bool
}

// NewTrend returns an empty trend over a window of span. A span shorter
// than trendSlices nanoseconds is raised to it.
func NewTrend(span time.Duration) *Trend {
	t := &Trend{span: max(int64(span), trendSlices)}
	t.slice = t.span / trendSlices
	t.Reset()
	return t
}

// Span returns the window's length.
func (t *Trend) Span() time.Duration { return time.Duration(t.span) }

// Reset empties the trend: it is unknown until Ready.
func (t *Trend) Reset() {
	for i := range t.floors {
		t.floors[i] = math.NaN()
	}
	t.newest, t.hasAny, t.now, t.hasNow, t.valid, t.afresh = 0, false, 0, false, false, false
}

// Restart empties the trend for a new series, such as the next job on a
// GPU: until it is Ready its value is 0 (nothing has grown yet) rather
// than unknown, so that an alert about the last job's growth resolves.
func (t *Trend) Restart() {
	t.Reset()
	t.afresh = true
}

// sliceOf returns the number of the slice holding time ts (floor division,
// so times before the epoch work too).
func (t *Trend) sliceOf(ts int64) int64 {
	k := ts / t.slice
	if ts%t.slice < 0 {
		k--
	}
	return k
}

// at returns the index in floors of slice k.
func (t *Trend) at(k int64) int {
	i := k % trendSlices
	if i < 0 {
		i += trendSlices
	}
	return int(i)
}

// Add records the value v observed at at. A time earlier than the latest
// Add is ignored; NaN and ±Inf are not stored but still move the window on.
func (t *Trend) Add(at time.Time, v float64) {
	ts := at.UnixNano()
	if t.hasNow && ts < t.now {
		return
	}
	t.now, t.hasNow = ts, true
	k := t.sliceOf(ts)
	switch {
	case !t.hasAny || k-t.newest >= trendSlices:
		// Nothing left in the window: start afresh at slice k.
		for i := range t.floors {
			t.floors[i] = math.NaN()
		}
		t.newest, t.hasAny, t.valid = k, false, false
	case k > t.newest:
		for t.newest < k {
			t.newest++
			t.floors[t.at(t.newest)] = math.NaN()
		}
		t.valid = false
	}
	if t.valid && t.young && !t.isYoung() {
		t.valid = false // the newest slice now counts
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	t.hasAny, t.last = true, v
	if i := t.at(k); math.IsNaN(t.floors[i]) || v < t.floors[i] {
		t.floors[i], t.floorAt[i] = v, ts
		t.valid = false
	}
}

// isYoung reports whether the newest slice has seen less than half of its
// time.
func (t *Trend) isYoung() bool { return t.now-t.newest*t.slice < t.slice/2 }

// Last returns the latest sample stored, NaN when there is none.
func (t *Trend) Last() float64 {
	if !t.hasAny {
		return math.NaN()
	}
	return t.last
}

// Ready reports whether the samples span at least half the window.
func (t *Trend) Ready() bool {
	if !t.hasAny {
		return false
	}
	oldest, newestFilled, ok := t.filledRange()
	return ok && newestFilled-oldest >= trendSlices/2
}

// filledRange returns the oldest and newest slices in the window that
// hold samples.
func (t *Trend) filledRange() (oldest, newest int64, ok bool) {
	oldest, newest = -1, -1
	for k := t.newest - trendSlices + 1; k <= t.newest; k++ {
		if !math.IsNaN(t.floors[t.at(k)]) {
			if !ok {
				oldest, ok = k, true
			}
			newest = k
		}
	}
	return oldest, newest, ok
}

// Value returns the trend per second, or NaN when !Ready (0 after
// Restart).
func (t *Trend) Value() float64 {
	t.compute()
	return t.value
}

// Rate returns how fast the series rises, per second, when it rises
// steadily (Value > 0): the median rate. Otherwise it is Value.
func (t *Trend) Rate() float64 {
	t.compute()
	return t.rate
}

// compute brings value and rate up to date.
func (t *Trend) compute() {
	if t.valid {
		return
	}
	t.valid = true
	if !t.Ready() {
		t.value, t.rate = math.NaN(), math.NaN()
		if t.afresh {
			t.value, t.rate = 0, 0
		}
		return
	}
	var rates [trendSlices - 1]float64 // per second; zero: no change
	lo := t.newest - trendSlices + 1
	last := t.newest
	if t.young = t.isYoung(); t.young {
		// The newest slice has seen less than half of its time: its floor
		// may be the top of a spike that has not ended yet. It counts once
		// half of it is in.
		last--
	}
	prev, prevAt, prevK := math.NaN(), int64(0), int64(0)
	for k := lo; k <= last; k++ {
		i := t.at(k)
		f, at := t.floors[i], t.floorAt[i]
		if math.IsNaN(f) {
			continue
		}
		if !math.IsNaN(prev) {
			// Between the times the floors were seen, so that samples
			// coarser than a slice do not bias the rate; at least half a
			// slice, so that two floors a moment apart do not make noise
			// look like a steep rate.
			dt := max(at-prevAt, t.slice/2)
			rate := (f - prev) / (float64(dt) / 1e9)
			for j := prevK; j < k; j++ {
				rates[j-lo] = rate
			}
		}
		prev, prevAt, prevK = f, at, k
	}
	// A selection sort up to the median: eleven numbers, no allocation.
	for i := 0; i <= medianRank; i++ {
		m := i
		for j := i + 1; j < len(rates); j++ {
			if rates[j] < rates[m] {
				m = j
			}
		}
		rates[i], rates[m] = rates[m], rates[i]
	}
	t.value, t.rate = rates[steadyRank], rates[steadyRank]
	if t.value > 0 {
		t.rate = rates[medianRank]
	}
}
