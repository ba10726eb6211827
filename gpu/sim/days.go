package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// The scenarios of servers that run for days, as the fourth trace set
// (shared/traces/v4) shows them: services that reload, answer a trickle
// of requests at night and leak a few MiB a minute for days, allocators
// that fragment, jobs that die of out-of-memory and are started again,
// and a GPU whose temperature swings around the threshold for hours.
// Like the realistic scenarios they draw every time, rate and size from
// the seed, sample as nvidia-smi does, and have a TruthFile.
const (
	// Two inference servers reload their weights every 1–3 hours: memory
	// drops to nothing for seconds and comes back to the same level.
	// Nothing to alert on.
	ScenarioModelReload = "model-reload"
	// A PyTorch caching allocator fragments: after its warm-up, reserved
	// memory grows in irregular 2–20 MiB steps in bursts, with flat
	// stretches between, to an out-of-memory 3–10 hours later; a new job
	// follows. Another GPU warms up slowly.
	ScenarioFragCreep = "frag-creep"
	// A job dies of out-of-memory and is started again at once, 6–12
	// times, each run dying 3–10 minutes after it starts; then a healthy
	// job follows. For some seeds the first run's memory grows for most
	// of an hour before the first death, for the others every run dies
	// within minutes.
	ScenarioOOMRetryLoop = "oom-retry-loop"
	// Two inference replicas for three days: busy by day, a trickle of
	// requests at night, memory flat at 70–90 %. Nothing to alert on.
	ScenarioDayNightInference = "day-night-inference"
	// An inference server on an 80 GB card climbs to 80–93 % at start-up
	// and leaks 1–3 MiB a minute for two to three days, to an
	// out-of-memory; it is started again (the same climb). The other GPU
	// runs training jobs one after another, resting between them, for
	// half the seeds at about 1 GiB.
	ScenarioSlowLeak80GB = "slow-leak-80gb"
	// A GPU's temperature swings between 83 and 88 C around the 85 C
	// threshold for hours, then it cools; its neighbour runs warm below
	// the threshold.
	ScenarioHotOscillation = "hot-oscillation"
)

// DayScenarios returns the names of the scenarios of servers that run for
// days, which have a TruthFile.
func DayScenarios() []string {
	return []string{ScenarioModelReload, ScenarioFragCreep, ScenarioOOMRetryLoop, ScenarioDayNightInference, ScenarioSlowLeak80GB, ScenarioHotOscillation}
}

// dayBuilder returns the function that draws the plan of the named
// scenario of servers that run for days, or nil.
func dayBuilder(name string) func(*rand.Rand) *plan {
	switch name {
	case ScenarioModelReload:
		return modelReload
	case ScenarioFragCreep:
		return fragCreep
	case ScenarioOOMRetryLoop:
		return oomRetryLoop
	case ScenarioDayNightInference:
		return dayNightInference
	case ScenarioSlowLeak80GB:
		return slowLeak80GB
	case ScenarioHotOscillation:
		return hotOscillation
	}
	return nil
}

// servingCommands are inference servers' command lines.
var servingCommands = []string{
	"python -m vllm.entrypoints.openai.api_server --model meta-llama/Meta-Llama-3-8B-Instruct",
	"text-generation-launcher --model-id mistralai/Mistral-7B-Instruct-v0.2 --port 8080",
	"tritonserver --model-repository=/models",
	"python serve.py --port 8000",
}

// inferenceServer is an inference server on g from start: its CUDA
// context, then its weights in shards over 30–120 s, then the KV cache up
// to share of what jobs can allocate, exactly flat after that. It answers
// requests at 15–60 % utilization.
func inferenceServer(r *rand.Rand, g *gpuPlan, procs []gpu.Process, start time.Duration, share float64) *job {
	loadFor := durBetween(r, 30*time.Second, 120*time.Second)
	j := &job{
		procs: procs, start: start, ramp: durBetween(r, 3*time.Second, 8*time.Second), rampPow: 1,
		baseMiB: math.Round(between(r, 400, 600)),
		util:    between(r, 15, 60), utilSD: 15,
		habits: &habits{loadFor: loadFor + 10*time.Second, memPerUtil: between(r, 0.3, 0.6), dipShare: 0.05},
	}
	weights := (g.memMiB - g.reservedMiB) * share * between(r, 0.3, 0.6)
	shards := 4 + r.IntN(12)
	for k := range shards {
		j.habits.blocks.add(start+loadFor*time.Duration(k+1)/time.Duration(shards+1), math.Round(weights/float64(shards)))
	}
	kvAt := start + loadFor
	j.habits.blocks.add(kvAt, math.Round((g.memMiB-g.reservedMiB)*share-g.baselineMiB-j.baseMiB-j.habits.blocks.at(kvAt-1)))
	return j
}

// modelReload: two 80 GB GPUs serve for 10 h at 5 s. Each server reloads
// its weights every 1–3 h (a new process of the same command): memory
// drops to nothing for 5–30 s and comes back to the same level in a
// minute or two. Nothing to alert on.
func modelReload(r *rand.Rand) *plan {
	p := server(r, 10*time.Hour, 5*time.Second, pickModel(r, serverA100x80(), serverH100()), 2)
	withReserved(r, p)
	pp := newPeople(r)
	for i, g := range p.gpus {
		user, command, container := pp.user(), servingCommands[r.IntN(len(servingCommands))], pp.container()
		share := between(r, 0.55, 0.9)
		var reloads [][]Seconds
		var down time.Duration // when the last server stopped; 0 for the first
		for start := tenthsBetween(r, 30*time.Second, 5*time.Minute); start < p.duration; {
			j := inferenceServer(r, g, pp.processes(user, command, container, false), start, share)
			g.jobs = append(g.jobs, j)
			if down > 0 {
				reloads = append(reloads, []Seconds{seconds(down), seconds(start + j.habits.loadFor)})
			}
			down = start + tenthsBetween(r, time.Hour, 3*time.Hour)
			if down >= p.duration {
				break
			}
			j.end = down
			start = down + tenthsBetween(r, 5*time.Second, 30*time.Second)
		}
		var at []string
		for _, rl := range reloads {
			at = append(at, fmt.Sprintf("%.0f", float64(rl[0])/60))
		}
		p.story.roles[i] = fmt.Sprintf("inference server (restart), %s of the GPU; reloads (memory to ~0 for seconds) at %s min", g.percent(share*(g.memMiB-g.reservedMiB)-g.baselineMiB), joinOr(at, "none"))
		p.story.notes[fmt.Sprintf("reloads_gpu%d_s", i)] = reloads
	}
	p.story.about = "two inference servers reload their weights every 1-3 h: memory drops to ~0 for seconds and comes back to the same level. Nothing to alert on"
	return p.finish()
}

// joinOr joins ss with "/", or is none when there are none.
func joinOr(ss []string, none string) string {
	if len(ss) == 0 {
		return none
	}
	out := ss[0]
	for _, s := range ss[1:] {
		out += "/" + s
	}
	return out
}

// fragCreep: two RTX 4090 for up to 12 h at 10 s. On one a training job
// warms up to 40–60 % with two high-water marks in its first half hour;
// from 25–45 minutes in, its caching allocator's reserved memory grows in
// steps of 2–20 MiB, in bursts of 18–35 minutes with flat stretches of
// 8–20 minutes between, 5–25 MiB/min on average, until the OOM 3–10 hours
// later; a new healthy job starts 5–15 minutes after it. The other GPU
// trains with a slow allocator warm-up.
func fragCreep(r *rand.Rand) *plan {
	p := server(r, 12*time.Hour, 10*time.Second, serverRTX(), 2)
	pp := newPeople(r)
	c := r.IntN(2)
	g := p.gpus[c]
	limit := g.oomLimit(r)
	start := tenthsBetween(r, time.Minute, 5*time.Minute)
	j := p.trainerAt(r, pp, c, start, durBetween(r, 60*time.Second, 150*time.Second), between(r, 0.35, 0.5))
	for k := range 2 {
		at := start + tenthsBetween(r, time.Duration(4+8*k)*time.Minute, time.Duration(10+10*k)*time.Minute)
		j.habits.steps = append(j.habits.steps, allocStep{at, math.Round(g.memMiB * between(r, 0.02, 0.05))})
	}
	// Its sequences vary in length: the high-water marks are its peaks,
	// not evaluation passes on top.
	j.habits.passes, j.habits.passMiB = nil, nil
	from := tenthsBetween(r, 25*time.Minute, 45*time.Minute)
	lasts := tenthsBetween(r, 3*time.Hour, 10*time.Hour)
	room := limit - g.baselineMiB - j.plateauMiB()
	rate := clamp(room/lasts.Minutes(), 5, 25)
	steps := 0
	for t := from; t < p.duration; {
		burst := tenthsBetween(r, 18*time.Minute, 35*time.Minute)
		flat := tenthsBetween(r, 8*time.Minute, 20*time.Minute)
		// In a burst the allocator grows fast enough to keep the
		// average over the burst and the flat stretch after it.
		inBurst := rate * (burst + flat).Minutes() / burst.Minutes()
		for end := t + burst; t < end; steps++ {
			step := math.Round(between(r, 2, 20))
			j.habits.blocks.add(t, step)
			t += minutes(step / inBurst * between(r, 0.3, 1.7))
		}
		t += flat
	}
	oom := p.endLeak(r, c, j, limit, from)
	realized := (j.habits.blocks.at(oom) - j.habits.blocks.at(from-1)) / (oom - from).Minutes()
	next := oom + tenthsBetween(r, 5*time.Minute, 15*time.Minute)
	p.duration = max(p.duration, next+time.Hour)
	fresh := serverTrainer(r, pp, g, next, durBetween(r, 100*time.Second, 240*time.Second), g.memMiB*between(r, 0.4, 0.6), p.duration)
	g.jobs = append(g.jobs, fresh)
	p.slowTrainerAt(r, pp, 1-c, tenthsBetween(r, time.Minute, 5*time.Minute), between(r, 0.5, 0.75))
	p.story.roles[c] = fmt.Sprintf("training: warm-up with 2 high-water marks, then fragmentation creep of %.1f MiB/min (steps of 2-20 MiB in bursts) from %s; OOM at %.1f h; a new healthy job at %s",
		rate, mins(from), oom.Hours(), mins(next))
	p.story.incidents = []incident{leakIncident(fmt.Sprintf("leak-gpu%d", c), c, from, oom, realized,
		fmt.Sprintf("fragmentation creep (irregular 2-20 MiB steps, %.1f MiB/min on average) to CUDA OOM: warn >= 30 min before it; once", realized))}
	p.story.resolves = []resolveCheck{{gpu: c, after: oom - time.Minute, by: oom + 10*time.Minute,
		why: "the job died of OOM and freed its memory: its alert ends before the next job is judged"}}
	p.story.notes["creep_steps"] = steps
	p.story.notes["next_job_s"] = seconds(next)
	p.story.notes["realized_rate_mib_min"] = math.Round(realized*10) / 10
	p.story.about = "PyTorch caching-allocator fragmentation: after warm-up, reserved memory grows in irregular 2-20 MiB steps in bursts with flat stretches, to CUDA OOM 3-10 h later; a new healthy job follows"
	return p.finish()
}

// oomRetryLoop: two GPUs for 5 h at 5 s. On one a job dies of OOM and is
// started again 5–30 s later, 6–12 times, each run dying 3–10 minutes
// after it starts; then the scheduler gives up, and 20–60 minutes later a
// healthy job follows. For half the seeds (a ramp) the first run's memory
// grows for 35–70 minutes before its OOM and each restart resumes near
// full from a checkpoint; for the others every run loads near full and
// dies within minutes. The other GPU trains.
func oomRetryLoop(r *rand.Rand) *plan {
	p := server(r, 5*time.Hour, 5*time.Second, pickModel(r, serverH100(), serverA100x80(), serverRTX()), 2)
	withReserved(r, p)
	pp := newPeople(r)
	x := r.IntN(2)
	g := p.gpus[x]
	limit := g.oomLimit(r)
	user, command, container := pp.user(), pp.trainCommand(), pp.container()
	runs := 6 + r.IntN(7)
	ramp := r.IntN(2) == 0

	// run adds a run of the job from start: it warms up in warm to share
	// of what jobs can allocate, grows rate MiB/min from grow on, and dies
	// when memory reaches limit, which it returns.
	run := func(start, warm time.Duration, share, rate float64, grow time.Duration) time.Duration {
		j := &job{
			procs: pp.processes(user, command, container, false),
			start: start, ramp: warm, rampPow: 0.5,
			baseMiB: math.Round((g.memMiB-g.reservedMiB)*share - g.baselineMiB),
			memSD:   between(r, 1, 6),
			util:    between(r, 86, 97), utilSD: realUtilSD,
			habits: &habits{loadFor: durBetween(r, 15*time.Second, 25*time.Second), memPerUtil: between(r, 0.33, 0.7), dipShare: dataStallShare},
		}
		withBlockLeak(r, j, grow, 0, rate)
		oom := g.oomAt(j, limit, grow, start+12*time.Hour, time.Second)
		j.end = oom
		g.jobs = append(g.jobs, j)
		return oom
	}
	var ooms []Seconds
	var from, deadline, oom, first time.Duration
	start := tenthsBetween(r, 2*time.Minute, 10*time.Minute)
	variant := "instant"
	if ramp {
		variant = "ramp"
		warm := durBetween(r, 100*time.Second, 300*time.Second)
		share := between(r, 0.35, 0.5)
		from = start + warm + tenthsBetween(r, 10*time.Minute, 20*time.Minute)
		grows := tenthsBetween(r, 35*time.Minute, 70*time.Minute)
		rate := (limit - (g.memMiB-g.reservedMiB)*share) / grows.Minutes()
		oom = run(start, warm, share, rate, from)
		first, deadline = oom, oom-5*time.Minute
		ooms = append(ooms, seconds(oom))
		// Each restart resumes from a checkpoint a few minutes short of
		// the point where it died.
		for range runs - 1 {
			start = oom + durBetween(r, 5*time.Second, 30*time.Second)
			warm := durBetween(r, 60*time.Second, 120*time.Second)
			resume := (limit - rate*between(r, 2, 8)) / (g.memMiB - g.reservedMiB)
			oom = run(start, warm, resume, rate, start+warm)
			ooms = append(ooms, seconds(oom))
		}
	} else {
		from = start
		for range runs {
			warm := durBetween(r, 60*time.Second, 150*time.Second)
			share := between(r, 0.75, 0.9)
			lives := tenthsBetween(r, 3*time.Minute, 10*time.Minute)
			rate := (limit - (g.memMiB-g.reservedMiB)*share) / max((lives-warm).Minutes(), 1)
			oom = run(start, warm, share, rate, start+warm)
			ooms = append(ooms, seconds(oom))
			if first == 0 {
				first = oom
			}
			start = oom + durBetween(r, 5*time.Second, 30*time.Second)
		}
		deadline = first + 30*time.Minute
	}
	last := oom
	next := last + tenthsBetween(r, 20*time.Minute, 60*time.Minute)
	healthy := serverTrainer(r, pp, g, next, durBetween(r, 100*time.Second, 240*time.Second), g.memMiB*between(r, 0.45, 0.7), p.duration)
	g.jobs = append(g.jobs, healthy)
	p.duration = max(p.duration, next+time.Hour)
	p.fastTrainerAt(r, pp, 1-x, 0, 5*time.Minute, 0.45, 0.7)
	var at []string
	for _, o := range ooms {
		at = append(at, fmt.Sprintf("%.0f", float64(o)/60))
	}
	p.story.roles[x] = fmt.Sprintf("%s: %d OOMs at %s min, restarted within seconds each time, then given up; a healthy job at %s", variant, len(ooms), joinOr(at, ""), mins(next))
	p.story.incidents = []incident{{
		id: fmt.Sprintf("oomloop-gpu%d", x), kind: ExpectLeak, gpu: x,
		from: from, deadline: deadline, until: last + time.Minute, end: last, maxFirings: 2,
		why: fmt.Sprintf("the job dies of OOM %d times, started again each time: warned before the first OOM when its memory grew for long enough, else told within 30 min of it that it keeps dying; at most 2 firings of any one rule", len(ooms)),
	}}
	p.story.notes["variant"] = variant
	p.story.notes["ooms_s"] = ooms
	p.story.notes["next_job_s"] = seconds(next)
	p.story.about = "a job OOMs and is restarted at once; each run OOMs again 3-10 min later, 6-12 times; then it gives up and a healthy job follows. Ramp: the first OOM had a 35-70 min ramp; instant: every run dies within minutes"
	return p.finish()
}

// dayNightInference: two H100 serve inference for three days at 10 s.
// Each loads its model and KV cache to 70–90 % in the first minutes and
// stays exactly flat; its utilization follows the day: busy in the
// afternoon, at night a request caught in 5–50 % of samples.
func dayNightInference(r *rand.Rand) *plan {
	p := server(r, 72*time.Hour, 10*time.Second, serverH100(), 2)
	pp := newPeople(r)
	quiet := 18*time.Hour + tenthsBetween(r, -time.Hour, time.Hour) // ~03:00 for a run that starts at 09:00
	night := between(r, 0.05, 0.5)
	for i, g := range p.gpus {
		share := between(r, 0.7, 0.9)
		j := inferenceServer(r, g, pp.processes(pp.user(), servingCommands[r.IntN(len(servingCommands))], pp.container(), false),
			tenthsBetween(r, 30*time.Second, 10*time.Minute), share)
		j.habits.daily = &dailyLoad{quiet: quiet + tenthsBetween(r, -20*time.Minute, 20*time.Minute), night: night * between(r, 0.8, 1.2)}
		g.jobs = []*job{j}
		p.story.roles[i] = fmt.Sprintf("inference replica, memory flat at %s; utilization follows the day (quietest ~%02d:00, night: a request caught in ~%.0f%% of samples)",
			g.percent(share*(g.memMiB-g.reservedMiB)-g.baselineMiB), (9+int(quiet.Hours()))%24, 100*j.habits.daily.night)
	}
	p.story.notes["night_hit_rate"] = math.Round(night*100) / 100
	p.story.notes["quietest_hour"] = math.Round(math.Mod(9+quiet.Hours(), 24)*10) / 10
	p.story.about = "two inference replicas for 3 days: busy days, a trickle of requests at night, memory flat at 70-90%. Nothing to alert on: a service answering a few requests is not idle"
	return p.finish()
}

// dailyLoad is the traffic of a service over the day: quietest at quiet
// (and every 24 h after), busiest twelve hours later. At the busiest a
// sample catches a request nearly always, at the quietest with
// probability night; a request's utilization grows with the traffic.
type dailyLoad struct {
	quiet time.Duration
	night float64
}

// util is the service's utilization at t.
func (d *dailyLoad) util(t time.Duration, r *rand.Rand) float64 {
	x := (1 - math.Cos(2*math.Pi*float64(t-d.quiet)/float64(24*time.Hour))) / 2
	if r.Float64() >= d.night+(0.97-d.night)*x {
		return 0
	}
	return clamp(12+60*x+r.NormFloat64()*8, 1, 100)
}

// slowLeak80GB: two H100 for three days at 15 s. On one an inference
// server starts in the first 15 minutes, climbs to 80–93 % in 2–10 minutes,
// and from 30–60 minutes in leaks 1–3 MiB/min in blocks of 10–40 MiB until
// its OOM 48–66 hours later; it is started again 2–10 minutes after, with
// the same climb. The other runs training jobs of 4–18 hours one after
// another, resting 30 minutes to 3 hours between them. For half the seeds
// both GPUs rest at 0.9–1.4 GiB with no job (a display or a persistence
// daemon's memory).
func slowLeak80GB(r *rand.Rand) *plan {
	p := server(r, 72*time.Hour, 15*time.Second, serverH100(), 2)
	rests := r.IntN(2) == 0
	if rests {
		for _, g := range p.gpus {
			g.baselineMiB = math.Round(between(r, 900, 1400))
		}
	}
	pp := newPeople(r)
	s := r.IntN(2)
	g := p.gpus[s]
	limit := g.oomLimit(r)
	user, command, container := pp.user(), servingCommands[r.IntN(len(servingCommands))], pp.container()
	start := tenthsBetween(r, time.Minute, 15*time.Minute)
	from := start + tenthsBetween(r, 30*time.Minute, 60*time.Minute)
	// A plateau of 80–93 %, and the rate that fills the rest in 48–66 h:
	// 1–3 MiB/min, a little more or less where the plateau demands it.
	lasts := tenthsBetween(r, 48*time.Hour, 66*time.Hour)
	share := clamp((limit-between(r, 1, 3)*lasts.Minutes())/(g.memMiB-g.reservedMiB), 0.8, 0.93)
	rate := (limit - share*(g.memMiB-g.reservedMiB)) / lasts.Minutes()
	climb := durBetween(r, 2*time.Minute, 10*time.Minute)
	pow := []float64{0.5, 1}[r.IntN(2)]
	serve := func(start time.Duration) *job {
		j := serviceJob(r, g, pp.processes(user, command, container, false), start, climb, pow, share)
		g.jobs = append(g.jobs, j)
		return j
	}
	j := serve(start)
	j.leakFrom, j.leakRate = from, rate
	j.habits.leakBlockMiB = math.Round(between(r, 10, 40))
	oom := p.endLeak(r, s, j, limit, from)
	p.duration = 72 * time.Hour
	restart := oom + tenthsBetween(r, 2*time.Minute, 10*time.Minute)
	serve(restart)
	o := 1 - s
	var spans []string
	for t := tenthsBetween(r, 5*time.Minute, 30*time.Minute); t < p.duration; {
		tr := serverTrainer(r, pp, p.gpus[o], t, durBetween(r, 100*time.Second, 300*time.Second), p.gpus[o].memMiB*between(r, 0.45, 0.8), p.duration)
		tr.end = t + tenthsBetween(r, 4*time.Hour, 18*time.Hour)
		if tr.end >= p.duration {
			tr.end = 0
		}
		p.gpus[o].jobs = append(p.gpus[o].jobs, tr)
		spans = append(spans, fmt.Sprintf("%.1f-%.1f h", t.Hours(), min(tr.end, p.duration).Hours()))
		if tr.end == 0 {
			break
		}
		t = tr.end + tenthsBetween(r, 30*time.Minute, 3*time.Hour)
	}
	p.story.roles[s] = fmt.Sprintf("inference server climbing to %.1f%% in %s, leaks %.2f MiB/min in %.0f MiB blocks from %s; OOM at %.1f h; restarted at %.1f h",
		100*share, mins(climb), rate, j.habits.leakBlockMiB, mins(from), oom.Hours(), restart.Hours())
	p.story.roles[o] = "training jobs " + joinOr(spans, "")
	if rests {
		p.story.roles[o] += fmt.Sprintf("; rests at %.0f MiB between them", p.gpus[o].baselineMiB)
	}
	in := leakIncident(fmt.Sprintf("leak-gpu%d", s), s, from, oom, rate,
		fmt.Sprintf("a %.2f MiB/min leak on an 80 GB card for %.0f h to CUDA OOM: warn hours ahead (by 4 h before the OOM), once", rate, (oom-from).Hours()))
	in.deadline = oom - 4*time.Hour
	p.story.incidents = []incident{in}
	p.story.resolves = []resolveCheck{{gpu: s, after: oom - time.Minute, by: oom + 10*time.Minute,
		why: "the server died of OOM: the leak alert ends; the restarted server is a new process"}}
	p.story.notes["restart_s"] = seconds(restart)
	p.story.notes["rate_mib_min"] = math.Round(rate*10) / 10
	p.story.notes["block_mib"] = j.habits.leakBlockMiB
	p.story.notes["resting_mib"] = p.gpus[o].baselineMiB
	p.story.about = "an inference server on an 80 GB H100 leaks 1-3 MiB/min from a plateau of 80-93% for 2-3 days to CUDA OOM; restarted within minutes; the other H100 runs training jobs one after another"
	return p.finish()
}

// serviceJob is an inference server on g from start that climbs to share
// of what jobs can allocate in climb (shaped by pow: 0.5 the allocator's
// concave curve, 1 linear) and answers requests at 20–60 % utilization.
func serviceJob(r *rand.Rand, g *gpuPlan, procs []gpu.Process, start, climb time.Duration, pow, share float64) *job {
	return &job{
		procs: procs, start: start, ramp: climb, rampPow: pow,
		baseMiB: math.Round((g.memMiB-g.reservedMiB)*share - g.baselineMiB),
		memSD:   between(r, 0, 3),
		util:    between(r, 20, 60), utilSD: 15,
		habits: &habits{loadFor: climb, memPerUtil: between(r, 0.3, 0.5), dipShare: 0.1},
	}
}

// hotOscillation: two H100 train for 8 h at 5 s. 60–100 minutes in, one's
// cooling stops keeping up: it heats for 8–15 minutes to 83 C, then for
// 2–5 hours its temperature swings between 82.5–83.5 and 87.5–88.5 C in two
// slow cycles (8–15 and 25–40 minutes), then it cools. Its neighbour runs
// warm, 76–83 C, over the same hours.
func hotOscillation(r *rand.Rand) *plan {
	p := server(r, 8*time.Hour, 5*time.Second, serverH100(), 2)
	pp := newPeople(r)
	hot := r.IntN(2)
	p.trainOthers(r, pp, -1, 0, 5*time.Minute, 0.45, 0.8)
	g := p.gpus[hot]
	th := &throttling{
		heatFrom: tenthsBetween(r, 60*time.Minute, 100*time.Minute),
		period:   tenthsBetween(r, 8*time.Minute, 15*time.Minute),
		period2:  tenthsBetween(r, 25*time.Minute, 40*time.Minute),
		lowC:     between(r, 82.5, 83.5),
		highC:    between(r, 87.5, 88.5),
		normalC:  g.idleC + g.cPerUtil*g.jobs[0].util,
		tau:      scale(g.hw.tau, between(r, 1.2, 1.5)),
		powerCut: between(r, 0.1, 0.2),
	}
	th.cycleFrom = th.heatFrom + tenthsBetween(r, 8*time.Minute, 15*time.Minute)
	th.cycleUntil = th.cycleFrom + tenthsBetween(r, 2*time.Hour, 5*time.Hour)
	g.hw.throttle = th
	n := p.gpus[1-hot]
	n.hw.throttle = &throttling{
		heatFrom: th.heatFrom + tenthsBetween(r, 0, 10*time.Minute),
		period:   tenthsBetween(r, 10*time.Minute, 30*time.Minute),
		lowC:     between(r, 76, 78), highC: between(r, 81, 82.5),
		normalC: n.idleC + n.cPerUtil*n.jobs[0].util,
		tau:     n.hw.tau,
	}
	n.hw.throttle.cycleFrom = n.hw.throttle.heatFrom + tenthsBetween(r, 5*time.Minute, 10*time.Minute)
	n.hw.throttle.cycleUntil = th.cycleUntil
	// The GPU is too hot from the first time it passes the 85 C
	// threshold, which its sensor then reads as 86 C now and then.
	from := th.cycleFrom
	for t := th.heatFrom; t < th.cycleUntil; t += 5 * time.Second {
		if temp, _ := th.at(t, th.normalC); temp > 85 {
			from = t
			break
		}
	}
	p.story.roles[hot] += fmt.Sprintf("; heats from %s, oscillates %.0f-%.0f C (cycles %.0f and %.0f min) %.0f-%.0f min, then cools",
		mins(th.heatFrom), th.lowC, th.highC, th.period.Minutes(), th.period2.Minutes(), th.cycleFrom.Minutes(), th.cycleUntil.Minutes())
	p.story.roles[1-hot] += fmt.Sprintf("; same rack: %.0f-%.0f C from %s (below the threshold)", n.hw.throttle.lowC, n.hw.throttle.highC, mins(n.hw.throttle.cycleFrom))
	p.story.incidents = []incident{{
		id: fmt.Sprintf("hot-gpu%d", hot), kind: ExpectHot, gpu: hot,
		from: from, deadline: from + 10*time.Minute, until: th.cycleUntil + 10*time.Minute, end: th.cycleUntil,
		why: fmt.Sprintf("%.0f-%.0f C for %.1f h around an 85 C threshold: one alert within 10 min of the first time it passes 85 C, no flapping, resolved once it cools",
			th.lowC, th.highC, (th.cycleUntil - th.cycleFrom).Hours()),
	}}
	p.story.resolves = []resolveCheck{{gpu: hot, after: th.cycleUntil, by: th.cycleUntil + 15*time.Minute,
		why: "it cooled: the hot alert ends"}}
	p.story.notes["osc_s"] = []Seconds{seconds(th.cycleFrom), seconds(th.cycleUntil)}
	p.story.notes["neighbour_gpu"] = 1 - hot
	p.story.about = "a GPU oscillates between 83 and 88 C around the 85 C threshold for 2-5 h (slow cycles), then cools; its neighbour runs warm at 76-83 C"
	return p.finish()
}
