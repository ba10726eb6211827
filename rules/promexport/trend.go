package promexport

import (
	"fmt"
	"time"

	"github.com/gpuwatch/gpuwatch/rules"
)

// trend(m, W) in PromQL. gpuwatch cuts the window into 12 slices of S =
// W/12, aligned to multiples of S since the epoch, as Prometheus aligns a
// subquery's steps: the slices are the current one and the 11 before it.
// Each slice's floor is its smallest sample; the 11 rates between
// neighbouring floors, sorted, give the trend (the 4th smallest: the rate
// at least two-thirds of them reach) and the rate an alert reports (the
// median, when the trend is positive).
//
// A subquery with step S yields the floors of the 11 full slices (each
// point the minimum of the slice before it), and the 10 rates between
// them; the current slice, still filling, gives the 11th rate. With the
// 10 sorted as a0…a9 and the 11th as c, the 4th smallest of all 11 is c
// clamped into [a2, a3], and the median c clamped into [a4, a5]: the
// recording rules keep those four ranks and c.

// trendApproximation says where the translation of trend departs from
// gpuwatch.
const trendApproximation = "growth counts as steady when two-thirds of the slices rise, however unevenly or little (gpuwatch: the rate two-thirds of them reach is at least a quarter of the median and above the steepest fall); " +
	"it starts afresh when a job takes or leaves the GPU as held_for sees it (a job that takes over from another within a sample is not seen), and the slice the job started in keeps its samples from before; " +
	"a floor is taken to be its slice's first sample, which it is for memory that grows; " +
	"a slice without samples counts as no change (gpuwatch: the rate across it); the current slice's floor is sampled every evaluation"

// timeToFullApproximation says where the translation of time_to_full
// departs from gpuwatch.
const timeToFullApproximation = "it is the time until the current reading reaches memory.total at the rate trend reports; " +
	"gpuwatch projects the memory's floor plus the highest peak it rose to and came back from (an evaluation pass) to what jobs can allocate (the total less what the driver reserves); "

// scalesApproximation says what the translation of a trend or
// time_to_full over several time scales leaves out; "" for one.
func scalesApproximation(v rules.CondValue) string {
	if v.Longest == 0 {
		return ""
	}
	return fmt.Sprintf("it looks at the window %s only: gpuwatch also looks at its doublings up to %s, and once growth has been steady holds it until fewer than half of the slices of every scale rise, which Prometheus's rules, keeping no state, cannot; "+
		"a leak in blocks minutes apart is seen later here, or not at all; ", duration(v.Window), duration(v.Longest))
}

// trendParts builds the PromQL of one metric's slices.
type trendParts struct {
	r      *ruleExport
	f      form // the series the floors are taken from
	metric expr // the metric's recording rule, for the current slice
	slice  time.Duration
}

// floor is the floor of the slice that ended d before the (aligned) time
// it is evaluated at.
func (t trendParts) floor(d time.Duration) expr {
	return call("min_over_time", offset(rangeOf(t.f.series, t.slice-time.Millisecond), d+time.Millisecond))
}

// labelled labels a result of the series by its GPU.
func (t trendParts) labelled(e expr) expr {
	if t.f.recorded {
		return e
	}
	return t.r.s.perGPU(e)
}

// lastAt is the time of the last sample before d before the (aligned)
// time it is evaluated at.
func (t trendParts) lastAt(d time.Duration) expr {
	return call("timestamp", offset(t.f.series, d+time.Millisecond))
}

// rate is rise / dt, rise the growth from one slice's floor to the next's
// and dt the time between the floors, at least half a slice as gpuwatch
// has it. A floor is taken to be its slice's first sample, which comes
// one sample after the last of the slice before: so dt is the time
// between the last samples of the slices before each (lastBefore −
// lastBeforeThat), which holds for memory that grows. Without those
// samples, dt is the slice. PromQL computes an expression each time it
// is written: rise is best a recorded series.
func (t trendParts) rate(rise, lastBefore, lastBeforeThat expr) expr {
	half := seconds(t.slice / 2)
	exact := bin(rise, "/", call("clamp_min", bin(lastBefore, "-", lastBeforeThat), half))
	return bin(exact, "or", bin(rise, "/", seconds(t.slice)))
}

// parity is where the slice of the evaluation time is even (p = 0) or
// odd (p = 1).
func (t trendParts) parity(p int) expr {
	return bin(raw(fmt.Sprintf("floor(vector(time()) / %s) %% 2", seconds(t.slice).s)), "==", raw(fmt.Sprint(p)))
}

// current is the floor of the current slice: the smallest value since the
// slice began, sampled every evaluation over the last slice length; the
// points that fall in the slice before are told apart by parity.
func (t trendParts) current() expr {
	var xs []expr
	for p := range 2 {
		points := subquery(bin(t.metric, "and on ()", t.parity(p)), t.slice-time.Millisecond, t.r.opts.Interval)
		xs = append(xs, bin(call("min_over_time", points), "and on ()", t.parity(p)))
	}
	return join("or", xs...)
}

// trend records trend(m, w) and the rate it reports, and returns the
// trend.
func (r *ruleExport) trend(m rules.Metric, w time.Duration) (expr, error) {
	v := rules.CondValue{Metric: m, Fn: "trend", Window: w}
	name, rateName := r.recordName(m, "trend", w), r.recordName(m, "trend_rate", w)
	help := part(v) + ": the rate at least two-thirds of the window's slices reach, per second"
	rateHelp := part(v) + ": how fast it grows (the median rate) when the trend is positive, else the trend"
	if f := r.s.form(m); f.kind == formScaled {
		// memory.used_percent grows as memory.used does, × 100 / total.
		base, err := r.trend(f.base, w)
		if err != nil {
			return expr{}, err
		}
		total, err := r.metric(rules.MetricMemoryTotal)
		if err != nil {
			return expr{}, err
		}
		scale := func(e expr) expr { return bin(bin(raw("100"), "*", e), "/", total) }
		r.record(name, help, scale(base))
		r.record(rateName, rateHelp, scale(raw(r.recordName(f.base, "trend_rate", w))))
		return raw(name), nil
	}
	f, err := r.source(m, "trend", w)
	if err != nil {
		return expr{}, err
	}
	rec, err := r.metric(m)
	if err != nil {
		return expr{}, err
	}
	t := trendParts{r: r, f: f, metric: rec, slice: w / 12}

	// gpuwatch measures one job: a GPU's trends start afresh when a job
	// takes it or leaves it. So a rate counts only from the slice the job
	// (held_for at the evaluation time, @ end()) started in; the others,
	// and a rate without both floors (the slices before a series' first
	// sample), count as no change.
	held, err := r.heldForRecord()
	if err != nil {
		return expr{}, err
	}
	// When the job began, recorded once for every rank of every trend: a
	// step at time t is in it from a slice after.
	since := r.record("gpuwatch:held_since", "the time the job on the GPU took it; the time of its latest sample while it is free",
		bin(call("timestamp", held), "-", held))
	inJob := bin(raw(since.s+" @ end()"), "<=", raw("time() - "+seconds(t.slice).s))
	// Every GPU with a sample in the window, recorded once for the four
	// ranks that read it.
	present := raw(r.record(r.recordName(m, "trend_present", w), part(v)+": 1 for each GPU with a sample in the window",
		t.labelled(call("present_over_time", rangeOf(f.series, w-time.Millisecond)))).s + " @ end()")
	// The rate of each full slice is computed once, at the evaluations of
	// the slice after it, and recorded: a subquery with step S over the
	// last slice length has one point, the current slice's start. The
	// ranks read it back at each slice's start from the samples recorded
	// in that slice (a negative offset), rather than compute ten slices
	// again each, every evaluation.
	sliceRate := r.record(r.recordName(m, "trend_slice_rate", w),
		part(v)+": the rate between the floors of the two full slices before the current one (recorded every evaluation of it)",
		call("last_over_time", subquery(t.labelled(t.rate(bin(t.floor(0), "-", t.floor(t.slice)), t.lastAt(t.slice), t.lastAt(2*t.slice))),
			t.slice-time.Millisecond, t.slice)))
	// last_over_time keeps the series' name: the aggregation drops it.
	ofSlice := raw("max by (" + r.s.gpuLabels() + ") (" + call("last_over_time", offset(rangeOf(sliceRate, t.slice), -(t.slice-time.Millisecond))).s + ")")
	rates := join("or", bin(ofSlice, "and", inJob), bin(raw("0"), "*", present))
	rank := make(map[int]expr)
	for k := 3; k <= 6; k++ {
		q := call("quantile_over_time", number(float64(k-1)/9), subquery(rates, 10*t.slice-time.Millisecond, t.slice))
		if f.scale != 1 {
			q = bin(number(f.scale), "*", q)
		}
		rank[k] = r.record(r.recordName(m, fmt.Sprintf("trend_rank%d", k), w),
			fmt.Sprintf("%s: the %s smallest of the rates between the last 11 full slices' floors, in the current job", part(v), ordinal(k)), q)
	}
	// At the evaluation time, the one point of a subquery over the last
	// slice length with step S is the current slice's start.
	atStart := func(e expr) expr {
		return r.perGPU(f, call("last_over_time", subquery(e, t.slice-time.Millisecond, t.slice)))
	}
	lastAt := func(d time.Duration) expr {
		e := call("last_over_time", subquery(t.lastAt(d), t.slice-time.Millisecond, t.slice))
		if !f.recorded {
			e = r.s.perGPU(e)
		}
		return e
	}
	rise := r.record(r.recordName(m, "trend_current_rise", w), part(v)+": the growth from the last full slice's floor to the current slice's",
		bin(t.current(), "-", atStart(t.floor(0))))
	cur := r.record(r.recordName(m, "trend_current", w), part(v)+": the rate from the last full slice's floor to the current slice's",
		t.rate(rise, lastAt(0), lastAt(t.slice)))
	inJobNow := bin(held, ">=", raw(fmt.Sprintf("time() %% %s", seconds(t.slice).s)))
	c := bin(bin(cur, "and", inJobNow), "or", bin(raw("0"), "*", rank[4]))
	clamp := func(lo, hi expr) expr { return bin(bin(bin(bin(c, "<", hi), "or", hi), ">", lo), "or", lo) }
	// Ready once the samples span half the window: one of the six oldest
	// slices has one.
	ready := call("present_over_time", offset(subquery(t.floor(0), 6*t.slice-time.Millisecond, t.slice), 5*t.slice))
	if !f.recorded {
		ready = r.s.perGPU(ready)
	}
	tv := r.record(name, help, bin(clamp(rank[3], rank[4]), "and", ready))
	r.record(rateName, rateHelp, bin(bin(clamp(rank[5], rank[6]), "and", bin(tv, ">", raw("0"))), "or", tv))
	return tv, nil
}

func ordinal(k int) string {
	switch k {
	case 1:
		return "1st"
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return fmt.Sprintf("%dth", k)
}

// timeToFull records time_to_full(m, w): the seconds until m reaches full
// (memory.total, or 100 for memory.used_percent) at the rate the trend
// reports, +Inf when it does not grow steadily.
func (r *ruleExport) timeToFull(m rules.Metric, w time.Duration) (expr, error) {
	tv, err := r.trend(m, w)
	if err != nil {
		return expr{}, err
	}
	now, err := r.metric(m)
	if err != nil {
		return expr{}, err
	}
	full := number(100)
	if m == rules.MetricMemoryUsed {
		if full, err = r.metric(rules.MetricMemoryTotal); err != nil {
			return expr{}, err
		}
	}
	rate := raw(r.recordName(m, "trend_rate", w))
	growing := bin(bin(call("clamp_min", bin(full, "-", now), raw("0")), "/", rate), "and", bin(tv, ">", raw("0")))
	never := bin(bin(bin(tv, "<=", raw("0")), "*", raw("0")), "+", raw("Inf"))
	v := rules.CondValue{Metric: m, Fn: "time_to_full", Window: w}
	return r.record(r.recordName(m, "time_to_full", w), part(v)+": seconds until full at the rate the trend reports", bin(growing, "or", never)), nil
}
