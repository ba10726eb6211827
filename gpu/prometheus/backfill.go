package prometheus

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/healthseries"
)

// Reading is a part of a GPU's state whose past a backfill can read: the
// series families that carry it.
type Reading int

// The readings a backfill reads.
const (
	// ReadingMemory is the memory in use and the total (dcgm-exporter:
	// used, free and reserved), and on dcgm-exporter the pod its labels
	// name.
	ReadingMemory Reading = iota + 1
	// ReadingHolders are the processes or users holding the GPU.
	ReadingHolders
	ReadingUtilization
	ReadingMemoryUtilization
	ReadingTemperature
	// ReadingPower is the power drawn and its limit.
	ReadingPower
	// ReadingXIDs are the XID errors: the agents' counters,
	// dcgm-exporter's last XID and its counts of XIDs within a window.
	// Each step read is the events since the one before.
	ReadingXIDs
	// readingHealth is the first of the health readings (ReadingHealth).
	readingHealth
)

// ReadingHealth is health reading r: the agents' series of it and
// dcgm-exporter's of both its generations.
func ReadingHealth(r gpu.HealthReading) Reading { return readingHealth + Reading(r) }

// readings are the readings each series family carries; a family that is
// not here (a GPU's info, its loss) is not read into the past.
var readings = readingsOf()

// readingsOf maps each series family to its reading: memory,
// utilization, temperature and power under every schema's names, the
// XIDs, and each health reading's series (package healthseries).
func readingsOf() map[string]Reading {
	m := map[string]Reading{
		"gpuwatch_gpu_memory_used_bytes":                ReadingMemory,
		"gpuwatch_gpu_memory_total_bytes":               ReadingMemory,
		gwProcessMemory:                                 ReadingHolders,
		gwUserMemory:                                    ReadingHolders,
		"gpuwatch_gpu_utilization_ratio":                ReadingUtilization,
		"gpuwatch_gpu_memory_utilization_ratio":         ReadingMemoryUtilization,
		"gpuwatch_gpu_temperature_celsius":              ReadingTemperature,
		"gpuwatch_gpu_power_watts":                      ReadingPower,
		"gpuwatch_gpu_power_limit_watts":                ReadingPower,
		"DCGM_FI_DEV_FB_USED":                           ReadingMemory,
		"DCGM_FI_DEV_FB_FREE":                           ReadingMemory,
		"DCGM_FI_DEV_FB_RESERVED":                       ReadingMemory,
		"DCGM_FI_DEV_GPU_UTIL":                          ReadingUtilization,
		"DCGM_FI_DEV_MEM_COPY_UTIL":                     ReadingMemoryUtilization,
		"DCGM_FI_DEV_GPU_TEMP":                          ReadingTemperature,
		"DCGM_FI_DEV_POWER_USAGE":                       ReadingPower,
		"DCGM_FI_DEV_POWER_MGMT_LIMIT":                  ReadingPower,
		dcgm49FBUsed:                                    ReadingMemory,
		dcgm49FBFree:                                    ReadingMemory,
		dcgm49FBReserved:                                ReadingMemory,
		dcgm49FBCapacity:                                ReadingMemory,
		"DCGM_FI_DEV_GPU_UTIL_RATIO":                    ReadingUtilization,
		"DCGM_FI_DEV_GPU_TEMP_CELSIUS":                  ReadingTemperature,
		"DCGM_FI_DEV_BOARD_POWER_WATTS":                 ReadingPower,
		"DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS": ReadingPower,
		gwXID:        ReadingXIDs,
		dcgmXID:      ReadingXIDs,
		dcgm49XID:    ReadingXIDs,
		dcgmXIDCount: ReadingXIDs,
	}
	for _, s := range healthseries.All() {
		m[s.Name] = ReadingHealth(s.Reading)
		for _, f := range s.DCGM {
			m[f.Name] = ReadingHealth(s.Reading)
		}
	}
	return m
}

// Need is a reading whose past a backfill reads: all of its last Span, a
// point per Step (0, or less than the evaluation interval: every
// interval). A rule engine's windows need every evaluation of theirs; the
// longer scales of a trend over several, a point every few minutes; a
// chart of the last hours, one a minute.
type Need struct {
	Reading    Reading
	Span, Step time.Duration
}

// Past is what of the fleet's past a backfill reads: each series family
// over the spans and at the steps its reading's Needs ask, the finest
// where they overlap (a family no Need asks for is not read). Every step
// at which any family is read becomes one past evaluation: its snapshots
// hold the readings read then, the others unknown.
type Past []Need

// Span is how far back p reaches.
func (p Past) Span() time.Duration {
	var span time.Duration
	for _, n := range p {
		span = max(span, n.Span)
	}
	return span
}

// chunkSteps is how many steps of the past one round of a backfill's
// range queries reads: the answers of a round are held together until
// replayed, so a fleet's backfill holds a few minutes of its series at a
// time, not all of its window.
const chunkSteps = 10

// plan is how a backfill reads one family, or a group of families read
// together: its tiers, each a step and how far back it applies, finest
// first.
type plan struct {
	families []string
	tiers    []Need
}

// stepAt is the family's step at d before the end: its finest tier that
// reaches that far; 0 where none does.
func (p plan) stepAt(d time.Duration) time.Duration {
	for _, t := range p.tiers {
		if d <= t.Span {
			return t.Step
		}
	}
	return 0
}

// plans are how each family of the schema is read: each Need's step is a
// whole number of intervals (an evaluation's time is on the interval's
// grid, counted back from the end), and coarse enough that its span
// holds at most MaxPoints of them. The families most fleets do not have
// (the health readings, dcgm-exporter 4.9's names) are read in one range
// query for all those with the same tiers.
func (q *querier) plans(past Past) []plan {
	var out []plan
	var groups []int // the plans in out that are groups of families
	add := func(name string, tiers []Need) {
		if !containsFamily(families, name) {
			if i := slices.IndexFunc(groups, func(i int) bool { return slices.Equal(out[i].tiers, tiers) }); i >= 0 {
				out[groups[i]].families = append(out[groups[i]].families, name)
				return
			}
			groups = append(groups, len(out))
		}
		out = append(out, plan{families: []string{name}, tiers: tiers})
	}
	var xids []string
	for _, name := range q.opts.Schema.names() {
		if r := readings[name]; r == ReadingXIDs {
			xids = append(xids, name)
		} else if tiers := q.tiers(past, r); len(tiers) > 0 {
			add(name, tiers)
		}
	}
	if len(out) == 0 {
		return nil
	}
	// The XIDs are read from the first step read on, at the step of the
	// family that reaches furthest, and as finely as a count of them
	// asks: each step read is the XIDs since the one before, and a GPU's
	// first the baseline of its counters, so that no XID of before the
	// past read is told as new.
	var first Need
	for _, p := range out {
		for _, t := range p.tiers {
			if t.Span > first.Span || t.Span == first.Span && t.Step < first.Step {
				first = t
			}
		}
	}
	tiers := finestTiers(append(q.tiers(past, ReadingXIDs), first))
	for _, name := range xids {
		add(name, tiers)
	}
	return out
}

// tiers are the spans and steps past asks of reading r, finest first:
// each step a whole number of intervals, coarse enough for MaxPoints.
func (q *querier) tiers(past Past, r Reading) []Need {
	interval := q.opts.Interval
	var tiers []Need
	for _, n := range past {
		if n.Reading != r || n.Span <= 0 {
			continue
		}
		step := max(n.Step, interval, (n.Span+MaxPoints-1)/MaxPoints)
		step = (step + interval - 1) / interval * interval
		tiers = append(tiers, Need{Span: n.Span / interval * interval, Step: step})
	}
	return finestTiers(tiers)
}

// finestTiers sorts tiers finest first and drops each coarser tier that
// reaches no further than a finer one: it adds nothing.
func finestTiers(tiers []Need) []Need {
	slices.SortFunc(tiers, func(a, b Need) int { return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(a.Span, b.Span)) })
	tiers = slices.Compact(tiers)
	return slices.DeleteFunc(tiers, func(t Need) bool {
		return slices.ContainsFunc(tiers, func(u Need) bool { return u.Step < t.Step && u.Span >= t.Span })
	})
}

// backfill reads the past before end that past asks for, in rounds of
// range queries in time order, and builds one evaluation per step at
// which any family is read.
func (q *querier) backfill(ctx context.Context, end time.Time, past Past, warm func(*gpu.Snapshot)) error {
	plans := q.plans(past)
	if len(plans) == 0 {
		return nil
	}
	// The times read, counted back from the end in intervals: where a
	// tier's span ends, each family's step may change, so a round never
	// crosses one.
	interval := q.opts.Interval
	var bounds []time.Duration
	for _, p := range plans {
		for _, t := range p.tiers {
			bounds = append(bounds, t.Span)
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	r := &pastRound{}
	hi := bounds[len(bounds)-1]
	for i := len(bounds) - 1; i >= 0; i-- {
		lo := time.Duration(-1) // the region (lo, hi] before the end
		if i > 0 {
			lo = bounds[i-1]
		}
		// The steps of the region, every family's on the interval grid.
		var times []time.Duration
		for d := hi; d > lo; d -= interval {
			for _, p := range plans {
				if s := p.stepAt(d); s > 0 && d%s == 0 {
					times = append(times, d)
					break
				}
			}
		}
		for len(times) > 0 {
			n := min(chunkSteps, len(times))
			if err := q.round(ctx, end, plans, times[0], times[n-1], r, warm); err != nil {
				return err
			}
			times = times[n:]
		}
		hi = lo
	}
	return nil
}

// round reads the steps from first to last before the end (first the
// earlier, both within one region of steps) of every family that has any
// there, with one range query each, and replays them.
func (q *querier) round(ctx context.Context, end time.Time, plans []plan, first, last time.Duration, r *pastRound, warm func(*gpu.Snapshot)) error {
	r.reset()
	for _, p := range plans {
		step := p.stepAt(first)
		if step == 0 {
			continue
		}
		// The family's steps in the round, counted back from the end:
		// from the earliest (first rounded down to its step) to the
		// latest (last rounded up).
		earliest, latest := first/step*step, (last+step-1)/step*step
		if latest > earliest {
			continue
		}
		if err := q.rangeInto(ctx, p.families, end.Add(-earliest), end.Add(-latest), step, r); err != nil {
			return err
		}
	}
	r.replay(func(at time.Time, points []point) {
		for _, s := range q.build.build(at, points) {
			warm(s)
		}
	})
	return nil
}

// Range reads [from, to] of the fleet, one evaluation a step (longer
// when that would pass MaxPoints), with one range query per series family
// (one for all the health readings),
// and hands each evaluation's snapshots to each, in time order. Unlike
// Next and Backfill it may be called from any goroutine, alongside them:
// it builds its snapshots apart (for /gpu history and charts on a hub).
func (s *Source) Range(ctx context.Context, from, to time.Time, step time.Duration, each func(*gpu.Snapshot)) error {
	span := to.Sub(from)
	if span <= 0 {
		return nil
	}
	q := &querier{opts: s.q.opts, base: s.q.base, client: s.q.client, build: newBuilder(s.q.opts.Schema, s.q.opts.Interval, s.q.opts.PodLabelKeys), strs: newInterner(),
		refused: s.q.refused}
	step = max(step, (span+MaxPoints-1)/MaxPoints)
	r := &pastRound{}
	for _, names := range q.opts.Schema.backfillGroups() {
		if err := q.rangeInto(ctx, names, from, to, step, r); err != nil {
			return err
		}
	}
	r.replay(func(at time.Time, points []point) {
		for _, s := range q.build.build(at, points) {
			each(s)
		}
	})
	return nil
}

// rangeInto reads the families names over [from, to] at step into r.
func (q *querier) rangeInto(ctx context.Context, names []string, from, to time.Time, step time.Duration, r *pastRound) error {
	a, err := q.get(ctx, "/api/v1/query_range", url.Values{
		"query": {q.opts.Selector.Query(names)},
		"start": {formatTime(from)},
		"end":   {formatTime(to)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}, r.add)
	if err != nil {
		return q.failure("range query", err)
	}
	if a.resultType != "matrix" {
		return fmt.Errorf("prometheus at %s answered a %q to a range query, not a matrix", q.opts.URL, a.resultType)
	}
	return nil
}

// pastRound holds the series of one round of range queries, reused
// round after round: their label sets (copied into place, the same series
// coming at the same place round after round) and their samples, all in
// one slice. Its series are replayed GPU by GPU (the answers come family
// by family), so that the builder finds each GPU once a step; the order
// is kept from round to round while the series are the same.
type pastRound struct {
	labels  []labelSet
	series  []pastSeries
	samples []sample
	cursor  []int
	points  []point
	order   []int // the series, GPU by GPU
	changed bool  // the series differ from the last round's
}

// pastSeries is a series of the round: its labels, and its samples as
// samples[lo:hi].
type pastSeries struct {
	labels *labelSet
	lo, hi int
}

func (r *pastRound) reset() {
	r.series, r.samples = r.series[:0], r.samples[:0]
}

// add keeps a series the decoder read.
func (r *pastRound) add(ls *labelSet, samples []sample) error {
	i := len(r.series)
	if i == len(r.labels) {
		r.labels = append(r.labels, *ls)
		r.changed = true
	} else if !r.labels[i].same(ls) {
		r.labels[i] = *ls
		r.changed = true
	}
	lo := len(r.samples)
	r.samples = append(r.samples, samples...)
	r.series = append(r.series, pastSeries{lo: lo, hi: len(r.samples)})
	return nil
}

// replay calls f once per timestamp of the round's series, in time order,
// with the value of every series that has one then. Each series' samples
// are in time order (as the API answers them); a cursor per series walks
// them, so nothing but one step's points is held besides the answers.
func (r *pastRound) replay(f func(at time.Time, points []point)) {
	for i := range r.series {
		r.series[i].labels = &r.labels[i]
	}
	if r.changed || len(r.order) != len(r.series) {
		r.order = r.order[:0]
		for i := range r.series {
			r.order = append(r.order, i)
		}
		slices.SortStableFunc(r.order, func(a, b int) int { return compareGPU(r.series[a].labels, r.series[b].labels) })
		r.changed = false
	}
	r.cursor = slices.Grow(r.cursor[:0], len(r.series))[:len(r.series)]
	for i, s := range r.series {
		r.cursor[i] = s.lo
	}
	for {
		var next int64
		found := false
		for i, s := range r.series {
			if c := r.cursor[i]; c < s.hi && (!found || r.samples[c].t < next) {
				next, found = r.samples[c].t, true
			}
		}
		if !found {
			return
		}
		r.points = r.points[:0]
		for _, i := range r.order {
			s := r.series[i]
			for r.cursor[i] < s.hi && r.samples[r.cursor[i]].t <= next {
				if smp := r.samples[r.cursor[i]]; smp.t == next {
					r.points = append(r.points, point{labels: s.labels, value: smp.v})
				}
				r.cursor[i]++
			}
		}
		f(time.UnixMilli(next).UTC(), r.points)
	}
}

// compareGPU orders series by the GPU they are about, whatever their
// schema's labels.
func compareGPU(a, b *labelSet) int {
	return cmp.Or(cmp.Compare(a.host, b.host), cmp.Compare(a.hostname, b.hostname), cmp.Compare(a.instance, b.instance),
		cmp.Compare(a.gpu, b.gpu), cmp.Compare(a.uuid, b.uuid), cmp.Compare(a.uuidDCGM, b.uuidDCGM), cmp.Compare(a.gpuInstance, b.gpuInstance))
}
