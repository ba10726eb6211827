package prometheus

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// Past is how much of the fleet's past a backfill reads, and how finely:
// all of Span, its last Fine one step per evaluation interval, what comes
// before one step per Step. A rule engine's trends over several time
// scales look hours back, but only their shortest scale needs every
// evaluation: reading the hours before at a few steps a slice costs a
// fleet's hub a fraction of the time and memory.
type Past struct {
	Span time.Duration
	Fine time.Duration // 0 or Span or more: all of it finely
	Step time.Duration // of the part before Fine; at most an interval is read finely anyway
}

// backfill reads [end−past.Span, end] with one range query per series
// family (one for all the health readings) a round, coarsely then finely, and builds one evaluation per
// step, in time order.
func (q *querier) backfill(ctx context.Context, end time.Time, past Past, warm func(*gpu.Snapshot)) error {
	if past.Span <= 0 {
		return nil
	}
	fine := past.Span
	if past.Fine > 0 && past.Fine < past.Span && past.Step > q.opts.Interval {
		fine = past.Fine
		coarse := past.Span - fine
		step := max(past.Step, (coarse+MaxPoints-1)/MaxPoints)
		if err := q.rangeRead(ctx, end.Add(-fine), coarse, step, chunkSteps, warm); err != nil {
			return err
		}
		// The fine part begins one interval after the coarse part's end,
		// which it read.
		fine -= q.opts.Interval
		if fine <= 0 {
			return nil
		}
	}
	return q.rangeRead(ctx, end, fine, max(q.opts.Interval, (fine+MaxPoints-1)/MaxPoints), chunkSteps, warm)
}

// Range reads [from, to] of the fleet, one evaluation a step (longer
// when that would pass MaxPoints), with one range query per series family
// (one for all the health readings), and hands each evaluation's
// snapshots to each, in time order. Unlike
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
	return q.rangeRead(ctx, to, span, step, int(span/step)+1, each)
}

// chunkSteps is how many steps of the past one round of a backfill's
// range queries reads: the answers of a round are held together until
// replayed, so a fleet's backfill holds a few minutes of its series at a
// time, not all of its window.
const chunkSteps = 10

// rangeRead reads [end−span, end] at step, in rounds of chunk steps in
// time order: one range query per series family (one for all the health
// readings) a round.
func (q *querier) rangeRead(ctx context.Context, end time.Time, span, step time.Duration, chunk int, warm func(*gpu.Snapshot)) error {
	start := end.Add(-span)
	for from := start; !from.After(end); from = from.Add(time.Duration(chunk) * step) {
		to := from.Add(time.Duration(chunk-1) * step)
		if to.After(end) {
			to = end
		}
		if err := q.rangeChunk(ctx, from, to, step, warm); err != nil {
			return err
		}
	}
	return nil
}

// rangeChunk reads [from, to] at step and replays it.
func (q *querier) rangeChunk(ctx context.Context, from, to time.Time, step time.Duration, warm func(*gpu.Snapshot)) error {
	var series []seriesAnswer
	for _, names := range q.opts.Schema.backfillGroups() {
		a, err := q.get(ctx, "/api/v1/query_range", url.Values{
			"query": {q.opts.Selector.Query(names)},
			"start": {formatTime(from)},
			"end":   {formatTime(to)},
			"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
		}, nil)
		if err != nil {
			return q.failure("range query", err)
		}
		if a.resultType != "matrix" {
			return fmt.Errorf("prometheus at %s answered a %q to a range query, not a matrix", q.opts.URL, a.resultType)
		}
		series = append(series, a.series...)
	}
	replay(series, func(at time.Time, points []point) {
		for _, s := range q.build.build(at, points) {
			warm(s)
		}
	})
	return nil
}

// replay calls f once per timestamp of the series, in time order, with
// the value of every series that has one then. Each series' samples are in
// time order (as the API answers them); a cursor per series walks them, so
// nothing but one step's points is held besides the answers.
func replay(series []seriesAnswer, f func(at time.Time, points []point)) {
	cursor := make([]int, len(series))
	var points []point
	for {
		var next int64
		found := false
		for i := range series {
			s := series[i].samples
			if c := cursor[i]; c < len(s) && (!found || s[c].t < next) {
				next, found = s[c].t, true
			}
		}
		if !found {
			return
		}
		points = points[:0]
		for i := range series {
			s := &series[i]
			for cursor[i] < len(s.samples) && s.samples[cursor[i]].t <= next {
				if s.samples[cursor[i]].t == next {
					points = append(points, point{labels: &s.labels, value: s.samples[cursor[i]].v})
				}
				cursor[i]++
			}
		}
		f(time.UnixMilli(next).UTC(), points)
	}
}
