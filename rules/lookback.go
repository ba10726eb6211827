package rules

import (
	"cmp"
	"slices"
	"time"
)

// Lookback is how far back the engine's rules look: the longest window or
// trend any rule reads, and the half hour of history a transition carries
// when a rule keeps one. An engine fed that much of the past with Warm
// judges at its first Eval as one that has run all along.
func (e *Engine) Lookback() time.Duration {
	var longest time.Duration
	for _, l := range e.Lookbacks() {
		longest = max(longest, l.Span)
	}
	return longest
}

// MetricLookback is how much of a metric's past the engine reads: all of
// its last Span, a sample every Step (0: every sample).
type MetricLookback struct {
	Metric     Metric
	Span, Step time.Duration
}

// Lookbacks says, metric by metric, what of the past Warm must be fed for
// the engine to judge at its first Eval as one that has run all along:
// every sample of a window's span (a health reading's active() and
// rate() among them), of a count's span of XIDs, of a trend's shortest
// scale and of the half hour of history a transition carries; of a trend's longer scales,
// a sample every quarter of the second scale's slice. Following who holds
// each GPU (held_for, and the trends that start afresh with a job) reads
// memory.used and process.count wherever anything is read: each span and
// step is listed for them too.
func (e *Engine) Lookbacks() []MetricLookback {
	var out []MetricLookback
	add := func(m Metric, span, step time.Duration) {
		for _, held := range []Metric{m, MetricMemoryUsed, MetricProcessCount} {
			l := MetricLookback{Metric: held, Span: span, Step: step}
			if !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	for _, k := range e.specs {
		add(k.metric, k.span, 0)
	}
	// A count of XIDs reads the XID events of its span (xid.fault and
	// xid.action are what the catalogue says of their codes).
	for _, c := range e.counts {
		add(MetricXID, c.Span, 0)
	}
	for _, m := range e.histories {
		add(m, historySteps*time.Minute, 0)
	}
	for _, k := range e.trends {
		add(k.metric, k.span, 0)
		if k.longest > 0 {
			// The second scale, twice the span, is cut in 12 slices.
			add(k.metric, longestScale(k.span, k.longest), 2*k.span/trendSlices/4)
		}
	}
	// The rules that run per process read their metrics as the others.
	if e.processes != nil {
		for _, l := range e.processes.engine.Lookbacks() {
			add(l.Metric, l.Span, l.Step)
		}
	}
	// What another reads more of at least as finely adds nothing.
	out = slices.DeleteFunc(out, func(l MetricLookback) bool {
		return slices.ContainsFunc(out, func(o MetricLookback) bool {
			return o != l && o.Metric == l.Metric && o.Span >= l.Span && o.Step <= l.Step
		})
	})
	slices.SortFunc(out, func(a, b MetricLookback) int {
		return cmp.Or(cmp.Compare(a.Metric, b.Metric), cmp.Compare(a.Span, b.Span), cmp.Compare(a.Step, b.Step))
	})
	return out
}
