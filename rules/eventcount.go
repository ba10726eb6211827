package rules

import "time"

// EventCount counts events in the sliding window (t−span, t], where t is
// the time of the latest Add: count() of the rule language. Add and Value
// cost O(1) amortized; storage is a ring that grows to the most times the
// window has held and is then reused, so a count in steady state
// allocates nothing. The zero EventCount is not usable; call
// NewEventCount. It is not safe for concurrent use.
type EventCount struct {
	span  int64 // nanoseconds
	times windowRing[countStep]
	sum   int
	now   int64
	seen  bool
}

// countStep is the events of one snapshot.
type countStep struct {
	t int64
	n int
}

// NewEventCount returns an empty count over span.
func NewEventCount(span time.Duration) *EventCount {
	return &EventCount{span: max(int64(span), 0)}
}

// Span returns the window's length.
func (c *EventCount) Span() time.Duration { return time.Duration(c.span) }

// Add records n events at t, after dropping those at or before t−span. A
// t earlier than the latest Add is ignored, as a Window does.
func (c *EventCount) Add(t time.Time, n int) {
	ts := t.UnixNano()
	if c.seen && ts < c.now {
		return
	}
	c.now, c.seen = ts, true
	for c.times.len() > 0 && c.times.front().t <= ts-c.span {
		c.sum -= c.times.front().n
		c.times.popFront()
	}
	if n > 0 {
		c.times.pushBack(countStep{t: ts, n: n})
		c.sum += n
	}
}

// Value returns the events in the window: 0 before any, never unknown.
func (c *EventCount) Value() float64 { return float64(c.sum) }

// Reset forgets every event, keeping the storage.
func (c *EventCount) Reset() {
	c.times.clear()
	c.sum, c.now, c.seen = 0, 0, false
}
