package daemon

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/history"
)

// historyMinutes is how much history each GPU keeps: a day of minutes.
// A hub keeps less (see historySpan): its fleet's history is in
// Prometheus.
const historyMinutes = 24 * 60

// minuteBucket sums one minute of one GPU's samples in 16 bytes (a hub
// keeps a day of every GPU of its fleet). minute (Unix minutes) says which
// minute the slot holds now: a slot last written a day or more ago reads
// as empty, and so does one never written (minute 0, counts 0).
// Utilization and temperature are summed in whole units (what NVML and
// dcgm-exporter report), which keeps them in 16 bits: a minute holds at
// most maxPerMinute samples of each.
type minuteBucket struct {
	minute             int32
	memSum             float32 // percent, at most 100 per sample
	utilSum, tempSum   uint16  // percent and °C, whole, at most 255 per sample
	memN, utilN, tempN uint8
}

// maxPerMinute is how many samples of a reading a minute sums: four a
// second, more than any source gives.
const maxPerMinute = math.MaxUint8

// gpuHistory is one GPU's last minutes, a ring of minute buckets indexed
// by the minute modulo the ring's length.
type gpuHistory struct {
	last int64  // the latest minute written
	name string // the GPU's model, as its latest sample said
	// index and mig are where the GPU is, as its latest sample said: a MIG
	// instance (mig set) is found by its UUID, not by its parent's index.
	index int
	uuid  string
	mig   *gpu.MIG
	// at is where histories.byIndex has the GPU, while indexed: it is
	// looked up there only when the GPU moves.
	at      historyKey
	indexed bool
	// memTotal and memAllocatable are the GPU's memory at its latest
	// sample that knew it, in bytes: the percentages' base, and the
	// ceiling of its charts.
	memTotal, memAllocatable uint64
	buckets                  []minuteBucket // histories.minutes of them
}

// histories keeps the memory and utilization of every GPU of every host
// of its last minutes (a day; on a hub, what its alert charts show), one
// point a minute, for /gpu history and alert charts. A sample costs O(1)
// and, once its GPU is known, allocates nothing.
type histories struct {
	mu      sync.RWMutex
	minutes int // how many minutes each GPU keeps
	byUUID  map[historyKey]*gpuHistory
	byIndex map[historyKey]*gpuHistory // the whole GPU that last had the host's index
	// byHost are each host's GPUs in the order of its last snapshot: the
	// next one most often lists the same GPUs, found then without a
	// lookup (a hub records thousands a minute).
	byHost map[string][]*gpuHistory
}

// historyKey identifies a GPU: by host and UUID, or by host and index when
// it has no UUID (and, in byIndex, always).
type historyKey struct {
	host, uuid string
	index      int
}

// newHistories keeps span (whole minutes, at most a day) of every GPU.
func newHistories(span time.Duration) *histories {
	return &histories{minutes: spanMinutes(span), byUUID: map[historyKey]*gpuHistory{}, byIndex: map[historyKey]*gpuHistory{},
		byHost: map[string][]*gpuHistory{}}
}

// historySpan is how much of every GPU's history the daemon keeps: a
// day; on a hub, whose fleet's history is in Prometheus (/gpu history and
// the page read it there), what the charts of its rules' alerts show.
// A fleet of 10,000 GPUs would keep 230 MB for a day.
func historySpan(cfg *config.Config) time.Duration {
	if cfg.Source.Type != "prometheus" {
		return historyMinutes * time.Minute
	}
	span := minChartSpan
	for _, r := range cfg.Rules {
		span = max(span, chartSpan(r))
	}
	return span
}

// spanMinutes is span in whole minutes, rounded up, from one to a day.
func spanMinutes(span time.Duration) int {
	return int(min(max((span+time.Minute-1)/time.Minute, 1), historyMinutes))
}

// span is how much each GPU keeps.
func (h *histories) span() time.Duration {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return time.Duration(h.minutes) * time.Minute
}

// keep changes how much each GPU keeps to span, keeping the minutes that
// fit (a config reload whose rules' charts show more or less).
func (h *histories) keep(span time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := spanMinutes(span)
	if n == h.minutes {
		return
	}
	h.minutes = n
	for _, g := range h.byUUID {
		old := g.buckets
		g.buckets = make([]minuteBucket, n)
		for m := g.last - int64(n) + 1; m <= g.last; m++ {
			if b := old[ringSlot(m, len(old))]; int64(b.minute) == m {
				g.buckets[ringSlot(m, n)] = b
			}
		}
	}
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
	order := h.byHost[s.Host]
	if len(order) != len(s.Devices) {
		order = make([]*gpuHistory, len(s.Devices))
		h.byHost[strings.Clone(s.Host)] = order
	}
	for i := range s.Devices {
		d := &s.Devices[i]
		g := order[i]
		if g == nil || d.UUID == "" || g.uuid != d.UUID {
			g = h.gpu(s.Host, d)
			order[i] = g
		} else {
			h.place(s.Host, d, g)
		}
		if minute <= g.last-int64(h.minutes) {
			continue
		}
		g.last = max(g.last, minute)
		if d.Name != "" && d.Name != g.name {
			g.name = strings.Clone(d.Name)
		}
		if g.index = d.Index; d.MIG != nil && (g.mig == nil || *g.mig != *d.MIG) {
			g.mig = new(*d.MIG)
		}
		if d.MemKnown() {
			g.memTotal, g.memAllocatable = d.MemTotal, d.MemAllocatable()
		}
		b := &g.buckets[ringSlot(minute, len(g.buckets))]
		if int64(b.minute) != minute {
			*b = minuteBucket{minute: int32(minute)}
		}
		if d.MemTotal > 0 && b.memN < maxPerMinute {
			b.memSum += float32(100 * float64(d.MemUsed) / float64(d.MemTotal))
			b.memN++
		}
		if u, ok := wholeUnits(d.UtilGPU); ok && b.utilN < maxPerMinute {
			b.utilSum += u
			b.utilN++
		}
		if c, ok := wholeUnits(d.TempC); ok && b.tempN < maxPerMinute {
			b.tempSum += c
			b.tempN++
		}
	}
}

// wholeUnits rounds a reading to a whole unit within 0–255; false when it
// is unknown.
func wholeUnits(v float64) (uint16, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return uint16(math.Round(min(max(v, 0), 255))), true
}

// ringSlot is the slot of minute in a ring of n.
func ringSlot(minute int64, n int) int {
	slot := minute % int64(n)
	if slot < 0 {
		slot += int64(n)
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
		g = &gpuHistory{last: math.MinInt64 + historyMinutes, uuid: strings.Clone(d.UUID), buckets: make([]minuteBucket, h.minutes)}
		h.byUUID[key] = g
	}
	h.place(host, d, g)
	return g
}

// place notes that host's GPU d, whose history is g, is at its index now,
// unless it is a MIG instance.
func (h *histories) place(host string, d *gpu.Device, g *gpuHistory) {
	if at := (historyKey{host: host, index: d.Index}); d.MIG == nil && !(g.indexed && g.at == at) {
		if old := h.byIndex[at]; old != nil && old.at == at {
			old.indexed = false
		}
		h.byIndex[at] = g
		g.at, g.indexed = at, true
	}
}

// recent is one GPU's recent memory, utilization and temperature, one
// point a minute, as an alert's chart shows them.
type recent struct {
	// MemTotal is the GPU's memory, the base of MemoryUsed, and
	// MemAllocatable what jobs can allocate of it, in bytes; 0 when
	// unknown.
	MemTotal, MemAllocatable uint64
	Step                     time.Duration // time between points (a minute)
	End                      time.Time     // the time of the last point
	MemoryUsed               []float64     // percent of memory in use; NaN where unknown
	Utilization              []float64     // percent; NaN where unknown
	Temperature              []float64     // °C; NaN where unknown
}

// History returns the last window (rounded up to whole minutes, capped at
// what is kept; 0 or less means all of it) of host's GPU of that UUID (a
// MIG instance's own), or without one of that index, one point a minute,
// ending at the minute of the GPU's latest sample. Minutes without a
// reading are NaN. ok is false for a GPU never seen.
func (h *histories) History(host, uuid string, index int, window time.Duration) (recent, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	g, ok := h.byUUID[historyKey{host: host, uuid: uuid}]
	if uuid == "" || !ok {
		g, ok = h.byIndex[historyKey{host: host, index: index}]
	}
	if !ok {
		return recent{}, false
	}
	steps := h.minutes
	if window > 0 {
		steps = min(spanMinutes(window), h.minutes)
	}
	out := recent{
		MemTotal:       g.memTotal,
		MemAllocatable: g.memAllocatable,
		Step:           time.Minute,
		End:            time.Unix(g.last*60, 0).UTC(),
		MemoryUsed:     make([]float64, steps),
		Utilization:    make([]float64, steps),
		Temperature:    make([]float64, steps),
	}
	first := g.last - int64(steps) + 1
	for i := range steps {
		out.MemoryUsed[i], out.Utilization[i], out.Temperature[i] = g.minute(first + int64(i))
	}
	return out, true
}

// minute is the mean memory (percent), utilization and temperature of
// minute m; NaN for one without readings, or no longer kept.
func (g *gpuHistory) minute(m int64) (mem, util, temp float64) {
	mem, util, temp = math.NaN(), math.NaN(), math.NaN()
	b := &g.buckets[ringSlot(m, len(g.buckets))]
	if int64(b.minute) != m {
		return mem, util, temp
	}
	if b.memN > 0 {
		mem = float64(b.memSum) / float64(b.memN)
	}
	if b.utilN > 0 {
		util = float64(b.utilSum) / float64(b.utilN)
	}
	if b.tempN > 0 {
		temp = float64(b.tempSum) / float64(b.tempN)
	}
	return mem, util, temp
}

// GPUs is the history of the GPUs q asks for, within what is kept: a
// point a minute from q.From to q.To (a minute's readings averaged),
// GPUs by host and index.
func (h *histories) GPUs(q history.Query) []chart.GPUHistory {
	lo, hi := unixMinute(q.From), unixMinute(q.To)
	if hi < lo {
		return nil
	}
	lo = max(lo, hi-int64(h.minutes)+1)
	start := time.Unix(lo*60, 0).UTC()
	points := int(hi - lo + 1)
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []chart.GPUHistory
	add := func(host string, g *gpuHistory) {
		gh := chart.GPUHistory{Host: host, Index: g.index, UUID: g.uuid, Name: g.name, MIG: g.mig,
			MemoryPercent: chart.Series{Start: start, Step: time.Minute, Values: make(chart.Values, points)},
			Utilization:   chart.Series{Start: start, Step: time.Minute, Values: make(chart.Values, points)},
			Temperature:   chart.Series{Start: start, Step: time.Minute, Values: make(chart.Values, points)},
		}
		for i := range points {
			gh.MemoryPercent.Values[i], gh.Utilization.Values[i], gh.Temperature.Values[i] = g.minute(lo + int64(i))
		}
		out = append(out, gh)
	}
	asked := func(host string, index int) bool {
		return (q.Host == "" || host == q.Host) && (q.GPU == history.AllGPUs || index == q.GPU)
	}
	for k, g := range h.byIndex {
		if asked(k.host, k.index) {
			add(k.host, g)
		}
	}
	for k, g := range h.byUUID {
		if g.mig != nil && asked(k.host, g.index) && g.last >= lo {
			add(k.host, g) // a MIG instance, under its GPU's index
		}
	}
	slices.SortFunc(out, func(a, b chart.GPUHistory) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Index, b.Index), gpu.CompareInstances(a.MIG, b.MIG))
	})
	return out
}
