package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// The leak scenarios: the shapes a leak takes on real servers beyond a
// tensor kept every few seconds, as the third trace set (shared/traces/v3)
// shows some of them, and the workloads that must not be taken for one.
// Like the realistic scenarios they draw every time, rate and size from
// the seed, sample as nvidia-smi does, and have a TruthFile.
const (
	// A job keeps something per epoch or per validation pass: memory rises
	// in one block every 4–25 minutes, flat in between, to an OOM hours
	// later; another GPU trains with a slow allocator warm-up.
	ScenarioLeakEpoch = "leak-epoch"
	// An inference service on a 24 GB card leaks 3–9 MiB a minute and dies
	// after a day or more; another serves without leaking.
	ScenarioLeakTiny = "leak-tiny"
	// A person re-runs a notebook cell that keeps its results: memory
	// rises in blocks at a human rhythm, each cell run peaking above the
	// floor, with pauses, until a cell's peak no longer fits; another
	// notebook runs cells without keeping anything.
	ScenarioLeakNotebook = "leak-notebook"
	// A slow leak under large evaluation passes: the job dies when its
	// floor plus a pass no longer fits, hours before the floor alone
	// would; another job's passes take it to 96–97 % without a leak.
	ScenarioLeakPeaks = "leak-peaks"
	// A job warms up to 80–95 % of the GPU and leaks fast: it dies 25–45
	// minutes after it starts; another job warms up as high and stays.
	ScenarioLeakNearFull = "leak-nearfull"
	// vLLM with tensor parallelism 2: weights load shard by shard for
	// 2–15 minutes, a profiling pass, then the KV cache maps 90–95 % of
	// each GPU, flat after that. Nothing to alert on.
	ScenarioVLLMServe = "vllm-serve"
)

// LeakScenarios returns the names of the leak scenarios, which have a
// TruthFile.
func LeakScenarios() []string {
	return []string{ScenarioLeakEpoch, ScenarioLeakTiny, ScenarioLeakNotebook, ScenarioLeakPeaks, ScenarioLeakNearFull, ScenarioVLLMServe}
}

// leakBuilder returns the function that draws the plan of the named leak
// scenario, or nil.
func leakBuilder(name string) func(*rand.Rand) *plan {
	switch name {
	case ScenarioLeakEpoch:
		return leakEpoch
	case ScenarioLeakTiny:
		return leakTiny
	case ScenarioLeakNotebook:
		return leakNotebook
	case ScenarioLeakPeaks:
		return leakPeaks
	case ScenarioLeakNearFull:
		return leakNearFull
	case ScenarioVLLMServe:
		return vllmServe
	}
	return nil
}

// blocks is memory a job keeps for good, block by block: the staircase of
// a leak that grows once an epoch or once a notebook cell.
type blocks struct {
	times []time.Duration // when each block is kept, in order
	kept  []float64       // MiB kept by then, this block included
}

// add keeps MiB more from at on, at or after the last block.
func (b *blocks) add(at time.Duration, MiB float64) {
	sum := MiB
	if n := len(b.kept); n > 0 {
		sum += b.kept[n-1]
	}
	b.times, b.kept = append(b.times, at), append(b.kept, sum)
}

// at is the memory kept at t.
func (b *blocks) at(t time.Duration) float64 {
	k, _ := slices.BinarySearch(b.times, t+1)
	if k == 0 {
		return 0
	}
	return b.kept[k-1]
}

// oomAt returns when job j on g dies of out-of-memory: the first time in
// [from, until), in steps of step, at which the memory it asks for (its
// floor and any pass or notebook cell then running) and the GPU's
// baseline reach limit; 0 when it does not before until.
func (g *gpuPlan) oomAt(j *job, limit float64, from, until, step time.Duration) time.Duration {
	h := j.habits
	for t := from; t < until; t += step {
		idle := j.idleFrom > 0 && t >= j.idleFrom || h.computing != nil && !inSpans(h.computing, t)
		if g.baselineMiB+h.memMiB(j, t, idle, spanAt(h.passes, t)) >= limit {
			return t
		}
	}
	return 0
}

// oomLimit draws the memory at which a job's next allocation fails: a
// little short of what the GPU can hold.
func (g *gpuPlan) oomLimit(r *rand.Rand) float64 { return g.limitMiB() * between(r, 0.985, 0.997) }

// withReserved makes the driver reserve memory on every GPU of p for half
// the seeds, as NVML's memory info v2 reports it (598 MiB on an H100): no
// job can allocate it, so the GPUs are full before their total.
func withReserved(r *rand.Rand, p *plan) {
	if r.IntN(2) == 0 {
		return
	}
	for _, g := range p.gpus {
		g.reservedMiB = math.Round(g.memMiB * 598 / 81559 * between(r, 0.9, 1.1))
	}
}

// pickModel draws one of models.
func pickModel(r *rand.Rand, models ...model) model { return models[r.IntN(len(models))] }

// leakEpoch: two 80 GB GPUs for 12 h or so at 10 s. On one a job keeps
// something per epoch: from 15–60 minutes in, memory rises in one block
// every 4–25 minutes (±8 %), 15–120 MiB/min on average, until the floor
// plus an evaluation pass no longer fits, 3–10 hours later. The other
// trains with a slow allocator warm-up.
func leakEpoch(r *rand.Rand) *plan {
	p := server(r, 40*time.Hour, 10*time.Second, pickModel(r, serverH100(), serverA100x80()), 2)
	withReserved(r, p)
	pp := newPeople(r)
	leaker := r.IntN(2)
	g := p.gpus[leaker]
	limit := g.oomLimit(r)
	from := tenthsBetween(r, 15*time.Minute, 60*time.Minute)
	rate := between(r, 15, 120)
	period := tenthsBetween(r, 4*time.Minute, 25*time.Minute)
	share := clamp((limit-rate*tenthsBetween(r, 3*time.Hour, 10*time.Hour).Minutes())/g.memMiB, 0.25, 0.75)
	j := p.trainerAt(r, pp, leaker, tenthsBetween(r, 30*time.Second, 3*time.Minute), durBetween(r, 100*time.Second, 300*time.Second), share)
	block := rate * period.Minutes()
	for t := from + scale(period, between(r, 0.5, 1)); t < p.duration; t += scale(period, between(r, 0.92, 1.08)) {
		j.habits.blocks.add(t, math.Round(block*between(r, 0.9, 1.1)))
	}
	oom := p.endLeak(r, leaker, j, limit, from)
	p.slowTrainerAt(r, pp, 1-leaker, tenthsBetween(r, time.Minute, 5*time.Minute), between(r, 0.5, 0.78))
	p.story.roles[leaker] = fmt.Sprintf("leaks %.0f MiB/min as a block of %.0f MiB every %.1f min from %s; OOM at %.1f h", rate, block, period.Minutes(), mins(from), oom.Hours())
	p.story.incidents = []incident{leakIncident(fmt.Sprintf("leak-gpu%d", leaker), leaker, from, oom, rate,
		fmt.Sprintf("staircase leak (%.0f MiB every %s) to CUDA OOM; warn >= 30 min before it", block, mins(period)))}
	p.story.notes["period_s"] = seconds(period)
	p.story.notes["block_mib"] = math.Round(block*10) / 10
	p.story.about = "staircase leak: one block per epoch (4-25 min apart) at 15-120 MiB/min on average to OOM; a second GPU trains with a slow warm-up"
	return p.finish()
}

// endLeak ends job j on GPU i of p at its OOM, when its memory first
// reaches limit from from on, and p a little after that; it returns the
// OOM. The job must run out of memory within p's duration.
func (p *plan) endLeak(r *rand.Rand, i int, j *job, limit float64, from time.Duration) time.Duration {
	oom := p.gpus[i].oomAt(j, limit, from, p.duration, time.Second)
	if oom == 0 {
		panic(fmt.Sprintf("sim: the leak on GPU %d does not run out of memory within %v", i, p.duration))
	}
	j.end = oom
	p.duration = (oom + tenthsBetween(r, 20*time.Minute, 2*time.Hour)).Truncate(time.Second)
	return oom
}

// leakTiny: two 24 GB cards serve inference for a day or two at 30 s. On
// one the service leaks 3–9 MiB/min in small blocks from 10–40 minutes
// in, and dies of OOM 24–40 hours later; the other serves without
// leaking.
func leakTiny(r *rand.Rand) *plan {
	p := server(r, 60*time.Hour, 30*time.Second, serverRTX(), 2)
	withReserved(r, p)
	pp := newPeople(r)
	leaker := r.IntN(2)
	g := p.gpus[leaker]
	limit := g.oomLimit(r)
	from := tenthsBetween(r, 10*time.Minute, 40*time.Minute)
	rate := between(r, 3, 9)
	last := tenthsBetween(r, 24*time.Hour, 40*time.Hour)
	j := p.serviceAt(r, pp, leaker, limit-g.baselineMiB-rate*last.Minutes())
	withBlockLeak(r, j, from, p.duration, rate)
	oom := p.endLeak(r, leaker, j, limit, from)
	other := p.serviceAt(r, pp, 1-leaker, g.memMiB*between(r, 0.35, 0.7))
	p.story.roles[leaker] = fmt.Sprintf("inference service leaking %.1f MiB/min from %s; OOM at %.1f h", rate, mins(from), oom.Hours())
	p.story.roles[1-leaker] = fmt.Sprintf("inference service, flat at %s", p.gpus[1-leaker].percent(other.baseMiB))
	p.story.incidents = []incident{leakIncident(fmt.Sprintf("leak-gpu%d", leaker), leaker, from, oom, rate,
		fmt.Sprintf("a %.1f MiB/min leak on a %.0f MiB card: a day or more to OOM; warn >= 30 min before it (hours is better)", rate, g.memMiB))}
	p.story.about = "a 24 GB card serving inference leaks 3-9 MiB/min for a day or more to OOM; a second card serves without leaking"
	return p.finish()
}

// serviceAt adds an inference service to GPU i of p, started in the first
// minutes: it loads its model (memMiB) in under a minute, then answers
// requests at 20–45 % utilization, each burst of requests taking a little
// more memory for a few seconds.
func (p *plan) serviceAt(r *rand.Rand, pp *people, i int, memMiB float64) *job {
	g := p.gpus[i]
	j := &job{
		procs:   pp.processes(pp.user(), "python serve.py --port 8000", pp.container(), false),
		start:   tenthsBetween(r, 30*time.Second, 5*time.Minute),
		ramp:    durBetween(r, 30*time.Second, 60*time.Second),
		rampPow: 0.5,
		baseMiB: memMiB,
		memSD:   between(r, 0.5, 3),
		util:    between(r, 20, 45), utilSD: 8,
		habits: &habits{
			loadFor:    durBetween(r, 30*time.Second, 60*time.Second),
			memPerUtil: between(r, 0.3, 0.5),
			dipShare:   dataStallShare,
		},
	}
	withPasses(r, j, durBetween(r, 3*time.Minute, 12*time.Minute), durBetween(r, 10*time.Second, 40*time.Second),
		between(r, 50, 400), g.memMiB*0.9-memMiB, p.duration)
	g.jobs = append(g.jobs, j)
	return j
}

// leakNotebook: two GPUs for up to a day at 5 s, each a notebook a
// person works in: a cell runs for 1.5–5 min now and then (gaps of
// 20 s–15 min, and 1–3 pauses of 15–35 min), computing and peaking above
// the memory the kernel holds. On one each run keeps its results, a block
// of memory, until a run's peak no longer fits; the other keeps nothing.
func leakNotebook(r *rand.Rand) *plan {
	p := server(r, 30*time.Hour, 5*time.Second, pickModel(r, serverH100(), serverA100(), serverA100x80(), serverRTX()), 2)
	withReserved(r, p)
	pp := newPeople(r)
	leaker := r.IntN(2)
	g := p.gpus[leaker]
	limit := g.oomLimit(r)
	gap := tenthsBetween(r, 2*time.Minute, 10*time.Minute)
	blockMiB := g.memMiB * between(r, 0.002, 0.012)
	peakMiB := g.memMiB * between(r, 0.03, 0.15)
	last := tenthsBetween(r, 2*time.Hour, 8*time.Hour)
	cells := last.Minutes() / (gap.Minutes() + 3)
	loadMiB := clamp(limit-g.baselineMiB-peakMiB-cells*blockMiB, 0.1*g.memMiB, 0.6*g.memMiB)
	j := p.notebookAt(r, pp, leaker, loadMiB, gap, peakMiB, blockMiB)
	from := j.habits.blocks.times[0]
	oom := p.endLeak(r, leaker, j, limit, from)
	rate := (j.habits.blocks.at(oom) - j.habits.blocks.at(from-1)) / (oom - from).Minutes()
	o := p.gpus[1-leaker]
	p.notebookAt(r, pp, 1-leaker, o.memMiB*between(r, 0.2, 0.6), tenthsBetween(r, 2*time.Minute, 10*time.Minute), o.memMiB*between(r, 0.03, 0.15), 0)
	p.story.roles[leaker] = fmt.Sprintf("notebook: a cell every ~%s keeps ~%.0f MiB and peaks %.0f MiB above it; OOM at %.1f h", mins(gap), blockMiB, peakMiB, oom.Hours())
	p.story.roles[1-leaker] = "notebook: cells now and then, nothing kept"
	p.story.incidents = []incident{leakIncident(fmt.Sprintf("leak-gpu%d", leaker), leaker, from, oom, rate,
		"a notebook cell keeps its results at every run, at a human rhythm with pauses, until a run's peak no longer fits: warn >= 30 min before the OOM, once")}
	p.story.about = "notebooks at a human rhythm: one keeps a block of memory at every cell run until a run's peak no longer fits; the other keeps nothing"
	return p.finish()
}

// notebookAt adds to GPU i of p a notebook that loads loadMiB in its first
// minutes, then runs a cell for 20 s–3 min after gaps of 20 s–15 min
// (about gap on average) with 1–3 pauses of 15–35 minutes, each run
// computing and peaking up to peakMiB above the memory held, and keeping
// keepMiB (±50 %) when it ends.
func (p *plan) notebookAt(r *rand.Rand, pp *people, i int, loadMiB float64, gap time.Duration, peakMiB, keepMiB float64) *job {
	g := p.gpus[i]
	load := tenthsBetween(r, 2*time.Minute, 15*time.Minute)
	j := &job{
		procs: pp.processes(pp.user(), "jupyter-lab --no-browser --port 8888", pp.container(), false),
		start: load, ramp: durBetween(r, 40*time.Second, 90*time.Second), rampPow: 0.5,
		baseMiB: loadMiB, memSD: between(r, 1, 4),
		util: between(r, 80, 95), utilSD: 6,
		habits: &habits{memPerUtil: between(r, 0.4, 0.6), dipShare: dataStallShare},
	}
	j.habits.loadFor = j.ramp
	h := j.habits
	var pauses []time.Duration
	for range 1 + r.IntN(3) {
		pauses = append(pauses, tenthsBetween(r, 30*time.Minute, 8*time.Hour))
	}
	slices.Sort(pauses)
	t := load + j.ramp
	for t < p.duration {
		wait := time.Duration(r.ExpFloat64() * float64(gap))
		if len(pauses) > 0 && t >= pauses[0] {
			wait, pauses = tenthsBetween(r, 15*time.Minute, 35*time.Minute), pauses[1:]
		}
		t += clampDur(wait, 20*time.Second, 15*time.Minute).Truncate(100 * time.Millisecond)
		run := span{t, t + tenthsBetween(r, 90*time.Second, 5*time.Minute)}
		h.computing = append(h.computing, run)
		h.passes = append(h.passes, run)
		h.passMiB = append(h.passMiB, math.Round(peakMiB*between(r, 0.5, 1)))
		if keepMiB > 0 {
			h.blocks.add(run.until, math.Round(keepMiB*between(r, 0.5, 1.5)))
		}
		t = run.until
	}
	g.jobs = append(g.jobs, j)
	return j
}

// clampDur returns d within [lo, hi].
func clampDur(d, lo, hi time.Duration) time.Duration { return max(lo, min(hi, d)) }

// leakPeaks: two 80 GB GPUs for up to 12 h at 5 s. On one a job leaks
// 20–80 MiB/min in small blocks under evaluation passes of 8–20 % of the
// GPU (40–120 s every 12–30 minutes), until the floor plus a pass no
// longer fits, 3–8 hours after the leak began; the other's passes take it
// to 96–97 % without a leak.
func leakPeaks(r *rand.Rand) *plan {
	p := server(r, 30*time.Hour, 5*time.Second, pickModel(r, serverH100(), serverA100x80()), 2)
	withReserved(r, p)
	pp := newPeople(r)
	leaker := r.IntN(2)
	g := p.gpus[leaker]
	limit := g.oomLimit(r)
	from := tenthsBetween(r, 20*time.Minute, 60*time.Minute)
	rate := between(r, 20, 80)
	passMiB := g.memMiB * between(r, 0.08, 0.2)
	share := clamp((limit-passMiB-rate*tenthsBetween(r, 3*time.Hour, 8*time.Hour).Minutes())/g.memMiB, 0.2, 0.7)
	j := p.trainerAt(r, pp, leaker, tenthsBetween(r, 30*time.Second, 3*time.Minute), durBetween(r, 100*time.Second, 240*time.Second), share)
	withPasses(r, j, durBetween(r, 12*time.Minute, 30*time.Minute), durBetween(r, 40*time.Second, 120*time.Second), passMiB, passMiB*1.2, p.duration)
	withBlockLeak(r, j, from, p.duration, rate)
	oom := p.endLeak(r, leaker, j, limit, from)
	o := p.gpus[1-leaker]
	spiky := p.fastTrainerAt(r, pp, 1-leaker, 0, 15*time.Minute, 0.72, 0.82)
	withPassesTo(r, spiky, o, durBetween(r, 9*time.Minute, 11*time.Minute), 0.96, 0.97, p.duration)
	p.story.roles[leaker] = fmt.Sprintf("leaks %.0f MiB/min from %s under passes of %.0f MiB; OOM in a pass at %.1f h", rate, mins(from), passMiB, oom.Hours())
	p.story.roles[1-leaker] = fmt.Sprintf("training with eval spikes to 96-97%% (plateau %s)", o.percent(spiky.plateauMiB()))
	p.story.incidents = []incident{leakIncident(fmt.Sprintf("leak-gpu%d", leaker), leaker, from, oom, rate,
		"a leak under large evaluation passes: the job dies when its floor plus a pass no longer fits; warn >= 30 min before that OOM")}
	p.story.about = "a slow leak under large evaluation passes dies of OOM in a pass, hours before its floor would fill the GPU; a second job's passes reach 96-97% without a leak"
	return p.finish()
}

// leakNearFull: two 80 GB GPUs for 3 h at 5 s. On one a job warms up in
// 100–300 s to 80–95 % of what it can allocate and leaks 100–300 MiB/min:
// it dies 25–45 minutes after it starts, too soon to be warned 30 minutes
// ahead, so it must be warned within minutes of the start (15 at most,
// and 10 before the OOM). On the other a job warms up (fast or slowly) to
// 84–92 % and stays.
func leakNearFull(r *rand.Rand) *plan {
	p := server(r, 3*time.Hour, 5*time.Second, pickModel(r, serverH100(), serverA100x80()), 2)
	withReserved(r, p)
	pp := newPeople(r)
	leaker := r.IntN(2)
	g := p.gpus[leaker]
	limit := g.oomLimit(r)
	start := tenthsBetween(r, 5*time.Minute, 60*time.Minute)
	ramp := durBetween(r, 100*time.Second, 300*time.Second)
	from := start + ramp + tenthsBetween(r, 0, time.Minute)
	rate := between(r, 100, 300)
	lives := tenthsBetween(r, 25*time.Minute, 45*time.Minute)
	share := clamp((limit-rate*(start+lives-from).Minutes())/g.memMiB, 0.8, 0.95)
	j := p.trainerAt(r, pp, leaker, start, ramp, share)
	j.habits.passes, j.habits.passMiB = nil, nil // no room left for them
	withBlockLeak(r, j, from, p.duration, rate)
	oom := p.endLeak(r, leaker, j, limit, from)
	p.duration = max(p.duration, 3*time.Hour)
	o := p.gpus[1-leaker]
	high := between(r, 0.84, 0.92) * o.limitMiB() / o.memMiB
	var stays *job
	if r.IntN(2) == 0 {
		stays = p.slowTrainerAt(r, pp, 1-leaker, tenthsBetween(r, 0, 30*time.Minute), high)
	} else {
		stays = p.fastTrainerAt(r, pp, 1-leaker, 0, 30*time.Minute, high, high)
	}
	stays.habits.passes, stays.habits.passMiB = nil, nil
	p.story.roles[leaker] = fmt.Sprintf("warms up to %s from %s and leaks %.0f MiB/min; OOM at %s", g.percent(j.plateauMiB()), mins(start), rate, mins(oom))
	p.story.roles[1-leaker] = fmt.Sprintf("warms up to %s and stays", o.percent(stays.plateauMiB()))
	deadline := min(from+15*time.Minute, oom-10*time.Minute)
	p.story.incidents = []incident{{
		id: fmt.Sprintf("leak-gpu%d", leaker), kind: ExpectLeak, gpu: leaker,
		from: from, deadline: deadline, until: oom + time.Minute, end: oom, rateMiBPerMin: rate,
		why: fmt.Sprintf("a job near full leaking %.0f MiB/min dies %s after it starts: warn within minutes, by %s", rate, mins(oom-start), mins(deadline)),
	}}
	p.story.notes["oom_s"] = seconds(oom)
	p.story.about = "a job that starts near full and leaks fast dies within the hour: warn within minutes of the start; another job as full does not grow"
	return p.finish()
}

// vllmServe: two 80 GB GPUs serve one vLLM model with tensor parallelism
// 2 for 6 h at 5 s. From 2–8 minutes in, the weights load shard by shard
// (20–60 % of each GPU over 2–15 minutes), a profiling pass takes 5–15 %
// more for 20–60 s, and the KV cache maps the rest up to 90–95 % of the
// memory CUDA offers (gpu_memory_utilization of what the driver does not
// reserve), exactly flat after that while requests keep the GPUs busy.
func vllmServe(r *rand.Rand) *plan {
	p := server(r, 6*time.Hour, 5*time.Second, pickModel(r, serverH100(), serverA100x80()), 2)
	withReserved(r, p)
	pp := newPeople(r)
	procs := pp.processes(pp.user(), "python -m vllm.entrypoints.openai.api_server --tensor-parallel-size 2", pp.container(), false)
	start := tenthsBetween(r, 2*time.Minute, 8*time.Minute)
	weights := between(r, 0.2, 0.6)
	loadFor := tenthsBetween(r, 2*time.Minute, 15*time.Minute)
	shards := 4 + r.IntN(27)
	utilization := between(r, 0.9, 0.95)
	profile := span{start + loadFor + durBetween(r, 5*time.Second, 20*time.Second), 0}
	profile.until = profile.from + durBetween(r, 20*time.Second, 60*time.Second)
	kvAt := profile.until + durBetween(r, 5*time.Second, 20*time.Second)
	profileShare := between(r, 0.05, 0.15)
	for _, g := range p.gpus {
		j := &job{
			procs: procs, start: start, ramp: durBetween(r, 5*time.Second, 15*time.Second), rampPow: 1,
			baseMiB: math.Round(between(r, 400, 600)), // the CUDA context, before the first shard
			util:    between(r, 40, 90), utilSD: 15,
			habits: &habits{loadFor: kvAt - start + time.Minute, memPerUtil: between(r, 0.3, 0.6), dipShare: 0.05},
		}
		h := j.habits
		weightsMiB := g.memMiB * weights
		for k := range shards {
			h.blocks.add(start+loadFor*time.Duration(k+1)/time.Duration(shards), math.Round(weightsMiB/float64(shards)))
		}
		h.passes, h.passMiB = []span{profile}, []float64{math.Round(g.memMiB * profileShare)}
		h.blocks.add(kvAt, math.Round((g.memMiB-g.reservedMiB)*utilization-g.baselineMiB-j.baseMiB-h.blocks.at(kvAt-1)))
		g.jobs = []*job{j}
	}
	for i := range p.gpus {
		p.story.roles[i] = fmt.Sprintf("vLLM rank: weights %.0f%% in %s, KV cache to %.0f%% at %s", 100*weights, mins(loadFor), 100*utilization, mins(kvAt))
	}
	p.story.notes["gpu_memory_utilization"] = math.Round(utilization*100) / 100
	p.story.about = "vLLM with tensor parallelism 2: weights load shard by shard for 2-15 min, then the KV cache maps 90-95% of each GPU; busy with requests. Nothing to alert on"
	return p.finish()
}
