package rules

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

func mustRules(t testing.TB, text string) []*Rule {
	t.Helper()
	rs, err := ParseFile("test.yaml", []byte(text))
	if err != nil {
		t.Fatalf("rules do not load: %v", err)
	}
	return rs
}

// device returns a GPU with memory used out of 80 GiB and other readings.
func device(index int, memGiB, util, temp float64, procs ...gpu.Process) gpu.Device {
	return gpu.Device{Index: index, UUID: "GPU-" + string(rune('a'+index)), Name: "NVIDIA H100 80GB HBM3",
		MemUsed: uint64(memGiB * (1 << 30)), MemTotal: 80 << 30, UtilGPU: util, UtilMem: util / 2,
		TempC: temp, PowerW: 300, PowerLimitW: 700, Processes: procs}
}

func snapshot(at time.Duration, devs ...gpu.Device) *gpu.Snapshot {
	return &gpu.Snapshot{Time: t0.Add(at), Host: "node1", Devices: devs}
}

func TestEngineFiresAndResolvesWithContext(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: NearFull
    when: memory.used_percent > 95
    for: 10s
    severity: critical
    labels: {team: ml}
    summary: "GPU {{.GPU}} memory at {{.Value | percent}} on {{.Host}}"
`), Options{})
	procs := []gpu.Process{
		{PID: 1, User: "bob", Command: "small", MemUsed: 1 << 30},
		{PID: 2, User: "alice", Command: "python train.py", Container: "docker:3f2a9c1b7e4d", MemUsed: 70 << 30},
	}
	steps := []struct {
		at    time.Duration
		mem   float64
		state string // "" for no transition
	}{
		{0, 50, ""},
		{5 * time.Second, 77, ""},  // pending
		{10 * time.Second, 78, ""}, // held 5s
		{15 * time.Second, 78, "firing"},
		{20 * time.Second, 78, ""},
		{25 * time.Second, 40, "resolved"},
	}
	var fired, resolved Transition
	for _, s := range steps {
		ts := e.Eval(snapshot(s.at, device(0, s.mem, 90, 60, procs...)))
		got := ""
		if len(ts) == 1 {
			got = ts[0].StateName()
			if got == "firing" {
				fired = ts[0]
			} else {
				resolved = ts[0]
			}
		} else if len(ts) > 1 {
			t.Fatalf("at +%v: %d transitions, want at most 1", s.at, len(ts))
		}
		if got != s.state {
			t.Fatalf("at +%v (%v GiB): got transition %q, want %q", s.at, s.mem, got, s.state)
		}
	}
	if got, want := fired.Summary, "GPU 0 memory at 97.5% on node1"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if fired.Severity != SeverityCritical || fired.Labels["team"] != "ml" || fired.Host != "node1" || fired.UUID != "GPU-a" {
		t.Errorf("fired transition lacks rule/GPU context: %+v", fired)
	}
	if len(fired.Processes) != 2 || fired.Processes[0].User != "alice" {
		t.Errorf("processes %+v, want the largest (alice) first", fired.Processes)
	}
	if !fired.StartsAt.Equal(t0.Add(15*time.Second)) || !fired.EndsAt.IsZero() {
		t.Errorf("fired StartsAt %v EndsAt %v", fired.StartsAt, fired.EndsAt)
	}
	if !resolved.EndsAt.Equal(t0.Add(25*time.Second)) || !resolved.StartsAt.Equal(fired.StartsAt) {
		t.Errorf("resolved StartsAt %v EndsAt %v", resolved.StartsAt, resolved.EndsAt)
	}
	if got, want := resolved.ValueText, "50%"; got != want {
		t.Errorf("resolved value %q, want %q (the value when it resolved)", got, want)
	}
}

func TestEngineTrendAndTimeToFull(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: Leak
    when: slope(memory.used, 10m) > 100MiB/min
    for: 15m
`), Options{})
	var fired *Transition
	// 1 GiB/min from 10 GiB, sampled every 30 s; the trend is known once
	// half of its 30 minutes are in.
	for i := 0; i <= 60 && fired == nil; i++ {
		at := time.Duration(i) * 30 * time.Second
		for _, tr := range e.Eval(snapshot(at, device(0, 10+at.Minutes(), 90, 60))) {
			fired = &tr
		}
	}
	if fired == nil {
		t.Fatal("the leak never fired")
	}
	if fired.TrendText != "" || fired.Trend != fired.Value {
		t.Errorf("trend %q (%v), want none beside the value %v, which is the rate: one number, not two", fired.TrendText, fired.Trend, fired.Value)
	}
	memNow := 10 + fired.At.Sub(t0).Minutes()
	wantFull := time.Duration((80 - memNow) * float64(time.Minute))
	if !fired.HasTimeToFull() || (fired.TimeToFull-wantFull).Abs() > time.Second {
		t.Errorf("time to full %v, want %v", fired.TimeToFull, wantFull)
	}
	if got, want := fired.Value, float64(1<<30)/60; math.Abs(got-want) > 1 {
		t.Errorf("value %v B/s, want %v", got, want)
	}
}

func TestEngineGPUSelectorAndMissingMetrics(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: Hot
    when: temperature > 85
    gpus: [1]
`), Options{})
	ts := e.Eval(snapshot(0, device(0, 1, 0, 95), device(1, 1, 0, 95), device(2, 1, 0, math.NaN())))
	if len(ts) != 1 || ts[0].GPU != 1 {
		t.Fatalf("got %d transitions (%+v), want one for GPU 1 only", len(ts), ts)
	}
	e = NewEngine(mustRules(t, `
rules:
  - alert: NotHot
    when: not (temperature > 85)
`), Options{})
	if ts := e.Eval(snapshot(0, device(0, 1, 0, math.NaN()))); len(ts) != 0 {
		t.Errorf("a condition on a missing temperature fired: %+v", ts)
	}
}

func TestEngineXIDKeepsFiring(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: Xid
    when: xid in (79)
    keep_firing_for: 1m
`), Options{})
	s := snapshot(0, device(0, 1, 0, 50))
	s.Events = []gpu.Event{{Kind: gpu.EventXID, GPU: 0, XID: 79}, {Kind: gpu.EventXID, GPU: 1, XID: 79}}
	ts := e.Eval(s)
	if len(ts) != 1 || ts[0].StateName() != "firing" || ts[0].Value != 79 {
		t.Fatalf("got %+v, want XID 79 firing on GPU 0", ts)
	}
	for _, at := range []time.Duration{5 * time.Second, 64 * time.Second} {
		if ts := e.Eval(snapshot(at, device(0, 1, 0, 50))); len(ts) != 0 {
			t.Fatalf("at +%v: %+v, want still firing (keep_firing_for)", at, ts)
		}
	}
	if ts := e.Eval(snapshot(65*time.Second, device(0, 1, 0, 50))); len(ts) != 1 || !ts[0].Resolved() {
		t.Fatalf("at +65s: %+v, want resolved a minute after the event stopped", ts)
	}
}

func TestEngineRepeats(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: Hot
    when: temperature > 85
  - alert: HotHourly
    when: temperature > 85
    repeat_interval: 1h
`), Options{RepeatInterval: 4 * time.Hour})
	counts := map[string]int{}
	for at := time.Duration(0); at <= 4*time.Hour; at += time.Minute {
		for _, tr := range e.Eval(snapshot(at, device(0, 1, 50, 90))) {
			if tr.Repeat {
				counts[tr.Alert]++
			}
		}
	}
	if counts["Hot"] != 1 || counts["HotHourly"] != 4 {
		t.Errorf("repeats %v, want Hot 1 (every 4h) and HotHourly 4 (every hour)", counts)
	}
}

func TestEngineInheritKeepsState(t *testing.T) {
	old := NewEngine(mustRules(t, `
rules:
  - alert: Hot
    when: temperature > 85
  - alert: Idle
    when: avg(utilization.gpu, 10m) < 5
`), Options{})
	for at := time.Duration(0); at <= 10*time.Minute; at += time.Minute {
		old.Eval(snapshot(at, device(0, 1, 0, 90)))
	}
	e := NewEngine(mustRules(t, `
rules:
  - alert: Hot
    when: temperature > 85
    summary: changed text
  - alert: Idle
    when: avg(utilization.gpu, 10m) < 5
  - alert: New
    when: temperature > 0
`), Options{})
	e.Inherit(old)
	ts := e.Eval(snapshot(11*time.Minute, device(0, 1, 0, 90)))
	if len(ts) != 1 || ts[0].Alert != "New" {
		t.Fatalf("after a reload got %+v, want only the new rule to fire (Hot and Idle were firing already)", ts)
	}
	var names []string
	for _, a := range e.Active() {
		names = append(names, a.Rule.Name+"="+a.State.String())
	}
	if got, want := strings.Join(names, " "), "Hot=firing Idle=firing New=firing"; got != want {
		t.Errorf("active %q, want %q", got, want)
	}
}

func TestEngineEvalDoesNotAllocate(t *testing.T) {
	rs := mustRules(t, `
rules:
  - alert: A
    when: memory.used_percent > 95
    for: 1m
  - alert: B
    when: slope(memory.used, 30m) > 100MiB/min and slope(memory.used, 5m) > 50MiB/min
  - alert: C
    when: time_to_full(memory.used, 15m) < 30m
  - alert: D
    when: memory.used > 1GiB and avg(utilization.gpu, 30m) < 5
  - alert: E
    when: temperature > 85
    clear_when: temperature < 80
  - alert: F
    when: xid in (48, 79)
`)
	e := NewEngine(rs, Options{})
	s := steadySnapshot(8)
	warm(e, s, 2000)
	allocs := testing.AllocsPerRun(100, func() { advance(s); e.Eval(s) })
	if allocs != 0 {
		t.Errorf("Eval allocates %v times per snapshot in steady state, want 0", allocs)
	}
}

// steadySnapshot is n healthy GPUs: no rule fires, so Eval does its steady
// work only.
func steadySnapshot(n int) *gpu.Snapshot {
	s := &gpu.Snapshot{Time: t0, Host: "node1"}
	for i := range n {
		d := device(i, 40, 80, 60, gpu.Process{PID: 100 + i, User: "alice", MemUsed: 40 << 30})
		d.UUID = "GPU-" + strings.Repeat("x", i+1)
		s.Devices = append(s.Devices, d)
	}
	return s
}

// advance moves the snapshot 5 s on with slightly different readings.
func advance(s *gpu.Snapshot) { advanceBy(s, 5*time.Second) }

// advanceBy moves the snapshot step on with slightly different readings.
func advanceBy(s *gpu.Snapshot, step time.Duration) {
	s.Time = s.Time.Add(step)
	for i := range s.Devices {
		d := &s.Devices[i]
		d.MemUsed = 40<<30 + uint64(s.Time.Unix()%7)<<20
		d.UtilGPU = 70 + float64(s.Time.Unix()%20)
		d.TempC = 60 + float64(s.Time.Unix()%5)
	}
}

func warm(e *Engine, s *gpu.Snapshot, n int) {
	for range n {
		advance(s)
		e.Eval(s)
	}
}

// TestEngineWindowsKeepWhatRulesRead checks that a GPU's windows keep up
// to date only the statistics its rules read, and that a reload whose
// rules read more of a window it keeps answers from its samples at once.
func TestEngineWindowsKeepWhatRulesRead(t *testing.T) {
	old := NewEngine(mustRules(t, `
rules:
  - alert: Hot
    when: max(temperature, 2m) > 85
  - alert: Idle
    when: max(utilization.gpu, 5m) < 5
    clear_when: avg(utilization.gpu, 5m) > 20
`), Options{})
	temps := []float64{70, 90, 80, 75}
	for i, temp := range temps {
		old.Eval(snapshot(time.Duration(i)*30*time.Second, device(0, 1, 0, temp)))
	}
	gs := old.gpus["GPU-a"]
	if got := []windowStats{gs.windows[0].keeps, gs.windows[1].keeps}; got[0] != statMax || got[1] != statAll {
		t.Fatalf("the windows keep %b, want max() of temperature to keep %b, max() and avg() of utilization %b", got, statMax, statAll)
	}
	e := NewEngine(mustRules(t, `
rules:
  - alert: Warm
    when: avg(temperature, 2m) > 85
`), Options{})
	e.Inherit(old)
	w := e.gpus["GPU-a"].windows[0]
	if w.keeps != statAll {
		t.Errorf("after a reload to avg() the temperature window keeps %b, want %b", w.keeps, statAll)
	}
	if got, want := w.Avg(), (70.0+90+80+75)/4; math.Abs(got-want) > 1e-12 {
		t.Errorf("avg(temperature, 2m) after the reload = %v, want %v, from the samples the window kept", got, want)
	}
}
