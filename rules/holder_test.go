package rules

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// evalAt evaluates a snapshot at t0+at and returns its transitions by alert.
func evalAt(e *Engine, at time.Duration, devs ...gpu.Device) map[string]Transition {
	out := map[string]Transition{}
	for _, tr := range e.Eval(snapshot(at, devs...)) {
		out[tr.Alert+"/"+tr.StateName()] = tr
	}
	return out
}

// TestMissingForBoundary steps a GPU that stops reporting across the rule's
// boundary: missing_for counts from its last report, only while another GPU
// of the host reports, and the alert resolves when it reports again.
func TestMissingForBoundary(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: GPULost
    when: missing_for > 1m
`), Options{})
	other := func() gpu.Device { return device(1, 10, 50, 50) }
	procs := []gpu.Process{{PID: 4242, User: "alice", Command: "python train.py", MemUsed: 30 << 30}}
	evalAt(e, 0, device(0, 30, 90, 60, procs...), other())
	evalAt(e, 5*time.Second, device(0, 30, 90, 60, procs...), other()) // last report
	for _, tc := range []struct {
		at   time.Duration
		want string // the transition, "" for none
	}{
		{10 * time.Second, ""},
		{65 * time.Second, ""}, // missing exactly 1m: not more
		{65*time.Second + 1, "GPULost/firing"},
		{5 * time.Minute, ""},
	} {
		got := evalAt(e, tc.at, other())
		if _, ok := got[tc.want]; tc.want != "" && !ok || tc.want == "" && len(got) > 0 {
			t.Fatalf("at %v: got %v, want %q", tc.at, keys(got), tc.want)
		}
		if tr, ok := got["GPULost/firing"]; ok {
			if tr.GPU != 0 || tr.LastReport != t0.Add(5*time.Second) {
				t.Errorf("firing on gpu %d, last report %v; want gpu 0 and its last report", tr.GPU, tr.LastReport)
			}
			if len(tr.Processes) != 1 || tr.Processes[0].PID != 4242 {
				t.Errorf("firing names processes %v, want the last known one (pid 4242)", tr.Processes)
			}
		}
	}
	if active := e.Active(); len(active) != 1 || active[0].GPU != 0 {
		t.Errorf("Active() = %v, want GPULost on gpu 0", active)
	}
	got := evalAt(e, 6*time.Minute, device(0, 0, 0, 40), other())
	if _, ok := got["GPULost/resolved"]; !ok {
		t.Errorf("the GPU reports again: got %v, want GPULost resolved", keys(got))
	}
}

func keys(m map[string]Transition) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestHeldForBoundary: held_for counts from the sample a job took the GPU,
// and starts again with the next job.
func TestHeldForBoundary(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: LongJob
    when: held_for > 10m
`), Options{})
	job := func(pid int, memGiB float64) gpu.Device {
		return device(0, memGiB, 90, 60, gpu.Process{PID: pid, User: "alice", MemUsed: uint64(memGiB * (1 << 30))})
	}
	evalAt(e, 0, device(0, 0, 0, 35)) // free
	for _, tc := range []struct {
		at   time.Duration
		dev  gpu.Device
		want string
	}{
		{time.Minute, job(1, 20), ""},      // the job takes the GPU
		{11 * time.Minute, job(1, 20), ""}, // held exactly 10m
		{11*time.Minute + time.Second, job(1, 20), "LongJob/firing"},
		{12 * time.Minute, job(2, 20), "LongJob/resolved"}, // another job took over within one sample
		{22 * time.Minute, job(2, 20), ""},
		{22*time.Minute + time.Second, job(2, 20), "LongJob/firing"},
		{23 * time.Minute, device(0, 0.5, 0, 35), "LongJob/resolved"}, // freed: 512 MiB and no process is not held
	} {
		got := evalAt(e, tc.at, tc.dev)
		if _, ok := got[tc.want]; tc.want != "" && !ok || tc.want == "" && len(got) > 0 {
			t.Fatalf("at %v: got %v, want %q", tc.at, keys(got), tc.want)
		}
	}
}

// TestHeldWithoutProcesses: a source without process lists (a log) holds a
// GPU by its memory: more than 1 GiB in use.
func TestHeldWithoutProcesses(t *testing.T) {
	for _, tc := range []struct {
		memGiB float64
		want   bool
	}{{0, false}, {1, false}, {1.01, true}, {70, true}} {
		d := device(0, tc.memGiB, 0, 30)
		if got := Held(&d); got != tc.want {
			t.Errorf("Held(%v GiB, no processes) = %v, want %v", tc.memGiB, got, tc.want)
		}
	}
	unknown := gpu.Device{}
	if Held(&unknown) {
		t.Errorf("Held(memory unknown, no processes) = true, want false")
	}
	// A log with memory.used but no memory.total: the memory used is known.
	usedOnly := gpu.Device{MemUsed: 5 << 30}
	if !Held(&usedOnly) {
		t.Errorf("Held(5 GiB used, total unknown, no processes) = false, want true")
	}
}

// TestExitOnResolve: an alert that resolves because its job left says who
// left and how full the GPU was, and whether a CUDA OOM is likely.
func TestExitOnResolve(t *testing.T) {
	rules := `
rules:
  - alert: Full
    when: memory.used_percent > 90
`
	proc := func(memGiB float64) gpu.Process {
		return gpu.Process{PID: 4242, User: "alice", Command: "python train.py", MemUsed: uint64(memGiB * (1 << 30))}
	}
	for _, tc := range []struct {
		name      string
		memory    []float64 // GiB a minute, then the job exits
		procs     bool
		oomLikely bool
		text      string
	}{
		{"a leak that dies full", []float64{60, 66, 72, 78, 79.6}, true, true,
			"pid 4242 (alice, python train.py) exited with the GPU at 99.5% — a CUDA out-of-memory is likely"},
		{"a pool mapped at start, ended", []float64{79.5, 79.5, 79.5, 79.5, 79.5}, true, false,
			"pid 4242 (alice, python train.py) exited with the GPU at 99.4%"},
		{"a job in a log, without processes", []float64{60, 70, 79.6}, false, true,
			"the job on GPU 0 exited with the GPU at 99.5% — a CUDA out-of-memory is likely"},
	} {
		e := NewEngine(mustRules(t, rules), Options{})
		// The pool has been there for an hour before the alert.
		start := time.Duration(0)
		if !tc.oomLikely && tc.procs {
			for i := range 60 {
				evalAt(e, time.Duration(i)*time.Minute, device(0, 79.5, 0, 30, proc(79.5)))
			}
			start = time.Hour
		}
		at := start
		for _, m := range tc.memory {
			d := device(0, m, 90, 60)
			if tc.procs {
				d = device(0, m, 90, 60, proc(m))
			}
			evalAt(e, at, d)
			at += time.Minute
		}
		got := evalAt(e, at, device(0, 0, 0, 40))
		tr, ok := got["Full/resolved"]
		if !ok {
			t.Fatalf("%s: got %v at the exit, want Full resolved", tc.name, keys(got))
		}
		if tr.Exit == nil {
			t.Fatalf("%s: the resolve carries no exit", tc.name)
		}
		if tr.Exit.OOMLikely != tc.oomLikely || tr.Exit.Text("GPU 0") != tc.text {
			t.Errorf("%s: got exit %q (OOM likely %v), want %q (%v)", tc.name, tr.Exit.Text("GPU 0"), tr.Exit.OOMLikely, tc.text, tc.oomLikely)
		}
		if !tr.Exit.At.Equal(t0.Add(at)) {
			t.Errorf("%s: exit at %v, want %v", tc.name, tr.Exit.At, t0.Add(at))
		}
	}
}

// TestExitOnlyAfterFiring: a resolve does not claim an exit that happened
// before its alert fired.
func TestExitOnlyAfterFiring(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: Hot
    when: temperature > 85
`), Options{})
	evalAt(e, 0, device(0, 40, 90, 60))
	evalAt(e, time.Minute, device(0, 0, 0, 60))            // the job exits
	evalAt(e, 2*time.Minute, device(0, 40, 90, 88))        // another starts; hot
	got := evalAt(e, 3*time.Minute, device(0, 40, 90, 70)) // cool again
	if tr, ok := got["Hot/resolved"]; !ok || tr.Exit != nil {
		t.Errorf("got %v (exit %v), want Hot resolved without an exit", keys(got), tr.Exit)
	}
}

// TestTrendStartsAfreshWithEachJob: the growth of one job is not carried
// into the next.
func TestTrendStartsAfreshWithEachJob(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: Leak
    when: trend(memory.used, 40m) > 10MiB/min
`), Options{})
	var fired bool
	at := time.Duration(0)
	// A leak of 1 GiB/min for an hour, then the job dies.
	for i := 0; i < 60; i++ {
		got := evalAt(e, at, device(0, 10+float64(i), 90, 60))
		_, ok := got["Leak/firing"]
		fired = fired || ok
		at += time.Minute
	}
	if !fired {
		t.Fatal("the leak never fired")
	}
	if got := evalAt(e, at, device(0, 0, 0, 40)); len(got["Leak/resolved"].Alert) == 0 {
		t.Fatalf("the job died: got %v, want Leak resolved", keys(got))
	}
	// The next job holds 40 GiB flat: its trend is unknown until half a
	// window of it is in, and then not a leak.
	for i := 1; i <= 60; i++ {
		if got := evalAt(e, at+time.Duration(i)*time.Minute, device(0, 40, 90, 60)); len(got) > 0 {
			t.Fatalf("%d min into the next job: got %v, want nothing", i, keys(got))
		}
	}
}

func TestExitText(t *testing.T) {
	three := []gpu.Process{{PID: 1, User: "alice", Command: "torchrun"}, {PID: 2}, {PID: 3, Command: "worker"}}
	workers := []gpu.Process{{PID: 7, User: "erin", Command: "torchrun train.py"}, {PID: 8, User: "erin", Command: "torchrun train.py"}}
	for _, tc := range []struct {
		x    Exit
		want string
	}{
		{Exit{Processes: three, MemPercent: 50}, "pid 1 (alice, torchrun), pid 2, and 1 more exited with the GPU at 50%"},
		{Exit{Processes: workers, MemPercent: 62.6}, "pids 7, 8 (erin, torchrun train.py) exited with the GPU at 62.6%"},
		{Exit{MemPercent: math.NaN()}, "the job on GPU 3 exited"},
		// A Slurm job's processes are one job, named by its ID.
		{Exit{Processes: []gpu.Process{{PID: 9, User: "bob", Command: "python a.py", Job: "slurm:4242"}, {PID: 10, User: "bob", Command: "python b.py", Job: "slurm:4242"}}, MemPercent: 99},
			"job 4242 (bob, python a.py) exited with the GPU at 99%"},
		{Exit{Processes: []gpu.Process{{User: "carol"}}, MemPercent: 40}, "a job (carol) exited with the GPU at 40%"},
		// dcgm-exporter names the pod, not its processes.
		{Exit{Processes: []gpu.Process{gpu.PodProcess("ml", "train-0", "trainer")}, MemPercent: 97},
			"pod ml/train-0, container trainer exited with the GPU at 97%"},
	} {
		if got := tc.x.Text("GPU 3"); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	if !strings.Contains((&Exit{MemPercent: 99, OOMLikely: true}).Text("GPU 0"), "out-of-memory") {
		t.Error("an exit with OOMLikely does not say so")
	}
}

// TestRestoredLeakWaitsForItsTrend: after a restart the engine has no trend
// yet; a restored firing leak alert stays firing until its trend is known,
// rather than taking the job it finds for a new one.
func TestRestoredLeakWaitsForItsTrend(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: Leak
    when: trend(memory.used, 40m) > 10MiB/min
    clear_when: trend(memory.used, 40m) <= 0 or memory.used < 1GiB
`), Options{})
	d := device(0, 40, 90, 60)
	e.Restore([]AlertRecord{{Rule: "Leak", UUID: d.UUID, Alert: Alert{State: StateFiring, FiredAt: t0.Add(-time.Hour)}}})
	for i := 0; i < 19; i++ {
		d := device(0, 40+float64(i)/4, 90, 60) // still leaking, 256 MiB/min
		if got := evalAt(e, time.Duration(i)*time.Minute, d); len(got) > 0 {
			t.Fatalf("%d min after the restart: got %v, want the restored alert left firing", i, keys(got))
		}
	}
	if a := e.Active(); len(a) != 1 || a[0].State != StateFiring {
		t.Errorf("Active() = %v, want the restored leak firing", a)
	}
}

// TestMissingIsPerHost: one engine evaluating several hosts, one snapshot
// each, counts a GPU missing only when its own host reports without it; a
// host whose GPUs all stopped reporting sends a snapshot without devices.
func TestMissingIsPerHost(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: GPULost
    when: missing_for > 1m
`), Options{})
	host := func(name string, at time.Duration, devs ...gpu.Device) []Transition {
		return e.Eval(&gpu.Snapshot{Time: t0.Add(at), Host: name, Devices: devs})
	}
	a0, b0 := device(0, 10, 50, 50), device(0, 10, 50, 50)
	b0.UUID = "GPU-other-host"
	for at := time.Duration(0); at <= 5*time.Minute; at += 15 * time.Second {
		if ts := append(host("a", at, a0), host("b", at, b0)...); len(ts) > 0 {
			t.Fatalf("at %v: got %v, want nothing while both hosts report", at, ts[0].Alert)
		}
	}
	var lost []Transition
	for at := 5*time.Minute + 15*time.Second; at <= 8*time.Minute; at += 15 * time.Second {
		host("a", at, a0)
		lost = append(lost, host("b", at)...) // host b reports no GPU
	}
	if len(lost) != 1 || lost[0].Host != "b" || lost[0].UUID != "GPU-other-host" {
		t.Fatalf("got %v, want GPULost once, for host b's GPU", lost)
	}
}

// TestWarmFillsWindowsWithoutAlerting: an engine warmed with the last 40
// minutes of a leak (a hub filling its windows from Prometheus at start)
// says nothing while warming, and fires at the first evaluation that has
// held for the rule's `for`, not after half an hour of its own samples.
func TestWarmFillsWindowsWithoutAlerting(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: Leak
    when: trend(memory.used, 40m) > 10MiB/min
`), Options{})
	for i := 0; i < 40; i++ {
		e.Warm(snapshot(time.Duration(i)*time.Minute, device(0, 20+float64(i)/2, 90, 60)))
	}
	if a := e.Active(); len(a) != 0 {
		t.Fatalf("warming stepped alerts: %v", a)
	}
	got := evalAt(e, 40*time.Minute, device(0, 40, 90, 60))
	if _, ok := got["Leak/firing"]; !ok {
		t.Errorf("the first evaluation after warming: got %v, want the leak firing", keys(got))
	}
}

// TestPodTakesOverFromPod: dcgm-exporter names pods, all PID 0; a pod that
// takes the GPU over from another within a sample is a new job, and the
// exit names the pod that left.
func TestPodTakesOverFromPod(t *testing.T) {
	var h holder
	dev := func(pod string) *gpu.Device {
		return &gpu.Device{MemTotal: 80 << 30, MemUsed: 40 << 30, Processes: []gpu.Process{gpu.PodProcess("ml", pod, "trainer")}}
	}
	h.observe(t0, dev("train-0"))
	h.observe(t0.Add(time.Minute), dev("train-0"))
	if !h.observe(t0.Add(2*time.Minute), dev("train-1")) {
		t.Fatal("train-1 took the GPU over from train-0: not seen as a change of hands")
	}
	if got := h.exit.Text("GPU 0"); got != "pod ml/train-0, container trainer exited with the GPU at 50%" {
		t.Errorf("exit: %q", got)
	}
}

// TestHeldSince: HeldSince says when the job on a GPU took it, and zero
// while the GPU is free or unknown.
func TestHeldSince(t *testing.T) {
	e := NewEngine(nil, Options{})
	job := func(pid int) gpu.Device {
		return device(0, 20, 90, 60, gpu.Process{PID: pid, User: "alice", MemUsed: 20 << 30})
	}
	uuid := device(0, 0, 0, 35).UUID
	for _, tc := range []struct {
		at   time.Duration
		dev  gpu.Device
		want time.Duration // -1: zero
	}{
		{0, device(0, 0, 0, 35), -1},
		{time.Minute, job(1), time.Minute},
		{5 * time.Minute, job(1), time.Minute},
		{6 * time.Minute, job(2), 6 * time.Minute}, // another job took it over
		{7 * time.Minute, device(0, 0.5, 0, 35), -1},
	} {
		e.Eval(snapshot(tc.at, tc.dev))
		got := e.HeldSince(uuid, 0)
		if want := t0.Add(tc.want); tc.want < 0 && !got.IsZero() || tc.want >= 0 && !got.Equal(want) {
			t.Errorf("at %v: HeldSince = %v, want %v", tc.at, got, tc.want)
		}
	}
	if got := e.HeldSince("GPU-unknown", 7); !got.IsZero() {
		t.Errorf("HeldSince of a GPU never seen = %v, want zero", got)
	}
}
