package rules

import "time"

// Lookback is how far back the engine's rules look: the longest window or
// trend any rule reads, and the half hour of history a transition carries
// when a rule keeps one. An engine fed that much of the past with Warm
// judges at its first Eval as one that has run all along.
func (e *Engine) Lookback() time.Duration {
	longest, _, _ := e.lookback()
	return longest
}

// FineLookback says how finely the past Lookback covers must be fed: the
// last fine of it sample by sample (the windows, the shortest scale of
// every trend, the history a transition carries); before that, a sample
// every step is enough, for only the longer scales of trends over several
// time scales read it, and each of their slices needs a few samples, not
// every one (step is a quarter of the shortest such slice). fine is
// Lookback, and step 0, when no trend looks past fine.
func (e *Engine) FineLookback() (fine, step time.Duration) {
	longest, fine, step := e.lookback()
	if fine >= longest {
		return longest, 0
	}
	return fine, step
}

func (e *Engine) lookback() (longest, fine, step time.Duration) {
	for _, k := range e.specs {
		fine = max(fine, k.span)
	}
	if len(e.histories) > 0 {
		fine = max(fine, historySteps*time.Minute)
	}
	longest = fine
	for _, k := range e.trends {
		fine = max(fine, k.span)
		longest = max(longest, longestScale(k.span, k.longest))
		if k.longest > 0 {
			// The second scale, twice the span, is cut in 12 slices.
			quarter := 2 * k.span / trendSlices / 4
			if step == 0 || quarter < step {
				step = quarter
			}
		}
	}
	if e.processes != nil {
		pl, pf, ps := e.processes.engine.lookback()
		longest, fine = max(longest, pl), max(fine, pf)
		if ps > 0 && (step == 0 || ps < step) {
			step = ps
		}
	}
	return max(longest, fine), fine, step
}
