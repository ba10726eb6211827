package gpu_test

import (
	"math"
	"testing"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// TestRestingLevel: the resting level is the least memory no process
// accounts for, once at most gpu.RestingMax; memory above it is held.
func TestRestingLevel(t *testing.T) {
	const gib = 1 << 30
	var r gpu.RestingLevel
	steps := []struct {
		d          gpu.Device
		rest, held float64
	}{
		// A log's GPU first seen with a job on it: not a resting level.
		{gpu.Device{MemUsed: 20 * gib, MemTotal: 80 * gib}, 0, 20 * gib},
		// The job left: the card rests at 1.2 GiB.
		{gpu.Device{MemUsed: 6 * gib / 5, MemTotal: 80 * gib}, 6 * gib / 5, 0},
		// A process holds 10 GiB beside the card's 1 GiB: a lower level.
		{gpu.Device{MemUsed: 11 * gib, MemTotal: 80 * gib, Processes: []gpu.Process{{PID: 1, MemUsed: 10 * gib}}}, gib, 10 * gib},
		// Memory unknown: nothing learnt, nothing held known.
		{gpu.Device{}, gib, math.NaN()},
	}
	for i, s := range steps {
		r.Observe(&s.d)
		held := r.Above(&s.d)
		if r.Bytes() != s.rest || held != s.held && !(math.IsNaN(held) && math.IsNaN(s.held)) {
			t.Errorf("step %d: rest %v, held %v; want %v and %v", i, r.Bytes(), held, s.rest, s.held)
		}
	}
}
