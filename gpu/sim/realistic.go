package sim

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// The realistic scenarios: the workloads of the second trace set
// (shared/traces/v2), named as its traces are. Each draws every time, rate,
// size, level, period and noise from the seed, in the ranges those traces
// and their truths describe, samples at its trace's step with its drift
// and jitter, and has a TruthFile.
const (
	ScenarioCreepPlateau = "creep-plateau"
	ScenarioGPULost      = "gpu-lost"
	ScenarioIdleResume   = "idle-resume"
	ScenarioLeakGappy    = "leak-gappy"
	ScenarioLeakRestart  = "leak-restart"
	ScenarioLeakSlow     = "leak-slow"
	ScenarioNode8        = "node8"
	ScenarioNoisy1s      = "noisy-1s"
	ScenarioTFGrabAll    = "tf-grab-all"
	ScenarioTFPrealloc   = "tf-prealloc"
	ScenarioThermalCycle = "thermal-cycle"
)

// RealisticScenarios returns the names of the realistic scenarios, the
// ones with a TruthFile.
func RealisticScenarios() []string {
	return []string{
		ScenarioCreepPlateau, ScenarioGPULost, ScenarioIdleResume, ScenarioLeakGappy, ScenarioLeakRestart,
		ScenarioLeakSlow, ScenarioNode8, ScenarioNoisy1s, ScenarioTFGrabAll, ScenarioTFPrealloc, ScenarioThermalCycle,
	}
}

// realisticBuilder returns the function that draws the plan of the named
// realistic scenario, or nil.
func realisticBuilder(name string) func(*rand.Rand) *plan {
	switch name {
	case ScenarioCreepPlateau:
		return creepPlateau
	case ScenarioGPULost:
		return gpuLost
	case ScenarioIdleResume:
		return idleResume
	case ScenarioLeakGappy:
		return leakGappy
	case ScenarioLeakRestart:
		return leakRestart
	case ScenarioLeakSlow:
		return leakSlow
	case ScenarioNode8:
		return node8
	case ScenarioNoisy1s:
		return noisy1s
	case ScenarioTFGrabAll:
		return tfGrabAll
	case ScenarioTFPrealloc:
		return tfPrealloc
	case ScenarioThermalCycle:
		return thermalCycle
	}
	return nil
}

// server is the start of a realistic plan: n GPUs of model m sampled every
// step for duration, with nvidia-smi's drift and jitter.
func server(r *rand.Rand, duration, step time.Duration, m model, n int) *plan {
	p := &plan{
		duration: duration,
		step:     step,
		clock: clock{
			lead:   sampleLead,
			drift:  time.Duration(between(r, float64(minDrift), float64(maxDrift))).Truncate(10 * time.Microsecond),
			jitter: sampleJitter,
			seed:   r.Uint64(),
		},
		story: &story{notes: map[string]any{}},
	}
	for range n {
		p.gpus = append(p.gpus, newServerGPU(r, m))
	}
	p.story.roles = make([]string, n)
	return p
}

// finish completes p: the Truths that its story tells.
func (p *plan) finish() *plan {
	p.truth = p.story.legacyTruth(len(p.gpus), p.duration)
	return p
}

// trainerAt adds a realistic training job to GPU i of p from start,
// warming up in ramp to share of the GPU's memory, and says so in its role.
func (p *plan) trainerAt(r *rand.Rand, pp *people, i int, start, ramp time.Duration, share float64) *job {
	g := p.gpus[i]
	j := serverTrainer(r, pp, g, start, ramp, share*g.memMiB-g.baselineMiB, p.duration)
	g.jobs = append(g.jobs, j)
	p.story.roles[i] = fmt.Sprintf("training (fast warm-up %s, plateau %s)", mins(ramp), g.percent(j.plateauMiB()))
	return j
}

// fastTrainerAt adds to GPU i of p a training job that starts in
// [startLo, startHi], warms up in 100–300 s, and holds loShare–hiShare of
// the GPU's memory.
func (p *plan) fastTrainerAt(r *rand.Rand, pp *people, i int, startLo, startHi time.Duration, loShare, hiShare float64) *job {
	return p.trainerAt(r, pp, i, tenthsBetween(r, startLo, startHi), durBetween(r, 100*time.Second, 300*time.Second), between(r, loShare, hiShare))
}

// trainOthers adds such a training job to every GPU of p but GPU except.
func (p *plan) trainOthers(r *rand.Rand, pp *people, except int, startLo, startHi time.Duration, loShare, hiShare float64) {
	for i := range p.gpus {
		if i != except {
			p.fastTrainerAt(r, pp, i, startLo, startHi, loShare, hiShare)
		}
	}
}

// slowTrainerAt is trainerAt with an allocator that warms up slowly.
func (p *plan) slowTrainerAt(r *rand.Rand, pp *people, i int, start time.Duration, share float64) *job {
	j := p.trainerAt(r, pp, i, start, 0, share)
	within := slowWarmup(r, j)
	p.repass(r, i, j)
	p.story.roles[i] = fmt.Sprintf("training (slow warm-up %s, plateau %s)", mins(within), p.gpus[i].percent(j.plateauMiB()))
	return j
}

// repass draws j's evaluation passes again after its warm-up or plateau
// changed, so that they stay below 88 % of the GPU.
func (p *plan) repass(r *rand.Rand, i int, j *job) {
	g := p.gpus[i]
	withPasses(r, j, durBetween(r, 15*time.Minute, 32*time.Minute), durBetween(r, 20*time.Second, 60*time.Second),
		between(r, 300, 4500), g.memMiB*0.88-g.baselineMiB-j.plateauMiB()-j.habits.churn.half(), p.duration)
}

// plateauMiB is the job's memory once warm, before any leak.
func (j *job) plateauMiB() float64 { return j.baseMiB + j.habits.stepsMiB() }

// percent formats memMiB (held by jobs) as a whole share of g's memory.
func (g *gpuPlan) percent(memMiB float64) string {
	return fmt.Sprintf("%.0f%%", 100*(memMiB+g.baselineMiB)/g.memMiB)
}

// leakOver returns how long a leak of rate MiB/min runs before it fills g
// to oomShare, and the job's plateau before it as a share of g's memory:
// d, when the plateau that leaves lies in [loShare, hiShare]; otherwise
// the plateau is clamped to that range and the duration follows from it.
func leakOver(g *gpuPlan, rate float64, d time.Duration, oomShare, loShare, hiShare float64) (time.Duration, float64) {
	share := oomShare - rate*d.Minutes()/g.memMiB
	switch {
	case share < loShare:
		share = loShare
	case share > hiShare:
		share = hiShare
	}
	d = minutes((oomShare - share) * g.memMiB / rate)
	return d, share
}

// creepPlateau: two A100 40GB for 5 h at 5 s. On one (creep_gpu) the
// caching allocator grows after warm-up in 5–6 steps of 1.5–2.5 GiB at
// about 3, 6, 12, 24, 48 (96) minutes, then stays flat below 85 % for
// hours: not a leak. The other trains.
func creepPlateau(r *rand.Rand) *plan {
	p := server(r, 5*time.Hour, 5*time.Second, serverA100(), 2)
	pp := newPeople(r)
	c := r.IntN(2)
	p.trainOthers(r, pp, c, 2*time.Minute, 8*time.Minute, 0.5, 0.75)
	g := p.gpus[c]
	j := p.trainerAt(r, pp, c, tenthsBetween(r, 2*time.Minute, 6*time.Minute), durBetween(r, 45*time.Second, 120*time.Second), between(r, 0.35, 0.48))
	creep(r, j, 0.82*g.memMiB-g.baselineMiB)
	p.repass(r, c, j)
	var sizes, ats []string
	var stepsAt []Seconds
	for _, s := range j.habits.steps {
		sizes = append(sizes, fmt.Sprintf("%.1f", s.MiB/1024))
		ats = append(ats, fmt.Sprintf("%.0f", s.at.Minutes()))
		stepsAt = append(stepsAt, seconds(s.at))
	}
	p.story.roles[c] = fmt.Sprintf("allocator grows %s GiB at %s min, then flat at %s", strings.Join(sizes, "/"), strings.Join(ats, "/"), g.percent(j.plateauMiB()))
	p.story.notes["creep_gpu"] = c
	p.story.notes["steps_at_s"] = stepsAt
	p.story.about = "caching-allocator growth that is not a leak: steps of 1.5-2.5 GB at ~3, 6, 12, 24, 48 (96) min after start, then flat for hours, below 85%"
	return p.finish()
}

// gpuLost: four H100 train for 3 h at 5 s; 60–100 minutes in, one falls
// off the bus: its rows stop while the others go on.
func gpuLost(r *rand.Rand) *plan {
	p := server(r, 3*time.Hour, 5*time.Second, serverH100(), 4)
	pp := newPeople(r)
	p.trainOthers(r, pp, -1, 0, 3*time.Minute, 0.45, 0.8)
	lost := r.IntN(len(p.gpus))
	at := tenthsBetween(r, 60*time.Minute, 100*time.Minute)
	p.gpus[lost].lostAt = at
	p.story.roles[lost] += fmt.Sprintf("; no rows from %s on (fell off the bus)", mins(at))
	p.story.incidents = []incident{{
		id: fmt.Sprintf("lost-gpu%d", lost), kind: ExpectLost, gpu: lost,
		from: at, deadline: at + 5*time.Minute, until: p.duration + time.Minute, end: p.duration,
		why: "the GPU stopped reporting (fell off the bus): tell someone within 5 minutes",
	}}
	p.story.about = "4 GPUs training; one falls off the bus: its rows stop while the others go on"
	return p.finish()
}

// idleResume: two RTX 4090 for 2 h 45 min at 5 s. On one a notebook loads
// 20 GiB 5–10 minutes in, idles 15–25 minutes, computes 8–15, then idles
// 80–100 minutes holding its memory, untouched, until it is closed; the
// other trains. Only the long idle deserves an alert.
func idleResume(r *rand.Rand) *plan {
	p := server(r, 9900*time.Second, 5*time.Second, serverRTX(), 2)
	pp := newPeople(r)
	nb := r.IntN(2)
	p.trainOthers(r, pp, nb, 3*time.Minute, 15*time.Minute, 0.45, 0.7)
	load := tenthsBetween(r, 5*time.Minute, 10*time.Minute)
	loadFor := durBetween(r, 40*time.Second, 70*time.Second)
	idle1 := load + loadFor
	compute := span{idle1 + tenthsBetween(r, 15*time.Minute, 25*time.Minute), 0}
	compute.until = compute.from + tenthsBetween(r, 8*time.Minute, 15*time.Minute)
	closed := compute.until + tenthsBetween(r, 80*time.Minute, 100*time.Minute)
	j := &job{
		procs: pp.processes(pp.user(), "jupyter-lab --no-browser --port 8888", pp.container(), false),
		start: load, end: closed, ramp: loadFor, rampPow: 0.5,
		baseMiB: 20480, memSD: 1,
		util: between(r, 84, 92), utilSD: 7,
		habits: &habits{
			loadFor: loadFor, memPerUtil: between(r, 0.4, 0.5), dipShare: dataStallShare,
			computing: []span{compute}, growMiB: between(r, 300, 800), growFor: durBetween(r, 20*time.Second, 60*time.Second),
		},
	}
	p.gpus[nb].jobs = []*job{j}
	hold := closed - compute.until
	p.story.roles[nb] = fmt.Sprintf("notebook: loads at %s, idle %.0f-%.0f, computes %.0f-%.0f, idle %.0f-%.0f min, then closed",
		mins(load), idle1.Minutes(), compute.from.Minutes(), compute.from.Minutes(), compute.until.Minutes(), compute.until.Minutes(), closed.Minutes())
	p.story.incidents = []incident{idleIncident(nb, compute.until, closed, closed+time.Minute,
		fmt.Sprintf("20 GiB held and idle for %s: one alert, within an hour; the %s idle before the computation is too short to alert on", mins(hold), mins(compute.from-idle1)))}
	p.story.notes["first_idle_s"] = []Seconds{seconds(idle1), seconds(compute.from)}
	p.story.notes["compute_s"] = []Seconds{seconds(compute.from), seconds(compute.until)}
	p.story.notes["closed_at_s"] = seconds(closed)
	p.story.about = fmt.Sprintf("a notebook holds 20 GiB idle for %s, computes for %s, then idles for %s; a second GPU trains",
		mins(compute.from-idle1), mins(compute.until-compute.from), mins(hold))
	return p.finish()
}

// leakGappy: two A100 40GB for 3 h at 1 s, power.draw [N/A] on every row
// and temperature [N/A] now and then. One GPU's job leaks linearly, 15–30
// minutes in, to OOM 110–150 minutes later; the other trains. The logger
// is down 2–3 times for 3–10 minutes before the alert is due.
func leakGappy(r *rand.Rand) *plan {
	p := server(r, 3*time.Hour, time.Second, serverA100(), 2)
	pp := newPeople(r)
	for _, g := range p.gpus {
		g.hw.noPower = true
		g.hw.tempNA = between(r, 0.002, 0.004)
		for range 1 + r.IntN(2) {
			from := tenthsBetween(r, 5*time.Minute, p.duration-5*time.Minute)
			g.hw.tempOut = append(g.hw.tempOut, span{from, from + durBetween(r, 10*time.Second, 45*time.Second)})
		}
		sortSpans(g.hw.tempOut)
	}
	leaker := r.IntN(2)
	p.trainOthers(r, pp, leaker, 30*time.Second, 3*time.Minute, 0.45, 0.7)
	g := p.gpus[leaker]
	from := tenthsBetween(r, 15*time.Minute, 30*time.Minute)
	rate := between(r, 150, 300)
	oomShare := between(r, 0.99, 0.996)
	d, share := leakOver(g, rate, tenthsBetween(r, 110*time.Minute, 150*time.Minute), oomShare, 0.25, 0.45)
	oom := (from + d).Round(time.Second)
	j := p.trainerAt(r, pp, leaker, tenthsBetween(r, 30*time.Second, 2*time.Minute), durBetween(r, 100*time.Second, 240*time.Second), share)
	rate = (oomShare*g.memMiB - g.baselineMiB - j.plateauMiB()) / (oom - from).Minutes()
	withBlockLeak(r, j, from, oom, rate)
	// The logger goes down while the alert is due: before the leak's
	// deadline, 30 minutes before its OOM.
	p.clock.gaps = gaps(r, 2+r.IntN(2), 3*time.Minute, 10*time.Minute, 10*time.Minute, oom-30*time.Minute)
	p.story.roles[leaker] = fmt.Sprintf("leaks %.0f MiB/min from %s, OOM at %s", rate, mins(from), mins(oom))
	p.story.incidents = []incident{leakIncident(fmt.Sprintf("leak-gpu%d", leaker), leaker, from, oom, rate,
		fmt.Sprintf("linear leak of %.0f MiB/min to CUDA OOM; warn >= 30 min before it, through the logger gaps", rate))}
	p.story.about = fmt.Sprintf("2 GPUs at 1 s; one leaks linearly to OOM; %d logger gaps of 3-10 min; power.draw [N/A] on every row, temperature [N/A] now and then", len(p.clock.gaps))
	return p.finish()
}

// idleIncident is a GPU held idle from from until its memory is freed at
// end: one alert within the hour; the firings until until belong to it.
func idleIncident(gpu int, from, end, until time.Duration, why string) incident {
	return incident{
		id: fmt.Sprintf("idle-gpu%d", gpu), kind: ExpectIdle, gpu: gpu,
		from: from, deadline: from + time.Hour, until: until, end: end, why: why,
	}
}

// leakIncident is a leak from from to an OOM at oom: warned at least 30
// minutes before it.
func leakIncident(id string, gpu int, from, oom time.Duration, rate float64, why string) incident {
	return incident{
		id: id, kind: ExpectLeak, gpu: gpu,
		from: from, deadline: oom - 30*time.Minute, oomAt: oom, until: oom + time.Minute, end: oom,
		rateMiBPerMin: rate, why: why,
	}
}

// leakRestart: two A100 80GB for 5.6 h at 5 s. On one a job leaks 300–450
// MiB/min from 4–6 minutes after its start to OOM; the scheduler restarts
// it 2–5 minutes later and it leaks again, at the same rate, to a second
// OOM. The other trains.
func leakRestart(r *rand.Rand) *plan {
	p := server(r, 336*time.Minute, 5*time.Second, serverA100x80(), 2)
	pp := newPeople(r)
	leaker := r.IntN(2)
	p.trainOthers(r, pp, leaker, time.Minute, 5*time.Minute, 0.5, 0.7)
	g := p.gpus[leaker]
	rate := between(r, 300, 450)
	oomShare := between(r, 0.99, 0.995)
	d, share := leakOver(g, rate, tenthsBetween(r, 100*time.Minute, 140*time.Minute), oomShare, 0.3, 0.5)
	if d > 145*time.Minute {
		d = 145 * time.Minute
		share = oomShare - rate*d.Minutes()/g.memMiB
	}
	start1 := tenthsBetween(r, time.Minute, 3*time.Minute)
	j1 := p.trainerAt(r, pp, leaker, start1, durBetween(r, 100*time.Second, 180*time.Second), share)
	from1 := start1 + tenthsBetween(r, 4*time.Minute, 6*time.Minute)
	oom1 := (from1 + d).Round(time.Second)
	rate1 := (oomShare*g.memMiB - g.baselineMiB - j1.plateauMiB()) / (oom1 - from1).Minutes()
	withBlockLeak(r, j1, from1, oom1, rate1)

	// The scheduler runs the same job again: same user, command and code.
	start2 := oom1 + tenthsBetween(r, 2*time.Minute, 5*time.Minute)
	j2 := serverTrainer(r, pp, g, start2, durBetween(r, 100*time.Second, 180*time.Second), j1.baseMiB, p.duration)
	j2.procs = pp.processes(j1.procs[0].User, j1.procs[0].Command, j1.procs[0].Container, false)
	from2 := start2 + tenthsBetween(r, 4*time.Minute, 6*time.Minute)
	rate2 := rate1 * between(r, 0.97, 1.03)
	oom2 := (from2 + minutes((oomShare*g.memMiB-g.baselineMiB-j2.plateauMiB())/rate2)).Round(time.Second)
	withBlockLeak(r, j2, from2, oom2, rate2)
	j2.habits.leakBlockMiB = j1.habits.leakBlockMiB
	g.jobs = append(g.jobs, j2)

	p.story.roles[leaker] = fmt.Sprintf("leaks %.0f MiB/min: OOM at %s, restarted at %s, OOM again at %s", rate1, mins(oom1), mins(start2), mins(oom2))
	p.story.incidents = []incident{
		leakIncident("leak1", leaker, from1, oom1, rate1, "first run leaks to CUDA OOM; warn >= 30 min before it"),
		leakIncident("leak2", leaker, start2, oom2, rate2, "the restarted run leaks again; a new warning >= 30 min before the second OOM"),
	}
	p.story.resolves = []resolveCheck{{
		gpu: leaker, after: oom1 - time.Minute, by: from2,
		why: "the first job died at OOM and freed its memory: its alert must resolve before the restarted job's leak is announced",
	}}
	p.story.notes["horizon_hint_s"] = seconds(oom2)
	p.story.about = "a leaking job OOMs, the scheduler restarts it 2-5 min later and it leaks to a second OOM; a second GPU trains normally"
	return p.finish()
}

// leakSlow: two H100 for 24 h at 10 s. On one, after a slow allocator
// warm-up, a job leaks 25–50 MiB/min from 1.5–3 h on to OOM after 18–22 h,
// in small blocks, or for half the seeds in blocks of 100–400 MiB (kept
// once a validation pass); the other runs a job for 9–11 h and, 40–70
// minutes later, another to the end.
func leakSlow(r *rand.Rand) *plan {
	p := server(r, 24*time.Hour, 10*time.Second, serverH100(), 2)
	pp := newPeople(r)
	leaker := r.IntN(2)
	other := 1 - leaker

	a := p.trainerAt(r, pp, other, tenthsBetween(r, time.Minute, 3*time.Minute), durBetween(r, 50*time.Second, 120*time.Second), between(r, 0.45, 0.6))
	a.end = tenthsBetween(r, 9*time.Hour, 11*time.Hour)
	b := p.trainerAt(r, pp, other, a.end+tenthsBetween(r, 40*time.Minute, 70*time.Minute), durBetween(r, 150*time.Second, 300*time.Second), between(r, 0.6, 0.75))
	p.story.roles[other] = fmt.Sprintf("job A until %.1f h, job B from %.1f h (fast warm-up %s)", a.end.Hours(), b.start.Hours(), mins(b.ramp))
	p.story.notes["job_a_end_s"] = seconds(a.end)
	p.story.notes["warm_s"] = seconds(a.ramp)

	g := p.gpus[leaker]
	from := tenthsBetween(r, 90*time.Minute, 3*time.Hour)
	rate := between(r, 25, 50)
	oomShare := between(r, 0.98, 0.99)
	d, share := leakOver(g, rate, tenthsBetween(r, 18*time.Hour, 22*time.Hour)-from, oomShare, 0.22, 0.7)
	oom := (from + d).Round(time.Second)
	j := p.slowTrainerAt(r, pp, leaker, tenthsBetween(r, time.Minute, 4*time.Minute), share)
	rate = (oomShare*g.memMiB - g.baselineMiB - j.plateauMiB()) / (oom - from).Minutes()
	withBlockLeak(r, j, from, oom, rate)
	if r.IntN(2) == 0 {
		// Something kept once a validation pass: a block every few minutes.
		j.habits.leakBlockMiB = math.Round(between(r, 100, 400))
	}
	p.story.roles[leaker] = fmt.Sprintf("slow warm-up, leak %.1f MiB/min (blocks of %.0f MiB) from %s, OOM at %.1f h (plateau %s)",
		rate, j.habits.leakBlockMiB, mins(from), oom.Hours(), g.percent(j.plateauMiB()))
	p.story.incidents = []incident{leakIncident(fmt.Sprintf("leak-gpu%d", leaker), leaker, from, oom, rate,
		fmt.Sprintf("slow leak (%.1f MiB/min) to CUDA OOM; warn >= 30 min before it, nothing before the leak began", rate))}
	p.story.about = "80 GB GPU, 24 h at 10 s: after a normal warm-up a slow leak of 25-50 MiB/min runs to OOM; a second GPU trains, finishes and starts another job"
	return p.finish()
}

// node8: eight H100 for 6 h at 5 s, the roles dealt at random: three
// trainings with fast warm-ups, two whose allocators warm up in ever rarer
// steps for 10–20 minutes, one whose evaluation passes take it to 96–97 %
// for 20–40 s every ~10 minutes, one that leaks 150–300 MiB/min to OOM, and
// one that stops computing 150–200 minutes in and holds its memory to the
// end.
func node8(r *rand.Rand) *plan {
	p := server(r, 6*time.Hour, 5*time.Second, serverH100(), 8)
	pp := newPeople(r)
	roles := []string{"spiky", "idle", "fast", "leak", "fast", "slow", "slow", "fast"}
	r.Shuffle(len(roles), func(i, j int) { roles[i], roles[j] = roles[j], roles[i] })
	for i, role := range roles {
		g := p.gpus[i]
		switch role {
		case "fast":
			p.fastTrainerAt(r, pp, i, 0, 10*time.Minute, 0.42, 0.75)
		case "slow":
			p.slowTrainerAt(r, pp, i, tenthsBetween(r, 5*time.Minute, 15*time.Minute), between(r, 0.45, 0.7))
		case "spiky":
			j := p.fastTrainerAt(r, pp, i, 0, 15*time.Minute, 0.72, 0.82)
			withPassesTo(r, j, g, durBetween(r, 9*time.Minute, 11*time.Minute), 0.96, 0.97, p.duration)
			p.story.roles[i] = fmt.Sprintf("training with eval spikes to 96-97%% for 20-40 s every %s (plateau %s)", mins(j.habits.passes[1].from-j.habits.passes[0].from), g.percent(j.plateauMiB()))
		case "idle":
			j := p.fastTrainerAt(r, pp, i, 0, 10*time.Minute, 0.42, 0.6)
			j.idleFrom = tenthsBetween(r, 150*time.Minute, 200*time.Minute)
			p.story.roles[i] = fmt.Sprintf("training, then from %s holds %.0f GiB and computes nothing", mins(j.idleFrom), j.plateauMiB()/1024)
			p.story.incidents = append(p.story.incidents, idleIncident(i, j.idleFrom, p.duration, p.duration+time.Minute,
				"memory held, utilization ~0 to the end: one alert, within an hour"))
		case "leak":
			from := tenthsBetween(r, 30*time.Minute, 60*time.Minute)
			rate := between(r, 150, 300)
			oomShare := between(r, 0.99, 0.996)
			d, share := leakOver(g, rate, tenthsBetween(r, 150*time.Minute, 240*time.Minute), oomShare, 0.3, 0.6)
			oom := (from + d).Round(time.Second)
			j := p.trainerAt(r, pp, i, tenthsBetween(r, 0, 5*time.Minute), durBetween(r, 100*time.Second, 240*time.Second), share)
			rate = (oomShare*g.memMiB - g.baselineMiB - j.plateauMiB()) / (oom - from).Minutes()
			withBlockLeak(r, j, from, oom, rate)
			p.story.roles[i] = fmt.Sprintf("leaks %.0f MiB/min (blocks of %.0f MiB) from %s, OOM at %s", rate, j.habits.leakBlockMiB, mins(from), mins(oom))
			p.story.incidents = append(p.story.incidents, leakIncident(fmt.Sprintf("leak-gpu%d", i), i, from, oom, rate, "leak to CUDA OOM; warn >= 30 min before it"))
		}
	}
	p.story.about = "8x H100 node for 6 h: five trainings (some with 10-20 min allocator warm-up), one with eval spikes to 96-97% for 20-40 s every 10 min, one leak to OOM, one idle holder"
	return p.finish()
}

// noisy1s: two RTX 4090 train for 3 h at 1 s, their allocators churning in
// a ±1 GiB sawtooth with cycles of 15–100 s. Nothing is wrong.
func noisy1s(r *rand.Rand) *plan {
	p := server(r, 3*time.Hour, time.Second, serverRTX(), 2)
	pp := newPeople(r)
	for i := range p.gpus {
		j := p.trainerAt(r, pp, i, tenthsBetween(r, time.Minute, 4*time.Minute), durBetween(r, 180*time.Second, 300*time.Second), between(r, 0.45, 0.66))
		period := durBetween(r, 15*time.Second, 100*time.Second)
		// The churn is all there is: no evaluation pass shows above it.
		j.habits.churn = newSawtooth(r, j.start, p.duration, period, 2048*between(r, 0.97, 1.03))
		j.habits.passes, j.habits.passMiB = nil, nil
		p.story.roles[i] += fmt.Sprintf("; sawtooth +-1 GiB, period ~%.0f s", period.Seconds())
	}
	p.story.about = "2 GPUs of normal training at 1 s with +-1 GiB sawtooth allocator churn"
	return p.finish()
}

// tfGrabAll: four H100 for 4.5 h at 5 s. A TensorFlow job started without
// CUDA_VISIBLE_DEVICES, 3–6 minutes in, maps ~99 % of every GPU but
// computes on one; the other three sit full and idle until it ends
// 150–180 minutes in.
func tfGrabAll(r *rand.Rand) *plan {
	p := server(r, 270*time.Minute, 5*time.Second, serverH100(), 4)
	pp := newPeople(r)
	busy := r.IntN(len(p.gpus))
	start := tenthsBetween(r, 3*time.Minute, 6*time.Minute)
	end := tenthsBetween(r, 150*time.Minute, 180*time.Minute)
	procs := pp.processes(pp.user(), pp.tfCommand(), pp.container(), false)
	when := fmt.Sprintf("%.0f-%.0f min", start.Minutes(), end.Minutes())
	for i, g := range p.gpus {
		j := tfJob(r, g, procs, start, end)
		g.jobs = []*job{j}
		if i == busy {
			withCheckpoints(r, j, p.duration)
			p.story.roles[i] = "TensorFlow job computes here (~99% mapped) " + when
			continue
		}
		j.idleFrom, j.habits.loadFor = start, 0
		p.story.roles[i] = "the same job maps ~99% here and computes nothing, " + when
		p.story.incidents = append(p.story.incidents, idleIncident(i, start, end, end+time.Minute,
			"a process holds the whole GPU and computes nothing: one alert within an hour"))
		p.story.resolves = append(p.story.resolves, resolveCheck{gpu: i, after: end, by: end + 10*time.Minute,
			why: "the job ended and freed the GPU: its idle alert must resolve"})
	}
	p.story.notes["busy_gpu"] = busy
	p.story.notes["job_s"] = []Seconds{seconds(start), seconds(end)}
	p.story.about = "a TensorFlow job started without CUDA_VISIBLE_DEVICES maps ~99% of all 4 GPUs but computes on one; the other three sit full and idle until it ends"
	return p.finish()
}

// tfJob is a TensorFlow job on g from start to end (0: to the end of the
// run): its default allocator maps 99.2–99.6 % of the GPU at once and
// never changes it.
func tfJob(r *rand.Rand, g *gpuPlan, procs []gpu.Process, start, end time.Duration) *job {
	return &job{
		procs: procs, start: start, end: end,
		util: between(r, 86, 94), utilSD: 3,
		habits: &habits{
			loadFor:    durBetween(r, 20*time.Second, 35*time.Second),
			memPerUtil: between(r, 0.6, 0.68),
			dipShare:   0.001,
			poolMiB:    math.Round(g.memMiB*between(r, 0.992, 0.996) - g.baselineMiB),
		},
	}
}

// tfPrealloc: two A100 80GB for 4 h at 5 s. On one a TensorFlow job maps
// ~99 % of the GPU 5–10 minutes in and stays exactly flat until it ends
// 80–100 minutes in; 5–10 minutes later another does the same until the
// end. The other GPU runs PyTorch training. Nothing to alert on.
func tfPrealloc(r *rand.Rand) *plan {
	p := server(r, 4*time.Hour, 5*time.Second, serverA100x80(), 2)
	pp := newPeople(r)
	tf := r.IntN(2)
	p.trainOthers(r, pp, tf, time.Minute, 5*time.Minute, 0.6, 0.8)
	g := p.gpus[tf]
	start1 := tenthsBetween(r, 5*time.Minute, 10*time.Minute)
	end1 := tenthsBetween(r, 80*time.Minute, 100*time.Minute)
	start2 := end1 + tenthsBetween(r, 5*time.Minute, 10*time.Minute)
	for _, s := range []span{{start1, end1}, {start2, 0}} {
		j := tfJob(r, g, pp.processes(pp.user(), pp.tfCommand(), pp.container(), false), s.from, s.until)
		withCheckpoints(r, j, p.duration)
		g.jobs = append(g.jobs, j)
	}
	p.story.roles[tf] = fmt.Sprintf("TensorFlow job maps ~99%% at %s, ends at %.0f; another maps ~99%% at %s", mins(start1), end1.Minutes(), mins(start2))
	p.story.notes["tf_gpu"] = tf
	p.story.notes["jobs_s"] = [][]Seconds{{seconds(start1), seconds(end1)}, {seconds(start2), seconds(p.duration)}}
	p.story.about = "TensorFlow's default allocator: a job maps ~99% of the GPU at start and stays flat; it ends and a second one does the same; a second GPU runs PyTorch training. Nothing to alert on"
	return p.finish()
}

// thermalCycle: two H100 train for 2.5 h at 5 s. 25–40 minutes in, one's
// cooling stops keeping up: it heats for 9–13 minutes to ~82 C, then
// throttles for 50–70 minutes, its temperature cycling 82–89 C every 1–3
// minutes, then cools to a few degrees above where it was.
func thermalCycle(r *rand.Rand) *plan {
	p := server(r, 150*time.Minute, 5*time.Second, serverH100(), 2)
	pp := newPeople(r)
	hot := r.IntN(2)
	p.trainOthers(r, pp, -1, 0, 3*time.Minute, 0.45, 0.8)
	g := p.gpus[hot]
	th := &throttling{
		heatFrom: tenthsBetween(r, 25*time.Minute, 40*time.Minute),
		period:   tenthsBetween(r, time.Minute, 3*time.Minute),
		lowC:     between(r, 81.5, 82.5),
		highC:    between(r, 88.5, 89.5),
		normalC:  g.idleC + g.cPerUtil*g.jobs[0].util,
		afterC:   between(r, 3, 8),
		tau:      scale(g.hw.tau, between(r, 1.2, 1.5)),
		powerCut: between(r, 0.2, 0.28),
	}
	// It cools to well below the 80 C a hot alert needs to clear.
	th.afterC = min(th.afterC, 75-th.normalC)
	th.cycleFrom = th.heatFrom + tenthsBetween(r, 9*time.Minute, 13*time.Minute)
	th.cycleUntil = th.cycleFrom + tenthsBetween(r, 50*time.Minute, 70*time.Minute)
	g.hw.throttle = th
	p.story.roles[hot] += fmt.Sprintf("; heats from %s, cycles %.0f-%.0f C (period %.0f s) %.0f-%.0f min, then %.0f C",
		mins(th.heatFrom), th.lowC, th.highC, th.period.Seconds(), th.cycleFrom.Minutes(), th.cycleUntil.Minutes(), th.normalC+th.afterC)
	p.story.incidents = []incident{{
		id: fmt.Sprintf("hot-gpu%d", hot), kind: ExpectHot, gpu: hot,
		from: th.cycleFrom, deadline: th.cycleFrom + 10*time.Minute, until: th.cycleUntil + 10*time.Minute, end: th.cycleUntil,
		why: fmt.Sprintf("throttling at %.0f-%.0f C for %s: one alert within 10 min, no flapping, resolved after it cools", th.lowC, th.highC, mins(th.cycleUntil-th.cycleFrom)),
	}}
	p.story.notes["heat_from_s"] = seconds(th.heatFrom)
	p.story.notes["period_s"] = seconds(th.period)
	p.story.about = fmt.Sprintf("throttling: GPU temperature cycles %.0f-%.0f C with a 1-3 min period for %s, then cools to %.0f",
		th.lowC, th.highC, mins(th.cycleUntil-th.cycleFrom), th.normalC+th.afterC)
	return p.finish()
}

// gaps returns n logger outages of lo–hi each, in [from, until), at least
// 10 minutes apart, sorted.
func gaps(r *rand.Rand, n int, lo, hi, from, until time.Duration) []span {
	var out []span
	for tries := 0; len(out) < n && tries < 1000; tries++ {
		g := span{from: tenthsBetween(r, from, until-hi)}
		g.until = g.from + tenthsBetween(r, lo, hi)
		clear := true
		for _, o := range out {
			if g.from < o.until+10*time.Minute && o.from < g.until+10*time.Minute {
				clear = false
			}
		}
		if clear {
			out = append(out, g)
		}
	}
	sortSpans(out)
	return out
}

// sortSpans sorts spans by start.
func sortSpans(spans []span) {
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
}

// tenthsBetween returns a duration in [lo, hi], to the tenth of a second.
func tenthsBetween(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64((hi-lo)/(100*time.Millisecond))+1))*100*time.Millisecond
}

// mins formats d in whole minutes, as the truths' roles do: "7 min".
func mins(d time.Duration) string { return fmt.Sprintf("%.0f min", d.Minutes()) }
