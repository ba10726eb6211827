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

// deviceBuild gathers one GPU's series of one evaluation. The builder
// keeps one for each GPU, reset when an evaluation first files a series
// under it (gen), so that the series a metricCache keeps can remember it
// (labelSet.filed).
type deviceBuild struct {
	key deviceKey
	// gen is the evaluation it was last reset for (builder.gen); retired,
	// that the builder let it go: a series filed under it looks its GPU
	// up anew.
	gen     uint64
	retired bool
	// seen is whether the GPU reported before: builder.seen, remembered.
	seen bool
	// target is the scrape target of its last series in the evaluation.
	target                                  target
	dev                                     gpu.Device
	memUsed, memTotal, memFree, memReserved float64 // bytes; NaN until a series says
	engineActive, dramActive                float64 // percent, dcgm-exporter's DCGM_FI_PROF_GR_ENGINE_ACTIVE and DRAM_ACTIVE; NaN until said
	lost                                    bool
	processes, users, pods                  []gpu.Process
	xids                                    []xidSample
	xidCounts                               []xidCount // dcgm-exporter's counts of XIDs by code within a window
}

// newDeviceBuild is a GPU's build, empty.
func newDeviceBuild(key deviceKey) *deviceBuild {
	d := &deviceBuild{key: key}
	d.reset(0)
	return d
}

// reset empties the build for evaluation gen: every reading unknown
// (NaN) until a series says. What the snapshots keep (the processes) is
// made anew; the XIDs, which they do not, reuse their room.
func (d *deviceBuild) reset(gen uint64) {
	nan := math.NaN()
	*d = deviceBuild{key: d.key, gen: gen, seen: d.seen, memUsed: nan, memTotal: nan, memFree: nan, memReserved: nan, engineActive: nan, dramActive: nan,
		dev:  gpu.Device{Index: d.key.index, UUID: d.key.uuid, UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan},
		xids: d.xids[:0], xidCounts: d.xidCounts[:0]}
}

// filing is where an evaluation filed a series: its family, and the GPU
// it is about.
type filing struct {
	family *family
	dev    *deviceBuild
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

// target is one of Prometheus's scrape targets: its job and instance.
type target struct{ job, instance string }

// hostState is what the builder knows of a host that reported before.
type hostState struct {
	targets []target // the scrape targets its series came from at its last report
	// unscraped is since when Prometheus has had neither the host's
	// series nor an up series of its targets; zero while it has.
	unscraped time.Time
}

// builder turns the series of one evaluation into one snapshot per host.
// It remembers what earlier evaluations saw: the hosts and the scrape
// targets their series come from (a host whose series are gone is down
// when Prometheus says its targets are, missing its GPUs when they are
// up, and unknown while Prometheus says nothing of them), the GPUs, and
// the XID series (events are their increases). It is used by one
// goroutine.
type builder struct {
	schema   Schema
	families map[string]*family
	// podKeys are the pod label keys read of the series; podNames their
	// names in dcgm-exporter's series, then in gpuwatch's per-process
	// series (label_KEY).
	podKeys, podNames []string
	hosts             map[string]*hostState
	seen              map[deviceKey]bool // every GPU that ever reported
	present           map[deviceKey]bool // the GPUs of the last evaluation
	// spare maps, cleared and reused by the next evaluation: a fleet's
	// are tens of thousands of entries, grown anew every evaluation
	// otherwise.
	sparePresent map[deviceKey]bool
	spareDevs    map[deviceKey]*deviceBuild
	// builds are the GPUs' builds, kept from one evaluation to the next;
	// gen counts the evaluations, and touched is how many GPUs the last
	// one filed series under: builds it did not are let go at the next.
	builds   map[deviceKey]*deviceBuild
	gen      uint64
	touched  int
	counters map[counterKey]float64
	// xidTimes are, per dcgm-exporter XID count, the times of the events
	// it counted that are still within its window.
	xidTimes map[countKey][]time.Time
	// order is the last evaluation's GPUs, sorted: the next one's are
	// most often the same, and need no sorting then.
	order []deviceKey
	// grace is how long a host may be unknown (its series and its
	// targets' up gone, as while Prometheus starts) before it is down.
	grace time.Duration
	// skipped counts the series of the last evaluation that named no
	// host or GPU, for the log.
	skipped int
}

// upSeries is Prometheus's own series of each scrape target: 1 when its
// last scrape worked, 0 when it failed.
const upSeries = "up"

// minGrace is the least time a host may be unknown before it is down:
// Prometheus scrapes every target within its scrape interval (15 to 60
// seconds) after it starts.
const minGrace = 2 * time.Minute

func newBuilder(schema Schema, interval time.Duration, podKeys []string) *builder {
	podKeys = podKeys[:min(len(podKeys), gpu.MaxPodLabels)]
	podNames := make([]string, 2*len(podKeys))
	for i, k := range podKeys {
		podNames[i], podNames[len(podKeys)+i] = gpu.PodLabelSeriesName(k), gpu.PodLabelExportName(k)
	}
	return &builder{schema: schema, podKeys: podKeys, podNames: podNames, families: familiesOf(schema), hosts: map[string]*hostState{},
		seen: map[deviceKey]bool{}, present: map[deviceKey]bool{}, builds: map[deviceKey]*deviceBuild{}, counters: map[counterKey]float64{}, xidTimes: map[countKey][]time.Time{},
		grace: max(minGrace, 4*interval)}
}

// evaluation gathers the series of one evaluation, series by series.
type evaluation struct {
	b       *builder
	at      time.Time
	devs    map[deviceKey]*deviceBuild
	targets map[string][]target // by host, the targets its series came from
	up      map[target]float64
	skipped int
	// err is set when the series name more than MaxGPUs GPUs: the
	// evaluation is refused, and no GPU past them is gathered.
	err error
	// family is the family looked up last (name its name): an answer
	// lists a family's series together.
	name   string
	family *family
	// last is the GPU of the series added last: a backfill's series come
	// GPU by GPU.
	last *deviceBuild
	// instances is whether a series is of a MIG instance dcgm-exporter
	// reports: only then are GPUs split into them (markSplit).
	instances bool
}

func (b *builder) start(at time.Time) *evaluation {
	devs := b.spareDevs
	if devs == nil {
		devs = make(map[deviceKey]*deviceBuild, len(b.present)+1)
	}
	b.spareDevs = nil
	if len(b.builds) > b.touched {
		b.retire(func(d *deviceBuild) bool { return d.gen != b.gen })
	}
	b.gen++
	b.touched = 0
	return &evaluation{b: b, at: at, devs: devs,
		targets: make(map[string][]target, len(b.hosts)+1), up: map[target]float64{}}
}

// build makes the snapshots of a past evaluation at time at from its
// series (a backfill): one per host that reported then, hosts sorted.
func (b *builder) build(at time.Time, points []point) []*gpu.Snapshot {
	e := b.start(at)
	for i := range points {
		e.add(points[i].labels, points[i].value)
	}
	if e.err != nil {
		return nil
	}
	snaps, _ := e.finish(false)
	return snaps
}

// retire lets go of the builds of GPUs that gone says are gone.
func (b *builder) retire(gone func(*deviceBuild) bool) {
	for key, d := range b.builds {
		if gone(d) {
			d.retired = true
			delete(b.builds, key)
		}
	}
}

// silence is why a host that reported before has no series now.
type silence int

const (
	silenceNone    silence = iota // it has series
	silenceEmpty                  // a target of it is up: it reports, without GPUs
	silenceDown                   // its targets are down, or unknown for longer than the grace
	silenceUnknown                // Prometheus says nothing of it (starting?), within the grace
)

// finish makes the evaluation's snapshots: one per host, hosts sorted.
// Live (an evaluation now, not a backfill), every host seen before has
// one: without GPUs when it reports none, Down when Prometheus cannot
// scrape it. When some hosts are unknown (Prometheus has neither their
// series nor their targets' up, as when it has just started), finish
// returns them and no snapshot, changing nothing the next evaluation
// compares with: their GPUs are not lost for Prometheus's silence.
func (e *evaluation) finish(live bool) (snaps []*gpu.Snapshot, unknown []string) {
	b := e.b
	b.skipped = e.skipped
	if b.schema == SchemaAuto {
		dropDoubles(e.devs)
	}
	if e.instances {
		markSplit(e.devs)
	}
	byHost := map[string]*gpu.Snapshot{}
	if live {
		for h, st := range b.hosts {
			if _, ok := e.targets[h]; ok {
				continue
			}
			why, s := e.silence(st)
			switch s {
			case silenceUnknown:
				unknown = append(unknown, h)
				continue
			case silenceDown:
				byHost[h] = &gpu.Snapshot{Time: e.at, Host: h, Down: why}
			default:
				byHost[h] = &gpu.Snapshot{Time: e.at, Host: h}
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			return nil, unknown
		}
	}
	for h, ts := range e.targets {
		st := b.hosts[h]
		if st == nil {
			st = &hostState{}
			b.hosts[h] = st
		}
		st.targets, st.unscraped = ts, time.Time{}
	}
	present := b.sparePresent
	if present == nil {
		present = make(map[deviceKey]bool, len(e.devs))
	}
	for key, was := range b.present {
		if s := byHost[key.host]; s != nil && s.Down != "" {
			present[key] = was // a host that is down has not lost its GPUs
		}
	}
	var s *gpu.Snapshot
	devs := e.sorted()
	for i, d := range devs {
		key := d.key
		if s == nil || s.Host != key.host {
			if s = byHost[key.host]; s == nil {
				s = &gpu.Snapshot{Time: e.at, Host: key.host}
				byHost[key.host] = s
			}
			if s.Devices == nil { // room for the host's GPUs, which come together
				n := 1
				for n < len(devs)-i && devs[i+n].key.host == key.host {
					n++
				}
				s.Devices = make([]gpu.Device, 0, n)
			}
		}
		known := d.seen || b.seen[key]
		s.Events = append(s.Events, b.events(e.at, d, known)...)
		if d.lost {
			continue
		}
		present[key] = true
		if !known {
			b.seen[key] = true
		}
		d.seen = true
		s.Devices = append(s.Devices, gpu.Device{})
		d.device(&s.Devices[len(s.Devices)-1])
	}
	clear(b.present)
	b.present, b.sparePresent = present, b.present
	clear(e.devs)
	b.spareDevs = e.devs
	snaps = make([]*gpu.Snapshot, 0, len(byHost))
	for _, h := range slices.Sorted(maps.Keys(byHost)) {
		gpu.SortInstances(byHost[h].Devices) // each GPU's MIG instances after it
		snaps = append(snaps, byHost[h])
	}
	return snaps, nil
}

// sorted is the evaluation's GPUs in order: the builder's order of the
// last evaluation where it has them all, else sorted anew.
func (e *evaluation) sorted() []*deviceBuild {
	b := e.b
	out := make([]*deviceBuild, 0, len(e.devs))
	for _, key := range b.order {
		if d := e.devs[key]; d != nil {
			out = append(out, d)
		}
	}
	if len(out) == len(e.devs) {
		return out
	}
	out = slices.AppendSeq(out[:0], maps.Values(e.devs))
	slices.SortFunc(out, func(a, b *deviceBuild) int { return compareKeys(a.key, b.key) })
	b.order = b.order[:0]
	for _, d := range out {
		b.order = append(b.order, d.key)
	}
	return out
}

// silence says why a host that reported before has no series in this
// evaluation, and, when it is down, why in words.
func (e *evaluation) silence(st *hostState) (string, silence) {
	var down []target
	for _, t := range st.targets {
		switch v, ok := e.up[t]; {
		case ok && v == 1:
			return "", silenceEmpty
		case ok:
			down = append(down, t)
		}
	}
	if len(down) > 0 {
		st.unscraped = time.Time{}
		return fmt.Sprintf("Prometheus cannot scrape its exporter at %s (job %s): up is 0", down[0].instance, down[0].job), silenceDown
	}
	if st.unscraped.IsZero() {
		st.unscraped = e.at
	}
	if e.at.Sub(st.unscraped) < e.b.grace {
		return "", silenceUnknown
	}
	return fmt.Sprintf("Prometheus has had none of its series, nor an up series for its exporter, since %s: it no longer scrapes it",
		st.unscraped.UTC().Format(time.RFC3339)), silenceDown
}

func compareKeys(a, b deviceKey) int {
	return cmp.Or(cmp.Compare(a.host, b.host), cmp.Compare(a.index, b.index), cmp.Compare(a.uuid, b.uuid), cmp.Compare(a.schema, b.schema))
}

// add files one series under its GPU, or its target's up.
func (e *evaluation) add(ls *labelSet, value float64) {
	if ls.name == upSeries {
		e.up[target{ls.job, ls.instance}] = value
		return
	}
	f, d := ls.filed.family, ls.filed.dev
	if d == nil || d.retired {
		if f, d = e.gpuOf(ls); d == nil {
			return
		}
		ls.filed = filing{family: f, dev: d}
	}
	b, first := e.b, d.gen != e.b.gen
	if first { // the GPU's first series in this evaluation
		if len(e.devs) == MaxGPUs {
			e.err = fmt.Errorf("the series name more than %d GPUs, the most a hub watches: split the fleet between hubs, each with its own source.prometheus.selector", MaxGPUs)
			return
		}
		d.reset(b.gen)
		if f.schema == SchemaDCGM && ls.gpuInstance != "" {
			d.dev.MIG = dcgmInstance(ls)
			e.instances = true
		}
		e.devs[d.key] = d
		b.touched++
	}
	if t := (target{ls.job, ls.instance}); first || t != d.target {
		d.target = t
		e.noteTarget(d.key.host, t)
	}
	if d.dev.Name == "" {
		d.dev.Name = ls.gpuName
		if f.schema == SchemaDCGM {
			d.dev.Name = ls.modelName
		}
	}
	switch f.name {
	case gwXID:
		d.xids = append(d.xids, xidSample{code: ls.xid, value: value})
	case dcgmXID, dcgm49XID:
		d.xids = append(d.xids, xidSample{value: value})
	case dcgmXIDCount:
		d.addXIDCount(ls, value)
	case gwProcessMemory:
		pid, _ := strconv.Atoi(ls.pid)
		n := len(e.b.podKeys)
		d.processes = append(d.processes, gpu.Process{PID: pid, User: ls.user, Command: ls.command,
			Container: ls.container, PodLabels: ls.pods(e.b.podKeys, n), MemUsed: byteCount(value)})
	case gwUserMemory:
		d.users = append(d.users, gpu.Process{User: ls.user, MemUsed: byteCount(value)})
	case gwMIGInfo:
		gi, _ := strconv.Atoi(ls.migGI)
		ci, _ := strconv.Atoi(ls.migCI)
		d.dev.MIG = &gpu.MIG{ParentUUID: ls.parentUUID, GPUInstance: gi, ComputeInstance: ci, Profile: ls.profile}
	default:
		f.apply(d, value)
	}
	if f.schema == SchemaDCGM {
		d.addPod(ls, e.b.podKeys)
	}
}

// gpuOf is the family of a series and the GPU's build it is about, from
// its labels: nil when gpuwatch reads no such family, or the series names
// no GPU.
func (e *evaluation) gpuOf(ls *labelSet) (*family, *deviceBuild) {
	if ls.name != e.name || e.family == nil {
		e.name, e.family = ls.name, e.b.families[ls.name]
	}
	f := e.family
	if f == nil {
		e.skipped++
		return nil, nil
	}
	key, ok := keyOf(f.schema, ls)
	if !ok {
		e.skipped++
		return nil, nil
	}
	d := e.last
	if d == nil || d.key != key {
		if d = e.b.builds[key]; d == nil {
			if len(e.b.builds) >= 2*MaxGPUs { // answers naming ever more GPUs
				e.b.retire(func(*deviceBuild) bool { return true })
			}
			d = newDeviceBuild(key)
			e.b.builds[key] = d
		}
	}
	e.last = d
	return f, d
}

// noteTarget notes that host's series come from target t.
func (e *evaluation) noteTarget(host string, t target) {
	ts, known := e.targets[host]
	if t.instance != "" && !slices.Contains(ts, t) {
		ts = append(ts, t)
		known = false
	}
	if !known {
		e.targets[host] = ts
	}
}

// keyOf names the GPU a series is about: host from the host label
// (gpuwatch) or Hostname (dcgm-exporter 3; hostname in 4), else instance; the index from
// gpu; the UUID from uuid or UUID. A dcgm-exporter series of a MIG
// instance (GPU_I_ID set) is about the instance, whose UUID dcgm-exporter
// does not say: gpu.InstanceUUID names it from its GPU's.
func keyOf(schema Schema, ls *labelSet) (deviceKey, bool) {
	host, uuid := ls.host, ls.uuid
	if schema == SchemaDCGM {
		host, uuid = ls.hostname, ls.uuidDCGM
		if ls.gpuInstance != "" {
			gi, err := strconv.Atoi(ls.gpuInstance)
			if err != nil || gi < 0 || uuid == "" {
				return deviceKey{}, false
			}
			uuid = gpu.InstanceUUID(uuid, gi, 0)
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

// dcgmInstance is the MIG instance a dcgm-exporter series is about: its
// GPU's UUID, its GPU instance and profile (dcgm-exporter does not say the
// compute instance: 0).
func dcgmInstance(ls *labelSet) *gpu.MIG {
	gi, _ := strconv.Atoi(ls.gpuInstance)
	return &gpu.MIG{ParentUUID: ls.uuidDCGM, GPUInstance: gi, Profile: ls.profileDCGM}
}

// addPod notes the Kubernetes pod dcgm-exporter says uses the GPU: it
// names the pod, its namespace and container, not its processes, and
// the pod's labels of keys (with --kubernetes-enable-pod-labels).
func (d *deviceBuild) addPod(ls *labelSet, keys []string) {
	if ls.pod == "" {
		return
	}
	p := gpu.PodProcess(ls.namespace, ls.pod, ls.container)
	// Every series of the GPU names the pod: its labels are read once.
	if slices.ContainsFunc(d.pods, func(q gpu.Process) bool { return q.Container == p.Container }) {
		return
	}
	p.PodLabels = ls.pods(keys, 0)
	d.pods = append(d.pods, p)
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
	for key, d := range devs {
		// dcgm-exporter names a MIG instance after its GPU, an agent by
		// NVML's own UUID: the GPU tells them the same.
		if key.schema == SchemaDCGM && (agents[key.uuid] || d.dev.MIG != nil && agents[d.dev.MIG.ParentUUID]) {
			delete(devs, key)
		}
	}
}

// markSplit marks, among one evaluation's devices, the GPUs dcgm-exporter
// reports MIG instances of as split into them: their memory and
// utilization are their instances' (dcgm-exporter's GPU-wide memory sums
// them; its utilization of a GPU in MIG mode reads 0). A GPU whose
// instances alone have series is made from them, and the card's readings
// an instance's series carry (temperature, power) are the GPU's.
func markSplit(devs map[deviceKey]*deviceBuild) {
	var instances []*deviceBuild
	for _, d := range devs {
		if d.dev.MIG != nil && d.key.schema == SchemaDCGM {
			instances = append(instances, d)
		}
	}
	for _, d := range instances {
		key := deviceKey{schema: SchemaDCGM, host: d.key.host, uuid: d.dev.MIG.ParentUUID, index: d.key.index}
		p := devs[key]
		if p == nil {
			p = newDeviceBuild(key)
			p.dev.Name = d.dev.Name
			devs[key] = p
		}
		p.dev.MIGEnabled = true
		for _, r := range []struct{ gpu, inst *float64 }{{&p.dev.TempC, &d.dev.TempC}, {&p.dev.PowerW, &d.dev.PowerW}, {&p.dev.PowerLimitW, &d.dev.PowerLimitW}} {
			if math.IsNaN(*r.gpu) {
				*r.gpu = *r.inst
			}
			*r.inst = math.NaN()
		}
	}
}

// device finishes the GPU's reading into dev, in place: a snapshot's
// devices are large, and a fleet's are many. Memory is known when its
// total is: gpuwatch's total, or dcgm-exporter's used + free + reserved
// (the part the driver keeps, MemReserved, when it reports it).
func (d *deviceBuild) device(dev *gpu.Device) {
	*dev = d.dev
	if dev.MIGEnabled {
		// Its memory, utilization and processes are its instances'.
		dev.UtilGPU, dev.UtilMem = math.NaN(), math.NaN()
		return
	}
	if dev.MIG != nil && d.key.schema == SchemaDCGM {
		// DCGM_FI_DEV_GPU_UTIL and MEM_COPY_UTIL of an instance read 0:
		// dcgm-exporter measures them per GPU only.
		dev.UtilGPU, dev.UtilMem = d.engineActive, d.dramActive
	}
	total := d.memTotal
	if d.key.schema == SchemaDCGM && !finite(total) { // dcgm-exporter before 4.9 says no total
		total = d.memUsed + d.memFree
		if finite(d.memReserved) {
			total += d.memReserved
		}
	}
	if finite(d.memUsed) && finite(total) && total > 0 && d.memUsed >= 0 {
		dev.MemTotal = byteCount(total)
		dev.MemUsed = min(byteCount(d.memUsed), dev.MemTotal)
		if finite(d.memReserved) {
			dev.MemReserved = min(byteCount(d.memReserved), dev.MemTotal)
		}
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
}

// events are what happened to the GPU since the last evaluation: XID
// errors (a counter that rose, or dcgm-exporter's last XID that changed)
// and, when it reports gpuwatch_gpu_lost 1, its loss. A series never seen
// before is news only on a GPU that reported before; on a GPU seen for the
// first time it is the baseline.
func (b *builder) events(at time.Time, d *deviceBuild, known bool) []gpu.Event {
	var out []gpu.Event
	counted := len(d.xidCounts) > 0
	if counted {
		// dcgm-exporter counts every XID; its latest code misses one that
		// repeats the code before it.
		out = b.countEvents(at, d, known)
	}
	for _, x := range d.xids {
		key := counterKey{dev: d.key, code: x.code}
		prev, had := b.counters[key]
		b.counters[key] = x.value
		if !finite(x.value) || counted && x.code == "" {
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
