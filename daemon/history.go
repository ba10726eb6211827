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

// minuteBucket sums one minute of one GPU's samples in 24 bytes (a hub
// keeps a day of every GPU of its fleet). minute (Unix minutes) says which
// minute the slot holds now: a slot last written a day or more ago reads
// as empty, and so does one never written (minute 0, counts 0).
type minuteBucket struct {
	minute                   int32
	memSum, utilSum, tempSum float32 // percent, at most 100 per sample; degrees Celsius
	memN, utilN, tempN       uint16
}

// gpuHistory is one GPU's last day, a ring of minute buckets indexed by
// the minute modulo the ring's length.
type gpuHistory struct {
	last    int64 // the latest minute written
	buckets [historyMinutes]minuteBucket
}

// histories keeps the memory, utilization and temperature of every GPU of every host
// of the last day, one point a minute, for /gpu history. A sample costs
// O(1) and, once its GPU is known, allocates nothing.
type histories struct {
	mu      sync.RWMutex
	byUUID  map[historyKey]*gpuHistory
	byIndex map[historyKey]*gpuHistory // the GPU that last had the host's index
}

// historyKey identifies a GPU: by host and UUID, or by host and index when
// it has no UUID (and, in byIndex, always).
type historyKey struct {
	host, uuid string
	index      int
}

func newHistories() *histories {
	return &histories{byUUID: map[historyKey]*gpuHistory{}, byIndex: map[historyKey]*gpuHistory{}}
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
		g := h.gpu(s.Host, d)
		if minute <= g.last-historyMinutes {
			continue
		}
		g.last = max(g.last, minute)
		b := &g.buckets[ringSlot(minute)]
		if int64(b.minute) != minute {
			*b = minuteBucket{minute: int32(minute)}
		}
		if d.MemTotal > 0 && b.memN < math.MaxUint16 {
			b.memSum += float32(100 * float64(d.MemUsed) / float64(d.MemTotal))
			b.memN++
		}
		if !math.IsNaN(d.UtilGPU) && !math.IsInf(d.UtilGPU, 0) && b.utilN < math.MaxUint16 {
			b.utilSum += float32(d.UtilGPU)
			b.utilN++
		}
		if !math.IsNaN(d.TempC) && !math.IsInf(d.TempC, 0) && b.tempN < math.MaxUint16 {
			b.tempSum += float32(d.TempC)
			b.tempN++
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

// gpu returns the history of host's GPU d, making it on d's first sample.
func (h *histories) gpu(host string, d *gpu.Device) *gpuHistory {
	key := historyKey{host: host, uuid: d.UUID}
	if key.uuid == "" {
		key.index = d.Index
	}
	g, ok := h.byUUID[key]
	if !ok {
		g = &gpuHistory{last: math.MinInt64 + historyMinutes}
		h.byUUID[key] = g
	}
	if at := (historyKey{host: host, index: d.Index}); h.byIndex[at] != g {
		h.byIndex[at] = g
	}
	return g
}

// History returns host's GPU index's last window (rounded up to whole
// minutes, capped at a day; 0 or less means the whole day), one point a
// minute, ending at the minute of the GPU's latest sample. Minutes without
// a reading are NaN. ok is false for a GPU never seen.
func (h *histories) History(host string, index int, window time.Duration) (slackbot.History, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	g, ok := h.byIndex[historyKey{host: host, index: index}]
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
		Temperature: make([]float64, steps),
	}
	first := g.last - int64(steps) + 1
	for i := range steps {
		m := first + int64(i)
		out.MemoryUsed[i], out.Utilization[i], out.Temperature[i] = math.NaN(), math.NaN(), math.NaN()
		b := &g.buckets[ringSlot(m)]
		if int64(b.minute) != m {
			continue
		}
		if b.memN > 0 {
			out.MemoryUsed[i] = float64(b.memSum) / float64(b.memN)
		}
		if b.utilN > 0 {
			out.Utilization[i] = float64(b.utilSum) / float64(b.utilN)
		}
		if b.tempN > 0 {
			out.Temperature[i] = float64(b.tempSum) / float64(b.tempN)
		}
	}
	return out, true
}
