package promexport

import (
	"time"

	"github.com/gpuwatch/gpuwatch/rules"
)

// DefaultMaxInterval is the longest interval NeededInterval gives:
// Prometheus's own default evaluation_interval.
const DefaultMaxInterval = time.Minute

// NeededInterval is the evaluation interval the rules need: the longest
// that keeps their meaning, so that Prometheus evaluates them no more
// often than they need. A window holds at least ten evaluations (a trend's
// slice four), a for, keep_firing_for and a held_for or missing_for
// threshold at least two; the interval is at most a minute, and
// a whole number of 5 seconds where it is that long. For the example
// rules: 5 s, for GPUMemoryFillingFast's five-minute time_to_full.
func NeededInterval(rs []*rules.Rule) time.Duration {
	need := DefaultMaxInterval
	var walk func(n rules.CondNode)
	walk = func(n rules.CondNode) {
		for _, o := range n.Operands {
			walk(o)
		}
		switch v := n.Value; {
		case v.Fn == "trend" || v.Fn == "time_to_full":
			need = min(need, v.Window/12/4)
		case v.Fn != "":
			need = min(need, v.Window/10)
		case n.Kind == rules.CondCompare && (v.Metric == rules.MetricHeldFor || v.Metric == rules.MetricMissingFor) && n.Quantity > 0:
			need = min(need, time.Duration(min(n.Quantity, DefaultMaxInterval.Seconds())*float64(time.Second))/2)
		}
	}
	for _, r := range rs {
		walk(r.When.Tree())
		if r.ClearWhen != nil {
			walk(r.ClearWhen.Tree())
		}
		for _, d := range []time.Duration{r.For, r.KeepFiringFor} {
			if d > 0 {
				need = min(need, d/2)
			}
		}
	}
	return roundInterval(need)
}

// roundInterval rounds an interval down to a whole number of 5 seconds
// where it is that long, else of seconds, at least one.
func roundInterval(need time.Duration) time.Duration {
	if need >= 5*time.Second {
		return need.Truncate(5 * time.Second)
	}
	return max(need.Truncate(time.Second), time.Second)
}
