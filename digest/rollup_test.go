package digest

import (
	"context"
	"errors"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/replay"
)

const rollGiB = 1 << 30

var rollBase = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// rollReadTrace reads every snapshot of a trace in testdata.
func rollReadTrace(t *testing.T, name string) []*gpu.Snapshot {
	t.Helper()
	rd, err := replay.Open("testdata/"+name, replay.Options{Host: "h1"})
	if err != nil {
		t.Fatalf("opening %s: %v", name, err)
	}
	defer rd.Close()
	var snaps []*gpu.Snapshot
	for {
		s, err := rd.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return snaps
		}
		if err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		snaps = append(snaps, s)
	}
}

// rollExpect computes GPU hours independently of Rollups: a plain pass
// over the snapshots per GPU, following the documented rules. The traces
// name no process: a GPU's resting level is the least memory it has held,
// counting only what is at most 2 GiB; it is held idle after five minutes
// without a sample at 5 % or more.
func rollExpect(snaps []*gpu.Snapshot) map[string]*GPUHour {
	type prev struct {
		t     time.Time
		gap   time.Duration
		power float64
		rest  uint64
		busy  time.Time // the latest busy sample
	}
	last := map[string]*prev{}
	out := map[string]*GPUHour{}
	for _, s := range snaps {
		hour := s.Time.UTC().Truncate(time.Hour)
		for _, d := range s.Devices {
			key := hour.Format(time.RFC3339) + d.UUID
			h := out[key]
			if h == nil {
				h = &GPUHour{Hour: hour, GPU: d.Index, UUID: d.UUID, Name: d.Name, Host: s.Host}
				out[key] = h
			}
			dt, p := 0.0, last[d.UUID]
			if p != nil {
				gap := s.Time.Sub(p.t)
				if gap <= 5*time.Minute && (p.gap == 0 || gap <= 3*p.gap) {
					dt = gap.Seconds()
				}
				if dt > 0 && !math.IsNaN(p.power) && !math.IsNaN(d.PowerW) {
					h.EnergyJoules += (p.power + d.PowerW) / 2 * dt
				}
				p.gap = gap
			} else {
				p = &prev{rest: math.MaxUint64}
				last[d.UUID] = p
			}
			if d.MemUsed <= 2*rollGiB {
				p.rest = min(p.rest, d.MemUsed)
			}
			rest := p.rest
			if rest == math.MaxUint64 {
				rest = 0
			}
			p.t, p.power = s.Time, d.PowerW
			h.Samples++
			h.Seconds += dt
			h.UtilSeconds += d.UtilGPU / 100 * dt
			h.UtilMax = math.Max(h.UtilMax, d.UtilGPU)
			h.MemMax = max(h.MemMax, d.MemUsed)
			h.MemTotal = d.MemTotal
			h.TempMax = math.Max(h.TempMax, d.TempC)
			if d.UtilGPU >= BusyPercent {
				h.BusySeconds += dt
				p.busy = s.Time
			} else if d.MemUsed >= rest+HeldBytes && (p.busy.IsZero() || s.Time.Sub(p.busy) >= 5*time.Minute) {
				h.IdleHeldSeconds += dt
			}
		}
	}
	return out
}

func rollClose(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func rollCompareGPU(t *testing.T, got GPUHour, want *GPUHour) {
	t.Helper()
	where := got.Hour.Format(time.RFC3339) + " GPU " + got.UUID
	if got.Samples != want.Samples || got.MemMax != want.MemMax || got.MemTotal != want.MemTotal ||
		got.GPU != want.GPU || got.Name != want.Name || got.Host != want.Host {
		t.Errorf("%s: got %+v, want %+v", where, got, *want)
	}
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"Seconds", got.Seconds, want.Seconds},
		{"UtilSeconds", got.UtilSeconds, want.UtilSeconds},
		{"UtilMax", got.UtilMax, want.UtilMax},
		{"BusySeconds", got.BusySeconds, want.BusySeconds},
		{"IdleHeldSeconds", got.IdleHeldSeconds, want.IdleHeldSeconds},
		{"TempMax", got.TempMax, want.TempMax},
		{"EnergyJoules", got.EnergyJoules, want.EnergyJoules},
	} {
		if !rollClose(f.got, f.want) {
			t.Errorf("%s: %s: got %v, want %v", where, f.name, f.got, f.want)
		}
	}
}

func TestRollupsTraces(t *testing.T) {
	tests := []struct {
		trace string
		// drop removes the snapshots in [from, to) seconds after the
		// first, making a gap that must not be bridged.
		dropFrom, dropTo float64
	}{
		{trace: "idle-hog.csv"},
		{trace: "batch-spike.csv"},
		{trace: "idle-hog.csv", dropFrom: 1000, dropTo: 1400},
		{trace: "batch-spike.csv", dropFrom: 300, dropTo: 330},
	}
	for _, tt := range tests {
		all := rollReadTrace(t, tt.trace)
		var snaps []*gpu.Snapshot
		for _, s := range all {
			sec := s.Time.Sub(all[0].Time).Seconds()
			if sec < tt.dropFrom || sec >= tt.dropTo {
				snaps = append(snaps, s)
			}
		}
		r := NewRollups()
		for _, s := range snaps {
			r.Update(s)
		}
		want := rollExpect(snaps)
		gpus, users, alerts := r.Window(snaps[0].Time, snaps[len(snaps)-1].Time.Add(time.Hour))
		if len(gpus) != len(want) {
			t.Errorf("%s: got %d GPU hours, want %d", tt.trace, len(gpus), len(want))
		}
		if len(users) != 0 || len(alerts) != 0 {
			t.Errorf("%s: got %d user and %d alert hours, want none (the trace has no processes)", tt.trace, len(users), len(alerts))
		}
		var covered float64
		for _, g := range gpus {
			w := want[g.Hour.Format(time.RFC3339)+g.UUID]
			if w == nil {
				t.Errorf("%s: unexpected hour %v of %s", tt.trace, g.Hour, g.UUID)
				continue
			}
			rollCompareGPU(t, g, w)
			covered += g.Seconds
		}
		// Each GPU covers the trace's span less the dropped part and the
		// first interval after it.
		span := snaps[len(snaps)-1].Time.Sub(snaps[0].Time).Seconds()
		if tt.dropTo > tt.dropFrom {
			before := snaps[0].Time
			for _, s := range snaps {
				if s.Time.Sub(snaps[0].Time).Seconds() < tt.dropFrom {
					before = s.Time
				}
			}
			span -= rollFirstAfter(snaps, before).Sub(before).Seconds()
		}
		if n := float64(len(snaps[0].Devices)); math.Abs(covered-n*span) > n*0.1 {
			t.Errorf("%s: got %v seconds covered, want about %v", tt.trace, covered, n*span)
		}
	}
}

func rollFirstAfter(snaps []*gpu.Snapshot, t time.Time) time.Time {
	for _, s := range snaps {
		if s.Time.After(t) {
			return s.Time
		}
	}
	return t
}

func TestRollupsIdleHogTrace(t *testing.T) {
	snaps := rollReadTrace(t, "idle-hog.csv")
	r := NewRollups()
	for _, s := range snaps {
		r.Update(s)
	}
	gpus, _, _ := r.Window(snaps[0].Time, snaps[len(snaps)-1].Time.Add(time.Hour))
	held := map[int]float64{}
	for _, g := range gpus {
		held[g.GPU] += g.IdleHeldSeconds
	}
	// GPU 1 holds 20 GiB and computes nothing from 897 s to the end of
	// the 2 h trace: held idle from five minutes later.
	if got, want := held[1], 7200.0-897-300; math.Abs(got-want) > 60 {
		t.Errorf("GPU 1 idle-held: got %v s, want about %v s", got, want)
	}
	if held[0] != 0 {
		t.Errorf("GPU 0 idle-held: got %v s, want 0", held[0])
	}
}

// TestRollupsHeldAboveRestingLevel: a GPU is held when 1 GiB or more is
// in use above its resting level, the memory it holds with no job on it
// (as memory.held counts it): a card resting at 1.2 GiB, which a log
// shows without processes, is not held idle; a job taking 20 GiB more
// is, and a job whose processes the source names counts what they hold.
func TestRollupsHeldAboveRestingLevel(t *testing.T) {
	r := NewRollups()
	for sec := 0.0; sec < 3600; sec += 5 { // resting at 1.2 GiB, idle
		r.Update(rollSnap(sec, rollDev(0, 6*rollGiB/5, 60)))
	}
	if g, _ := rollTotals(r); g.IdleHeldSeconds != 0 {
		t.Errorf("resting at 1.2 GiB: %v s held idle, want none", g.IdleHeldSeconds)
	}
	for sec := 3600.0; sec <= 5400; sec += 5 { // a job holds 20 GiB more, idle
		r.Update(rollSnap(sec, rollDev(0, 6*rollGiB/5+20*rollGiB, 60)))
	}
	if g, _ := rollTotals(r); math.Abs(g.IdleHeldSeconds-1800) > 5 {
		t.Errorf("20 GiB above the resting level for 30 minutes: %v s held idle, want 1800", g.IdleHeldSeconds)
	}

	// A GPU that rests at 1.5 GiB beside its processes: the processes'
	// 2 GiB is held, the rest is the card's.
	r = NewRollups()
	proc := gpu.Process{PID: 1, User: "alice", MemUsed: 2 * rollGiB}
	for sec := 0.0; sec <= 600; sec += 5 {
		r.Update(rollSnap(sec, rollDev(0, 7*rollGiB/2, 60, proc)))
	}
	if g, u := rollTotals(r); g.IdleHeldSeconds != 600 || u["alice"].IdleHeldSeconds != 600 {
		t.Errorf("2 GiB of processes above 1.5 GiB at rest: %v s held idle (alice %v s), want 600", g.IdleHeldSeconds, u["alice"].IdleHeldSeconds)
	}
}

// TestRollupsTrickleIsNotIdle: a service answering a trickle of requests
// (a short burst every few minutes, most samples at 0 %) is not held idle;
// a GPU is held idle once it has computed nothing for IdleWindow, as
// GPUIdleButHeld says.
func TestRollupsTrickleIsNotIdle(t *testing.T) {
	r := NewRollups()
	sec := 0.0
	for ; sec < 3600; sec += 5 { // a 10 s burst every 4 minutes
		util := 0.0
		if int(sec)%240 < 10 {
			util = 12
		}
		r.Update(rollSnap(sec, rollDev(util, 20*rollGiB, 80)))
	}
	if g, _ := rollTotals(r); g.IdleHeldSeconds != 0 || g.BusySeconds == 0 {
		t.Errorf("a trickle of requests: %v s held idle, %v s busy; want none idle", g.IdleHeldSeconds, g.BusySeconds)
	}
	last := 3600.0 - 240 + 5 // the last busy sample
	for ; sec <= 7200; sec += 5 {
		r.Update(rollSnap(sec, rollDev(0, 20*rollGiB, 60)))
	}
	want := 7200 - (last + IdleWindow.Seconds())
	if g, _ := rollTotals(r); math.Abs(g.IdleHeldSeconds-want) > 5 {
		t.Errorf("no request for an hour: %v s held idle, want %v (from %v after the last request)", g.IdleHeldSeconds, want, IdleWindow)
	}
}

// rollDev is a device with the readings the synthetic tests vary.
func rollDev(util float64, mem uint64, power float64, procs ...gpu.Process) gpu.Device {
	return gpu.Device{
		Index: 0, UUID: "GPU-a", Name: "A100", MemUsed: mem, MemTotal: 40 * rollGiB,
		UtilGPU: util, UtilMem: 0, TempC: 50, PowerW: power, PowerLimitW: 400, Processes: procs,
	}
}

func rollSnap(sec float64, devs ...gpu.Device) *gpu.Snapshot {
	return &gpu.Snapshot{Time: rollBase.Add(time.Duration(sec * 1e9)), Host: "h1", Devices: devs}
}

func rollTotals(r *Rollups) (GPUHour, map[string]UserHour) {
	gpus, users, _ := r.Window(rollBase.Add(-24*time.Hour), rollBase.Add(24*time.Hour))
	var g GPUHour
	for _, h := range gpus {
		g.Samples += h.Samples
		g.Seconds += h.Seconds
		g.UtilSeconds += h.UtilSeconds
		g.BusySeconds += h.BusySeconds
		g.IdleHeldSeconds += h.IdleHeldSeconds
		g.EnergyJoules += h.EnergyJoules
		g.UtilMax = max(g.UtilMax, h.UtilMax)
		g.MemMax = max(g.MemMax, h.MemMax)
	}
	u := map[string]UserHour{}
	for _, h := range users {
		s := u[h.User]
		s.User = h.User
		s.GPUSeconds += h.GPUSeconds
		s.ByteSeconds += h.ByteSeconds
		s.IdleHeldSeconds += h.IdleHeldSeconds
		s.IdleHeldMax = max(s.IdleHeldMax, h.IdleHeldMax)
		u[h.User] = s
	}
	return g, u
}

func TestRollupsGaps(t *testing.T) {
	tests := []struct {
		name    string
		times   []float64
		seconds float64
	}{
		{"steady", []float64{0, 5, 10, 15}, 15},
		{"gap over 3 intervals", []float64{0, 5, 10, 30, 35}, 10 + 5},
		{"gap of exactly 3 intervals", []float64{0, 5, 20}, 20},
		{"second sample after 5 min", []float64{0, 301, 306}, 5},
		{"second sample within 5 min", []float64{0, 300}, 300},
		{"slow interval over 5 min", []float64{0, 200, 400, 701}, 400},
		{"same time twice", []float64{0, 5, 5, 10}, 10},
		{"backwards", []float64{0, 5, 3, 10}, 10},
	}
	for _, tt := range tests {
		r := NewRollups()
		for _, sec := range tt.times {
			r.Update(rollSnap(sec, rollDev(50, 0, 100)))
		}
		g, _ := rollTotals(r)
		if g.Seconds != tt.seconds {
			t.Errorf("%s: got %v seconds covered, want %v", tt.name, g.Seconds, tt.seconds)
		}
		if want := tt.seconds * 100; !rollClose(g.EnergyJoules, want) {
			t.Errorf("%s: got %v J, want %v", tt.name, g.EnergyJoules, want)
		}
	}
}

func TestRollupsEnergyTrapezoid(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		times  []float64
		powers []float64
		want   float64
	}{
		// (100+200)/2*5 + (200+300)/2*10
		{"three samples", []float64{0, 5, 15}, []float64{100, 200, 300}, 750 + 2500},
		{"NaN in the middle", []float64{0, 5, 15}, []float64{100, nan, 300}, 0},
		{"NaN first", []float64{0, 5, 15}, []float64{nan, 200, 300}, 2500},
		{"gap not bridged", []float64{0, 5, 100}, []float64{100, 200, 300}, 750},
	}
	for _, tt := range tests {
		r := NewRollups()
		for i, sec := range tt.times {
			r.Update(rollSnap(sec, rollDev(50, 0, tt.powers[i])))
		}
		g, _ := rollTotals(r)
		if !rollClose(g.EnergyJoules, tt.want) {
			t.Errorf("%s: got %v J, want %v", tt.name, g.EnergyJoules, tt.want)
		}
	}
}

func TestRollupsUsers(t *testing.T) {
	proc := func(user string, mem uint64) gpu.Process { return gpu.Process{PID: 1, User: user, MemUsed: mem} }
	tests := []struct {
		name  string
		util  float64
		procs []gpu.Process
		want  map[string]UserHour // totals over 10 s (two samples of dt 5)
	}{
		{
			name:  "shared by memory",
			util:  90,
			procs: []gpu.Process{proc("alice", 2*rollGiB), proc("bob", rollGiB), proc("alice", rollGiB)},
			want: map[string]UserHour{
				"alice": {User: "alice", GPUSeconds: 7.5, ByteSeconds: 10 * 3 * rollGiB},
				"bob":   {User: "bob", GPUSeconds: 2.5, ByteSeconds: 10 * rollGiB},
			},
		},
		{
			name:  "no memory: split per process",
			util:  90,
			procs: []gpu.Process{proc("alice", 0), proc("bob", 0), proc("alice", 0), proc("", 0)},
			want: map[string]UserHour{
				"alice":   {User: "alice", GPUSeconds: 5},
				"bob":     {User: "bob", GPUSeconds: 2.5},
				"unknown": {User: "unknown", GPUSeconds: 2.5},
			},
		},
		{
			name:  "idle held",
			util:  0,
			procs: []gpu.Process{proc("alice", 18*rollGiB), proc("bob", rollGiB/2)},
			want: map[string]UserHour{
				"alice": {User: "alice", GPUSeconds: 10 * 36.0 / 37, ByteSeconds: 10 * 18 * rollGiB, IdleHeldSeconds: 10, IdleHeldMax: 18 * rollGiB},
				"bob":   {User: "bob", GPUSeconds: 10 * 1.0 / 37, ByteSeconds: 10 * rollGiB / 2},
			},
		},
		{
			name:  "a pod named without its processes (dcgm-exporter) counts as the pod",
			util:  90,
			procs: []gpu.Process{func() gpu.Process { p := gpu.PodProcess("ml", "train-0", "trainer"); p.MemUsed = rollGiB; return p }()},
			want: map[string]UserHour{
				"ml/train-0": {User: "ml/train-0", GPUSeconds: 10, ByteSeconds: 10 * rollGiB},
			},
		},
		{
			name:  "held but busy",
			util:  5,
			procs: []gpu.Process{proc("alice", 18*rollGiB)},
			want: map[string]UserHour{
				"alice": {User: "alice", GPUSeconds: 10, ByteSeconds: 10 * 18 * rollGiB},
			},
		},
	}
	for _, tt := range tests {
		r := NewRollups()
		var mem uint64
		for _, p := range tt.procs {
			mem += p.MemUsed
		}
		for _, sec := range []float64{0, 5, 10} {
			r.Update(rollSnap(sec, rollDev(tt.util, mem, 100, tt.procs...)))
		}
		g, users := rollTotals(r)
		if len(users) != len(tt.want) {
			t.Errorf("%s: got users %v, want %v", tt.name, users, tt.want)
		}
		for name, w := range tt.want {
			u := users[name]
			if !rollClose(u.GPUSeconds, w.GPUSeconds) || !rollClose(u.ByteSeconds, w.ByteSeconds) ||
				u.IdleHeldSeconds != w.IdleHeldSeconds || u.IdleHeldMax != w.IdleHeldMax {
				t.Errorf("%s: user %s: got %+v, want %+v", tt.name, name, u, w)
			}
		}
		wantIdle := 0.0
		if tt.util < BusyPercent && mem >= HeldBytes {
			wantIdle = 10
		}
		if g.IdleHeldSeconds != wantIdle {
			t.Errorf("%s: GPU idle-held: got %v s, want %v", tt.name, g.IdleHeldSeconds, wantIdle)
		}
	}
}

func TestRollupsHourBoundaries(t *testing.T) {
	r := NewRollups()
	// Samples every 5 s from 09:59:50 to 10:00:10: 09:00 gets the 5 s up
	// to 09:59:55, and the sample at 10:00:00 brings its 5 s into 10:00.
	for sec := -10.0; sec <= 10; sec += 5 {
		r.Update(rollSnap(3600+sec, rollDev(100, 0, 100)))
	}
	tests := []struct {
		from, to time.Time
		hours    []time.Time
		seconds  []float64
	}{
		{rollBase, rollBase.Add(3 * time.Hour), []time.Time{rollBase, rollBase.Add(time.Hour)}, []float64{5, 15}},
		{rollBase.Add(59 * time.Minute), rollBase.Add(time.Hour), []time.Time{rollBase}, []float64{5}},
		{rollBase.Add(time.Hour), rollBase.Add(time.Hour + time.Second), []time.Time{rollBase.Add(time.Hour)}, []float64{15}},
		{rollBase.Add(2 * time.Hour), rollBase.Add(3 * time.Hour), nil, nil},
	}
	for _, tt := range tests {
		gpus, _, _ := r.Window(tt.from, tt.to)
		var hours []time.Time
		var secs []float64
		for _, g := range gpus {
			hours = append(hours, g.Hour)
			secs = append(secs, g.Seconds)
		}
		if !reflect.DeepEqual(hours, tt.hours) || !reflect.DeepEqual(secs, tt.seconds) {
			t.Errorf("Window(%v, %v): got hours %v seconds %v, want %v %v", tt.from, tt.to, hours, secs, tt.hours, tt.seconds)
		}
	}
}

func TestRollupsRecordAlert(t *testing.T) {
	r := NewRollups()
	r.RecordAlert("hot", rollBase.Add(10*time.Minute), 3*time.Minute)
	r.RecordAlert("hot", rollBase.Add(20*time.Minute), 9*time.Minute)
	r.RecordAlert("hot", rollBase.Add(30*time.Minute), time.Minute)
	r.RecordAlert("hot", rollBase.Add(70*time.Minute), 2*time.Minute)
	r.RecordAlert("idle", rollBase.Add(5*time.Minute), 0)
	_, _, alerts := r.Window(rollBase, rollBase.Add(2*time.Hour))
	want := []AlertHour{
		{Hour: rollBase, Alert: "hot", Fired: 3, LongestSeconds: 540},
		{Hour: rollBase, Alert: "idle", Fired: 1, LongestSeconds: 0},
		{Hour: rollBase.Add(time.Hour), Alert: "hot", Fired: 1, LongestSeconds: 120},
	}
	if !reflect.DeepEqual(alerts, want) {
		t.Errorf("got alerts %+v, want %+v", alerts, want)
	}
}

// rollFill feeds two GPUs with two users each across three hours.
func rollFill(r *Rollups, from, to float64) {
	for sec := from; sec < to; sec += 5 {
		a := rollDev(float64(int(sec)%100), 20*rollGiB, 200+sec/100,
			gpu.Process{User: "alice", MemUsed: 15 * rollGiB}, gpu.Process{User: "bob", MemUsed: 5 * rollGiB})
		b := rollDev(2, 3*rollGiB, 80, gpu.Process{User: "carol", MemUsed: 3 * rollGiB})
		b.Index, b.UUID = 1, "GPU-b"
		r.Update(rollSnap(sec, a, b))
	}
}

func TestRollupsDirtyLoad(t *testing.T) {
	r := NewRollups()
	rollFill(r, 0, 2.5*3600)
	r.RecordAlert("hot", rollBase.Add(time.Hour), time.Minute)
	records := r.Dirty()
	// 3 hours × (2 GPUs + 3 users) + 1 alert
	if got, want := len(records), 3*5+1; got != want {
		t.Errorf("got %d records, want %d", got, want)
	}
	for _, k := range []string{"2026-11-30T09/gpu/h1/GPU-a", "2026-11-30T10/user/h1/GPU-b/carol", "2026-11-30T10/alert/hot"} {
		if _, ok := records[k]; !ok {
			t.Errorf("records lack key %q", k)
		}
	}
	if got := r.Dirty(); len(got) != 0 {
		t.Errorf("second Dirty: got %d records, want 0", len(got))
	}

	loaded := NewRollups()
	if err := loaded.Load(records); err != nil {
		t.Fatalf("Load: %v", err)
	}
	from, to := rollBase, rollBase.Add(3*time.Hour)
	g1, u1, a1 := r.Window(from, to)
	g2, u2, a2 := loaded.Window(from, to)
	if !reflect.DeepEqual(g1, g2) || !reflect.DeepEqual(u1, u2) || !reflect.DeepEqual(a1, a2) {
		t.Errorf("after Load: got %+v %+v %+v, want %+v %+v %+v", g2, u2, a2, g1, u1, a1)
	}

	// A restart in the middle of the last hour continues its buckets; only
	// that hour is dirty again.
	rollFill(r, 2.5*3600+60, 2.8*3600)
	rollFill(loaded, 2.5*3600+60, 2.8*3600)
	again := r.Dirty()
	for k := range again {
		if !strings.HasPrefix(k, "2026-11-30T11/") {
			t.Errorf("dirty after more samples of 11:00: got key %q, want only 11:00 keys", k)
		}
	}
	g1, u1, a1 = r.Window(from, to)
	g2, u2, a2 = loaded.Window(from, to)
	if !reflect.DeepEqual(g1, g2) || !reflect.DeepEqual(u1, u2) || !reflect.DeepEqual(a1, a2) {
		t.Errorf("after restart and more samples: got %+v, want %+v", g2, g1)
	}
	// Loading into a Rollups with live states replaces their records.
	if err := r.Load(records); err != nil {
		t.Fatalf("Load over live records: %v", err)
	}
	g1, _, _ = r.Window(from, to)
	g2, _, _ = rollLoaded(t, records).Window(from, to)
	if !reflect.DeepEqual(g1, g2) {
		t.Errorf("Load over live records: got %+v, want %+v", g1, g2)
	}
}

// rollLoaded returns new Rollups loaded with records.
func rollLoaded(t *testing.T, records map[string][]byte) *Rollups {
	t.Helper()
	r := NewRollups()
	if err := r.Load(records); err != nil {
		t.Fatalf("Load: %v", err)
	}
	return r
}

func TestRollupsLoadErrors(t *testing.T) {
	good := `{"hour":"2026-11-30T09:00:00Z","gpu":0,"uuid":"GPU-a","name":"A100","host":"h1","samples":1,"seconds":5,"util_seconds":0,"util_max":0,"mem_max_bytes":0,"mem_total_bytes":0,"busy_seconds":0,"idle_held_seconds":0,"temp_max_c":0,"energy_joules":0}`
	tests := []struct {
		key, value, want string
	}{
		{"2026-11-30T09/gpu/GPU-a", `{"hour":`, "does not decode"},
		{"2026-11-30T09/gpu/GPU-a", `{"hour":"2026-11-30T09:00:00Z","extra":1}`, "unknown field"},
		{"2026-11-30T09/gpu/GPU-a", good + `{}`, "data after the record"},
		{"2026-11-30T09/gpu/GPU-b", good, `names "GPU-b" but the record is for "h1/GPU-a"`},
		{"2026-11-30T09/gpu/h2/GPU-a", good, `names "h2/GPU-a" but the record is for "h1/GPU-a"`},
		{"2026-11-30T10/gpu/GPU-a", good, "is not the key's"},
		{"2026-11-30/gpu/GPU-a", good, "is not like 2026-11-30T09"},
		{"2026-11-30T09", good, "not HOUR/KIND/ID"},
		{"2026-11-30T09/disk/GPU-a", good, `unknown record kind "disk"`},
		{"2026-11-30T09/user/GPU-a/alice", `{"hour":"2026-11-30T09:00:00Z","user":"bob","gpu":0,"uuid":"GPU-a"}`, `but the record is for "GPU-a/bob"`},
		{"2026-11-30T09/alert/hot", `{"hour":"2026-11-30T09:00:00Z","alert":"cold"}`, `but the record is for "cold"`},
	}
	for _, tt := range tests {
		err := NewRollups().Load(map[string][]byte{tt.key: []byte(tt.value)})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.key) {
			t.Errorf("Load(%s: %s): got error %v, want one naming the key and saying %q", tt.key, tt.value, err, tt.want)
		}
	}
}

func TestRollupsPrune(t *testing.T) {
	r := NewRollups()
	rollFill(r, 0, 2.5*3600)
	r.RecordAlert("hot", rollBase, time.Minute)
	tests := []struct {
		before time.Time
		keys   int
		left   int // GPU hours left
	}{
		{rollBase.Add(59 * time.Minute), 0, 6},
		{rollBase.Add(time.Hour), 5 + 1, 4},
		{rollBase.Add(time.Hour), 0, 4},
		{rollBase.Add(100 * time.Hour), 10, 0},
	}
	for _, tt := range tests {
		keys := r.Prune(tt.before)
		gpus, _, _ := r.Window(rollBase, rollBase.Add(3*time.Hour))
		if len(keys) != tt.keys || len(gpus) != tt.left {
			t.Errorf("Prune(%v): got %d keys (%v) and %d GPU hours left, want %d and %d", tt.before, len(keys), keys, len(gpus), tt.keys, tt.left)
		}
	}
	// The pruned current hour starts over with the next sample.
	rollFill(r, 2.6*3600, 2.7*3600)
	gpus, users, _ := r.Window(rollBase, rollBase.Add(3*time.Hour))
	if len(gpus) != 2 || len(users) != 3 || gpus[0].Samples != 72 {
		t.Errorf("after Prune and more samples: got %d GPU hours and %d user hours, want 2 and 3 with 72 samples: %+v", len(gpus), len(users), gpus)
	}
}

func TestRollupsUpdateAllocs(t *testing.T) {
	s := rollBenchSnapshot(8)
	r := NewRollups()
	r.Update(s)
	allocs := testing.AllocsPerRun(100, func() {
		s.Time = s.Time.Add(5 * time.Millisecond)
		r.Update(s)
	})
	if allocs != 0 {
		t.Errorf("Update in steady state: got %v allocations per snapshot, want 0", allocs)
	}
}

func FuzzRollupsLoad(f *testing.F) {
	r := NewRollups()
	rollFill(r, 0, 20)
	r.RecordAlert("hot", rollBase, time.Minute)
	for k, v := range r.Dirty() {
		f.Add(k, v)
	}
	f.Add("2026-11-30T09/gpu/#0", []byte(`{"hour":"2026-11-30T09:00:00Z","gpu":0}`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		r := NewRollups()
		if err := r.Load(map[string][]byte{key: value}); err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(key)) {
				t.Errorf("error %q does not name the key %q", err, key)
			}
			return
		}
		// What loads comes back out of Dirty after an update of its hour.
		gpus, users, alerts := r.Window(time.Unix(-1<<40, 0), time.Unix(1<<40, 0))
		if len(gpus)+len(users)+len(alerts) != 1 {
			t.Errorf("loaded one record, Window got %d+%d+%d", len(gpus), len(users), len(alerts))
		}
	})
}

// TestRollupsFleet: the snapshots of two hosts, one after the other as a
// hub gets them, keep apart GPUs whose indexes and even UUIDs repeat, and
// cost no allocation once known.
func TestRollupsFleet(t *testing.T) {
	r := NewRollups()
	snaps := []*gpu.Snapshot{rollBenchSnapshot(8), rollBenchSnapshot(8), rollBenchSnapshot(2)}
	snaps[1].Host = "h2"
	snaps[2].Host = "h3"
	for i := range snaps[2].Devices {
		snaps[2].Devices[i].UUID = "" // GPUs known by index only
	}
	step := func() {
		for _, s := range snaps {
			r.Update(s)
			s.Time = s.Time.Add(5 * time.Second)
		}
	}
	for range 12 {
		step()
	}
	if allocs := testing.AllocsPerRun(50, step); allocs != 0 {
		t.Errorf("Update of three hosts in steady state: got %v allocations, want 0", allocs)
	}
	gpus, users, _ := r.Window(rollBase, rollBase.Add(time.Hour))
	if len(gpus) != 18 || len(users) != 36 {
		t.Fatalf("got %d GPU hours and %d user hours, want 18 and 36 (8+8+2 GPUs, two users each)", len(gpus), len(users))
	}
	for _, h := range gpus {
		if h.Samples != 12+1+50 || h.Host == "" { // AllocsPerRun runs once more than asked
			t.Errorf("%s GPU %d: got %d samples, want 63 (its host's alone)", h.Host, h.GPU, h.Samples)
		}
	}
	for _, u := range users {
		if u.Host == "" {
			t.Errorf("user hour %+v: got no host, want its GPU's", u)
		}
	}
	records := r.Dirty()
	for _, k := range []string{"2026-11-30T09/gpu/h1/GPU-0-0000-0000-0000-000000000000", "2026-11-30T09/gpu/h2/GPU-0-0000-0000-0000-000000000000",
		"2026-11-30T09/gpu/h3/#1", "2026-11-30T09/user/h3/#1/bob"} {
		if _, ok := records[k]; !ok {
			t.Errorf("records lack key %q", k)
		}
	}
	if g, u, _ := rollLoaded(t, records).Window(rollBase, rollBase.Add(time.Hour)); !reflect.DeepEqual(g, gpus) || !reflect.DeepEqual(u, users) {
		t.Errorf("after Load: the fleet's hours differ")
	}
}

// TestRollupsLoadBeforeHosts: records written before hosts were part of
// the key load under their keys; the hour they were in goes on under the
// new keys, both count, and Prune deletes both.
func TestRollupsLoadBeforeHosts(t *testing.T) {
	old := map[string][]byte{
		"2026-11-30T09/gpu/GPU-a": []byte(`{"hour":"2026-11-30T09:00:00Z","gpu":0,"uuid":"GPU-a","name":"A100","host":"h1","samples":360,` +
			`"seconds":1800,"util_seconds":900,"util_max":50,"mem_max_bytes":0,"mem_total_bytes":0,"busy_seconds":1800,"idle_held_seconds":0,"temp_max_c":50,"energy_joules":0}`),
		"2026-11-30T09/user/GPU-a/alice": []byte(`{"hour":"2026-11-30T09:00:00Z","user":"alice","gpu":0,"uuid":"GPU-a","gpu_seconds":1800,"byte_seconds":0,` +
			`"idle_held_seconds":0,"idle_held_max_bytes":0}`),
	}
	r := rollLoaded(t, old)
	rollFill(r, 1800, 3600) // the second half of the hour, after the upgrade
	gpus, users, _ := r.Window(rollBase, rollBase.Add(time.Hour))
	var seconds, alice float64
	for _, h := range gpus {
		if h.UUID == "GPU-a" {
			seconds += h.Seconds
		}
	}
	for _, u := range users {
		if u.User == "alice" {
			alice += u.GPUSeconds
		}
	}
	// The report puts the old user hour on its GPU's host.
	if rep := Build(gpus, users, nil, Options{}); rep.Fleet() || len(rep.Users) == 0 || rep.Users[0].User != "alice" ||
		!reflect.DeepEqual(rep.Users[0].Hosts, []UserHost{{Host: "h1", GPUs: []int{0}, Labels: []string{"GPU 0"}}}) {
		t.Errorf("report of the upgrade hour: got hosts %+v and users %+v, want alice on h1 GPU 0", rep.Hosts, rep.Users)
	}
	if seconds < 3595 || alice < 1800+0.75*1795 {
		t.Errorf("GPU-a: got %v s and alice %v GPU-seconds, want the hour's both halves", seconds, alice)
	}
	keys := r.Prune(rollBase.Add(2 * time.Hour))
	for k := range old {
		if !slices.Contains(keys, k) {
			t.Errorf("Prune: got keys %q, want the old key %s among them", keys, k)
		}
	}
}

// TestRollupsLoadLeavesOutOnlyTheBad: one record that cannot be read is
// left out, named in the error, and every other record loads, those after
// it in key order too.
func TestRollupsLoadLeavesOutOnlyTheBad(t *testing.T) {
	r := NewRollups()
	rollFill(r, 0, 2.5*3600)
	records := r.Dirty()
	bad := "2026-11-30T09/gpu/GPU-damaged"
	records[bad] = []byte(`{"hour":`)
	loaded := NewRollups()
	err := loaded.Load(records)
	var le *LoadError
	if !errors.As(err, &le) || len(le.Records) != 1 || le.Records[bad] == nil {
		t.Fatalf("Load: %v, want a LoadError naming %s alone", err, bad)
	}
	delete(records, bad)
	from, to := rollBase, rollBase.Add(3*time.Hour)
	g1, u1, _ := r.Window(from, to)
	g2, u2, _ := loaded.Window(from, to)
	if !reflect.DeepEqual(g1, g2) || !reflect.DeepEqual(u1, u2) {
		t.Errorf("after a Load with one bad record: got %+v %+v, want every other record: %+v %+v", g2, u2, g1, u1)
	}
}
