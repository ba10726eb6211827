package history

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/gpu"
)

// RangeReader reads a fleet's snapshots over [from, to], one evaluation a
// step, with range queries (gpu/prometheus.Source.Range), handing each to
// each in time order.
type RangeReader func(ctx context.Context, from, to time.Time, step time.Duration, each func(*gpu.Snapshot)) error

// Prometheus is the history of a hub's fleet, read from its Prometheus
// with one range query per series family, whatever the fleet's size.
type Prometheus struct {
	read RangeReader
}

// NewPrometheus returns the history read by read.
func NewPrometheus(read RangeReader) *Prometheus { return &Prometheus{read: read} }

// History reads the query's window, a point a minute (longer steps past
// MaxPoints).
func (p *Prometheus) History(ctx context.Context, q Query) ([]chart.GPUHistory, error) {
	if !q.To.After(q.From) {
		return nil, fmt.Errorf("history: the window %s – %s is empty", q.From, q.To)
	}
	step := max(time.Minute, q.To.Sub(q.From)/MaxPoints)
	rec := NewRecorder()
	err := p.read(ctx, q.From, q.To, step, func(s *gpu.Snapshot) {
		if q.Host != "" && s.Host != q.Host {
			return
		}
		if q.GPU != AllGPUs {
			s = onlyGPU(s, q.GPU)
		}
		rec.Add(s)
	})
	if err != nil {
		return nil, fmt.Errorf("history from prometheus: %w", err)
	}
	return rec.GPUs(q.From, q.To), nil
}

// onlyGPU is s with only the device of index.
func onlyGPU(s *gpu.Snapshot, index int) *gpu.Snapshot {
	out := *s
	out.Devices = nil
	for _, d := range s.Devices {
		if d.Index == index {
			out.Devices = append(out.Devices, d)
		}
	}
	return &out
}
