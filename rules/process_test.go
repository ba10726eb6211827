package rules

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// processLeakRules run per process (a window of process.memory), on GPUs
// several jobs share.
const processLeakRules = `
rules:
  - alert: ProcessMemoryLeak
    when: time_to_full(process.memory, 10m) < 2h and process.jobs > 1
    clear_when: time_to_full(process.memory, 10m) > 7d or process.memory < 1GiB
    summary: "{{.Process.Holder}} ({{.Process.User}}) on {{.Label}} keeps growing: the GPU is full in {{.ValueText}}"
  - alert: Hot
    when: temperature > 85
`

// sharedGPU is a 24 GiB card three pods share at minute m: pod b leaks
// 100 MiB a minute from 4 GiB while a and c hold 6 GiB each; c exits at
// minute exitC (never when 0).
func sharedGPU(m float64, exitC float64) gpu.Device {
	procs := []gpu.Process{
		{PID: 101, User: "root", Command: "python serve.py", Container: "k8s:ml/a", MemUsed: 6 << 30},
		{PID: 202, User: "bob", Command: "python serve.py", Container: "k8s:ml/b", MemUsed: 4<<30 + uint64(m*100)<<20},
		{PID: 303, User: "root", Command: "python serve.py", Container: "k8s:ml/c", MemUsed: 6 << 30},
	}
	if exitC > 0 && m >= exitC {
		procs = procs[:2]
	}
	var used uint64
	for _, p := range procs {
		used += p.MemUsed
	}
	return gpu.Device{Index: 0, UUID: "GPU-shared", Name: "NVIDIA A10", MemUsed: used, MemTotal: 24 << 30,
		UtilGPU: 60, UtilMem: 30, TempC: 60, PowerW: 100, PowerLimitW: 150, Processes: procs}
}

func TestProcessSeriesNameTheLeakingJob(t *testing.T) {
	rs := mustRules(t, processLeakRules)
	if !rs[0].PerProcess() || rs[1].PerProcess() {
		t.Fatalf("PerProcess: got %v %v, want true false", rs[0].PerProcess(), rs[1].PerProcess())
	}
	e := NewEngine(rs, Options{})
	var fired []Transition
	for m := 0.0; m <= 40; m += 0.5 {
		for _, tr := range e.Eval(snapshot(time.Duration(m*float64(time.Minute)), sharedGPU(m, 0))) {
			fired = append(fired, tr)
		}
	}
	if len(fired) != 1 {
		t.Fatalf("got %d transitions, want 1 (pod b's leak): %+v", len(fired), fired)
	}
	tr := fired[0]
	if tr.Process == nil || tr.Process.PID != 202 || tr.UUID != "GPU-shared" || tr.Labels["pid"] != "202" || tr.Labels["uuid"] != "GPU-shared" {
		t.Fatalf("fired on %+v (uuid %s, labels %v), want pid 202 on GPU-shared", tr.Process, tr.UUID, tr.Labels)
	}
	if got := tr.SeriesID(); got != "GPU-shared/pid/202" {
		t.Errorf("SeriesID %q, want GPU-shared/pid/202", got)
	}
	if !strings.HasPrefix(tr.Summary, "pid 202 (bob) on GPU 0 keeps growing: the GPU is full in ") {
		t.Errorf("summary %q, want it to name pid 202 and bob", tr.Summary)
	}
	// 24 GiB less 16 GiB used, at 100 MiB a minute: about 80 minutes.
	if tr.Value < 60*60 || tr.Value > 100*60 {
		t.Errorf("time to full %v s, want about 80 minutes", tr.Value)
	}
	if len(tr.Processes) != 1 || tr.Processes[0].PID != 202 {
		t.Errorf("processes %+v, want pid 202 only", tr.Processes)
	}
	active := e.Active()
	if len(active) != 1 || active[0].Process == nil || active[0].Process.PID != 202 || active[0].SeriesID() != "GPU-shared/pid/202" {
		t.Errorf("active %+v, want pod b's leak", active)
	}
}

func TestProcessSeriesExitResolves(t *testing.T) {
	e := NewEngine(mustRules(t, processLeakRules), Options{})
	var got []string
	for m := 0.0; m <= 30; m += 0.5 {
		d := sharedGPU(m, 0)
		if m >= 25 { // pod b dies of OOM: its memory is freed
			d.Processes = slices.Delete(d.Processes, 1, 2)
			d.MemUsed = 12 << 30
		}
		for _, tr := range e.Eval(snapshot(time.Duration(m*float64(time.Minute)), d)) {
			got = append(got, tr.StateName()+" "+tr.Subject())
			if tr.Resolved() && (tr.Exit == nil || len(tr.Exit.Processes) != 1 || tr.Exit.Processes[0].PID != 202) {
				t.Errorf("resolve exit %+v, want pid 202's", tr.Exit)
			}
		}
	}
	if want := []string{"firing GPU 0, pid 202", "resolved GPU 0, pid 202"}; !slices.Equal(got, want) {
		t.Errorf("transitions %q, want %q", got, want)
	}
	if n := len(e.processes.engine.order); n != 2 {
		t.Errorf("%d process series kept, want 2: the one that left is forgotten", n)
	}
}

func TestProcessSeriesRestoreAndInherit(t *testing.T) {
	rs := mustRules(t, processLeakRules)
	e := NewEngine(rs, Options{})
	var fired *Transition
	m := 0.0
	for ; fired == nil && m <= 40; m += 0.5 {
		for _, tr := range e.Eval(snapshot(time.Duration(m*float64(time.Minute)), sharedGPU(m, 0))) {
			fired = &tr
		}
	}
	if fired == nil {
		t.Fatal("the leak never fired")
	}
	// A restart: the saved record of the firing alert is not announced again.
	restarted := NewEngine(rs, Options{})
	restarted.Restore([]AlertRecord{{Rule: fired.Alert, UUID: fired.SeriesID(), Severity: fired.Severity, Alert: fired.AlertState}})
	if ts := restarted.Eval(snapshot(time.Duration(m*float64(time.Minute)), sharedGPU(m, 0))); len(ts) != 0 {
		t.Errorf("after a restart got %+v, want nothing: the alert was announced", ts)
	}
	if a := restarted.Active(); len(a) != 1 || a[0].State != StateFiring {
		t.Errorf("after a restart active %+v, want the leak firing", a)
	}
	// A reload that drops the rule resolves the alert.
	reloaded := NewEngine(mustRules(t, "rules:\n  - alert: Hot\n    when: temperature > 85\n"), Options{})
	reloaded.Inherit(e)
	ts := reloaded.Eval(snapshot(time.Duration((m+0.5)*float64(time.Minute)), sharedGPU(m+0.5, 0)))
	if len(ts) != 1 || !ts[0].Resolved() || ts[0].Process == nil || ts[0].Process.PID != 202 {
		t.Errorf("after a reload without the rule got %+v, want pid 202's leak resolved", ts)
	}
}

func TestProcessSeriesOnOneJobStaysQuiet(t *testing.T) {
	// One job's launcher and worker: process.jobs is 1, the GPU's own
	// rules speak of it.
	e := NewEngine(mustRules(t, processLeakRules), Options{})
	for m := 0.0; m <= 40; m += 0.5 {
		d := sharedGPU(m, 0)
		for i := range d.Processes {
			d.Processes[i].Container = "k8s:ml/one"
		}
		if ts := e.Eval(snapshot(time.Duration(m*float64(time.Minute)), d)); len(ts) > 0 {
			t.Fatalf("at %v min got %+v, want nothing on a GPU one job holds", m, ts)
		}
	}
}

func TestProcessSeriesEvalDoesNotAllocate(t *testing.T) {
	e := NewEngine(mustRules(t, processLeakRules), Options{})
	s := steadySnapshot(8)
	warm(e, s, 2000)
	if allocs := testing.AllocsPerRun(100, func() { advance(s); e.Eval(s) }); allocs != 0 {
		t.Errorf("Eval allocates %v times per snapshot in steady state, want 0", allocs)
	}
}
