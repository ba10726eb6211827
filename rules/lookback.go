package rules

import "time"

// Lookback is how far back the engine's rules look: the longest window or
// trend any rule reads, and the half hour of history a transition carries
// when a rule keeps one. An engine fed that much of the past with Warm
// judges at its first Eval as one that has run all along.
func (e *Engine) Lookback() time.Duration {
	var longest time.Duration
	for _, k := range e.specs {
		longest = max(longest, k.span)
	}
	for _, k := range e.trends {
		longest = max(longest, longestScale(k.span, k.longest))
	}
	if len(e.histories) > 0 {
		longest = max(longest, historySteps*time.Minute)
	}
	return longest
}
