package sim_test

import (
	"context"
	"errors"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
)

// run plays cfg to the end and returns its snapshots and truth.
func run(t testing.TB, cfg sim.Config) ([]*gpu.Snapshot, *sim.Source) {
	t.Helper()
	src, err := sim.New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	var snaps []*gpu.Snapshot
	for {
		s, err := src.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return snaps, src
		}
		if err != nil {
			t.Fatalf("Next after %d snapshots: %v", len(snaps), err)
		}
		snaps = append(snaps, s)
	}
}

func TestScenarios(t *testing.T) {
	got := sim.Scenarios()
	want := []string{"normal-training", "memory-leak", "batch-spike", "idle-hog", "thermal", "all",
		"creep-plateau", "gpu-lost", "idle-resume", "leak-gappy", "leak-restart", "leak-slow", "node8", "noisy-1s", "tf-grab-all", "tf-prealloc", "thermal-cycle",
		"leak-epoch", "leak-tiny", "leak-notebook", "leak-peaks", "leak-nearfull", "vllm-serve", "shared-node", "slurm-node",
		"mig-slice-leak", "mig-mixed", "timeslice-leak",
		"model-reload", "frag-creep", "oom-retry-loop", "day-night-inference", "slow-leak-80gb", "hot-oscillation",
		"ecc-row-remap", "power-brake", "pcie-degraded", "xid-storm", "nvlink-errors"}
	if !slices.Equal(got, want) {
		t.Errorf("Scenarios() = %q, want %q", got, want)
	}
	if got, want := sim.RealisticScenarios(), want[6:17]; !slices.Equal(got, want) {
		t.Errorf("RealisticScenarios() = %q, want %q", got, want)
	}
	if got, want := sim.LeakScenarios(), want[17:23]; !slices.Equal(got, want) {
		t.Errorf("LeakScenarios() = %q, want %q", got, want)
	}
	if got, want := sim.PeopleScenarios(), want[23:25]; !slices.Equal(got, want) {
		t.Errorf("PeopleScenarios() = %q, want %q", got, want)
	}
	if got, want := sim.SharingScenarios(), want[25:28]; !slices.Equal(got, want) {
		t.Errorf("SharingScenarios() = %q, want %q", got, want)
	}
	if got, want := sim.DayScenarios(), want[28:34]; !slices.Equal(got, want) {
		t.Errorf("DayScenarios() = %q, want %q", got, want)
	}
	if got, want := sim.HealthScenarios(), want[34:]; !slices.Equal(got, want) {
		t.Errorf("HealthScenarios() = %q, want %q", got, want)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  sim.Config
		want []string // substrings of the error
	}{
		{"unknown scenario", sim.Config{Scenario: "meltdown"}, append([]string{`"meltdown"`}, sim.Scenarios()...)},
		{"negative step", sim.Config{Step: -time.Second}, []string{"step -1s", "between"}},
		{"step too short", sim.Config{Step: time.Microsecond}, []string{"step 1µs"}},
		{"step too long", sim.Config{Step: time.Hour}, []string{"step 1h0m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := sim.New(tt.cfg)
			if err == nil {
				t.Fatalf("New(%+v) = %v, nil; want an error", tt.cfg, src)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	src, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := src.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC); !s.Time.Equal(want) {
		t.Errorf("first snapshot at %v, want %v", s.Time, want)
	}
	if s.Host != sim.DefaultHost {
		t.Errorf("host %q, want %q", s.Host, sim.DefaultHost)
	}
	if got := len(s.Devices); got != 6 {
		t.Errorf("default scenario has %d GPUs, want 6 (the demo)", got)
	}
	if got := src.Duration(); got != 100*time.Minute {
		t.Errorf("default scenario lasts %v, want 1h40m", got)
	}
	s2, _ := src.Next(context.Background())
	if got := s2.Time.Sub(s.Time); got != sim.DefaultStep {
		t.Errorf("step %v, want %v", got, sim.DefaultStep)
	}
}

func TestDeterministic(t *testing.T) {
	for _, sc := range sim.Scenarios() {
		t.Run(sc, func(t *testing.T) {
			t.Parallel()
			cfg := sim.Config{Scenario: sc, Seed: 42, Host: "node-7"}
			a, srcA := run(t, cfg)
			b, srcB := run(t, cfg)
			if !sameSnapshots(a, b) {
				t.Errorf("two sources of %+v gave different snapshots", cfg)
			}
			if !reflect.DeepEqual(srcA.Truth(), srcB.Truth()) {
				t.Errorf("two sources of %+v gave different truths", cfg)
			}
			if !reflect.DeepEqual(srcA.TruthFile(), srcB.TruthFile()) {
				t.Errorf("two sources of %+v gave different truth files", cfg)
			}
			cfg.Seed = 43
			c, srcC := run(t, cfg)
			if sameSnapshots(a, c) {
				t.Errorf("seeds 42 and 43 gave the same snapshots")
			}
			// A healthy scenario's Truth is the same for every seed; a
			// realistic one's TruthFile tells its numbers.
			if tf := srcA.TruthFile(); tf != nil {
				if reflect.DeepEqual(tf, srcC.TruthFile()) {
					t.Errorf("seeds 42 and 43 gave the same truth file %+v", tf)
				}
			} else if sc != sim.ScenarioNormalTraining && reflect.DeepEqual(srcA.Truth(), srcC.Truth()) {
				t.Errorf("seeds 42 and 43 gave the same truth %+v", srcA.Truth())
			}
			// The host's GPUs keep their identity across seeds.
			for i := range a[0].Devices {
				if a[0].Devices[i].UUID != c[0].Devices[i].UUID {
					t.Errorf("GPU %d: UUID %s with seed 42, %s with seed 43; want the same", i, a[0].Devices[i].UUID, c[0].Devices[i].UUID)
				}
			}
		})
	}
}

func TestTimeline(t *testing.T) {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		scenario string
		step     time.Duration
		want     int // snapshots
		gpus     int
	}{
		{"normal-training", 5 * time.Second, 1440, 2},
		{"memory-leak", 10 * time.Second, 720, 2},
		{"batch-spike", 7 * time.Second, 1029, 2}, // ceil(7200/7)
		{"idle-hog", time.Minute, 120, 2},
		{"thermal", 5 * time.Second, 1440, 2},
		{"all", 5 * time.Second, 1200, 6},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			snaps, src := run(t, sim.Config{Scenario: tt.scenario, Seed: 3, Start: start, Step: tt.step})
			if len(snaps) != tt.want {
				t.Fatalf("got %d snapshots, want %d", len(snaps), tt.want)
			}
			for i, s := range snaps {
				if want := start.Add(time.Duration(i) * tt.step); !s.Time.Equal(want) {
					t.Fatalf("snapshot %d at %v, want %v", i, s.Time, want)
				}
				// The demo's GPU 5 falls off the bus for a while.
				offBus := tt.scenario == "all" && len(s.Devices) == tt.gpus-1 && !slices.ContainsFunc(s.Devices, func(d gpu.Device) bool { return d.Index == 5 })
				if len(s.Devices) != tt.gpus && !offBus {
					t.Fatalf("snapshot %d has %d GPUs, want %d", i, len(s.Devices), tt.gpus)
				}
			}
			if _, err := src.Next(context.Background()); !errors.Is(err, io.EOF) {
				t.Errorf("Next after the end: %v, want io.EOF", err)
			}
			if _, err := src.Next(context.Background()); !errors.Is(err, io.EOF) {
				t.Errorf("Next again after the end: %v, want io.EOF", err)
			}
		})
	}
}

func TestLoop(t *testing.T) {
	step := 30 * time.Second
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src, err := sim.New(sim.Config{Scenario: "all", Seed: 9, Start: start, Step: step, Loop: true})
	if err != nil {
		t.Fatal(err)
	}
	perCycle := int(src.Duration() / step)
	var snaps []*gpu.Snapshot
	for i := 0; i < 2*perCycle+perCycle/2; i++ {
		s, err := src.Next(context.Background())
		if err != nil {
			t.Fatalf("Next %d of a looping source: %v", i, err)
		}
		if want := start.Add(time.Duration(i) * step); !s.Time.Equal(want) {
			t.Fatalf("snapshot %d at %v, want %v", i, s.Time, want)
		}
		snaps = append(snaps, s)
	}
	first, second := snaps[:perCycle], snaps[perCycle:2*perCycle]
	if reflect.DeepEqual(devices(first), devices(second)) {
		t.Errorf("the second cycle repeats the first; want the seed advanced")
	}
	t0, t1 := src.Truth(), src.CycleTruth(1)
	if len(t0) != len(t1) {
		t.Fatalf("cycle truths have %d and %d entries, want the same", len(t0), len(t1))
	}
	cycle := time.Duration(perCycle) * step
	for i := range t0 {
		if t1[i].From < cycle || t1[i].Until > 2*cycle {
			t.Errorf("cycle 1 truth %+v outside [%v, %v]", t1[i], cycle, 2*cycle)
		}
	}
	if reflect.DeepEqual(t0, t1) {
		t.Errorf("cycles 0 and 1 have the same truth")
	}
	// The second cycle's leak ends in OOM like the first.
	leak := find(t, t1, 0, sim.ExpectLeak)
	i := int((leak.OOMAt + time.Minute) / step)
	if d := snaps[i].Devices[0]; len(d.Processes) != 0 || d.MemUsed > 1<<30 {
		t.Errorf("cycle 1, a minute after OOM at %v: %d processes, %d MiB; want none, < 1 GiB", leak.OOMAt, len(d.Processes), d.MemUsed>>20)
	}
}

// sameSnapshots reports whether a and b hold the same readings, unknown
// (NaN) readings alike.
func sameSnapshots(a, b []*gpu.Snapshot) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(knownReadings(a[i]), knownReadings(b[i])) {
			return false
		}
	}
	return true
}

// knownReadings is a copy of s with its unknown (NaN) readings set to -1,
// which reflect.DeepEqual can compare.
func knownReadings(s *gpu.Snapshot) gpu.Snapshot {
	c := *s
	c.Devices = slices.Clone(s.Devices)
	for i := range c.Devices {
		d := &c.Devices[i]
		for _, v := range []*float64{&d.UtilGPU, &d.UtilMem, &d.TempC, &d.PowerW, &d.PowerLimitW} {
			if math.IsNaN(*v) {
				*v = -1
			}
		}
	}
	return c
}

func devices(snaps []*gpu.Snapshot) [][]gpu.Device {
	out := make([][]gpu.Device, len(snaps))
	for i, s := range snaps {
		out[i] = s.Devices
	}
	return out
}

func TestCloseAndCancel(t *testing.T) {
	src, err := sim.New(sim.Config{Scenario: "thermal"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := src.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next with a cancelled context: %v, want context.Canceled", err)
	}
	if err := src.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := src.Next(context.Background()); !errors.Is(err, sim.ErrClosed) {
		t.Errorf("Next after Close: %v, want ErrClosed", err)
	}
}

func TestSnapshotsShareNothing(t *testing.T) {
	src, err := sim.New(sim.Config{Scenario: "all", Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := src.Next(context.Background())
	want := a.Devices[0].Processes[0]
	a.Devices[0].Processes[0].User = "mallory"
	a.Devices[0].MemUsed = 0
	b, _ := src.Next(context.Background())
	if got := b.Devices[0].Processes[0]; got.User != want.User || got.PID != want.PID {
		t.Errorf("after changing a kept snapshot, the next has process %+v, want user %s pid %d", got, want.User, want.PID)
	}
	if b.Devices[0].MemUsed == 0 {
		t.Errorf("after changing a kept snapshot, the next has 0 memory used")
	}
}

var uuidRE = regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// checkPlausible reports readings no GPU could show. Realistic scenarios
// may have unknown (NaN) temperature and power, and RTX 4090s that idle
// below 40 W.
func checkPlausible(t testing.TB, snaps []*gpu.Snapshot, realistic bool) {
	t.Helper()
	uuids := map[string]string{}
	for _, s := range snaps {
		for _, d := range s.Devices {
			at := func(format string, args ...any) {
				t.Helper()
				t.Errorf("%v %s: "+format, append([]any{s.Time.Format(time.TimeOnly), d.Label()}, args...)...)
			}
			if u, ok := uuids[d.Label()]; ok && u != d.UUID {
				at("UUID %s, before %s", d.UUID, u)
			}
			uuids[d.Label()] = d.UUID
			if !uuidRE.MatchString(d.UUID) && !(d.MIG != nil && migUUIDRE.MatchString(d.UUID)) {
				at("malformed UUID %q", d.UUID)
			}
			if d.MIG != nil {
				checkInstance(t, s, &d)
				continue
			}
			wantLimit := map[string]float64{"NVIDIA H100 80GB HBM3": 700, "NVIDIA A100-SXM4-40GB": 400, "NVIDIA A100-SXM4-80GB": 400, "NVIDIA GeForce RTX 4090": 450, "NVIDIA A10": 150}[d.Name]
			if d.PowerLimitW != wantLimit {
				at("%s power limit %v W, want %v W", d.Name, d.PowerLimitW, wantLimit)
			}
			if d.MIGEnabled {
				// A GPU in MIG mode: its memory, utilization and processes
				// are its instances'.
				if d.MemTotal != 0 || !math.IsNaN(d.UtilGPU) || len(d.Processes) > 0 {
					at("in MIG mode with memory %d, utilization %v, %d processes; want none of its own", d.MemTotal, d.UtilGPU, len(d.Processes))
				}
			} else if d.MemTotal == 0 || d.MemUsed > d.MemTotal || d.MemUsed%(1<<20) != 0 {
				at("memory %d of %d bytes", d.MemUsed, d.MemTotal)
			}
			for name, v := range map[string]float64{"utilization": d.UtilGPU, "memory utilization": d.UtilMem} {
				if (v < 0 || v > 100 || v != math.Round(v)) && !(d.MIGEnabled && math.IsNaN(v)) {
					at("%s %v, want a whole percent", name, v)
				}
			}
			if !(realistic && math.IsNaN(d.TempC)) && (d.TempC < 20 || d.TempC > 95 || d.TempC != math.Round(d.TempC)) {
				at("temperature %v C", d.TempC)
			}
			minPower := 40.0
			if realistic {
				minPower = 15
			}
			if !(realistic && math.IsNaN(d.PowerW)) && (d.PowerW < minPower || d.PowerW > 1.03*d.PowerLimitW) {
				at("power %v W, limit %v W", d.PowerW, d.PowerLimitW)
			}
			if d.UtilGPU >= 10 && (len(d.Processes) < 1 || len(d.Processes) > 3) {
				at("busy (%v %%) with %d processes, want 1-3", d.UtilGPU, len(d.Processes))
			}
			var sum uint64
			for _, p := range d.Processes {
				if p.PID <= 0 || p.User == "" || p.Command == "" || p.MemUsed == 0 || p.MemUsed%(1<<20) != 0 {
					at("implausible process %+v", p)
				}
				sum += p.MemUsed
			}
			// What no process holds is the GPU's resting level: a few
			// MiB, or up to 1.4 GiB where a display or a daemon keeps some.
			if len(d.Processes) > 0 && (sum > d.MemUsed || d.MemUsed-sum > 1500<<20) {
				at("processes hold %d MiB, the GPU %d MiB; want about the same", sum>>20, d.MemUsed>>20)
			}
		}
	}
}

// migUUIDRE matches a MIG instance's UUID as NVML gives it.
var migUUIDRE = regexp.MustCompile(`^MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// checkInstance checks a MIG instance of snapshot s: after its parent,
// with memory and processes of its own, and the card's readings on the
// parent only.
func checkInstance(t testing.TB, s *gpu.Snapshot, d *gpu.Device) {
	t.Helper()
	at := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%v %s: "+format, append([]any{s.Time.Format(time.TimeOnly), d.Label()}, args...)...)
	}
	i := slices.IndexFunc(s.Devices, func(p gpu.Device) bool { return p.UUID == d.MIG.ParentUUID })
	if i < 0 || !s.Devices[i].MIGEnabled || s.Devices[i].Index != d.Index || s.Devices[i].Name != d.Name {
		at("no parent %s in MIG mode before it", d.MIG.ParentUUID)
	}
	if d.MIG.Profile == "" || d.MIG.GPUInstance <= 0 {
		at("MIG %+v, want a GPU instance and a profile", d.MIG)
	}
	if d.MemTotal == 0 || d.MemUsed > d.MemTotal || d.MemUsed%(1<<20) != 0 {
		at("memory %d of %d bytes", d.MemUsed, d.MemTotal)
	}
	if !math.IsNaN(d.TempC) || !math.IsNaN(d.PowerW) {
		at("temperature %v, power %v: the card's readings, want them on the parent only", d.TempC, d.PowerW)
	}
	var sum uint64
	for _, p := range d.Processes {
		sum += p.MemUsed
	}
	if len(d.Processes) > 0 && (sum > d.MemUsed || d.MemUsed-sum > 1<<30) {
		at("processes hold %d MiB, the instance %d MiB; want about the same", sum>>20, d.MemUsed>>20)
	}
}

func TestReadingsPlausible(t *testing.T) {
	for _, sc := range sim.Scenarios() {
		seeds := uint64(6)
		if slices.Contains(sim.DayScenarios(), sc) {
			seeds = 2 // days of samples each
		}
		for seed := uint64(1); seed <= seeds; seed++ {
			snaps, _ := run(t, sim.Config{Scenario: sc, Seed: seed})
			checkPlausible(t, snaps, hasTruthFile(sc))
		}
	}
}

func TestProcessesLookReal(t *testing.T) {
	snaps, _ := run(t, sim.Config{Scenario: "all", Seed: 2})
	users := map[string]bool{}
	containers := map[string]bool{}
	for _, s := range snaps {
		for _, d := range s.Devices {
			for _, p := range d.Processes {
				users[p.User] = true
				switch {
				case p.Container == "":
					containers["host"] = true
				case strings.HasPrefix(p.Container, "docker:"):
					containers["docker"] = true
				case strings.HasPrefix(p.Container, "k8s:"):
					containers["k8s"] = true
				default:
					t.Fatalf("container %q is neither docker:ID, k8s:POD-UID nor empty", p.Container)
				}
			}
		}
	}
	if len(users) < 4 {
		t.Errorf("the demo's processes belong to %d users, want at least 4", len(users))
	}
	nb := snaps[len(snaps)/2].Devices[2].Processes
	if len(nb) != 1 || nb[0].User != "bob" || !strings.HasPrefix(nb[0].Command, "jupyter-lab") {
		t.Errorf("the idle holder's processes are %+v, want bob's jupyter-lab", nb)
	}
}

func BenchmarkNextAll(b *testing.B) {
	src, err := sim.New(sim.Config{Scenario: "all", Seed: 1, Loop: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := src.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
