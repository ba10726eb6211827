package sim

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// The sharing scenarios: GPUs that several jobs share, split into MIG
// instances or time-sliced between pods, where a problem belongs to one
// slice or one job, not to the card.
const (
	// An A100 80GB in seven 1g.10gb slices, one user's job on each; one
	// job leaks until its slice is full and it dies of OOM, 70–95
	// minutes after it begins to. The A100 measures no per-slice
	// activity: its slices' utilization is unknown.
	ScenarioMIGSliceLeak = "mig-slice-leak"
	// An H100 as a 3g.40gb slice that trains and a 4g.40gb slice whose
	// notebook holds 20 GiB and computes nothing after 12–20 minutes.
	// The H100 measures each slice's activity (NVML's GPM metrics).
	ScenarioMIGMixed = "mig-mixed"
	// An A10 24 GB that Kubernetes time-slices between three inference
	// pods; one leaks until the card is full and it dies of OOM, while
	// the other two hold their memory steadily.
	ScenarioTimesliceLeak = "timeslice-leak"
)

// SharingScenarios returns the names of the sharing scenarios.
func SharingScenarios() []string {
	return []string{ScenarioMIGSliceLeak, ScenarioMIGMixed, ScenarioTimesliceLeak}
}

// sharingBuilder returns the function that draws the plan of the named
// sharing scenario, or nil.
func sharingBuilder(name string) func(*rand.Rand) *plan {
	switch name {
	case ScenarioMIGSliceLeak:
		return migSliceLeak
	case ScenarioMIGMixed:
		return migMixed
	case ScenarioTimesliceLeak:
		return timesliceLeak
	}
	return nil
}

// migSlice is one MIG instance of a GPU split into them: its IDs and
// profile, and what runs on it (a gpuPlan whose memory is the slice's).
type migSlice struct {
	gi, ci  int
	profile string
	// computeSlices is how many of the GPU's seven compute slices it has
	// (the "3" of 3g.40gb): its share of the card's utilization.
	computeSlices int
	// measured says the GPU measures the slice's activity (NVML's GPM
	// metrics, Hopper on); otherwise its utilization is unknown.
	measured bool
	plan     *gpuPlan
	uuid     string // made once per cycle, from the host
}

// newSlice makes a slice of profile with memMiB of memory.
func newSlice(gi int, profile string, computeSlices int, memMiB float64, measured bool) *migSlice {
	return &migSlice{gi: gi, profile: profile, computeSlices: computeSlices, measured: measured,
		plan: &gpuPlan{model: model{memMiB: memMiB}}}
}

// appendSamples appends the GPU's reading at offset t, and for a GPU
// split into MIG instances its instances' after it.
func (g *gpuPlan) appendSamples(dst []gpu.Device, t time.Duration, r *rand.Rand, index int, uuid, host string) []gpu.Device {
	if len(g.mig) == 0 {
		return append(dst, g.sample(t, r, index, uuid))
	}
	parent := len(dst)
	dst = append(dst, gpu.Device{})
	util := 0.0
	for _, sl := range g.mig {
		if sl.uuid == "" {
			sl.uuid = sliceUUID(host, index, sl.gi, sl.ci)
		}
		d := sl.plan.sample(t, r, index, sl.uuid)
		util += d.UtilGPU * float64(sl.computeSlices) / 7
		d.Name = g.name
		d.MIG = &gpu.MIG{ParentUUID: uuid, GPUInstance: sl.gi, ComputeInstance: sl.ci, Profile: sl.profile}
		d.TempC, d.PowerW, d.PowerLimitW = math.NaN(), math.NaN(), math.NaN()
		if !sl.measured {
			d.UtilGPU, d.UtilMem = math.NaN(), math.NaN()
		}
		dst = append(dst, d)
	}
	// The card: its temperature and power follow all its slices' work;
	// its memory and processes are its slices', and NVML reports no
	// utilization for a GPU in MIG mode.
	util = math.Round(clamp(util, 0, 100))
	power := g.idleW + (g.fullW-g.idleW)*util/100 + r.NormFloat64()*(4+4*util/100)
	dst[parent] = gpu.Device{
		Index: index, UUID: uuid, Name: g.name, MIGEnabled: true,
		UtilGPU: math.NaN(), UtilMem: math.NaN(),
		TempC:       math.Round(clamp(g.temperature(t, util, r), 20, maxTempC)),
		PowerW:      math.Round(clamp(power, 0.75*g.idleW, powerOvershoot*g.powerLimitW)*100) / 100,
		PowerLimitW: g.powerLimitW,
	}
	dst[parent].Health = g.health(t, util, dst[parent].TempC, dst[parent].PowerW)
	return dst
}

// sliceUUID makes a stable MIG instance UUID from the host, the GPU's
// index and the instance's IDs, in NVML's form "MIG-xxxxxxxx-…".
func sliceUUID(host string, index, gi, ci int) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d/%d/%d", host, index, gi, ci)
	r := rand.New(rand.NewPCG(h.Sum64(), 0x6d6967)) // "mig"
	a, b := r.Uint64(), r.Uint64()
	return fmt.Sprintf("MIG-%08x-%04x-%04x-%04x-%012x", a>>32, (a>>16)&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
}

// The GPUs the sharing scenarios split.
func a100x80() model {
	return model{name: "NVIDIA A100-SXM4-80GB", memMiB: 81920, powerLimitW: 400, idleW: 60, fullW: 398, idleC: 36, cPerUtil: 0.30, card: a100Card()}
}

func a10() model {
	return model{name: "NVIDIA A10", memMiB: 23028, powerLimitW: 150, idleW: 45, fullW: 148, idleC: 35, cPerUtil: 0.35, card: a10Card()}
}

// migSliceLeak: an A100 80GB in seven 1g.10gb slices (GPU instances 7–13,
// 9728 MiB each), a user's warm job on each holding 2.5–6.5 GiB; one of
// them, from 10–20 minutes on, leaks until its slice is full, 70–95
// minutes later.
func migSliceLeak(r *rand.Rand) *plan {
	pp := newPeople(r)
	p := &plan{duration: scenarioLength}
	g := &gpuPlan{model: a100x80()}
	leaker := r.IntN(7)
	p.truth = append(p.truth, healthy(0, p.duration))
	for k := range 7 {
		sl := newSlice(7+k, "1g.10gb", 1, 9728, false)
		j := trainer(r, pp, 0, 0, between(r, 2500, 6500))
		sl.plan.jobs = []*job{j}
		g.mig = append(g.mig, sl)
		if k != leaker {
			t := healthy(0, p.duration)
			t.Instance = sl.gi
			p.truth = append(p.truth, t)
			continue
		}
		j.baseMiB = between(r, 2000, 3000)
		from := durBetween(r, 10*time.Minute, 20*time.Minute)
		for _, t := range withLeak(r, 0, sl.plan, j, from, from+durBetween(r, 70*time.Minute, 95*time.Minute)) {
			t.Instance, t.PID = sl.gi, j.procs[0].PID
			p.truth = append(p.truth, t)
		}
	}
	p.gpus = []*gpuPlan{g}
	return p
}

// migMixed: an H100 as a 3g.40gb slice (GPU instance 2) training and a
// 4g.40gb slice (GPU instance 1) whose notebook holds 20 GiB and computes
// nothing after 12–20 minutes, to the end. The H100 measures each slice's
// activity.
func migMixed(r *rand.Rand) *plan {
	pp := newPeople(r)
	p := &plan{duration: scenarioLength}
	g := &gpuPlan{model: h100()}
	big := newSlice(1, "4g.40gb", 4, 40320, true)
	nb := notebook(r, pp, durBetween(r, 12*time.Minute, 20*time.Minute))
	big.plan.jobs = []*job{nb}
	small := newSlice(2, "3g.40gb", 3, 40320, true)
	j := trainer(r, pp, 0, 0, between(r, 24000, 30000))
	withEvals(r, j, durBetween(r, 10*time.Minute, 20*time.Minute))
	small.plan.jobs = []*job{j}
	g.mig = []*migSlice{big, small}
	p.gpus = []*gpuPlan{g}
	p.truth = []Truth{
		healthy(0, p.duration),
		{GPU: 0, Instance: 1, Expect: ExpectIdle, From: nb.idleFrom, Until: p.duration},
		{GPU: 0, Instance: 2, Expect: ExpectNone, Until: p.duration},
	}
	return p
}

// timesliceLeak: an A10 24 GB time-sliced between three inference pods
// of three users, each holding 3.5–5.5 GiB; one of them, from 10–20
// minutes on, leaks until the card is full, 70–100 minutes later, and
// dies of OOM.
func timesliceLeak(r *rand.Rand) *plan {
	pp := newPeople(r)
	p := &plan{duration: scenarioLength}
	g := &gpuPlan{model: a10(), baselineMiB: 300}
	commands := []string{
		"python serve.py --model mistral-7b-awq --port 8000",
		"tritonserver --model-repository=/models",
		"python -m text_generation_server --model-id qwen2-1.5b",
	}
	leaker := r.IntN(3)
	var held float64
	for k := range 3 {
		j := &job{
			procs:   pp.processes(pp.user(), commands[k], podContainer(r), false),
			baseMiB: between(r, 3500, 5500),
			memSD:   6,
			util:    between(r, 15, 30),
			utilSD:  8,
		}
		g.jobs = append(g.jobs, j)
		held += j.baseMiB
	}
	j := g.jobs[leaker]
	from := durBetween(r, 10*time.Minute, 20*time.Minute)
	// The leak fills what the others leave: withLeak sees their memory as
	// the card's own.
	others := *g
	others.baselineMiB += held - j.baseMiB
	for _, t := range withLeak(r, 0, &others, j, from, from+durBetween(r, 70*time.Minute, 100*time.Minute)) {
		t.PID = j.procs[0].PID
		p.truth = append(p.truth, t)
	}
	p.gpus = []*gpuPlan{g}
	return p
}

// podContainer is a Kubernetes pod's container, as gpu/proc reads it from
// a cgroup path.
func podContainer(r *rand.Rand) string {
	a, b := r.Uint64(), r.Uint64()
	return fmt.Sprintf("k8s:%08x-%04x-%04x-%04x-%012x", a>>32, (a>>16)&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
}
