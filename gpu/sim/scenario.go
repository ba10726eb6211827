package sim

import (
	"math"
	"math/rand/v2"
	"time"
)

// Scenario names, as Config.Scenario takes them.
const (
	ScenarioNormalTraining = "normal-training"
	ScenarioMemoryLeak     = "memory-leak"
	ScenarioBatchSpike     = "batch-spike"
	ScenarioIdleHog        = "idle-hog"
	ScenarioThermal        = "thermal"
	ScenarioAll            = "all"
)

// scenarioLength is the length of the five single scenarios, as long as
// the reference traces; demoLength is the demo's.
const (
	scenarioLength = 2 * time.Hour
	demoLength     = 100 * time.Minute
)

// plan is one run of a scenario, drawn from a seed.
type plan struct {
	duration time.Duration
	step     time.Duration // the scenario's own step, for a zero Config.Step; 0: DefaultStep
	clock    clock         // when samples are taken; zero: every step, exactly
	gpus     []*gpuPlan
	truth    []Truth
	story    *story // what the TruthFile of a realistic scenario says; nil for the others
}

// builder returns the function that draws the plan of the named scenario,
// or nil.
func builder(name string) func(*rand.Rand) *plan {
	switch name {
	case ScenarioNormalTraining:
		return normalTraining
	case ScenarioMemoryLeak:
		return memoryLeak
	case ScenarioBatchSpike:
		return batchSpike
	case ScenarioIdleHog:
		return idleHog
	case ScenarioThermal:
		return thermal
	case ScenarioAll:
		return demo
	}
	if b := realisticBuilder(name); b != nil {
		return b
	}
	if b := healthBuilder(name); b != nil {
		return b
	}
	if b := peopleBuilder(name); b != nil {
		return b
	}
	if b := sharingBuilder(name); b != nil {
		return b
	}
	if b := dayBuilder(name); b != nil {
		return b
	}
	return leakBuilder(name)
}

// normalTraining: two H100s start training a few minutes apart; the
// allocator warms up in a steep two-minute ramp, then memory stays flat
// apart from an evaluation pass every 30 minutes. Nothing is wrong.
func normalTraining(r *rand.Rand) *plan {
	pp := newPeople(r)
	p := &plan{duration: scenarioLength}
	for i, w := range []struct {
		startLo, startHi time.Duration
		memLo, memHi     float64
	}{
		{5 * time.Minute, 9 * time.Minute, 55000, 66000},
		{10 * time.Minute, 16 * time.Minute, 42000, 54000},
	} {
		j := trainer(r, pp, durBetween(r, w.startLo, w.startHi), durBetween(r, 100*time.Second, 150*time.Second), between(r, w.memLo, w.memHi))
		withEvals(r, j, durBetween(r, 17*time.Minute, 21*time.Minute))
		p.gpus = append(p.gpus, &gpuPlan{model: h100(), baselineMiB: 500, jobs: []*job{j}})
		p.truth = append(p.truth, healthy(i, p.duration))
	}
	return p
}

// memoryLeak: on A100 0 a training job, already running, leaks linearly from
// 10–20 minutes on until it dies of OOM 85–110 minutes in; A100 1 starts a
// healthy job after a few minutes.
func memoryLeak(r *rand.Rand) *plan {
	pp := newPeople(r)
	p := &plan{duration: scenarioLength}
	g0 := &gpuPlan{model: a100(), baselineMiB: 400}
	j0 := trainer(r, pp, 0, durBetween(r, 100*time.Second, 140*time.Second), between(r, 13000, 17000))
	j0.rampPow = 1
	leak := withLeak(r, 0, g0, j0, durBetween(r, 10*time.Minute, 20*time.Minute), durBetween(r, 85*time.Minute, 110*time.Minute))
	g0.jobs = []*job{j0}
	j1 := trainer(r, pp, durBetween(r, 3*time.Minute, 8*time.Minute), durBetween(r, 100*time.Second, 150*time.Second), between(r, 28000, 32000))
	g1 := &gpuPlan{model: a100(), baselineMiB: 400, jobs: []*job{j1}}
	p.gpus = []*gpuPlan{g0, g1}
	p.truth = append(leak, healthy(1, p.duration))
	return p
}

// batchSpike: on RTX 4090 0 a job trains at ~57 % memory until, 15–30
// minutes in, a bigger batch takes it to ~97 % for good; 4090 1 trains
// quietly.
func batchSpike(r *rand.Rand) *plan {
	pp := newPeople(r)
	p := &plan{duration: scenarioLength}
	g0 := &gpuPlan{model: rtx()}
	j0 := trainer(r, pp, durBetween(r, 30*time.Second, 90*time.Second), durBetween(r, 80*time.Second, 120*time.Second), between(r, 12500, 15500))
	j0.spikeFrom = durBetween(r, 15*time.Minute, 30*time.Minute)
	j0.spikeMiB = math.Round(g0.memMiB * between(r, 0.966, 0.974))
	g0.jobs = []*job{j0}
	j1 := trainer(r, pp, durBetween(r, 2*time.Minute, 6*time.Minute), durBetween(r, 80*time.Second, 120*time.Second), between(r, 15000, 19000))
	g1 := &gpuPlan{model: rtx(), jobs: []*job{j1}}
	p.gpus = []*gpuPlan{g0, g1}
	p.truth = []Truth{
		{GPU: 0, Expect: ExpectNearOOM, From: j0.spikeFrom, Until: p.duration},
		healthy(1, p.duration),
	}
	return p
}

// idleHog: A100 0 trains; on A100 1 a notebook holds 20 GiB, used
// interactively until 12–20 minutes in, then computes nothing to the end.
func idleHog(r *rand.Rand) *plan {
	pp := newPeople(r)
	p := &plan{duration: scenarioLength}
	j0 := trainer(r, pp, durBetween(r, 60*time.Second, 150*time.Second), durBetween(r, 60*time.Second, 120*time.Second), between(r, 22000, 27000))
	nb := notebook(r, pp, durBetween(r, 12*time.Minute, 20*time.Minute))
	p.gpus = []*gpuPlan{
		{model: a100(), jobs: []*job{j0}},
		{model: a100(), jobs: []*job{nb}},
	}
	p.truth = []Truth{
		healthy(0, p.duration),
		{GPU: 1, Expect: ExpectIdle, From: nb.idleFrom, Until: p.duration},
	}
	return p
}

// thermal: one data-parallel job trains on two H100s in a warm chassis; 10–20
// minutes in, GPU 0's fan fails: its temperature climbs past 85 C within
// about 12 minutes and wobbles around 87 C to the end.
func thermal(r *rand.Rand) *plan {
	pp := newPeople(r)
	p := &plan{duration: scenarioLength}
	warm := h100()
	warm.idleC, warm.cPerUtil = 50, 0.125
	user, command, container := pp.user(), "torchrun --nproc_per_node=2 train.py --model llama-13b --batch 16", pp.container()
	start := durBetween(r, 20*time.Second, 60*time.Second)
	ramp := durBetween(r, 120*time.Second, 180*time.Second)
	mem := between(r, 47000, 52000)
	evalFirst := durBetween(r, 18*time.Minute, 22*time.Minute)
	for range 2 {
		j := trainer(r, pp, start, ramp, mem+between(r, -100, 100))
		j.procs = pp.processes(user, command, container, false)
		withEvals(r, j, evalFirst)
		j.evalLen, j.evalMiB = 40*time.Second, 2000
		p.gpus = append(p.gpus, &gpuPlan{model: warm, jobs: []*job{j}})
	}
	g0 := p.gpus[0]
	g0.fan = &fanFailure{
		from:    durBetween(r, 10*time.Minute, 20*time.Minute),
		ramp:    durBetween(r, 10*time.Minute, 13*time.Minute),
		cool:    80 * time.Second,
		hotC:    between(r, 86.5, 87.5),
		normalC: g0.idleC + g0.cPerUtil*g0.jobs[0].util,
		wobble:  wave{amp: between(r, 1, 1.5), period: durBetween(r, 3*time.Minute, 6*time.Minute), phase: r.Float64() * 2 * math.Pi},
	}
	p.truth = []Truth{
		{GPU: 0, Expect: ExpectHot, From: g0.fan.from, Until: p.duration},
		healthy(1, p.duration),
	}
	return p
}

// demo: six H100s on one host in 100 minutes, every problem starting and
// ending so that a console user sees each alert fire and resolve: GPU 0
// leaks ~1 GiB/min from ~5 minutes until its job dies of OOM at ~55 minutes;
// GPU 1 runs a 97 % batch from ~10 to ~25 minutes; GPU 2 is a notebook
// holding 20 GiB idle from ~5 to ~85 minutes; GPU 3's fan fails at ~15
// minutes (hot for ~20 minutes, then repaired); GPU 4 trains quietly; GPU 5
// falls off the bus at ~60 minutes, taking its job with it, and answers again
// after a reset at ~75. All jobs are already warm at the start, so no
// warm-up ramp muddies the story.
func demo(r *rand.Rand) *plan {
	pp := newPeople(r)
	p := &plan{duration: demoLength}

	g0 := &gpuPlan{model: h100()}
	j0 := trainer(r, pp, 0, 0, 0)
	leakFrom := durBetween(r, 4*time.Minute, 6*time.Minute)
	oomAt := leakFrom + durBetween(r, 48*time.Minute, 52*time.Minute)
	j0.baseMiB = g0.memMiB - between(r, 0.95, 1.1)*1024*(oomAt-leakFrom).Minutes()
	g0.jobs = []*job{j0}
	leak := withLeak(r, 0, g0, j0, leakFrom, oomAt)

	g1 := &gpuPlan{model: h100()}
	j1 := trainer(r, pp, 0, 0, between(r, 40000, 48000))
	j1.spikeFrom = durBetween(r, 9*time.Minute, 11*time.Minute)
	j1.spikeUntil = j1.spikeFrom + durBetween(r, 14*time.Minute, 16*time.Minute)
	j1.spikeMiB = math.Round(g1.memMiB * between(r, 0.966, 0.974))
	g1.jobs = []*job{j1}

	nb := notebook(r, pp, durBetween(r, 4*time.Minute, 6*time.Minute))
	nb.end = durBetween(r, 84*time.Minute, 86*time.Minute)
	g2 := &gpuPlan{model: h100(), jobs: []*job{nb}}

	g3 := &gpuPlan{model: h100(), jobs: []*job{trainer(r, pp, 0, 0, between(r, 48000, 56000))}}
	fan := &fanFailure{
		from:    durBetween(r, 14*time.Minute, 16*time.Minute),
		ramp:    durBetween(r, 8*time.Minute, 10*time.Minute),
		cool:    durBetween(r, 60*time.Second, 90*time.Second),
		hotC:    between(r, 88, 88.5),
		normalC: g3.idleC + g3.cPerUtil*g3.jobs[0].util,
		wobble:  wave{amp: between(r, 1, 1.3), period: durBetween(r, 3*time.Minute, 5*time.Minute), phase: r.Float64() * 2 * math.Pi},
	}
	fan.repaired = fan.from + fan.ramp + durBetween(r, 19*time.Minute, 22*time.Minute)
	g3.fan = fan

	j4 := trainer(r, pp, 0, 0, between(r, 55000, 65000))
	withEvals(r, j4, durBetween(r, 10*time.Minute, 20*time.Minute))
	g4 := &gpuPlan{model: h100(), jobs: []*job{j4}}

	j5 := trainer(r, pp, 0, 0, between(r, 40000, 60000))
	g5 := &gpuPlan{model: h100(), jobs: []*job{j5}}
	g5.lostAt = durBetween(r, 58*time.Minute, 62*time.Minute)
	g5.backAt = g5.lostAt + durBetween(r, 13*time.Minute, 16*time.Minute)
	j5.end = g5.lostAt

	p.gpus = []*gpuPlan{g0, g1, g2, g3, g4, g5}
	p.truth = append(leak,
		Truth{GPU: 1, Expect: ExpectNearOOM, From: j1.spikeFrom, Until: j1.spikeUntil},
		Truth{GPU: 2, Expect: ExpectIdle, From: nb.idleFrom, Until: nb.end},
		Truth{GPU: 3, Expect: ExpectHot, From: fan.from, Until: fan.repaired},
		healthy(4, p.duration),
		Truth{GPU: 5, Expect: ExpectLost, From: g5.lostAt, Until: g5.backAt},
	)
	return p
}

// trainer returns a training job on a fresh user's behalf, starting at start
// and warming up for ramp to memMiB.
func trainer(r *rand.Rand, pp *people, start, ramp time.Duration, memMiB float64) *job {
	withWorker := r.IntN(2) == 0
	return &job{
		procs:     pp.processes(pp.user(), pp.trainCommand(), pp.container(), withWorker),
		workerMiB: between(r, 480, 620),
		start:     start,
		ramp:      ramp,
		rampPow:   0.5,
		baseMiB:   memMiB,
		memSD:     35,
		util:      between(r, 92, 96),
		utilSD:    4.5,
	}
}

// withEvals adds an evaluation pass every 30 minutes from first on: ~2.5 GiB
// more for ~40 s.
func withEvals(r *rand.Rand, j *job, first time.Duration) {
	j.evalFirst = first
	j.evalEvery = 30 * time.Minute
	j.evalLen = durBetween(r, 35*time.Second, 45*time.Second)
	j.evalMiB = between(r, 2000, 2800)
}

// notebook returns a Jupyter kernel of notebookUser holding 20 GiB, used
// interactively until idleFrom and idle afterwards.
func notebook(r *rand.Rand, pp *people, idleFrom time.Duration) *job {
	return &job{
		procs:    pp.processes(notebookUser, "jupyter-lab --no-browser --port 8888", pp.container(), false),
		baseMiB:  20480,
		memSD:    3,
		util:     between(r, 65, 75),
		utilSD:   11,
		idleFrom: idleFrom,
	}
}

// withLeak makes j leak on g, the GPU with the given index, from leakFrom at the rate that fills the GPU at
// oomAt, when the job dies; it returns the truths about it.
func withLeak(r *rand.Rand, index int, g *gpuPlan, j *job, leakFrom, oomAt time.Duration) []Truth {
	room := g.memMiB - g.baselineMiB - j.baseMiB
	j.leakFrom, j.end = leakFrom, oomAt
	j.leakRate = room / (oomAt - leakFrom).Minutes()
	// The leak is uneven, but its unevenness never outruns its growth:
	// memory keeps rising, at no less than 40 % of the average rate.
	period := durBetween(r, 5*time.Minute, 10*time.Minute)
	amp := math.Min(between(r, 100, 300), 0.6*j.leakRate*period.Minutes()/(2*math.Pi))
	j.wobble = wave{amp: amp, period: period, phase: r.Float64() * 2 * math.Pi}
	// Memory without noise rises steadily, so it crosses 95 % once.
	nearFull := leakFrom
	for g.baselineMiB+j.leakMiB(nearFull) < 0.95*g.memMiB {
		nearFull += time.Second
	}
	return []Truth{
		{GPU: index, Expect: ExpectLeak, From: leakFrom, Until: oomAt, OOMAt: oomAt, RateMiBPerMin: j.leakRate},
		{GPU: index, Expect: ExpectNearOOM, From: nearFull, Until: oomAt},
	}
}

func healthy(gpu int, d time.Duration) Truth {
	return Truth{GPU: gpu, Expect: ExpectNone, Until: d}
}

func between(r *rand.Rand, lo, hi float64) float64 {
	return lo + r.Float64()*(hi-lo)
}

// durBetween returns a duration in [lo, hi], in whole seconds.
func durBetween(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64((hi-lo)/time.Second)+1))*time.Second
}
