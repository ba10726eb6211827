package promexport

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/rules"
)

// metricStem is a metric's name in recording rules: memory_used_percent.
func metricStem(m rules.Metric) string { return strings.ReplaceAll(m.String(), ".", "_") }

// metric records metric m, in its base unit, labelled by its GPU:
// gpuwatch:memory_used_percent. The alerts compare these.
func (r *ruleExport) metric(m rules.Metric) (expr, error) {
	f := r.s.form(m)
	if f.kind == formNone {
		return expr{}, r.fail(m.String(), f.why)
	}
	inst := f.inst
	switch f.kind {
	case formScaled:
		used, _ := r.metric(rules.MetricMemoryUsed)
		total, _ := r.metric(rules.MetricMemoryTotal)
		inst = bin(bin(raw("100"), "*", used), "/", total)
	case formFree:
		used, _ := r.metric(rules.MetricMemoryUsed)
		total, _ := r.metric(rules.MetricMemoryTotal)
		inst = call("clamp_min", bin(total, "-", used), raw("0"))
	}
	return r.record("gpuwatch:"+metricStem(m), fmt.Sprintf("%s, in %s", m, m.Dimension()), inst), nil
}

// source is the series a window function of m reads, in m's base unit:
// the exporter's own series where m is one, else m's recording rule, which
// has a sample per evaluation.
func (r *ruleExport) source(m rules.Metric, fn string, w time.Duration) (form, error) {
	f := r.s.form(m)
	switch f.kind {
	case formNone:
		return f, r.fail(m.String(), f.why)
	case formRaw:
		if f.note != "" {
			r.note(Caveat, m.String(), f.note)
		}
		return f, nil
	}
	rec, err := r.metric(m)
	if err != nil {
		return form{}, err
	}
	r.note(Caveat, part(rules.CondValue{Metric: m, Fn: fn, Window: w}),
		fmt.Sprintf("%s is computed from several series: its window reads gpuwatch:%s, one sample per evaluation (every %s)", m, metricStem(m), duration(r.interval())))
	return form{kind: formRaw, series: rec, scale: 1, recorded: true}, nil
}

// The window functions' PromQL. gpuwatch's windows hold the samples in
// (t−W, t]; Prometheus 2's ranges hold [t−W, t], so a window is written
// [W−1ms]: the same samples, as Prometheus stores milliseconds.

// perGPU labels a result of f's series by its GPU, in the metric's unit.
func (r *ruleExport) perGPU(f form, e expr) expr {
	if !f.recorded {
		e = r.s.perGPU(e)
	}
	if f.scale != 1 {
		e = bin(number(f.scale), "*", e)
	}
	return e
}

// ready is where the window of f over w holds a value: its samples span
// at least half of it (rules.Window.Ready), so it had one in its first
// half.
func (r *ruleExport) ready(f form, w time.Duration) expr {
	e := call("present_over_time", offset(rangeOf(f.series, w/2-time.Millisecond), w-w/2))
	if f.recorded {
		return e
	}
	return r.s.perGPU(e)
}

// window records avg, min, max or slope of metric m over w.
func (r *ruleExport) window(m rules.Metric, fn string, w time.Duration) (expr, error) {
	name := r.recordName(m, fn, w)
	v := rules.CondValue{Metric: m, Fn: fn, Window: w}
	promFn := map[string]string{"avg": "avg_over_time", "min": "min_over_time", "max": "max_over_time", "slope": "deriv", "rate": "rate"}[fn]
	help := fmt.Sprintf("%s: %s over (t−%s, t], once its samples span half of it", part(v), promFn, duration(w))
	switch f := r.s.form(m); f.kind {
	case formScaled:
		// 100 / memory.total, constant for a GPU, keeps memory.used's
		// minimum, maximum, average and slope.
		base, err := r.window(f.base, fn, w)
		if err != nil {
			return expr{}, err
		}
		total, err := r.metric(rules.MetricMemoryTotal)
		if err != nil {
			return expr{}, err
		}
		// Where the window has a group of its own, so has its scaling.
		var rec expr
		scaled := func() { rec = r.record(name, help, bin(bin(raw("100"), "*", base), "/", total)) }
		if g := r.windowGroupOf(base.s); g != nil {
			r.inGroup(g, scaled)
		} else {
			scaled()
		}
		return rec, nil
	case formFree:
		// free = total − used: its minimum is total − used's maximum.
		usedFn := map[string]string{"avg": "avg", "min": "max", "max": "min", "slope": "slope"}[fn]
		used, err := r.window(rules.MetricMemoryUsed, usedFn, w)
		if err != nil {
			return expr{}, err
		}
		if fn == "slope" {
			return r.record(name, help, bin(raw("-1"), "*", used)), nil
		}
		total, err := r.metric(rules.MetricMemoryTotal)
		if err != nil {
			return expr{}, err
		}
		return r.record(name, help, bin(total, "-", used)), nil
	}
	f, err := r.source(m, fn, w)
	if err != nil {
		return expr{}, err
	}
	e := r.perGPU(f, call(promFn, rangeOf(f.series, w-time.Millisecond)))
	if f.offset.s != "" && fn != "slope" {
		e = bin(e, "+", f.offset)
	}
	e = bin(e, "and", r.ready(f, w))
	// A record's window reads one sample an evaluation of its group: it
	// stays there.
	if !f.recorded {
		if g := r.windowGroup(w); g != nil {
			var rec expr
			r.inGroup(g, func() { rec = r.record(name, help, e) })
			return rec, nil
		}
	}
	return r.record(name, help, e), nil
}
