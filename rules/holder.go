package rules

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// oomLikelyPercent is how full a GPU must have been when its job exited for
// the exit to look like a CUDA out-of-memory: the allocation that would have
// taken the rest failed.
const oomLikelyPercent = 95

// Exit is a job leaving a GPU: its processes vanished and its memory was
// freed, or other processes took the GPU over. A resolve notice carries it,
// so people hear that the job is gone and whether it likely ran out of
// memory.
type Exit struct {
	At time.Time
	// Processes are the job's processes at its last sample, largest first;
	// empty when the source does not say which processes run (a log).
	Processes []gpu.Process
	// MemPercent is memory.used_percent at the job's last sample.
	MemPercent float64
	// OOMLikely says the job probably died of CUDA out-of-memory: it exited
	// with the GPU at least 95 % full, after its memory rose in its last
	// half hour (a job that mapped the GPU at start and stayed flat, as
	// TensorFlow does, exits at 99 % without running out of anything).
	OOMLikely bool
}

// Text says what happened, for people: "pid 4242 (alice, python train.py)
// exited with the GPU at 99% — a CUDA out-of-memory is likely"; label
// names the GPU (gpu.Label) for a job the source names no process of.
func (x *Exit) Text(label string) string {
	who := "the job on " + label
	if len(x.Processes) > 0 {
		who = describeProcesses(x.Processes)
	}
	if math.IsNaN(x.MemPercent) {
		return who + " exited"
	}
	text := fmt.Sprintf("%s exited with the GPU at %s", who, Dimension{Base: Percent}.Format(x.MemPercent))
	if x.OOMLikely {
		text += " — a CUDA out-of-memory is likely"
	}
	return text
}

// maxExitJobs is how many jobs (a user's command) an exit names.
const maxExitJobs = 2

// describeProcesses names processes by job, a job's processes together:
// "pid 4242 (alice, python train.py)", "pids 4242, 4243 (alice, torchrun
// train.py)", "job 4242 (alice, python train.py)" for a Slurm job, "… and
// 3 more"; a pod the source names without its processes by itself: "pod
// ml/train-0, container trainer".
func describeProcesses(ps []gpu.Process) string {
	type job struct {
		user, command, batch string
		pids                 []string
		pod                  string // the pod, for a pod named without its processes
	}
	var jobs []*job
	for i := range ps {
		p := &ps[i]
		if _, _, _, ok := p.Pod(); ok {
			jobs = append(jobs, &job{pod: p.Holder()})
			continue
		}
		i := slices.IndexFunc(jobs, func(j *job) bool {
			return j.pod == "" && j.user == p.User && j.batch == p.Job && (p.Job != "" || j.command == p.Command)
		})
		if i < 0 {
			jobs, i = append(jobs, &job{user: p.User, command: p.Command, batch: p.Job}), len(jobs)
		}
		if p.PID > 0 {
			jobs[i].pids = append(jobs[i].pids, strconv.Itoa(p.PID))
		}
	}
	var parts []string
	for i, j := range jobs {
		if i == maxExitJobs {
			parts = append(parts, fmt.Sprintf("and %d more", len(jobs)-maxExitJobs))
			break
		}
		if j.pod != "" {
			parts = append(parts, j.pod)
			continue
		}
		batch := gpu.Process{Job: j.batch}
		id, isBatch := batch.SlurmJob()
		var text string
		switch {
		case isBatch:
			text = "job " + id
		case len(j.pids) > 1:
			text = "pids " + strings.Join(j.pids, ", ")
		case len(j.pids) == 1:
			text = "pid " + j.pids[0]
		default:
			text = "a job"
		}
		var about []string
		for _, s := range []string{j.user, j.command} {
			if s != "" {
				about = append(about, s)
			}
		}
		if len(about) > 0 {
			text += " (" + strings.Join(about, ", ") + ")"
		}
		parts = append(parts, text)
	}
	return strings.Join(parts, ", ")
}

// oomWindow is how far back oom_exits counts a job's deaths.
const oomWindow = time.Hour

// holder follows who holds one GPU: since when, with which processes, and
// how its last job ended. The engine feeds it every sample of the GPU.
type holder struct {
	since time.Time // when the current job took the GPU; zero while it is free
	procs []gpu.Process
	// lastPercent is memory.used_percent at the last sample while held.
	lastPercent float64
	// memory is memory.used_percent over the last half hour, for judging an
	// exit: did the job die just after its memory rose?
	memory history
	exit   Exit // the last job's exit; zero At when none yet
	seen   bool // a sample has been observed
	// rest is the GPU's resting level (see memory.held).
	rest gpu.RestingLevel
	// ooms are the exits of the last oomWindow that were likely a CUDA
	// out-of-memory, oldest first.
	ooms []Exit
}

// observe records sample d at at and returns whether the GPU changed
// hands with it: a job took it, or left it (then h.exit says how). The
// first sample changes nothing: the job on it, if any, was there before.
func (h *holder) observe(at time.Time, d *gpu.Device) (changed bool) {
	first := !h.seen
	h.seen = true
	h.rest.Observe(d)
	pct := d.MemUsedPercent()
	held := h.held(d)
	exited := false
	switch {
	case !h.since.IsZero() && !held:
		exited = true
	case !h.since.IsZero() && len(h.procs) > 0 && len(d.Processes) > 0 && !sharesProcess(h.procs, d.Processes):
		exited = true // another job took the GPU over within one sample
	}
	if exited {
		h.exit = Exit{At: at, Processes: sortedProcesses(h.procs), MemPercent: h.lastPercent, OOMLikely: h.rose()}
		h.since = time.Time{}
		if h.exit.OOMLikely {
			h.recordOOM(h.exit)
		}
	}
	if held {
		if h.since.IsZero() {
			h.since, changed = at, true
		}
		h.procs, h.lastPercent = d.Processes, pct
	} else {
		h.procs, h.lastPercent = nil, math.NaN()
	}
	h.memory.add(at, pct)
	return !first && (changed || exited)
}

// held reports whether a job holds d: a compute process runs on it, or
// more than 1 GiB above the GPU's resting level is in use.
func (h *holder) held(d *gpu.Device) bool {
	return len(d.Processes) > 0 || float64(d.MemUsed) > h.rest.Bytes()+heldBytes
}

// memHeld is memory.held: the memory in use above the GPU's resting
// level; NaN when d's memory is unknown.
func (h *holder) memHeld(d *gpu.Device) float64 {
	return h.rest.Above(d)
}

// recordOOM keeps x, a likely out-of-memory exit, forgetting those older
// than oomWindow.
func (h *holder) recordOOM(x Exit) {
	old := 0
	for old < len(h.ooms) && x.At.Sub(h.ooms[old].At) >= oomWindow {
		old++
	}
	h.ooms = append(h.ooms[:copy(h.ooms, h.ooms[old:])], x)
}

// oomExits is oom_exits at at: how many times in the last oomWindow the
// job of the latest likely out-of-memory exit died so. A job restarted
// (the same Slurm job, or the same user's same command) is the same job;
// where the source names no process, every job on the GPU is.
func (h *holder) oomExits(at time.Time) float64 {
	n := 0
	if k := len(h.ooms); k > 0 {
		last := h.ooms[k-1].Processes
		for i := range h.ooms {
			if x := &h.ooms[i]; at.Sub(x.At) < oomWindow && sameJob(x.Processes, last) {
				n++
			}
		}
	}
	return float64(n)
}

// sameJob reports whether two runs, by their processes, are one job run
// again: a process of each belongs to the same Slurm job, or is the same
// user's same command. Runs whose processes are unknown (a log) are.
func sameJob(a, b []gpu.Process) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for i := range a {
		if slices.ContainsFunc(b, func(p gpu.Process) bool {
			return p.Job != "" && p.Job == a[i].Job || p.User == a[i].User && p.Command == a[i].Command
		}) {
			return true
		}
	}
	return false
}

// rose reports whether the GPU was nearly full at the job's last sample and
// its memory had risen by at least a point over the half hour before.
func (h *holder) rose() bool {
	if !(h.lastPercent >= oomLikelyPercent) {
		return false
	}
	low := math.Inf(1)
	for _, v := range h.memory.series(h.memory.latest()) {
		if !math.IsNaN(v) {
			low = min(low, v)
		}
	}
	return h.lastPercent-low >= 1
}

// heldFor returns how long the current job has held the GPU at at, in
// seconds; 0 while it is free.
func (h *holder) heldFor(at time.Time) float64 {
	if h.since.IsZero() {
		return 0
	}
	return at.Sub(h.since).Seconds()
}

// sharesProcess reports whether two process lists have a process in
// common: a PID of the same job, or where the source names no process
// (PID 0: a pod, a user's share) the same pod or user. A GPU that passes
// from one Slurm job to the next changes hands even should a PID recur.
func sharesProcess(a, b []gpu.Process) bool {
	for i := range a {
		if slices.ContainsFunc(b, func(p gpu.Process) bool {
			return p.PID == a[i].PID && p.Job == a[i].Job && (p.PID != 0 || p.Container == a[i].Container && p.User == a[i].User)
		}) {
			return true
		}
	}
	return false
}

// HeldSince is when the job that holds a GPU took it, as the engine saw
// it: the GPU of that UUID or, for a GPU without one, of that index. It is
// zero while the GPU is free and for a GPU the engine has not seen.
func (e *Engine) HeldSince(uuid string, index int) time.Time {
	gs := e.byIdx[index]
	if uuid != "" {
		gs = e.gpus[uuid]
	}
	if gs == nil {
		return time.Time{}
	}
	return gs.holder.since
}
