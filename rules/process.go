package rules

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// PerProcess reports whether the rule runs on each process of a GPU
// rather than on the GPU: its when or clear_when applies a window function
// to process.memory, which then follows one process's own memory. On a
// GPU several jobs share (time-slicing, MPS, a notebook beside a trainer)
// such a rule tells which job's memory grows, and its alert is about that
// process: (rule, host, GPU, PID).
//
// In a rule that runs per process, process.memory is the process's own
// memory, and time_to_full(process.memory, …) the time until the process,
// growing as it does, takes all the memory the GPU has left (its own
// memory plus the GPU's free memory); every other metric is the GPU's.
func (r *Rule) PerProcess() bool {
	return readsProcessSeries(r.When) || r.ClearWhen != nil && readsProcessSeries(r.ClearWhen)
}

func readsProcessSeries(c *Cond) bool {
	isProcess := func(w WindowSpec) bool { return w.Metric == MetricProcessMemory }
	return slices.ContainsFunc(c.windows, isProcess) || slices.ContainsFunc(c.trends, isProcess)
}

// splitPerProcess parts rules into those on GPUs and those that run per
// process, keeping their order.
func splitPerProcess(rules []*Rule) (onGPU, perProcess []*Rule) {
	for _, r := range rules {
		if r.PerProcess() {
			perProcess = append(perProcess, r)
		} else {
			onGPU = append(onGPU, r)
		}
	}
	return onGPU, perProcess
}

// processSeries evaluates the rules that run per process. Each process a
// GPU runs is a series of its own, found by its GPU and PID (see subject),
// that an engine of those rules evaluates as it would a GPU: the GPU's
// readings, with the process as its one process. A process that leaves
// its GPU is evaluated once more as holding nothing (its alerts resolve,
// telling how it ended) and then forgotten; an alert still firing then is
// resolved for it.
type processSeries struct {
	engine *Engine
	// states finds a process's state by its GPU and PID without making
	// its subject's string at every evaluation.
	states map[processKey]*gpuState
	view   gpu.Device // the GPU as the process being evaluated sees it
}

// processKey is a process's GPU (by UUID, or index without one) and PID.
type processKey struct {
	uuid  string
	index int
	pid   int
}

func keyOf(d *gpu.Device, pid int) processKey {
	k := processKey{uuid: d.UUID, pid: pid}
	if d.UUID == "" {
		k.index = d.Index
	}
	return k
}

func newProcessSeries(rules []*Rule, opts Options) *processSeries {
	return &processSeries{engine: newEngine(rules, opts), states: map[processKey]*gpuState{}}
}

// state returns the state of process p's series on GPU d, which
// ps.view holds as p sees it, made when new. Like Engine.stateAt, it
// looks first at here[i], the i-th process of the host before.
func (ps *processSeries) state(here []*gpuState, i int, host string, d *gpu.Device, p *gpu.Process) *gpuState {
	k := keyOf(d, p.PID)
	var gs *gpuState
	if i < len(here) && keyOf(&here[i].device, here[i].process.PID) == k {
		gs = here[i]
	} else {
		gs = ps.states[k]
	}
	if gs == nil {
		gs = ps.engine.state(host, subject(d, p.PID), &ps.view)
		ps.states[k] = gs
	}
	gs.process = *p
	return gs
}

// subject is the key of process pid's series on GPU d: the GPU's UUID (or
// index, without one) and the PID.
func subject(d *gpu.Device, pid int) string {
	gpuKey := d.UUID
	if gpuKey == "" {
		gpuKey = "gpu" + strconv.Itoa(d.Index)
	}
	return gpuKey + "/pid/" + strconv.Itoa(pid)
}

// readMetric reads m from d; for a rule that runs per process d is the
// GPU as the process sees it (see processView), and process.count and
// process.jobs are those of gpu, the GPU itself (nil on a GPU).
func readMetric(m Metric, d, gpu *gpu.Device) float64 {
	if gpu != nil && (m == MetricProcessCount || m == MetricProcessJobs) {
		return m.Value(gpu)
	}
	return m.Value(d)
}

// processView sets v to GPU d as process p sees it: the GPU's readings,
// with p its only process.
func processView(v *gpu.Device, d *gpu.Device, p []gpu.Process) {
	*v = *d
	v.Processes = p
}

// eval evaluates the processes of snapshot s, one host's, appending their
// transitions to out.
func (ps *processSeries) eval(s *gpu.Snapshot, out []Transition) []Transition {
	e := ps.engine
	e.out = e.out[:0]
	e.eval++
	here, n := e.hosts[s.Host], 0
	for i := range s.Devices {
		d := &s.Devices[i]
		for k := range d.Processes {
			p := &d.Processes[k]
			if p.PID <= 0 {
				continue // a pod or a user's share the source names without a process
			}
			processView(&ps.view, d, d.Processes[k:k+1])
			gs := ps.state(here, n, s.Host, d, p)
			n++
			e.ctx.Process, e.ctx.GPU = &gs.process, d
			e.evalReported(s, &ps.view, gs)
		}
	}
	for i, here := 0, e.hosts[s.Host]; i < len(here); {
		gs := here[i]
		if gs.eval == e.eval {
			i++
			continue
		}
		ps.exit(s, gs) // takes gs off the host's list
		here = e.hosts[s.Host]
	}
	e.ctx.Process, e.ctx.GPU = nil, nil
	e.warnUnmeasured(s.Host)
	return append(out, e.out...)
}

// exit evaluates process gs once more, at s, as having left its GPU (it
// holds nothing; the GPU's memory in use is 0 for it, so that its job's
// exit is told), resolves what still fires, and forgets it.
func (ps *processSeries) exit(s *gpu.Snapshot, gs *gpuState) {
	e := ps.engine
	processView(&ps.view, &gs.device, nil)
	ps.view.MemUsed = 0
	e.ctx.Process, e.ctx.GPU = &gs.process, &ps.view
	e.evalReported(s, &ps.view, gs)
	for j, r := range e.rules {
		if a := &gs.alerts[j]; a.State == StateFiring {
			e.out = append(e.out, e.goneTransition(s, &ps.view, gs, r, a))
		}
	}
	delete(ps.states, keyOf(&gs.device, gs.process.PID))
	e.forget(gs)
}

// goneTransition resolves alert a of rule r, whose process left the GPU
// while its condition said nothing either way.
func (e *Engine) goneTransition(s *gpu.Snapshot, d *gpu.Device, gs *gpuState, r *Rule, a *Alert) Transition {
	a.State, a.ResolvedAt = StateInactive, s.Time
	a.ActiveAt, a.ClearingSince = time.Time{}, time.Time{}
	t := Transition{
		At: s.Time, Rule: r, Alert: r.Name, State: StateInactive,
		Severity: r.Severity, Host: s.Host, GPU: d.Index, UUID: d.UUID, GPUName: d.Name, MIG: d.MIG,
		Process: new(gs.process),
		Value:   math.NaN(), Trend: math.NaN(), TimeToFull: time.Duration(math.MinInt64),
		StartsAt: a.FiredAt, EndsAt: s.Time, Labels: alertLabels(r, s.Host, d, &gs.process),
		FiringSummary: a.Summary, AlertState: *a,
	}
	t.Summary = t.where() + ": the process left the GPU"
	if x := gs.holder.exit; !x.At.IsZero() && !x.At.Before(a.FiredAt) {
		t.Exit = &x
	}
	return t
}

// forget drops state gs: its process left the GPU.
func (e *Engine) forget(gs *gpuState) {
	delete(e.gpus, gs.key)
	if i := slices.Index(e.order, gs); i >= 0 {
		e.order = slices.Delete(e.order, i, i+1)
	}
	e.unplace(gs)
}

// warm feeds the processes of past snapshot s to their series.
func (ps *processSeries) warm(s *gpu.Snapshot) {
	e := ps.engine
	here, n := e.hosts[s.Host], 0
	for i := range s.Devices {
		d := &s.Devices[i]
		for k := range d.Processes {
			p := &d.Processes[k]
			if p.PID <= 0 {
				continue
			}
			processView(&ps.view, d, d.Processes[k:k+1])
			e.ctx.GPU = d
			e.warmDevice(s, &ps.view, ps.state(here, n, s.Host, d, p))
			n++
		}
	}
	e.ctx.GPU = nil
}

// active appends the pending and firing alerts of the processes to out.
func (ps *processSeries) active(out []AlertState) []AlertState {
	e := ps.engine
	for _, gs := range e.order {
		for j, a := range gs.alerts {
			if a.State != StateInactive {
				out = append(out, AlertState{Rule: e.rules[j], Host: gs.host, GPU: gs.index, UUID: gs.device.UUID,
					MIG: gs.device.MIG, Process: new(gs.process), Alert: a})
			}
		}
	}
	return out
}

// inherit takes over the processes' series of old (nil when the engine
// before a reload had no rule that runs per process).
func (ps *processSeries) inherit(old *processSeries) {
	if old == nil {
		return
	}
	ps.engine.Inherit(old.engine)
	for k, ogs := range old.states {
		ps.states[k] = ps.engine.gpus[ogs.key]
	}
}

// Label names the alert's GPU for people: "GPU 0", "GPU 0 · MIG 3
// (1g.10gb)".
func (t *Transition) Label() string { return gpu.Label(t.GPU, t.MIG) }

// Subject names what the alert is about for people: its GPU, and for a
// rule that runs per process the process ("GPU 0, pid 4242").
func (t *Transition) Subject() string {
	if t.Process == nil {
		return t.Label()
	}
	return t.Label() + ", " + t.Process.Holder()
}

// where says where the alert is, for a resolve's summary: "GPU 0 on
// node1", "GPU 0 · MIG 3 (1g.10gb) on node1, pid 4242".
func (t *Transition) where() string {
	w := t.Label() + " on " + t.Host
	if t.Process != nil {
		w += ", " + t.Process.Holder()
	}
	return w
}

// SeriesID identifies what the alert is about among a host's: the GPU's
// UUID, and for a rule that runs per process the process's PID
// ("GPU-…/pid/4242"). An alert is (host, rule, SeriesID).
func (t *Transition) SeriesID() string { return seriesID(t.UUID, t.GPU, t.Process) }

// SeriesID identifies what the alert is about, as Transition.SeriesID.
func (a *AlertState) SeriesID() string { return seriesID(a.UUID, a.GPU, a.Process) }

// isProcessSeries reports whether a saved alert's series is a process's
// (see SeriesID).
func isProcessSeries(id string) bool { return strings.Contains(id, "/pid/") }

// pidOf is p's PID, 0 for none.
func pidOf(p *gpu.Process) int {
	if p == nil {
		return 0
	}
	return p.PID
}

func seriesID(uuid string, index int, p *gpu.Process) string {
	if p == nil {
		return uuid
	}
	return subject(&gpu.Device{UUID: uuid, Index: index}, p.PID)
}
