package promexport

import (
	"fmt"
	"strconv"
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
	"a slice without samples counts as no change (gpuwatch: the rate across it); the current slice's floor is sampled at each evaluation of the trend's group"

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
		points := subquery(bin(t.metric, "and on ()", t.parity(p)), t.slice-time.Millisecond, t.r.interval())
		xs = append(xs, bin(call("min_over_time", points), "and on ()", t.parity(p)))
	}
	return join("or", xs...)
}

// trend records trend(m, w) and the rate it reports, in the trend's
// groups, and returns the trend.
func (r *ruleExport) trend(m rules.Metric, w time.Duration) (tv expr, err error) {
	fast, slices := r.trendGroups(m, w)
	r.inGroup(fast, func() { tv, err = r.trendIn(m, w, slices) })
	return tv, err
}

func (r *ruleExport) trendIn(m rules.Metric, w time.Duration, slices *groupPlan) (expr, error) {
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
	S := t.slice

	// gpuwatch measures one job: a GPU's trends start afresh when a job
	// takes it or leaves it. So a rate counts only from the slice the job
	// started in; the others, and a rate without both floors (the slices
	// before a series' first sample), count as no change.
	held, err := r.heldForRecord()
	if err != nil {
		return expr{}, err
	}
	var since expr
	r.inBaseGroup(func() {
		since = r.record("gpuwatch:held_since", "the time the job on the GPU took it; the time of its latest sample while it is free",
			bin(raw("time()"), "-", held))
	})
	// The current slice's start.
	sliceStart := fmt.Sprintf("(time() - time() %% %s)", seconds(S).s)

	// What changes once a slice is computed in the slice group, which
	// runs a few times a slice: the rates between the last 11 full
	// slices' floors (the newest pair's recorded, the ten in one record
	// with a label slice), the last full slice's floor and the time
	// between the last two, and whether the trend is ready.
	var rates, ready, lastFloor, dt expr
	r.inGroup(slices, func() {
		// A subquery with step S over the last slice length has one
		// point, the current slice's start, or, offset by d, the start
		// of the slice d before the current one.
		slicesBack := func(e expr, d time.Duration) expr {
			return call("last_over_time", offset(subquery(e, S-time.Millisecond, S), d))
		}
		atStart := func(e expr) expr { return slicesBack(e, 0) }
		pair := atStart(t.labelled(t.rate(bin(t.floor(0), "-", t.floor(S)), t.lastAt(S), t.lastAt(2*S))))
		sliceRate := r.record(r.recordName(m, "trend_slice_rate", w),
			part(v)+": the rate between the floors of the two full slices before the current one", pair)
		// A slice without a rate counts as no change while the GPU has
		// reported within the window: recorded once, read for each
		// slice. vmalert reads a record only once it has been written:
		// there the base group records it, and the slice group reads it
		// as of the base group's latest evaluation, as it reads when the
		// job began.
		var noChange expr
		recordNoChange := func() {
			noChange = r.record(r.recordName(m, "trend_no_change", w), part(v)+": 0 while the GPU has reported within the window",
				bin(raw("0"), "*", t.labelled(call("present_over_time", rangeOf(f.series, w-time.Millisecond)))))
		}
		if r.opts.Target == TargetVMAlert {
			r.inBaseGroup(recordNoChange)
		} else {
			recordNoChange()
		}
		terms := make([]expr, 10)
		for k := range terms {
			// The rate recorded in the slice k slices back: the one point
			// of a subquery with step S, its slice's start, reads what
			// was recorded in the slice after it. Prometheus, which
			// evaluates a group's rules in order, reads the newest as
			// just recorded; vmalert computes it again.
			term := sliceRate
			if r.opts.Target == TargetVMAlert {
				term = pair
			}
			if k > 0 {
				term = raw("max by (" + r.s.gpuLabels() + ") (" + slicesBack(call("last_over_time",
					offset(rangeOf(sliceRate, S), -(S-time.Millisecond))), time.Duration(k)*S).s + ")")
			}
			inJob := bin(since, "<=", raw(fmt.Sprintf("%s - %s", sliceStart, seconds(time.Duration(k+1)*S).s)))
			terms[k] = call("label_replace", join("or", bin(term, "and", inJob), noChange),
				raw(`"slice"`), raw(quote(strconv.Itoa(k))), raw(`""`), raw(`""`))
		}
		rates = r.record(r.recordName(m, "trend_rates", w),
			part(v)+": the rates between the last 11 full slices' floors, in the current job (0 before it), one series a slice", join("or", terms...))
		lastFloor = r.record(r.recordName(m, "trend_last_floor", w), part(v)+": the floor of the last full slice", r.perGPU(f, atStart(t.floor(0))))
		lastAt := func(d time.Duration) expr { return t.labelled(atStart(t.lastAt(d))) }
		// Where no reading precedes the last full slice within the
		// lookback (after a gap in the readings), a slice.
		dt = r.record(r.recordName(m, "trend_floor_gap", w), part(v)+": the seconds between the last full slice's floor and the floor before (a slice where no reading precedes the last full slice)",
			bin(call("clamp_min", bin(lastAt(0), "-", lastAt(S)), seconds(S/2)), "or", bin(bin(raw("0"), "*", lastFloor), "+", seconds(S))))
		// Ready once the samples span half the window: one of the six
		// oldest slices has one.
		ready = r.record(r.recordName(m, "trend_ready", w), part(v)+": 1 once the samples span half the window",
			t.labelled(call("present_over_time", offset(subquery(t.floor(0), 6*S-time.Millisecond, S), 5*S))))
	})
	// The ranks change with the rates: Prometheus computes them in the
	// slice group, right after the rates; vmalert, which would read the
	// rates its slice group recorded an evaluation before, in the trend's
	// group, as of the slice group's latest evaluation.
	rankGroup := slices
	if r.opts.Target == TargetVMAlert {
		rankGroup = r.owner()
	}
	rank := make(map[int]expr)
	r.inGroup(rankGroup, func() {
		for k := 3; k <= 6; k++ {
			q := raw(fmt.Sprintf("quantile by (%s) (%s, %s)", r.s.gpuLabels(), number(float64(k-1)/9).s, rates.s))
			if f.scale != 1 {
				q = bin(number(f.scale), "*", q)
			}
			rank[k] = r.record(r.recordName(m, fmt.Sprintf("trend_rank%d", k), w),
				fmt.Sprintf("%s: the %s smallest of the rates between the last 11 full slices' floors, in the current job", part(v), ordinal(k)), q)
		}
	})
	floor := r.currentFloor(t, m, w, sliceStart)
	// The newest rate, recorded once for the two ranks that clamp it; the
	// time between the floors is there wherever the last full slice has
	// a floor.
	inJobNow := bin(held, ">=", raw(fmt.Sprintf("time() %% %s", seconds(S).s)))
	c := r.record(r.recordName(m, "trend_current", w), part(v)+": the rate from the last full slice's floor to the current slice's, in the current job (0 before it)",
		bin(bin(bin(bin(floor, "-", lastFloor), "/", dt), "and", inJobNow), "or", bin(raw("0"), "*", rank[4])))
	clamp := func(lo, hi expr) expr { return bin(bin(bin(bin(c, "<", hi), "or", hi), ">", lo), "or", lo) }
	tv := r.record(name, help, bin(clamp(rank[3], rank[4]), "and", ready))
	r.record(rateName, rateHelp, bin(bin(clamp(rank[5], rank[6]), "and", bin(tv, ">", raw("0"))), "or", tv))
	return tv, nil
}

// currentFloor records the current slice's floor, the least reading of
// the slice so far. In Prometheus, which evaluates a group's rules one
// after the other, it is the last evaluation's floor, kept while it is of
// this slice, or the reading now where it is less. vmalert reads a record
// only once it has been written, some evaluations late: the floor there is
// the least of the readings sampled every evaluation over the last slice
// length, those that fall in the slice before told apart by parity.
func (r *ruleExport) currentFloor(t trendParts, m rules.Metric, w time.Duration, sliceStart string) expr {
	v := rules.CondValue{Metric: m, Fn: "trend", Window: w}
	help := part(v) + ": the least reading of the current slice"
	name := r.recordName(m, "trend_floor", w)
	now := r.perGPU(t.f, t.f.series)
	if r.opts.Target == TargetVMAlert {
		t.metric = now
		return r.record(name, help, t.current())
	}
	// The least of the two, read once each: the last evaluation's floor,
	// labelled apart so that the union keeps both, while it is of this slice.
	prev := bin(raw(name), "and", bin(call("timestamp", raw(name)), ">=", raw(sliceStart)))
	both := join("or", now, call("label_replace", prev, raw(`"trend_floor"`), raw(`"previous"`), raw(`""`), raw(`""`)))
	return r.record(name, help, raw("min by ("+r.s.gpuLabels()+") ("+both.s+")"))
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

// timeToFull records time_to_full(m, w), in the trend's group: the
// seconds until m reaches full (memory.total, or 100 for
// memory.used_percent) at the rate the trend reports, +Inf when it does
// not grow steadily.
func (r *ruleExport) timeToFull(m rules.Metric, w time.Duration) (ttf expr, err error) {
	fast, _ := r.trendGroups(m, w)
	r.inGroup(fast, func() { ttf, err = r.timeToFullIn(m, w) })
	return ttf, err
}

// timeToFullIn records time_to_full(m, w) in the group being made.
func (r *ruleExport) timeToFullIn(m rules.Metric, w time.Duration) (expr, error) {
	if _, err := r.trend(m, w); err != nil {
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
	// The rate is positive where the trend is (it is at least the
	// trend then, and the trend itself otherwise).
	growing := bin(call("clamp_min", bin(full, "-", now), raw("0")), "/", bin(rate, ">", raw("0")))
	never := bin(bin(raw("0"), "*", rate), "+", raw("Inf"))
	v := rules.CondValue{Metric: m, Fn: "time_to_full", Window: w}
	return r.record(r.recordName(m, "time_to_full", w), part(v)+": seconds until full at the rate the trend reports", bin(growing, "or", never)), nil
}
