package rules

import (
	"math"
	"time"
)

// trendSlices is how many slices each scale of a Trend cuts its window
// into. Of the trendSlices−1 rates from one slice to the next, the
// (steadyRank+1)-th smallest (the 4th of 11) is the rate at least
// two-thirds of them reach, and medianRank is the median's rank.
const (
	trendSlices = 12
	steadyRank  = 3
	medianRank  = (trendSlices - 1) / 2
)

// recentRates is how many of a scale's newest rates make its newer half:
// growth that is steady rises in most of them too (risesLately).
const recentRates = (trendSlices - 1) / 2

// levelSlices is how many of the newest slices of W Level looks at: a
// transient rise that lasts longer is not transient.
const levelSlices = trendSlices / 4

// steadyShare bounds how much faster the median rate of a scale may be
// than the rate two-thirds of its slices reach for its growth to count as
// steady: a step of a few hundred MiB once a slice rises 1–4 times as fast
// as the next, as the floors are sampled early or late in their slices;
// a wobble of noise is tens of times slower than the steps it sits under.
const steadyShare = 4

// MaxTrendScales is the most time scales a Trend looks at: W and its
// doublings 2W, 4W, … up to 128W.
const MaxTrendScales = 8

// Trend answers trend(m, W) and trend(m, W, L): how fast a series rises
// steadily, robustly against the shapes that fool a least-squares slope
// on GPU memory, over W, or over W and its doublings 2W, 4W, … up to L.
//
// Each scale S cuts its window (t−S, t] into trendSlices slices of S/12,
// aligned to multiples of S/12 since the Unix epoch so that every replay
// cuts them alike (a slice of 2W is two slices of W). Each slice's floor
// is its smallest sample, and each pair of neighbouring slices gives a
// rate: the change of floor per second between the times the floors were
// sampled. A scale's trend is the rate that at least two-thirds of its
// eleven rates reach, so it is positive only when memory rose in at least
// two-thirds of that window:
//   - a short spike (an evaluation pass lifting memory for a minute) leaves
//     every floor where it was: the newest slice counts only once half of
//     it is in, so a spike at its start cannot be its floor;
//   - a few large steps (a caching allocator warming up in ever rarer
//     steps, a job starting on an empty GPU) change a few floors, and are
//     outvoted by the slices that did not grow, at every scale;
//   - noise moves floors up and down alike, and the two-thirds change is
//     then at or below zero;
//   - a leak raises every floor at the scales whose slices are longer than
//     the time between its blocks, and the trend is its rate.
//
// With several scales (a leak that grows in blocks minutes apart, once an
// epoch or once a notebook cell, shows steady growth only over a span
// many blocks long), a scale's growth stays steady once two-thirds of its
// slices rose until fewer than half of them do, at the rate two-thirds
// reached the last time they did: blocks about a slice apart rise in some
// slices and not in others, and the growth must not come and go with
// them. The Trend's Value is the largest of its scales' trends: the
// fastest growth that is steady over W or over a longer span. Rate says how fast memory
// grows at that scale, as the median of its rates; Peak is how far the
// series rises above its floor for a while (an evaluation pass, a
// notebook cell) and comes back, and TimeToFull projects the floor plus
// that peak to a limit.
//
// Slices without samples (a logger that was down) take the rate across
// them; slices before the first sample count as no change, so a scale
// needs most of its window to show growth before it is positive. A Trend
// is Ready once its samples span half of W, and NaN until then; a longer
// scale counts once its samples span half of its own window. The engine
// resets a GPU's trends when a job takes the GPU or leaves it, so one
// job's growth is never blamed on the next.
//
// Add costs O(1) per scale; a scale's results are recomputed (sorting
// nothing larger than its eleven changes) only when its floors change. A
// Trend never allocates after NewTrend, and its size depends on the
// number of its scales, not on W. It is not safe for concurrent use.
type Trend struct {
	span  int64 // nanoseconds: W
	slice int64 // nanoseconds: the slices of W, span / trendSlices, ≥ 1

	scales []trendScale // W, 2W, 4W, …
	// hold says growth, once steady, stays steady until fewer than half
	// of the slices of every scale rise (a Trend of several scales).
	hold bool

	now    int64 // time of the latest Add
	hasNow bool
	hasAny bool    // a sample has been stored since Reset
	last   float64 // the latest sample stored
	// afresh says a new series started (a new job): until the trend is
	// Ready it is known to be zero, not unknown, since nothing has grown
	// yet.
	afresh bool
	// value and rate are the trend and the rate it reports, scale the
	// scale they come from; steady says growth has been steady (see
	// hold), at the rate value then.
	value, rate float64
	scale       int
	steady      bool
	stale       bool // a scale changed since update
}

// trendScale is one time scale of a Trend: the floors and highs of its
// slices.
type trendScale struct {
	// What an Add reads first lies first, and a slice's floor, its time
	// and its high together: an Add touches little of the scale.
	newest int64 // the slice number of the latest Add
	hasAny bool  // a sample is in the window
	valid  bool  // the cached results are up to date
	young  bool  // they were computed without the newest slice (see isYoung)
	ready  bool
	// half says at least half of its slices rose, with a rate above 0.
	half bool

	value, rate, peak float64 // cached results

	// slices holds slices newest−11 … newest at slices[(k mod
	// trendSlices)].
	slices [trendSlices]trendSlice
}

// trendSlice is one slice of a trend's scale: its floor, when the floor
// was sampled, and its largest sample; NaN floor and high for a slice
// without samples.
type trendSlice struct {
	floor, high float64
	floorAt     int64
}

// NewTrend returns an empty trend over a window of span. A span shorter
// than trendSlices nanoseconds is raised to it.
func NewTrend(span time.Duration) *Trend { return NewTrendScales(span, 0) }

// NewTrendScales returns an empty trend over a window of span and its
// doublings up to longest (at most MaxTrendScales scales in all); a
// longest shorter than twice span gives the one scale of NewTrend.
func NewTrendScales(span, longest time.Duration) *Trend {
	t := new(Trend)
	t.init(span, make([]trendScale, trendScales(max(span, trendSlices), longest)))
	return t
}

// init makes t an empty trend over a window of span and the doublings
// that scales has room for.
func (t *Trend) init(span time.Duration, scales []trendScale) {
	*t = Trend{span: max(int64(span), trendSlices), scales: scales, hold: len(scales) > 1}
	t.slice = t.span / trendSlices
	t.Reset()
}

// trendScales is how many scales a trend of window span and longest time
// scale longest looks at: span and its doublings up to longest, at most
// MaxTrendScales.
func trendScales(span, longest time.Duration) int {
	n := 1
	for n < MaxTrendScales && span<<n <= longest {
		n++
	}
	return n
}

// longestScale is the longest window a trend of window span and longest
// time scale longest looks at.
func longestScale(span, longest time.Duration) time.Duration {
	return span << (trendScales(span, longest) - 1)
}

// Scales returns how many time scales the trend looks at.
func (t *Trend) Scales() int { return len(t.scales) }

// Span returns the window's length: the shortest scale.
func (t *Trend) Span() time.Duration { return time.Duration(t.span) }

// Reset empties the trend: it is unknown until Ready.
func (t *Trend) Reset() {
	for i := range t.scales {
		t.scales[i].clear()
	}
	t.now, t.hasNow, t.hasAny, t.afresh, t.steady = 0, false, false, false, false
	t.update()
}

// Restart empties the trend for a new series, such as the next job on a
// GPU: until it is Ready its value is 0 (nothing has grown yet) rather
// than unknown, so that an alert about the last job's growth resolves.
func (t *Trend) Restart() {
	t.Reset()
	t.afresh = true
	t.update()
}

// clear forgets every slice of the scale.
func (s *trendScale) clear() {
	for i := range s.slices {
		s.slices[i].floor, s.slices[i].high = math.NaN(), math.NaN()
	}
	s.newest, s.hasAny, s.valid, s.ready, s.half = 0, false, false, false, false
}

// sliceOf returns the number of the slice of W holding time ts (floor
// division, so times before the epoch work too). The slice of scale i
// holding ts is sliceOf(ts) >> i.
func (t *Trend) sliceOf(ts int64) int64 {
	k := ts / t.slice
	if ts%t.slice < 0 {
		k--
	}
	return k
}

// at returns the index in a scale's arrays of its slice k.
func at(k int64) int {
	i := k % trendSlices
	if i < 0 {
		i += trendSlices
	}
	return int(i)
}

// next returns the index in a scale's arrays of the slice after the one at
// index i.
func next(i int) int {
	if i++; i == trendSlices {
		return 0
	}
	return i
}

// Add records the value v observed at at. A time earlier than the latest
// Add is ignored; NaN and ±Inf are not stored but still move the windows
// on.
func (t *Trend) Add(at time.Time, v float64) {
	ts := at.UnixNano()
	if t.hasNow && ts < t.now {
		return
	}
	t.now, t.hasNow = ts, true
	finite := !math.IsNaN(v) && !math.IsInf(v, 0)
	if finite {
		t.hasAny, t.last = true, v
	}
	k := t.sliceOf(ts)
	for i := range t.scales {
		s, slice := &t.scales[i], t.slice<<i
		if s.add(k>>i, ts, slice, v, finite) {
			t.stale = true
			if t.hold {
				s.compute(ts, slice)
			}
		}
	}
	if t.stale && t.hold {
		// At once, not when asked: whether growth is steady depends on
		// every change the windows went through.
		t.update()
	}
}

// fresh brings a trend of one scale up to date when it is asked, and
// only then: its results depend on its window alone.
func (t *Trend) fresh() {
	if t.stale {
		t.scales[0].compute(t.now, t.slice)
		t.update()
	}
}

// add records v (when finite) at ts in slice k of a scale whose slices are
// slice long, and reports whether its cached results went stale.
func (s *trendScale) add(k, ts, slice int64, v float64, finite bool) (stale bool) {
	switch {
	case !s.hasAny || k-s.newest >= trendSlices:
		// Nothing left in the window: start afresh at slice k.
		s.clear()
		s.newest = k
	case k > s.newest:
		for s.newest < k {
			s.newest++
			sl := &s.slices[at(s.newest)]
			sl.floor, sl.high = math.NaN(), math.NaN()
		}
		s.valid = false
	}
	if s.valid && s.young && !isYoung(ts, s.newest, slice) {
		s.valid = false // the newest slice now counts
	}
	if finite {
		s.hasAny = true
		sl := &s.slices[at(k)]
		if math.IsNaN(sl.floor) || v < sl.floor {
			// A lower floor of a newest slice that is young and had one
			// changes nothing compute found: it leaves the young slice
			// out of the rates, and counts only whether it has samples.
			if math.IsNaN(sl.floor) || !s.young {
				s.valid = false
			}
			sl.floor, sl.floorAt = v, ts
		}
		if math.IsNaN(sl.high) || v > sl.high {
			sl.high = v // the newest slice's high counts once the slice is over: nothing to recompute
		}
	}
	return !s.valid
}

// isYoung reports whether slice newest, of length slice, has seen less
// than half of its time at now.
func isYoung(now, newest, slice int64) bool { return now-newest*slice < slice/2 }

// Last returns the latest sample stored, NaN when there is none.
func (t *Trend) Last() float64 {
	if !t.hasAny {
		return math.NaN()
	}
	return t.last
}

// Ready reports whether the samples span at least half of W.
func (t *Trend) Ready() bool {
	t.fresh()
	return t.scales[0].ready
}

// filledRange returns the oldest and newest slices in the scale's window
// that hold samples.
func (s *trendScale) filledRange() (oldest, newest int64, ok bool) {
	oldest, newest = -1, -1
	lo := s.newest - trendSlices + 1
	for k, i := lo, at(lo); k <= s.newest; k, i = k+1, next(i) {
		if !math.IsNaN(s.slices[i].floor) {
			if !ok {
				oldest, ok = k, true
			}
			newest = k
		}
	}
	return oldest, newest, ok
}

// Value returns the trend per second: the largest of the scales' trends,
// or NaN when !Ready (0 after Restart).
func (t *Trend) Value() float64 {
	t.fresh()
	return t.value
}

// Rate returns how fast the series rises, per second, when it rises
// steadily (Value > 0): the median rate of the scale the Value comes from.
// Otherwise it is Value.
func (t *Trend) Rate() float64 {
	t.fresh()
	return t.rate
}

// Scale returns the window of the scale Value comes from: W, 2W, 4W, …;
// W while not Ready.
func (t *Trend) Scale() time.Duration {
	t.fresh()
	return time.Duration(t.slice << t.scale * trendSlices)
}

// Peak returns how far the series rose above its floor and came back, at
// most, over the last W: the peak of an evaluation pass or of a notebook
// cell over the memory a job holds all the time, which comes again. A
// slice's rise is its largest sample less the higher of its floor and the
// next slice's floor, so growth that stays is not a peak; the newest slice
// counts once the next has begun. A rise longer ago (a bigger batch the
// job ran for a while) does not count. 0 when there is none, NaN when
// !Ready.
func (t *Trend) Peak() float64 {
	t.fresh()
	if !t.scales[0].ready {
		return math.NaN()
	}
	return t.scales[0].peak
}

// Level returns where the series' floor is now: the lowest of the floors
// of the newest levelSlices slices of W, each grown since it was sampled
// at the trend's rate, so that a pass or a notebook cell the newest slices
// fell in is not taken for the floor. NaN when there is no sample.
func (t *Trend) Level() float64 {
	t.fresh()
	if !t.hasAny {
		return math.NaN()
	}
	rate := max(t.value, 0)
	if math.IsNaN(rate) {
		rate = 0
	}
	s, level := &t.scales[0], math.Inf(1)
	for k := s.newest - levelSlices + 1; k <= s.newest; k++ {
		if sl := &s.slices[at(k)]; !math.IsNaN(sl.floor) {
			level = min(level, sl.floor+rate*float64(t.now-sl.floorAt)/1e9)
		}
	}
	if math.IsInf(level, 1) {
		return t.last
	}
	return level
}

// TimeToFull returns the seconds until the series' floor plus its peak
// (Level + Peak) reaches full, rising at the rate it grows steadily
// (Rate): +Inf when it does not rise steadily (Value ≤ 0), 0 when it is
// already there, NaN when the trend or full is unknown.
func (t *Trend) TimeToFull(full float64) float64 {
	t.fresh()
	switch {
	case math.IsNaN(t.value) || math.IsNaN(full):
		return math.NaN()
	case t.value <= 0:
		return math.Inf(1)
	}
	peak := t.Peak()
	if math.IsNaN(peak) {
		peak = 0
	}
	return max(0, (full-t.Level()-peak)/t.rate)
}

// update brings the trend's value, rate and scale up to date with its
// scales': the largest trend of a scale that rises steadily; or, once
// growth has been steady (with several scales), the rate it then had at
// its scale, while at least half of the slices of some scale still rise
// and no scale as long shows another steady rate; else the largest trend
// of any scale (0 or less). 0 after Restart, NaN before, while not
// Ready.
func (t *Trend) update() {
	t.stale = false
	if !t.scales[0].ready {
		t.value, t.rate, t.scale, t.steady = math.NaN(), math.NaN(), 0, false
		if t.afresh {
			t.value, t.rate = 0, 0
		}
		return
	}
	best, half := 0, false
	for i := range t.scales {
		if s := &t.scales[i]; s.ready {
			half = half || s.half
			if s.value > t.scales[best].value {
				best = i
			}
		}
	}
	s := &t.scales[best]
	switch {
	case s.value > 0 && t.steady && best < t.scale && s.value < t.value:
		// A shorter scale rising more slowly (a wobble of noise) does not
		// overrule the longer view.
	case s.value > 0:
		t.value, t.rate, t.scale, t.steady = s.value, s.rate, best, t.hold
	case t.steady && half:
		// Blocks about a slice apart rise in some slices and not in
		// others, a person pauses: the growth must not come and go with
		// them.
	default:
		t.value, t.rate, t.scale, t.steady = s.value, s.rate, best, false
	}
}

// compute brings the scale's results up to date at now, its slices slice
// long.
func (s *trendScale) compute(now, slice int64) {
	if s.valid {
		return
	}
	s.valid = true
	oldest, newestFilled, ok := s.filledRange()
	s.ready = s.hasAny && ok && newestFilled-oldest >= trendSlices/2
	if !s.ready {
		s.value, s.rate, s.peak = math.NaN(), math.NaN(), 0
		return
	}
	var rates [trendSlices - 1]float64 // per second; zero: no change
	lo := s.newest - trendSlices + 1
	last := s.newest
	if s.young = isYoung(now, s.newest, slice); s.young {
		// The newest slice has seen less than half of its time: its floor
		// may be the top of a spike that has not ended yet. It counts once
		// half of it is in.
		last--
	}
	s.peak = 0
	prev, prevAt, prevK, prevI := math.NaN(), int64(0), int64(0), 0
	for k, i := lo, at(lo); k <= last; k, i = k+1, next(i) {
		f, fAt := s.slices[i].floor, s.slices[i].floorAt
		if math.IsNaN(f) {
			continue
		}
		if !math.IsNaN(prev) {
			// Between the times the floors were seen, so that samples
			// coarser than a slice do not bias the rate; at least half a
			// slice, so that two floors a moment apart do not make noise
			// look like a steep rate.
			dt := max(fAt-prevAt, slice/2)
			rate := (f - prev) / (float64(dt) / 1e9)
			for j := prevK; j < k; j++ {
				rates[j-lo] = rate
			}
			if prevK+1 == k && k < s.newest {
				// A peak: how far the slice before rose above the floor
				// it came back to.
				s.peak = max(s.peak, s.slices[prevI].high-max(prev, f))
			}
		}
		prev, prevAt, prevK, prevI = f, fAt, k, i
	}
	inOrder := rates // the rates oldest first, for recentShare
	// A selection sort up to the median: eleven numbers, no allocation.
	for i := 0; i <= medianRank; i++ {
		m, least := i, rates[i]
		for j := i + 1; j < len(rates); j++ {
			if rates[j] < least {
				m, least = j, rates[j]
			}
		}
		rates[i], rates[m] = rates[m], rates[i]
	}
	// Steady growth rises about as much in most slices, and more than
	// noise: the rate two-thirds of them reach is a good part of the
	// median rate, not a wobble under a few large steps (an allocator
	// warming up), and above the steepest fall, as far as noise moves
	// floors down it moves them up.
	s.value = min(rates[steadyRank], 0)
	if rates[steadyRank] > -rates[0] && rates[steadyRank]*steadyShare >= rates[medianRank] && risesLately(inOrder[:last-lo], rates[steadyRank]) {
		s.value = rates[steadyRank]
	}
	s.rate = s.value
	if s.value > 0 {
		s.rate = rates[medianRank]
	}
	s.half = rates[medianRank] > 0
}

// risesLately reports whether growth at rate or faster, which at least
// two-thirds of a window's rates reach, goes on in its newer half: most of
// the newest recentRates of rates (oldest first, those that count) reach
// it. Growth that came all in the older part (a warm-up that has ended,
// with noise making a few flat slices look like growth) is not steady;
// the slices a steady growth misses fall anywhere.
func risesLately(rates []float64, rate float64) bool {
	n := 0
	for _, r := range rates[max(len(rates)-recentRates, 0):] {
		if r >= rate {
			n++
		}
	}
	return 2*n > recentRates
}
