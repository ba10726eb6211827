package prometheus

import (
	"context"
	"fmt"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// backfill reads (end−span, end] with one range query per series family
// and builds one evaluation per step, in time order.
func (q *querier) backfill(ctx context.Context, end time.Time, span time.Duration, warm func(*gpu.Snapshot)) error {
	if span <= 0 {
		return nil
	}
	step := max(q.opts.Interval, (span+MaxPoints-1)/MaxPoints)
	r := v1.Range{Start: end.Add(-span), End: end, Step: step}
	var series []*model.SampleStream
	for _, name := range q.opts.Schema.names() {
		m, err := q.rangeQuery(ctx, name, r)
		if err != nil {
			return err
		}
		series = append(series, m...)
	}
	replay(series, func(at time.Time, points []point) {
		for _, s := range q.build.build(at, points) {
			warm(s)
		}
	})
	return nil
}

func (q *querier) rangeQuery(ctx context.Context, name string, r v1.Range) (model.Matrix, error) {
	ctx, cancel := context.WithTimeout(ctx, q.opts.Timeout)
	defer cancel()
	val, warnings, _, err := q.api.QueryRange(ctx, q.opts.Selector.Query([]string{name}), r)
	if err != nil {
		return nil, q.failure("range query", err)
	}
	q.warn(warnings)
	m, ok := val.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("prometheus at %s answered a %s to a range query, not a matrix", q.opts.URL, val.Type())
	}
	return m, nil
}

// replay calls f once per timestamp of the series, in time order, with
// the value of every series that has one then. Each series' points are in
// time order (as the API answers them); a cursor per series walks them, so
// nothing but one step's points is held besides the answers.
func replay(series []*model.SampleStream, f func(at time.Time, points []point)) {
	cursor := make([]int, len(series))
	var points []point
	for {
		next, found := model.Time(0), false
		for i, s := range series {
			if c := cursor[i]; c < len(s.Values) && (!found || s.Values[c].Timestamp < next) {
				next, found = s.Values[c].Timestamp, true
			}
		}
		if !found {
			return
		}
		points = points[:0]
		for i, s := range series {
			for cursor[i] < len(s.Values) && s.Values[cursor[i]].Timestamp <= next {
				if s.Values[cursor[i]].Timestamp == next {
					points = append(points, point{metric: s.Metric, value: float64(s.Values[cursor[i]].Value)})
				}
				cursor[i]++
			}
		}
		f(next.Time(), points)
	}
}
