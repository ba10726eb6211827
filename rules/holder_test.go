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

// TestMemoryHeldAboveRestingLevel: a GPU's resting level is the least
// memory no process accounts for, once that is at most 2 GiB; memory.held
// is what is in use above it, and a GPU resting at 1.2 GiB is not held.
func TestMemoryHeldAboveRestingLevel(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: Held
    when: memory.held > 1GiB
`), Options{})
	alice := gpu.Process{PID: 4242, User: "alice", Command: "python nb.py", MemUsed: 20 << 30}
	steps := []struct {
		at   time.Duration
		devs []gpu.Device
		want map[int]float64 // memory.held in GiB, per GPU
	}{
		// GPU 0 rests at 1.2 GiB (a log: no processes); GPU 1 starts with
		// a 20 GiB job already on it, whose level is not a resting one;
		// GPU 2 reports its processes, 0.6 GiB of which are nobody's.
		{0, []gpu.Device{device(0, 1.2, 0, 40), device(1, 20, 0, 40), device(2, 20.6, 0, 40, alice)}, map[int]float64{0: 0, 1: 20, 2: 20}},
		{time.Minute, []gpu.Device{device(0, 21.2, 0, 40), device(1, 20, 0, 40), device(2, 20.6, 0, 40, alice)}, map[int]float64{0: 20, 1: 20, 2: 20}},
		// GPU 1's job leaves: it rests at 0.3 GiB from now on.
		{2 * time.Minute, []gpu.Device{device(0, 1.2, 0, 40), device(1, 0.3, 0, 40), device(2, 0.6, 0, 40)}, map[int]float64{0: 0, 1: 0, 2: 0}},
		{3 * time.Minute, []gpu.Device{device(0, 2, 0, 40), device(1, 1.5, 0, 40), device(2, 1.5, 0, 40)}, map[int]float64{0: 0.8, 1: 1.2, 2: 0.9}},
	}
	for _, s := range steps {
		evalAt(e, s.at, s.devs...)
		for i, want := range s.want {
			held := e.gpus[s.devs[i].UUID].holder.memHeld(&s.devs[i]) / (1 << 30)
			if math.Abs(held-want) > 1e-9 {
				t.Errorf("at %v: GPU %d holds %.2f GiB above its rest, want %.2f", s.at, i, held, want)
			}
		}
	}
	// 1.2 GiB on a GPU that rests at 0.3 GiB is held only above 1.3 GiB:
	// GPU 1 at 1.5 GiB is held, GPU 0 at 2 GiB over a 1.2 GiB rest is not.
	if e.gpus["GPU-a"].holder.held(&steps[3].devs[0]) || !e.gpus["GPU-b"].holder.held(&steps[3].devs[1]) {
		t.Errorf("held: GPU 0 %v, GPU 1 %v; want a GPU held only above 1 GiB over its resting level",
			e.gpus["GPU-a"].holder.held(&steps[3].devs[0]), e.gpus["GPU-b"].holder.held(&steps[3].devs[1]))
	}
}

// TestOOMExits: oom_exits counts the deaths of one job restarted again and
// again (a log names no process: every job is the one) within the last
// hour; a job that left the GPU far from full, or another user's job, does
// not count.
func TestOOMExits(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: Loop
    when: oom_exits >= 3
    keep_firing_for: 30m
`), Options{})
	at := time.Duration(0)
	run := func(peakGiB float64, procs ...gpu.Process) map[string]Transition {
		fired := map[string]Transition{}
		for _, m := range []float64{0, 70, 75, peakGiB, 0} {
			for k, tr := range evalAt(e, at, device(0, m, 90, 60, procs...)) {
				fired[k] = tr
			}
			at += time.Minute
		}
		return fired
	}
	oomsNow := func() float64 { return e.gpus["GPU-a"].holder.oomExits(t0.Add(at - time.Minute)) }
	run(79.5)
	run(79.5)
	if n := oomsNow(); n != 2 {
		t.Fatalf("after two deaths at 99%%: oom_exits %v, want 2", n)
	}
	run(77) // 96 %: nearly full, a death too
	if n := oomsNow(); n != 3 {
		t.Fatalf("after a third: oom_exits %v, want 3", n)
	}
	if active := e.Active(); len(active) != 1 || active[0].State != StateFiring {
		t.Fatalf("Active() = %v, want Loop firing", active)
	}
	run(72) // 90 %: the job ended, it did not run out of memory
	if n := oomsNow(); n != 3 {
		t.Errorf("after an exit at 90%%: oom_exits %v, want still 3", n)
	}
	// An hour after the first death only the later ones count; 30
	// minutes more, and the alert resolves.
	var resolved bool
	for ; at < 2*time.Hour; at += time.Minute {
		if _, ok := evalAt(e, at, device(0, 0, 0, 40))["Loop/resolved"]; ok {
			resolved = true
			break
		}
	}
	if want := 4*time.Minute + time.Hour + 30*time.Minute; !resolved || at != want {
		t.Errorf("resolved %v at %v, want at %v: the third-last death an hour ago, and keep_firing_for", resolved, at, want)
	}

	// With processes named: another user's job dying is another job.
	x := Exit{At: t0, Processes: []gpu.Process{{PID: 1, User: "alice", Command: "python train.py"}}, OOMLikely: true}
	var h holder
	for i, p := range []gpu.Process{{PID: 2, User: "alice", Command: "python train.py"}, {PID: 3, User: "bob", Command: "python other.py"}, {PID: 4, User: "alice", Command: "python train.py", Job: "slurm:7"}} {
		x.At, x.Processes = t0.Add(time.Duration(i)*time.Minute), []gpu.Process{p}
		h.recordOOM(x)
	}
	if n := h.oomExits(t0.Add(3 * time.Minute)); n != 3-1 {
		t.Errorf("alice's train.py died three times, bob's once between: oom_exits %v, want alice's latest job's 2 of 3", n)
	}
}

// TestOOMLoopNamesTheJob: an alert on oom_exits fires as the job dies,
// with no process on the GPU; it names the job that keeps dying.
func TestOOMLoopNamesTheJob(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: Loop
    when: oom_exits >= 3
`), Options{})
	var fired *Transition
	at := time.Duration(0)
	for run := range 3 {
		alice := gpu.Process{PID: 4242 + run, User: "alice", Command: "python train.py", MemUsed: 70 << 30}
		for _, m := range []float64{70, 79.5, 0} {
			var procs []gpu.Process
			if m > 0 {
				alice.MemUsed = uint64(m * (1 << 30))
				procs = []gpu.Process{alice}
			}
			if tr, ok := evalAt(e, at, device(0, m, 90, 60, procs...))["Loop/firing"]; ok {
				fired = &tr
			}
			at += time.Minute
		}
	}
	if fired == nil || len(fired.Processes) != 1 || fired.Processes[0].PID != 4244 || fired.Processes[0].User != "alice" {
		t.Fatalf("fired %+v; want it to name alice's run that died last (pid 4244)", fired)
	}
}
