package daemon

import (
	"math"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/slackbot"
)

// historyMinutes is how much history each GPU keeps: a day of minutes.
const historyMinutes = 24 * 60

// minuteBucket sums one minute of one GPU's samples. minute (Unix minutes)
// says which minute the slot holds now: a slot last written a day or more
// ago reads as empty.
type minuteBucket struct {
	minute          int64
	memSum, utilSum float64
	memN, utilN     uint32
	written         bool
}

// gpuHistory is one GPU's last day, a ring of minute buckets indexed by
// the minute modulo the ring's length.
type gpuHistory struct {
	last    int64 // the latest minute written
	buckets [historyMinutes]minuteBucket
}

// histories keeps every GPU's memory and utilization of the last day, one
// point a minute, for /gpu history. A sample costs O(1) and, once its GPU
// is known, allocates nothing.
type histories struct {
	mu      sync.RWMutex
	byUUID  map[historyKey]*gpuHistory
	byIndex map[int]*gpuHistory // the GPU that last had the index
}

// historyKey identifies a GPU: by UUID, or by index when it has none.
type historyKey struct {
	uuid  string
	index int
}

func newHistories() *histories {
	return &histories{byUUID: map[historyKey]*gpuHistory{}, byIndex: map[int]*gpuHistory{}}
}

// unixMinute is the minute t falls in, counted from the Unix epoch.
func unixMinute(t time.Time) int64 {
	s := t.Unix()
	m := s / 60
	if s%60 < 0 {
		m-- // floor, not truncation, before 1970
	}
	return m
}

// Record adds a snapshot's readings to each GPU's minute. Devices without
// a UUID are kept by index. Samples more than a day older than the GPU's
// latest are ignored.
func (h *histories) Record(s *gpu.Snapshot) {
	minute := unixMinute(s.Time)
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range s.Devices {
		d := &s.Devices[i]
		g := h.gpu(d)
		if minute <= g.last-historyMinutes {
			continue
		}
		g.last = max(g.last, minute)
		b := &g.buckets[ringSlot(minute)]
		if !b.written || b.minute != minute {
			*b = minuteBucket{minute: minute, written: true}
		}
		if d.MemTotal > 0 {
			b.memSum += 100 * float64(d.MemUsed) / float64(d.MemTotal)
			b.memN++
		}
		if !math.IsNaN(d.UtilGPU) && !math.IsInf(d.UtilGPU, 0) {
			b.utilSum += d.UtilGPU
			b.utilN++
		}
	}
}

func ringSlot(minute int64) int {
	slot := minute % historyMinutes
	if slot < 0 {
		slot += historyMinutes
	}
	return int(slot)
}

// gpu returns the history of d, making it on d's first sample.
func (h *histories) gpu(d *gpu.Device) *gpuHistory {
	key := historyKey{uuid: d.UUID}
	if key.uuid == "" {
		key.index = d.Index
	}
	g, ok := h.byUUID[key]
	if !ok {
		g = &gpuHistory{last: math.MinInt64 + historyMinutes}
		h.byUUID[key] = g
	}
	if h.byIndex[d.Index] != g {
		h.byIndex[d.Index] = g
	}
	return g
}

// History returns GPU index's last window (rounded up to whole minutes,
// capped at a day; 0 or less means the whole day), one point a minute,
// ending at the minute of the GPU's latest sample. Minutes without a
// reading are NaN. ok is false for a GPU never seen.
func (h *histories) History(index int, window time.Duration) (slackbot.History, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	g, ok := h.byIndex[index]
	if !ok {
		return slackbot.History{}, false
	}
	steps := historyMinutes
	if window > 0 {
		steps = int(min((window+time.Minute-1)/time.Minute, historyMinutes))
	}
	out := slackbot.History{
		Step:        time.Minute,
		End:         time.Unix(g.last*60, 0).UTC(),
		MemoryUsed:  make([]float64, steps),
		Utilization: make([]float64, steps),
	}
	first := g.last - int64(steps) + 1
	for i := range steps {
		m := first + int64(i)
		out.MemoryUsed[i], out.Utilization[i] = math.NaN(), math.NaN()
		b := &g.buckets[ringSlot(m)]
		if !b.written || b.minute != m {
			continue
		}
		if b.memN > 0 {
			out.MemoryUsed[i] = b.memSum / float64(b.memN)
		}
		if b.utilN > 0 {
			out.Utilization[i] = b.utilSum / float64(b.utilN)
		}
	}
	return out, true
}
