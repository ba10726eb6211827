package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/digest"
	"github.com/gpuwatch/gpuwatch/gpu"
)

// Tracker follows every GPU across snapshots, for the series one snapshot
// cannot give: the energy each GPU used (its power integrated over the
// snapshots' own times, never the clock), its XID errors by code, and
// whether a GPU it knew stopped reporting (NVML lost it: it is no longer
// in its host's snapshots). The daemon feeds it every snapshot; the
// Collector reads it at scrape time. It is safe for concurrent use.
type Tracker struct {
	mu    sync.Mutex
	gpus  map[gpuID]*trackedGPU
	hosts map[string][]*trackedGPU // every GPU a host reported, in the order first seen
	gen   uint64                   // counts Observe calls
}

// gpuID is a GPU of a host: by UUID, or by index when it has none.
type gpuID struct {
	host, uuid string
	index      int
}

func idOf(host, uuid string, index int) gpuID {
	if uuid != "" {
		index = 0
	}
	return gpuID{host: host, uuid: uuid, index: index}
}

// trackedGPU is what the Tracker knows of one GPU.
type trackedGPU struct {
	labels []string // gpu, uuid, name, host: the per-GPU labels
	seen   uint64   // the Observe that last saw it
	lost   bool     // absent from its host's latest snapshot

	energy    float64 // joules, integrated since the GPU was first seen
	lastNS    int64   // time of the previous reading, Unix nanoseconds
	lastGapNS int64   // interval before it; 0 when unknown
	lastPower float64 // watts at the previous reading; NaN when unknown

	xids map[uint64]uint64 // XID events by code
}

// NewTracker returns a Tracker that knows no GPU yet.
func NewTracker() *Tracker {
	return &Tracker{gpus: map[gpuID]*trackedGPU{}, hosts: map[string][]*trackedGPU{}}
}

// Observe adds a snapshot: each device's power reading to its energy,
// each XID event to its GPU's counter; the host's GPUs that are not in it
// are lost until they report again. A reading not later than the GPU's
// previous one adds nothing; a gap that digest.Bridged does not bridge
// adds no energy.
func (t *Tracker) Observe(s *gpu.Snapshot) {
	if s == nil {
		return
	}
	ns := s.Time.UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gen++
	for i := range s.Devices {
		d := &s.Devices[i]
		g := t.gpu(s.Host, d.UUID, d.Index)
		g.labels[2] = d.Name
		g.seen, g.lost = t.gen, false
		g.addPower(ns, d.PowerW)
	}
	for i := range s.Events {
		ev := &s.Events[i]
		if ev.Kind != gpu.EventXID {
			continue
		}
		g := t.gpuOfEvent(s, ev)
		if g.xids == nil {
			g.xids = map[uint64]uint64{}
		}
		g.xids[ev.XID]++
	}
	for _, g := range t.hosts[s.Host] {
		if g.seen != t.gen {
			g.lost = true
		}
	}
}

// gpu returns the GPU's record, making it on its first report.
func (t *Tracker) gpu(host, uuid string, index int) *trackedGPU {
	id := idOf(host, uuid, index)
	g := t.gpus[id]
	if g == nil {
		g = &trackedGPU{labels: []string{strconv.Itoa(index), uuid, "", host}, lastPower: nan()}
		t.gpus[id] = g
		t.hosts[host] = append(t.hosts[host], g)
	}
	g.labels[0] = strconv.Itoa(index)
	return g
}

// gpuOfEvent finds the GPU an event of s is about: by UUID, else by index
// among the host's GPUs. An event of a GPU never seen makes its record, so
// no error goes uncounted; the GPU is lost until it reports.
func (t *Tracker) gpuOfEvent(s *gpu.Snapshot, ev *gpu.Event) *trackedGPU {
	if ev.UUID == "" {
		for _, g := range t.hosts[s.Host] {
			if g.labels[0] == strconv.Itoa(ev.GPU) && g.seen == t.gen {
				return g
			}
		}
	}
	g := t.gpu(s.Host, ev.UUID, ev.GPU)
	if g.seen != t.gen {
		g.lost = true
	}
	return g
}

// addPower integrates power (trapezoids) from the previous reading to this
// one, at ns.
func (g *trackedGPU) addPower(ns int64, watts float64) {
	if g.lastNS != 0 {
		gap := ns - g.lastNS
		if gap <= 0 {
			return
		}
		if digest.Bridged(time.Duration(gap), time.Duration(g.lastGapNS)) && known(watts) && known(g.lastPower) {
			g.energy += (watts + g.lastPower) / 2 * float64(gap) / 1e9
		}
		g.lastGapNS = gap
	}
	g.lastNS, g.lastPower = ns, watts
}

// collect sends the tracked series of every GPU the Tracker knows.
func (t *Tracker) collect(ch chan<- prometheus.Metric, c *Collector) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, g := range t.gpus {
		lost := 0.0
		if g.lost {
			lost = 1
		}
		send(ch, c.info, prometheus.GaugeValue, 1, g.labels...)
		send(ch, c.lost, prometheus.GaugeValue, lost, g.labels...)
		send(ch, c.energy, prometheus.CounterValue, g.energy, g.labels...)
		for xid, n := range g.xids {
			send(ch, c.xids, prometheus.CounterValue, float64(n), append(g.labels[:4:4], strconv.FormatUint(xid, 10))...)
		}
	}
}
