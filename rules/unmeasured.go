package rules

import (
	"math"
	"slices"
)

// unmeasuredAfter is the sample of a MIG instance at which the engine
// judges whether it measures utilization: NVML's GPM metrics, the only
// per-instance activity there is, take two samples to give a value.
const unmeasuredAfter = 2

// readsUtilization reports whether the rule reads a utilization metric.
func (r *Rule) readsUtilization() bool {
	reads := func(c *Cond) bool {
		return c != nil && slices.ContainsFunc(c.metrics, func(m Metric) bool {
			return m == MetricUtilizationGPU || m == MetricUtilizationMemory
		})
	}
	return reads(r.When) || reads(r.ClearWhen)
}

// skipUnmeasured stops evaluating, on a MIG instance that does not
// measure utilization (a GPU before Hopper has no per-instance activity),
// the rules that read it, and says so once for each: their conditions
// would never be known there, and an idle slice would look busy to no one
// and idle to no one. Called at the instance's unmeasuredAfter-th sample.
func (e *Engine) skipUnmeasured(host string, gs *gpuState) {
	d := &gs.device
	if !math.IsNaN(d.UtilGPU) {
		return
	}
	for j, r := range e.rules {
		if !gs.applies[j] || !r.readsUtilization() {
			continue
		}
		gs.applies[j] = false
		if e.opts.Logger != nil {
			e.opts.Logger.Warn("rule skipped on a MIG instance that does not measure utilization (NVML's GPM metrics need a Hopper GPU or later)",
				"rule", r.Name, "host", host, "gpu", d.Label(), "uuid", d.UUID)
		}
	}
}
