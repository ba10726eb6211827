// Package sim simulates GPU servers running the workloads that gpuwatch
// exists to catch: a memory leak that ends in an out-of-memory crash, a batch
// that fills memory to 97 %, a notebook that holds 20 GiB and computes
// nothing, a failed fan, and healthy training that must not page anyone.
//
// A Source plays one scenario as a gpu.Source in simulated time: every call
// to Next returns at once the snapshot at Start + n×Step (pacing to real time
// is the caller's business, see gpu.Pace). The readings have the shapes of
// real nvidia-smi logs (allocator warm-up ramps, evaluation spikes, noise,
// power and temperature following utilization), with times, rates and noise
// drawn from the seed, so that many seeds of one workload test alert rules
// fairly. The same Config always gives the same snapshots; Truth says what
// happened, so tests can check alerts against it.
//
// The realistic scenarios (RealisticScenarios) are the eleven workloads of
// the second trace set, shared/traces/v2, with other numbers for every
// seed: they sample as nvidia-smi does on a real server (a few ms late each
// loop, with the logger's gaps), lose GPUs and readings, and each has a
// TruthFile in the format shared/traces/v2/score.py scores alerts against.
// So do the leaks of other shapes (LeakScenarios, after shared/traces/v3)
// and the servers that run for days (DayScenarios, after
// shared/traces/v4): services that reload, leak a few MiB a minute or
// answer a trickle of requests at night, jobs that keep dying of
// out-of-memory, a temperature swinging around its threshold for hours.
package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// DefaultStep is the time between snapshots when Config.Step is zero, the
// interval of `nvidia-smi -l 5`.
const DefaultStep = 5 * time.Second

// DefaultHost is the Snapshot.Host when Config.Host is empty.
const DefaultHost = "sim-gpu-01"

// Limits on Config.Step: shorter steps make needlessly many snapshots,
// longer ones step over the scenarios' minute-long events.
const (
	MinStep = time.Millisecond
	MaxStep = 10 * time.Minute
)

// defaultStart is the start of the simulated timeline when Config.Start is
// zero: the first row of the reference traces.
func defaultStart() time.Time { return time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC) }

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("sim: source is closed")

// Config selects and seeds a simulation.
type Config struct {
	// Scenario is one of Scenarios(); empty means "all", the demo.
	Scenario string
	// Seed drives every random choice: times, rates, sizes, noise.
	Seed uint64
	// Start is the time of the first snapshot; zero means 2026-11-29
	// 09:00:00 UTC, the start of the reference traces.
	Start time.Time
	// Step is the time between snapshots; zero means the scenario's own:
	// that of its trace in shared/traces/v2 for the realistic scenarios,
	// DefaultStep for the others.
	Step time.Duration
	// Host is every snapshot's Host; empty means DefaultHost. The GPUs'
	// UUIDs derive from it, so one host keeps its GPUs across seeds.
	Host string
	// Loop plays the scenario again and again instead of ending with
	// io.EOF. Time runs on without a gap; each cycle uses the next seed, so
	// no two cycles are identical.
	Loop bool
}

// Expectations a Truth can carry: what a good alerter says about a GPU.
const (
	ExpectNone    = "none"     // healthy: no alert
	ExpectLeak    = "leak"     // memory grows linearly until the job dies of OOM
	ExpectNearOOM = "near-oom" // memory above 95 % of the total
	ExpectIdle    = "idle"     // memory held while computing nothing
	ExpectHot     = "hot"      // temperature above 85 C
	ExpectLost    = "lost"     // the GPU fell off the bus and stopped reporting
	// The GPU's health: an uncorrectable ECC error with a row remap
	// pending (it needs a reset), a hardware slowdown (the power brake), a
	// PCIe link below its width, an application's XIDs repeating, a
	// hardware XID, NVLink errors climbing.
	ExpectECC      = "ecc"
	ExpectThrottle = "throttle"
	ExpectPCIe     = "pcie"
	ExpectXIDApp   = "xid-app"
	ExpectXIDHW    = "xid-hw"
	ExpectNVLink   = "nvlink"
)

// Truth is one thing that happens to one GPU in a scenario, so that tests can
// check alerts against what really happened for any seed. A GPU with no
// problem has one Truth with Expect ExpectNone covering the whole run; a GPU
// may have several (a leak that nears OOM before the crash is both a leak
// and near-oom).
type Truth struct {
	GPU int // device index
	// Instance is, for a MIG instance, its GPU instance ID (the "MIG 3" of
	// "GPU 0 · MIG 3"); 0 for a whole GPU.
	Instance int
	// PID is, on a GPU several jobs share, the process whose job it is
	// about (the one that leaks); 0 otherwise.
	PID    int
	Expect string // ExpectNone, ExpectLeak, ExpectNearOOM, ExpectIdle, ExpectHot or ExpectLost
	// From and Until are offsets from Config.Start: when the problem starts
	// (the leak begins, the batch arrives, the notebook goes idle, the fan
	// fails) and when it ends (the job dies, the memory is released, the fan
	// is repaired; the scenario's duration if it never ends).
	From, Until time.Duration
	// OOMAt is when a leaking job dies of out-of-memory (memory released,
	// utilization 0), as an offset from Start; zero when there is no OOM.
	OOMAt time.Duration
	// RateMiBPerMin is the leak's average growth; zero when there is no leak.
	RateMiBPerMin float64
}

// Scenarios returns the names New accepts: the five two-hour, two-GPU
// workloads of the reference traces, "all", the 100-minute, five-GPU demo
// in which every problem starts and ends, the eleven realistic workloads
// of the second trace set (RealisticScenarios), the leaks of every shape
// (LeakScenarios), the nodes shared by several people, whose owners
// matter (PeopleScenarios), the GPUs shared by MIG or time-slicing
// (SharingScenarios), the servers that run for days (DayScenarios), and
// the GPUs whose health fails (HealthScenarios).
func Scenarios() []string {
	return slices.Concat([]string{ScenarioNormalTraining, ScenarioMemoryLeak, ScenarioBatchSpike, ScenarioIdleHog, ScenarioThermal, ScenarioAll},
		RealisticScenarios(), LeakScenarios(), PeopleScenarios(), SharingScenarios(), DayScenarios(), HealthScenarios())
}

// Source plays a scenario. It implements gpu.Source and is used by one
// goroutine.
type Source struct {
	cfg      Config
	build    func(r *rand.Rand) *plan
	uuids    []string
	perCycle int // clock beats per cycle: ceil(duration / Step)

	cycle    int
	n        int // beats of the current cycle already used
	plan     *plan
	noise    []*rand.Rand  // one noise stream per GPU, for the current cycle
	lostSent []bool        // per GPU: its loss was reported in this cycle
	prev     time.Duration // the offset of the cycle's previous snapshot; -1 before the first
	closed   bool
	horizon  time.Duration // the scenario's duration
}

// New returns a Source playing cfg.Scenario. It fails on an unknown scenario
// or a step outside [MinStep, MaxStep].
func New(cfg Config) (*Source, error) {
	if cfg.Scenario == "" {
		cfg.Scenario = ScenarioAll
	}
	build := builder(cfg.Scenario)
	if build == nil {
		return nil, fmt.Errorf("sim: unknown scenario %q: use one of %s", cfg.Scenario, strings.Join(Scenarios(), ", "))
	}
	if cfg.Step != 0 && (cfg.Step < MinStep || cfg.Step > MaxStep) {
		return nil, fmt.Errorf("sim: step %v out of range: use a step between %v and %v (nvidia-smi -l 5 samples every 5s)", cfg.Step, MinStep, MaxStep)
	}
	if cfg.Start.IsZero() {
		cfg.Start = defaultStart()
	}
	if cfg.Host == "" {
		cfg.Host = DefaultHost
	}
	s := &Source{cfg: cfg, build: build}
	s.startCycle(0)
	if s.cfg.Step == 0 {
		s.cfg.Step = cmp.Or(s.plan.step, DefaultStep)
	}
	s.horizon = s.plan.duration
	// Beats of the clock at offsets 0, Step, … before the duration.
	s.perCycle = int((s.horizon + s.cfg.Step - 1) / s.cfg.Step)
	s.uuids = make([]string, len(s.plan.gpus))
	for i := range s.uuids {
		s.uuids[i] = deviceUUID(cfg.Host, i)
	}
	return s, nil
}

// startCycle builds the plan and noise streams of cycle c, seeded Seed+c.
func (s *Source) startCycle(c int) {
	seed := s.cfg.Seed + uint64(c)
	s.cycle, s.n = c, 0
	s.plan = s.build(rand.New(rand.NewPCG(seed, planStream)))
	s.noise = make([]*rand.Rand, len(s.plan.gpus))
	s.lostSent = make([]bool, len(s.plan.gpus))
	s.prev = -1
	for i := range s.noise {
		s.noise[i] = rand.New(rand.NewPCG(seed, noiseStream+uint64(i)))
	}
}

// PCG stream selectors: the plan and each GPU's noise draw from independent
// streams of the same seed, so adding a draw to one leaves the others alone.
const (
	planStream  = 0x706c616e // "plan"
	noiseStream = 0x6e6f6973 // "nois"
)

// Duration is the length of one run of the scenario (one cycle when
// looping).
func (s *Source) Duration() time.Duration { return s.horizon }

// Truth says what happens in the first run of the scenario, as offsets from
// Config.Start, ordered by GPU and then by From.
func (s *Source) Truth() []Truth { return s.CycleTruth(0) }

// CycleTruth says what happens in run c (0 is the first) of a looping
// source, as offsets from Config.Start.
func (s *Source) CycleTruth(c int) []Truth {
	p := s.build(rand.New(rand.NewPCG(s.cfg.Seed+uint64(c), planStream)))
	shift := time.Duration(c) * time.Duration(s.perCycle) * s.cfg.Step
	out := make([]Truth, len(p.truth))
	for i, t := range p.truth {
		t.From += shift
		t.Until += shift
		if t.OOMAt != 0 {
			t.OOMAt += shift
		}
		out[i] = t
	}
	return out
}

// Next returns the next snapshot at once; io.EOF after the scenario's
// duration unless the source loops.
func (s *Source) Next(ctx context.Context) (*gpu.Snapshot, error) {
	if s.closed {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var offset time.Duration
	for {
		if s.n == s.perCycle {
			if !s.cfg.Loop {
				return nil, io.EOF
			}
			s.startCycle(s.cycle + 1)
		}
		offset = s.plan.clock.at(s.n, s.cfg.Step)
		s.n++
		if offset >= s.horizon {
			s.n = s.perCycle // a drifting clock runs out of time before its last beat
			continue
		}
		if !s.plan.clock.down(offset) {
			break
		}
	}
	snap := &gpu.Snapshot{
		Time:    s.cfg.Start.Add(time.Duration(s.cycle*s.perCycle)*s.cfg.Step + offset),
		Host:    s.cfg.Host,
		Devices: make([]gpu.Device, 0, len(s.plan.gpus)),
	}
	for i, g := range s.plan.gpus {
		snap.Events = g.xidsIn(snap.Events, s.prev, offset, snap.Time, i, s.uuids[i])
		if g.lost(offset) {
			if !s.lostSent[i] {
				s.lostSent[i] = true
				snap.Events = append(snap.Events, lostEvent(snap.Time, i, s.uuids[i]))
			}
			continue
		}
		s.lostSent[i] = false // back after a reset: a second loss is reported again
		snap.Devices = g.appendSamples(snap.Devices, offset, s.noise[i], i, s.uuids[i], s.cfg.Host)
	}
	s.prev = offset
	return snap, nil
}

// Close ends the source; Next then returns ErrClosed.
func (s *Source) Close() error {
	s.closed = true
	return nil
}

// deviceUUID makes a stable, well-formed GPU UUID from the host name and
// the device index.
func deviceUUID(host string, index int) string {
	h := fnv.New64a()
	h.Write([]byte(host))
	r := rand.New(rand.NewPCG(h.Sum64(), uint64(index)))
	a, b := r.Uint64(), r.Uint64()
	return fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x",
		a>>32, (a>>16)&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
}
