package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// habits are how a job of the realistic scenarios behaves, as the second
// trace set (shared/traces/v2) shows jobs on real servers: the caching
// allocator grows in steps, evaluation passes come at uneven intervals with
// uneven sizes, checkpoints stall the GPU for a minute or two, the data
// loader stalls it for a sample now and then, leaks grow in small blocks,
// some allocators churn in a sawtooth, TensorFlow maps one flat pool, and a
// notebook computes in bursts between long idle stretches, its memory
// untouched. All times are offsets from Config.Start.
type habits struct {
	loadFor    time.Duration // the job's first loadFor computes little (reading data, building the graph)
	memPerUtil float64       // utilization.memory per percent of utilization
	dipShare   float64       // the share of samples that catch a stall of the data loader

	steps   []allocStep // the caching allocator grows
	passes  []span      // evaluation passes, each with its own memory …
	passMiB []float64   // … in passMiB
	pauses  []span      // checkpoints: nothing computed, memory held
	churn   *sawtooth   // nil: no churn

	leakBlockMiB float64 // a leak grows in blocks of this size
	blocks       blocks  // memory kept for good at given times: a leak in blocks minutes apart

	poolMiB float64 // TensorFlow's preallocated pool, exact; 0: allocates as it goes
	mapped  bool    // the pool's first sample, which catches it half-mapped, has been taken

	computing []span        // a notebook computes in these only; nil: computes throughout
	growMiB   float64       // memory a notebook's first computation adds …
	growFor   time.Duration // … over this long

	daily *dailyLoad // a service's traffic over the day; nil: computes at its utilization throughout
}

// allocStep is the caching allocator reserving another block at at.
type allocStep struct {
	at  time.Duration
	MiB float64
}

// Utilization of the realistic jobs, fitted to the second trace set.
const (
	loadingUtil    = 32 // at most, while loading
	passUtil       = 70 // mean during an evaluation pass …
	passUtilSD     = 10 // … and its spread
	pauseUtil      = 4  // at most, during a checkpoint
	dipUtil        = 25 // at most, when a sample catches a stall
	idleBlipShare  = 0.015
	memUtilNoiseSD = 2
	realUtilSD     = 4
	dataStallShare = 0.007
)

// at is job j's state at t (while it runs) with these habits; its memory
// never exceeds room.
func (h *habits) at(j *job, t time.Duration, r *rand.Rand, room float64) jobState {
	since := t - j.start
	loading := since < h.loadFor
	idle := !loading && (j.idleFrom > 0 && t >= j.idleFrom || h.computing != nil && !inSpans(h.computing, t))
	pass := spanAt(h.passes, t)

	var st jobState
	switch {
	case h.poolMiB > 0:
		// TensorFlow maps its pool at once, exactly; the first sample
		// catches it part-way.
		st.memMiB = h.poolMiB
		if !h.mapped {
			h.mapped = true
			st.memMiB = math.Round(h.poolMiB * between(r, 0.2, 0.9))
		}
	default:
		mem := h.memMiB(j, t, idle, pass)
		// Memory nobody touches does not move: an idle job's reading is
		// exact.
		if !idle {
			mem += r.NormFloat64() * j.memSD
		}
		st.memMiB = math.Round(clamp(mem, 0, room))
	}

	switch {
	case idle:
		if r.Float64() < idleBlipShare {
			st.util = float64(1 + r.IntN(2))
		}
	case loading:
		st.util = r.Float64() * loadingUtil
	case inSpans(h.pauses, t):
		st.util = r.Float64() * pauseUtil
	case pass >= 0:
		st.util = passUtil + r.NormFloat64()*passUtilSD
	case h.daily != nil:
		st.util = h.daily.util(t, r)
	case r.Float64() < h.dipShare:
		st.util = r.Float64() * dipUtil
	default:
		st.util = j.util + r.NormFloat64()*j.utilSD
	}
	st.util = clamp(st.util, 0, 100)
	if st.util > 0 {
		st.utilMem = clamp(st.util*h.memPerUtil+r.NormFloat64()*memUtilNoiseSD, 0, 100)
	}
	return st
}

// memMiB is the memory job j holds at t, before noise, with these habits
// (not a pool's): its warm-up, allocator steps, a notebook's growth, its
// leak and, unless it is idle, the evaluation pass pass (-1: none) and
// allocator churn.
func (h *habits) memMiB(j *job, t time.Duration, idle bool, pass int) float64 {
	since := t - j.start
	mem := j.baseMiB
	if j.ramp > 0 && since < j.ramp {
		mem *= math.Pow(float64(since+rampLead)/float64(j.ramp+rampLead), j.rampPow)
	}
	for _, s := range h.steps {
		if t >= s.at {
			mem += s.MiB
		}
	}
	if h.growMiB > 0 && len(h.computing) > 0 && t >= h.computing[0].from {
		mem += h.growMiB * math.Min(1, float64(t-h.computing[0].from)/float64(h.growFor))
	}
	if j.leakFrom > 0 && t >= j.leakFrom {
		mem += h.leakBlockMiB * math.Floor(j.leakRate*(t-j.leakFrom).Minutes()/h.leakBlockMiB)
	}
	mem += h.blocks.at(t)
	if !idle {
		if pass >= 0 {
			mem += h.passMiB[pass]
		}
		mem += h.churn.at(t)
	}
	return mem
}

// sawtooth is allocator churn: memory climbs steadily by ampMiB over each
// cycle, then the allocator frees it at once; the cycles end at ends.
type sawtooth struct {
	from   time.Duration
	ampMiB float64
	ends   []time.Duration
}

// at is the churn's memory at t, centred on zero; 0 outside its cycles.
func (s *sawtooth) at(t time.Duration) float64 {
	if s == nil || t < s.from {
		return 0
	}
	k, _ := slices.BinarySearch(s.ends, t+1)
	if k == len(s.ends) {
		return 0
	}
	begin := s.from
	if k > 0 {
		begin = s.ends[k-1]
	}
	return s.ampMiB * (float64(t-begin)/float64(s.ends[k]-begin) - 0.5)
}

// half is the most the churn adds to memory; 0 without churn.
func (s *sawtooth) half() float64 {
	if s == nil {
		return 0
	}
	return s.ampMiB / 2
}

// newSawtooth returns churn of ampMiB from from to until, its cycles
// lasting period × 0.65–1.3 each.
func newSawtooth(r *rand.Rand, from, until, period time.Duration, ampMiB float64) *sawtooth {
	s := &sawtooth{from: from, ampMiB: ampMiB}
	for t := from; t < until; {
		t += time.Duration(float64(period) * between(r, 0.65, 1.3))
		s.ends = append(s.ends, t)
	}
	return s
}

// serverTrainer returns a realistic training job of a fresh user on g:
// from start it warms up in ramp (the allocator's sqrt-like curve) to
// plateauMiB, and trains with evaluation passes and checkpoints until the
// end of a run of length horizon.
func serverTrainer(r *rand.Rand, pp *people, g *gpuPlan, start, ramp time.Duration, plateauMiB float64, horizon time.Duration) *job {
	j := &job{
		procs:     pp.processes(pp.user(), pp.trainCommand(), pp.container(), r.IntN(3) == 0),
		workerMiB: between(r, 480, 620),
		start:     start,
		ramp:      ramp,
		rampPow:   0.5,
		baseMiB:   plateauMiB,
		memSD:     between(r, 1, 10),
		util:      between(r, 86, 97),
		utilSD:    realUtilSD,
		habits: &habits{
			loadFor:    durBetween(r, 15*time.Second, 25*time.Second),
			memPerUtil: between(r, 0.33, 0.7),
			dipShare:   dataStallShare,
		},
	}
	withCheckpoints(r, j, horizon)
	withPasses(r, j, durBetween(r, 15*time.Minute, 32*time.Minute), durBetween(r, 20*time.Second, 60*time.Second),
		between(r, 300, 4500), g.memMiB*0.88-plateauMiB, horizon)
	return j
}

// withCheckpoints stalls j for 40–120 s every 28–58 minutes (±10 %) until
// horizon.
func withCheckpoints(r *rand.Rand, j *job, horizon time.Duration) {
	every := between(r, 28, 58)
	for t := j.start + j.ramp + minutes(every*between(r, 0.7, 1.1)); t < horizon; t += minutes(every * between(r, 0.9, 1.1)) {
		j.habits.pauses = append(j.habits.pauses, span{t, t + durBetween(r, 40*time.Second, 120*time.Second)})
	}
}

// withPasses gives j an evaluation pass every ~every (±5 %) until horizon,
// each about length long (±10 %) and adding about sizeMiB (±15 %), never
// more than capMiB.
func withPasses(r *rand.Rand, j *job, every, length time.Duration, sizeMiB, capMiB float64, horizon time.Duration) {
	h := j.habits
	h.passes, h.passMiB = nil, nil
	for t := j.start + j.ramp + scale(every, between(r, 0.4, 1)); t < horizon; t += scale(every, between(r, 0.95, 1.05)) {
		h.passes = append(h.passes, span{t, t + scale(length, between(r, 0.9, 1.1))})
		h.passMiB = append(h.passMiB, math.Max(0, math.Min(sizeMiB*between(r, 0.85, 1.15), capMiB)))
	}
}

// withPassesTo gives j an evaluation pass every ~every (±15 s) until
// horizon, lasting 20–40 s, that takes the GPU's memory to loShare–hiShare
// of total: the eval batch sized to what fits.
func withPassesTo(r *rand.Rand, j *job, g *gpuPlan, every time.Duration, loShare, hiShare float64, horizon time.Duration) {
	h := j.habits
	h.passes, h.passMiB = nil, nil
	for t := j.start + j.ramp + scale(every, between(r, 0.5, 1)); t < horizon; t += every + durBetween(r, 0, 30*time.Second) - 15*time.Second {
		h.passes = append(h.passes, span{t, t + durBetween(r, 20*time.Second, 40*time.Second)})
		h.passMiB = append(h.passMiB, g.memMiB*between(r, loShare, hiShare)-g.baselineMiB-j.baseMiB)
	}
}

// slowWarmup makes j's allocator warm up slowly: a quick ramp to 55–70 %
// of its plateau, then, in 6–9 ever rarer steps (the first and largest at
// once, each wait 1.3–1.5 times the last), the rest, the last step 10–20
// minutes after the start.
func slowWarmup(r *rand.Rand, j *job) (within time.Duration) {
	plateau := j.baseMiB
	j.ramp = durBetween(r, 60*time.Second, 100*time.Second)
	rest := plateau * between(r, 0.3, 0.45)
	j.baseMiB = plateau - rest
	within = durBetween(r, 10*time.Minute, 20*time.Minute)
	n := 6 + r.IntN(4)
	first := rest * between(r, 0.35, 0.45)
	rampEnd := j.start + j.ramp
	j.habits.steps = []allocStep{{rampEnd + durBetween(r, 2*time.Second, 8*time.Second), first}}
	weights := make([]float64, n-1)
	sum := 0.0
	for k := range weights {
		weights[k] = math.Pow(0.85, float64(k)) * between(r, 0.6, 1.4)
		sum += weights[k]
	}
	// Each wait 1.3–1.5 times the one before, all of them ending at within.
	growth := between(r, 1.3, 1.5)
	first0 := j.habits.steps[0].at
	wait := float64(j.start+within-first0) * (growth - 1) / (math.Pow(growth, float64(n-1)) - 1)
	at := float64(first0)
	for k, w := range weights {
		at += wait * math.Pow(growth, float64(k))
		j.habits.steps = append(j.habits.steps, allocStep{time.Duration(at).Truncate(100 * time.Millisecond), (rest - first) * w / sum})
	}
	return within
}

// creep makes j's caching allocator grow after its warm-up: 5 or 6 steps
// of 1.5–2.5 GiB at about 3, 6, 12, 24, 48 (and 96) minutes after its
// start (±10 %), none above capMiB in all.
func creep(r *rand.Rand, j *job, capMiB float64) {
	n := 5 + r.IntN(2)
	var total float64
	for k := range n {
		size := between(r, 1.5, 2.5) * 1024
		total += size
		at := j.start + minutes(3*math.Pow(2, float64(k))*between(r, 0.9, 1.1))
		j.habits.steps = append(j.habits.steps, allocStep{at.Truncate(100 * time.Millisecond), size})
	}
	if j.baseMiB+total > capMiB {
		j.baseMiB = capMiB - total
	}
}

// withBlockLeak makes j leak from from at rateMiB per minute, in blocks of
// 4–12 MiB, until it dies of OOM at oomAt.
func withBlockLeak(r *rand.Rand, j *job, from, oomAt time.Duration, rateMiB float64) {
	j.leakFrom, j.leakRate, j.end = from, rateMiB, oomAt
	j.habits.leakBlockMiB = float64(4 + r.IntN(9))
}

// stepsMiB is the memory all of j's allocator steps add.
func (h *habits) stepsMiB() float64 {
	sum := 0.0
	for _, s := range h.steps {
		sum += s.MiB
	}
	return sum
}

// minutes returns m minutes, to the 100 ms.
func minutes(m float64) time.Duration {
	return time.Duration(m * float64(time.Minute)).Truncate(100 * time.Millisecond)
}

// scale returns d × f, to the 100 ms.
func scale(d time.Duration, f float64) time.Duration {
	return time.Duration(float64(d) * f).Truncate(100 * time.Millisecond)
}
