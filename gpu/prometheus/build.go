package prometheus

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// point is one series' value at an evaluation's time.
type point struct {
	labels *labelSet
	value  float64
}

// deviceKey identifies a GPU across evaluations: by host and UUID, or by
// host and index when the series carry no UUID. The schema is part of it
// so that, with schema auto, a GPU both exporters report is read from one.
type deviceKey struct {
	schema     Schema
	host, uuid string
	index      int
}

// deviceBuild gathers one GPU's series of one evaluation.
type deviceBuild struct {
	key                                     deviceKey
	dev                                     gpu.Device
	memUsed, memTotal, memFree, memReserved float64 // bytes; NaN until a series says
	lost                                    bool
	processes, users, pods                  []gpu.Process
	xids                                    []xidSample
}

// xidSample is an XID series of a GPU: gpuwatch's counter of one code
// (code set), or dcgm-exporter's last XID (code "").
type xidSample struct {
	code  string
	value float64
}

// counterKey identifies an XID series across evaluations.
type counterKey struct {
	dev  deviceKey
	code string
}

// builder turns the series of one evaluation into one snapshot per host.
// It remembers what earlier evaluations saw: the hosts (a host whose series
// are gone gets a snapshot without GPUs), the GPUs, and the XID series
// (events are their increases). It is used by one goroutine.
type builder struct {
	schema   Schema
	families map[string]*family
	hosts    map[string]bool
	seen     map[deviceKey]bool // every GPU that ever reported
	present  map[deviceKey]bool // the GPUs of the last evaluation
	counters map[counterKey]float64
	// skipped counts the series of the last evaluation that named no
	// host or GPU, for the log.
	skipped int
}

func newBuilder(schema Schema) *builder {
	return &builder{schema: schema, families: familiesOf(schema), hosts: map[string]bool{},
		seen: map[deviceKey]bool{}, present: map[deviceKey]bool{}, counters: map[counterKey]float64{}}
}

// build makes the snapshots of the evaluation at time at from its series:
// one per host, hosts sorted, every host seen before included.
func (b *builder) build(at time.Time, points []point) []*gpu.Snapshot {
	b.skipped = 0
	devs := make(map[deviceKey]*deviceBuild, len(points)/8+1)
	for i := range points {
		if !b.add(devs, &points[i]) {
			b.skipped++
		}
	}
	if b.schema == SchemaAuto {
		dropDoubles(devs)
	}
	byHost := map[string]*gpu.Snapshot{}
	for h := range b.hosts {
		byHost[h] = &gpu.Snapshot{Time: at, Host: h}
	}
	present := make(map[deviceKey]bool, len(devs))
	for _, key := range slices.SortedFunc(maps.Keys(devs), compareKeys) {
		d := devs[key]
		s := byHost[key.host]
		if s == nil {
			s = &gpu.Snapshot{Time: at, Host: key.host}
			byHost[key.host] = s
			b.hosts[key.host] = true
		}
		s.Events = append(s.Events, b.events(at, d)...)
		if d.lost {
			continue
		}
		present[key] = true
		b.seen[key] = true
		s.Devices = append(s.Devices, d.device())
	}
	b.present = present
	out := make([]*gpu.Snapshot, 0, len(byHost))
	for _, h := range slices.Sorted(maps.Keys(byHost)) {
		out = append(out, byHost[h])
	}
	return out
}

func compareKeys(a, b deviceKey) int {
	return cmp.Or(cmp.Compare(a.host, b.host), cmp.Compare(a.index, b.index), cmp.Compare(a.uuid, b.uuid), cmp.Compare(a.schema, b.schema))
}

// add files one series under its GPU; false when it names no host or GPU.
func (b *builder) add(devs map[deviceKey]*deviceBuild, p *point) bool {
	ls := p.labels
	f := b.families[ls.name]
	if f == nil {
		return false
	}
	key, ok := keyOf(f.schema, ls)
	if !ok {
		return false
	}
	d := devs[key]
	if d == nil {
		nan := math.NaN()
		d = &deviceBuild{key: key, memUsed: nan, memTotal: nan, memFree: nan, memReserved: nan,
			dev: gpu.Device{Index: key.index, UUID: key.uuid, UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan}}
		devs[key] = d
	}
	if d.dev.Name == "" {
		d.dev.Name = ls.gpuName
		if f.schema == SchemaDCGM {
			d.dev.Name = ls.modelName
		}
	}
	switch f.name {
	case gwXID:
		d.xids = append(d.xids, xidSample{code: ls.xid, value: p.value})
	case dcgmXID:
		d.xids = append(d.xids, xidSample{value: p.value})
	case gwProcessMemory:
		pid, _ := strconv.Atoi(ls.pid)
		d.processes = append(d.processes, gpu.Process{PID: pid, User: ls.user, Command: ls.command,
			Container: ls.container, MemUsed: byteCount(p.value)})
	case gwUserMemory:
		d.users = append(d.users, gpu.Process{User: ls.user, MemUsed: byteCount(p.value)})
	default:
		f.apply(d, p.value)
	}
	if f.schema == SchemaDCGM {
		d.addPod(ls)
	}
	return true
}

// keyOf names the GPU a series is about: host from the host label
// (gpuwatch) or Hostname (dcgm-exporter), else instance; the index from
// gpu; the UUID from uuid or UUID. The series of a MIG instance (dcgm's
// GPU_I_ID) are not about a whole GPU.
func keyOf(schema Schema, ls *labelSet) (deviceKey, bool) {
	host, uuid := ls.host, ls.uuid
	if schema == SchemaDCGM {
		host, uuid = ls.hostname, ls.uuidDCGM
		if ls.gpuInstance != "" {
			return deviceKey{}, false
		}
	}
	if host == "" {
		host = ls.instance
	}
	index, err := strconv.Atoi(ls.gpu)
	if host == "" || err != nil || index < 0 {
		return deviceKey{}, false
	}
	return deviceKey{schema: schema, host: host, uuid: uuid, index: index}, true
}

// addPod notes the Kubernetes pod dcgm-exporter says uses the GPU.
func (d *deviceBuild) addPod(ls *labelSet) {
	if ls.pod == "" {
		return
	}
	p := gpu.Process{Command: ls.container, Container: "k8s:" + ls.namespace + "/" + ls.pod}
	if !slices.Contains(d.pods, p) {
		d.pods = append(d.pods, p)
	}
}

// dropDoubles leaves out, with schema auto, the dcgm-exporter reading of
// a GPU a gpuwatch agent also reports: the agent's carries processes.
func dropDoubles(devs map[deviceKey]*deviceBuild) {
	agents := map[string]bool{}
	for key := range devs {
		if key.schema == SchemaGPUWatch && key.uuid != "" {
			agents[key.uuid] = true
		}
	}
	for key := range devs {
		if key.schema == SchemaDCGM && agents[key.uuid] {
			delete(devs, key)
		}
	}
}

// device finishes the GPU's reading. Memory is known when its total is:
// gpuwatch's total, or dcgm-exporter's used + free (+ reserved).
func (d *deviceBuild) device() gpu.Device {
	dev := d.dev
	total := d.memTotal
	if d.key.schema == SchemaDCGM {
		total = d.memUsed + d.memFree
		if finite(d.memReserved) {
			total += d.memReserved
		}
	}
	if finite(d.memUsed) && finite(total) && total > 0 && d.memUsed >= 0 {
		dev.MemTotal = byteCount(total)
		dev.MemUsed = min(byteCount(d.memUsed), dev.MemTotal)
	}
	switch {
	case len(d.processes) > 0:
		dev.Processes = d.processes
	case len(d.users) > 0:
		dev.Processes = d.users // one "process" per user: PID 0
	case len(d.pods) == 1:
		dev.Processes = d.pods
		dev.Processes[0].MemUsed = dev.MemUsed
	case len(d.pods) > 1:
		dev.Processes = d.pods // pods sharing a GPU: how much each holds is unknown
	}
	slices.SortFunc(dev.Processes, func(a, b gpu.Process) int {
		return cmp.Or(cmp.Compare(b.MemUsed, a.MemUsed), cmp.Compare(a.PID, b.PID), cmp.Compare(a.User, b.User), cmp.Compare(a.Container, b.Container))
	})
	return dev
}

// events are what happened to the GPU since the last evaluation: XID
// errors (a counter that rose, or dcgm-exporter's last XID that changed)
// and, when it reports gpuwatch_gpu_lost 1, its loss. A series never seen
// before is news only on a GPU that reported before; on a GPU seen for the
// first time it is the baseline.
func (b *builder) events(at time.Time, d *deviceBuild) []gpu.Event {
	var out []gpu.Event
	known := b.seen[d.key]
	for _, x := range d.xids {
		key := counterKey{dev: d.key, code: x.code}
		prev, had := b.counters[key]
		b.counters[key] = x.value
		if !finite(x.value) {
			continue
		}
		if ev, ok := xidEvent(d, x, prev, had, known); ok {
			ev.Time = at
			out = append(out, ev)
		}
	}
	if d.lost && b.present[d.key] {
		out = append(out, gpu.Event{Time: at, Kind: gpu.EventGPULost, GPU: d.dev.Index, UUID: d.dev.UUID,
			Detail: "gpuwatch_gpu_lost is 1: the agent's NVML lost the GPU"})
	}
	return out
}

// xidEvent is the XID event a series' new value makes, if any.
func xidEvent(d *deviceBuild, x xidSample, prev float64, had, known bool) (gpu.Event, bool) {
	ev := gpu.Event{Kind: gpu.EventXID, GPU: d.dev.Index, UUID: d.dev.UUID}
	if x.code == "" { // dcgm-exporter: the last XID, a gauge
		if x.value <= 0 || x.value > math.MaxUint32 || (had && x.value == prev) || (!had && !known) {
			return ev, false
		}
		ev.XID = uint64(x.value)
		ev.Detail = fmt.Sprintf("DCGM_FI_DEV_XID_ERRORS is now %d", ev.XID)
		return ev, true
	}
	code, err := strconv.ParseUint(x.code, 10, 32)
	if err != nil {
		return ev, false
	}
	rise := 0.0
	switch {
	case had && x.value >= prev:
		rise = x.value - prev
	case had || known: // a reset (the agent restarted), or a new series
		rise = x.value
	}
	if rise <= 0 {
		return ev, false
	}
	ev.XID = code
	ev.Detail = fmt.Sprintf("%g XID %d error(s) since the last evaluation", rise, code)
	return ev, true
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// byteCount converts a reading in bytes; unknown or negative is 0.
func byteCount(v float64) uint64 {
	switch {
	case !(v > 0):
		return 0
	case v >= math.MaxUint64:
		return math.MaxUint64
	}
	return uint64(v)
}
