package sim

import "time"

// clock says when a scenario samples. The zero clock samples at exactly
// n×Step, as the first five scenarios do. The realistic scenarios sample as
// `nvidia-smi -l N` does on a real server: each loop takes the interval plus
// its own few milliseconds (drift), each sample lands a few milliseconds
// early or late (jitter), and while the logger is down (a gap) nothing is
// sampled at all.
type clock struct {
	lead   time.Duration // added to every sample: the first is a little after Start
	drift  time.Duration // added to every interval
	jitter time.Duration // half-width of each sample's triangular jitter
	seed   uint64        // drives the jitter, so that a sample's time is a pure function of n
	gaps   []span        // the logger was down: no samples in these
}

// The drift and jitter of the second trace set: nvidia-smi's loop runs
// 3–11 ms longer than its interval, and each sample lands up to ±3.3 ms
// (triangular) off the loop's beat. For very short steps they shrink so
// that samples stay in order.
const (
	minDrift     = 3 * time.Millisecond
	maxDrift     = 11 * time.Millisecond
	sampleJitter = 3300 * time.Microsecond
	sampleLead   = 5 * time.Millisecond
)

// at is the offset from Start of sample n, taken every step.
func (c *clock) at(n int, step time.Duration) time.Duration {
	t := time.Duration(n) * (step + min(c.drift, step/50))
	if c.jitter == 0 {
		return t
	}
	w := min(c.jitter, step/100)
	u1, u2 := unitFloats(c.seed, uint64(n))
	return t + min(c.lead, step/50) + time.Duration((u1-u2)*float64(w))
}

// down reports whether the logger is down at offset t.
func (c *clock) down(t time.Duration) bool { return inSpans(c.gaps, t) }

// unitFloats derives two numbers in [0, 1) from a seed and a counter
// (splitmix64), for noise that must be the same however often it is asked
// for.
func unitFloats(seed, n uint64) (float64, float64) {
	x := seed ^ (n * 0x9e3779b97f4a7c15)
	next := func() float64 {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		return float64(z>>11) / (1 << 53)
	}
	return next(), next()
}

// span is a stretch of a scenario's timeline, [from, until).
type span struct{ from, until time.Duration }

// contains reports whether t is in the span.
func (s span) contains(t time.Duration) bool { return t >= s.from && t < s.until }

// inSpans reports whether t is in one of spans, which are sorted and do
// not overlap.
func inSpans(spans []span, t time.Duration) bool {
	return spanAt(spans, t) >= 0
}

// spanAt returns the index of the span of spans (sorted, not overlapping)
// that contains t, or -1.
func spanAt(spans []span, t time.Duration) int {
	lo, hi := 0, len(spans)
	for lo < hi {
		m := (lo + hi) / 2
		if spans[m].until <= t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(spans) && spans[lo].contains(t) {
		return lo
	}
	return -1
}
