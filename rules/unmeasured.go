package rules

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/gpuwatch/gpuwatch/gpu"
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
// the rules that read it: their conditions would never be known there.
// Called at the instance's unmeasuredAfter-th sample; the skips are told
// by warnUnmeasured.
func (e *Engine) skipUnmeasured(gs *gpuState) {
	d := &gs.device
	if !math.IsNaN(d.UtilGPU) {
		return
	}
	for j, r := range e.rules {
		if on := &gs.rules[j]; on.applies && r.readsUtilization() {
			on.applies = false
			e.unmeasured = append(e.unmeasured, unmeasured{rule: r.Name, gpu: gpu.Label(d.Index, nil), instance: d.Label()})
		}
	}
}

// unmeasured is a rule skipped on a MIG instance.
type unmeasured struct{ rule, gpu, instance string }

// warnUnmeasured says, once for each rule and GPU, on which of the GPU's
// MIG instances the rule was skipped at this evaluation.
func (e *Engine) warnUnmeasured(host string) {
	if len(e.unmeasured) == 0 {
		return
	}
	us := e.unmeasured
	e.unmeasured = nil
	if e.opts.Logger == nil {
		return
	}
	slices.SortStableFunc(us, func(a, b unmeasured) int { return cmp.Or(cmp.Compare(a.rule, b.rule), cmp.Compare(a.gpu, b.gpu)) })
	for len(us) > 0 {
		n := 1
		for n < len(us) && us[n].rule == us[0].rule && us[n].gpu == us[0].gpu {
			n++
		}
		names := make([]string, n)
		for i := range n {
			names[i] = us[i].instance
		}
		e.opts.Logger.Warn("rule skipped on MIG instances that do not measure utilization (NVML's GPM metrics need a Hopper GPU or later)",
			"rule", us[0].rule, "host", host, "gpu", us[0].gpu, "instances", strings.Join(names, ", "))
		us = us[n:]
	}
}
