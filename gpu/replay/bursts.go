package replay

import (
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// maxBurst bounds the snapshots held at one second: more is not a GPU
// sampled fast, and they are handed out at the time the last one held got.
const maxBurst = 1000

// bursts spreads snapshots that share a whole second over it. A log whose
// times say seconds, sampled several times a second (GPU-Z at a fast
// refresh, a script in a tight loop), has snapshots of one GPU at the same
// time; downstream, a sample not later than the one before is dropped. The
// k-th of n snapshots of second T is taken at T + k/n s (or, when the next
// snapshot comes sooner than a second later, that much less apart).
type bursts struct {
	held   []*gpu.Snapshot // at one whole second, waiting for the next time
	ready  []*gpu.Snapshot // to hand out, in order, from at on
	at     int
	last   time.Time // of the last snapshot handed out
	spread bool      // some snapshots were spread
}

// add takes the next snapshot of the log; spread is false for a log whose
// times say fractions of a second, whose same times are its own.
func (b *bursts) add(s *gpu.Snapshot, spread bool) {
	if s.Time.Before(b.last) {
		s.Time = b.last // after a burst longer than maxBurst: no earlier than those handed out
		spread = false
	}
	if !spread {
		b.release(s.Time)
		b.ready = append(b.ready, s)
		b.last = s.Time
		return
	}
	if len(b.held) > 0 && s.Time.Equal(b.held[0].Time) {
		b.held = append(b.held, s)
		if len(b.held) == maxBurst {
			b.release(time.Time{})
		}
		return
	}
	b.release(s.Time)
	if s.Time.Nanosecond() == 0 {
		b.held = append(b.held, s)
		return
	}
	b.ready = append(b.ready, s)
}

// flush hands out what is held, at the end of the log; it reports whether
// anything is ready.
func (b *bursts) flush() bool {
	b.release(time.Time{})
	return b.at < len(b.ready)
}

// release spreads the held snapshots over their second, or up to next.
func (b *bursts) release(next time.Time) {
	n := len(b.held)
	if n == 0 {
		return
	}
	if n > 1 {
		span := time.Second
		if !next.IsZero() {
			span = min(span, next.Sub(b.held[0].Time))
		}
		for k := 1; k < n; k++ {
			b.held[k].Time = b.held[k].Time.Add(span * time.Duration(k) / time.Duration(n))
		}
		b.spread = true
	}
	b.ready = append(b.ready, b.held...)
	b.last = b.held[n-1].Time
	clear(b.held)
	b.held = b.held[:0]
}

// empty reports whether nothing is held or ready.
func (b *bursts) empty() bool { return len(b.held) == 0 && b.at == len(b.ready) }

// pop returns the next snapshot ready.
func (b *bursts) pop() (*gpu.Snapshot, bool) {
	if b.at == len(b.ready) {
		return nil, false
	}
	s := b.ready[b.at]
	b.ready[b.at] = nil
	if b.at++; b.at == len(b.ready) {
		b.ready, b.at = b.ready[:0], 0
	}
	return s, true
}
