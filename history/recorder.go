package history

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/gpu"
)

// MaxPoints is the most points a series of a Recorder has: a chart
// 1,200 pixels wide shows no more.
const MaxPoints = 1000

// Recorder keeps what snapshots showed of each GPU, averaged by the
// minute, for a chart of a log or of a range query's answer. It grows
// with the span it sees (a week of a GPU is 10,080 minutes); GPUs
// averages down to MaxPoints.
type Recorder struct {
	gpus  map[trackKey]*track
	order []*track
}

type trackKey struct {
	host, uuid string
	index      int
}

// track is one GPU's minutes since its first sample.
type track struct {
	host  string
	index int
	uuid  string
	mig   *gpu.MIG // a MIG instance's; nil for a whole GPU
	name  string
	first int64 // the Unix minute of minutes[0]
	mem   []acc // percent of memory used
	util  []acc
	temp  []acc
}

// acc sums a minute's readings.
type acc struct {
	sum float64
	n   int32
}

func (a *acc) add(v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	a.sum += v
	a.n++
}

func (a acc) mean() float64 {
	if a.n == 0 {
		return math.NaN()
	}
	return a.sum / float64(a.n)
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{gpus: map[trackKey]*track{}} }

// Add records a snapshot. Snapshots may come in any order.
func (r *Recorder) Add(s *gpu.Snapshot) {
	minute := unixMinute(s.Time)
	for i := range s.Devices {
		d := &s.Devices[i]
		k := trackKey{host: s.Host, uuid: d.UUID}
		if d.UUID == "" {
			k.index = d.Index
		}
		t := r.gpus[k]
		if t == nil {
			t = &track{host: s.Host, index: d.Index, uuid: d.UUID, mig: d.MIG, name: d.Name, first: minute}
			r.gpus[k] = t
			r.order = append(r.order, t)
		}
		t.index = d.Index
		i := t.slot(minute)
		t.mem[i].add(d.MemUsedPercent())
		t.util[i].add(d.UtilGPU)
		t.temp[i].add(d.TempC)
	}
}

// slot returns the index of minute in the track's slices, growing them.
func (t *track) slot(minute int64) int {
	if minute < t.first {
		grow := int(t.first - minute)
		t.mem = append(make([]acc, grow), t.mem...)
		t.util = append(make([]acc, grow), t.util...)
		t.temp = append(make([]acc, grow), t.temp...)
		t.first = minute
	}
	i := int(minute - t.first)
	for len(t.mem) <= i {
		t.mem, t.util, t.temp = append(t.mem, acc{}), append(t.util, acc{}), append(t.temp, acc{})
	}
	return i
}

// Span returns the first and last minute any GPU reported; zero times
// when none did.
func (r *Recorder) Span() (from, to time.Time) {
	var lo, hi int64
	for i, t := range r.order {
		last := t.first + int64(len(t.mem)) - 1
		if i == 0 || t.first < lo {
			lo = t.first
		}
		if i == 0 || last > hi {
			hi = last
		}
	}
	if len(r.order) == 0 {
		return time.Time{}, time.Time{}
	}
	return time.Unix(lo*60, 0).UTC(), time.Unix(hi*60, 0).UTC()
}

// GPUs returns every GPU's history within [from, to], by host and index,
// at most MaxPoints points each: minutes are averaged in longer steps
// when the window holds more.
func (r *Recorder) GPUs(from, to time.Time) []chart.GPUHistory {
	lo, hi := unixMinute(from), unixMinute(to)
	minutes := hi - lo + 1
	if minutes <= 0 {
		return nil
	}
	per := (minutes + MaxPoints - 1) / MaxPoints // minutes a point
	points := int((minutes + per - 1) / per)
	start := time.Unix(lo*60, 0).UTC()
	step := time.Duration(per) * time.Minute
	var out []chart.GPUHistory
	for _, t := range r.order {
		g := chart.GPUHistory{Host: t.host, Index: t.index, UUID: t.uuid, MIG: t.mig, Name: t.name,
			MemoryPercent: chart.Series{Start: start, Step: step, Values: make(chart.Values, points)},
			Utilization:   chart.Series{Start: start, Step: step, Values: make(chart.Values, points)},
			Temperature:   chart.Series{Start: start, Step: step, Values: make(chart.Values, points)},
		}
		for p := range points {
			var mem, util, temp acc
			for m := lo + int64(p)*per; m < lo+int64(p+1)*per && m <= hi; m++ {
				i := m - t.first
				if i < 0 || i >= int64(len(t.mem)) {
					continue
				}
				mem.sum, mem.n = mem.sum+t.mem[i].sum, mem.n+t.mem[i].n
				util.sum, util.n = util.sum+t.util[i].sum, util.n+t.util[i].n
				temp.sum, temp.n = temp.sum+t.temp[i].sum, temp.n+t.temp[i].n
			}
			g.MemoryPercent.Values[p], g.Utilization.Values[p], g.Temperature.Values[p] = mem.mean(), util.mean(), temp.mean()
		}
		out = append(out, g)
	}
	slices.SortStableFunc(out, func(a, b chart.GPUHistory) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Index, b.Index), gpu.CompareInstances(a.MIG, b.MIG))
	})
	return out
}

// unixMinute is the minute t falls in, counted from the Unix epoch.
func unixMinute(t time.Time) int64 {
	s := t.Unix()
	m := s / 60
	if s%60 < 0 {
		m--
	}
	return m
}
