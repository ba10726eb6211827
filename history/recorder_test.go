package history

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func snap(at time.Time, util float64) *gpu.Snapshot {
	return &gpu.Snapshot{Time: at, Host: "node1", Devices: []gpu.Device{
		{Index: 1, UUID: "GPU-b", MemUsed: 50, MemTotal: 100, UtilGPU: util, TempC: 60},
		{Index: 0, UUID: "GPU-a", MemUsed: 10, MemTotal: 100, UtilGPU: math.NaN(), TempC: 40},
	}}
}

// TestRecorderAveragesMinutes: samples of a minute are averaged, unknown
// readings left out, minutes without samples unknown, GPUs by index.
func TestRecorderAveragesMinutes(t *testing.T) {
	r := NewRecorder()
	r.Add(snap(t0, 20))
	r.Add(snap(t0.Add(30*time.Second), 40))
	r.Add(snap(t0.Add(2*time.Minute), 90))
	from, to := r.Span()
	if !from.Equal(t0) || !to.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("span %v – %v, want %v – %v", from, to, t0, t0.Add(2*time.Minute))
	}
	gpus := r.GPUs(from, to)
	if len(gpus) != 2 || gpus[0].Index != 0 || gpus[1].Index != 1 {
		t.Fatalf("GPUs %+v, want GPU 0 then GPU 1", gpus)
	}
	u := gpus[1].Utilization.Values
	if len(u) != 3 || u[0] != 30 || !math.IsNaN(u[1]) || u[2] != 90 {
		t.Errorf("GPU 1 utilization %v, want [30 NaN 90]", u)
	}
	if m := gpus[1].MemoryPercent.Values[0]; m != 50 {
		t.Errorf("GPU 1 memory %v%%, want 50", m)
	}
	if !math.IsNaN(gpus[0].Utilization.Values[0]) {
		t.Errorf("GPU 0 utilization %v, want unknown", gpus[0].Utilization.Values[0])
	}
}

// TestRecorderCapsPoints: a week of minutes comes back in at most
// MaxPoints points.
func TestRecorderCapsPoints(t *testing.T) {
	r := NewRecorder()
	for m := 0; m < 7*24*60; m += 7 {
		r.Add(snap(t0.Add(time.Duration(m)*time.Minute), 50))
	}
	from, to := r.Span()
	for _, g := range r.GPUs(from, to) {
		if n := len(g.Utilization.Values); n > MaxPoints {
			t.Errorf("GPU %d: %d points, want at most %d", g.Index, n, MaxPoints)
		}
	}
}

// TestPrometheusFilters: a query for one host's GPU keeps only it.
func TestPrometheusFilters(t *testing.T) {
	read := func(_ context.Context, from, to time.Time, step time.Duration, each func(*gpu.Snapshot)) error {
		for at := from; !at.After(to); at = at.Add(step) {
			each(snap(at, 10))
			other := snap(at, 10)
			other.Host = "node2"
			each(other)
		}
		return nil
	}
	got, err := NewPrometheus(read).History(t.Context(), Query{Host: "node1", GPU: 1, From: t0, To: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Host != "node1" || got[0].Index != 1 {
		t.Fatalf("history %+v, want node1's GPU 1 alone", got)
	}
}
