package sim

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

const mib = 1 << 20

// rampLead shifts the warm-up curve so that its first sample is not empty.
const rampLead = 5 * time.Second

// model is a GPU product: what nvidia-smi names it, its memory and power
// limit, and how its readings follow utilization (fitted to the traces).
type model struct {
	name        string
	memMiB      float64
	powerLimitW float64
	idleW       float64 // power at 0 % utilization
	fullW       float64 // power at 100 % utilization
	idleC       float64 // temperature at 0 % utilization
	cPerUtil    float64 // degrees per percent of utilization
	card        card    // its health readings
}

// The GPUs of the reference traces, with their readings fitted to them.
func h100() model {
	return model{name: "NVIDIA H100 80GB HBM3", memMiB: 81559, powerLimitW: 700, idleW: 60, fullW: 660, idleC: 37, cPerUtil: 0.31, card: h100Card()}
}

func a100() model {
	return model{name: "NVIDIA A100-SXM4-40GB", memMiB: 40960, powerLimitW: 400, idleW: 60, fullW: 398, idleC: 38, cPerUtil: 0.30, card: a100Card()}
}

func rtx() model {
	return model{name: "NVIDIA GeForce RTX 4090", memMiB: 24564, powerLimitW: 450, idleW: 60, fullW: 442, idleC: 37, cPerUtil: 0.31, card: rtxCard()}
}

// powerOvershoot is how far above its limit a GPU's momentary power draw
// reads, as in the traces: the limit holds on average.
const powerOvershoot = 1.03

// maxMemShare is the most of its memory a GPU reports in use: the
// allocation that would take the rest fails, and the job dies.
const maxMemShare = 0.998

// maxTempC caps temperatures: a GPU throttles before it gets hotter.
const maxTempC = 93

// gpuPlan is everything that happens to one GPU during a scenario.
type gpuPlan struct {
	model
	baselineMiB float64 // memory no process accounts for (driver, contexts)
	reservedMiB float64 // memory the driver reserves, which no job can allocate (NVML's memory info v2)
	jobs        []*job
	fan         *fanFailure // nil: the fan works
	hw          *hardware   // how a realistic GPU reads; nil in the first five scenarios
	// mig splits the GPU into MIG instances, each with its own jobs: the
	// GPU's own jobs are then none.
	mig []*migSlice
	// lostAt is when the GPU falls off the bus (0: never), backAt when it
	// answers again after a reset (0: never); its jobs died with it.
	lostAt, backAt time.Duration
	// faults change its health readings; xids are the XID errors it
	// reports.
	faults []fault
	xids   []xidAt
}

// sample is the GPU's reading at offset t; r supplies its noise.
func (g *gpuPlan) sample(t time.Duration, r *rand.Rand, index int, uuid string) gpu.Device {
	memMiB := g.baselineMiB
	util, utilMem := 0.0, 0.0
	var procs []gpu.Process
	for _, j := range g.jobs {
		st, ok := j.at(t, r, g.limitMiB()-memMiB)
		if !ok {
			continue
		}
		memMiB += st.memMiB
		util += st.util
		utilMem += st.utilMem
		procs = j.appendProcesses(procs, st.memMiB)
	}
	util = math.Round(clamp(util, 0, 100))
	utilMem = math.Round(clamp(utilMem, 0, 100))
	d := gpu.Device{
		Index:       index,
		UUID:        uuid,
		Name:        g.name,
		MemUsed:     uint64(math.Round(clamp(memMiB, 0, g.memMiB-g.reservedMiB))) * mib,
		MemTotal:    uint64(g.memMiB) * mib,
		MemReserved: uint64(g.reservedMiB) * mib,
		UtilGPU:     util,
		UtilMem:     utilMem,
		PowerLimitW: g.powerLimitW,
		Processes:   procs,
	}
	if g.hw != nil {
		d.TempC, d.PowerW = g.hw.read(g, t, util, r)
	} else {
		power := g.idleW + (g.fullW-g.idleW)*util/100 + r.NormFloat64()*(4+4*util/100)
		d.TempC = math.Round(clamp(g.temperature(t, util, r), 20, maxTempC))
		d.PowerW = math.Round(clamp(power, 0.75*g.idleW, powerOvershoot*g.powerLimitW)*100) / 100
	}
	if g.brakedAt(t) {
		// The brake cuts the clocks, and the power with them.
		d.PowerW = math.Round(d.PowerW*0.55*100) / 100
	}
	d.Health = g.health(t, util, d.TempC, d.PowerW)
	return d
}

// limitMiB is the most memory the GPU reports in use: a share of what
// jobs can allocate (the total less what the driver reserves), where the
// allocation that would take the rest fails.
func (g *gpuPlan) limitMiB() float64 { return (g.memMiB - g.reservedMiB) * maxMemShare }

// lost reports whether the GPU is off the bus at offset t.
func (g *gpuPlan) lost(t time.Duration) bool {
	return g.lostAt > 0 && t >= g.lostAt && (g.backAt == 0 || t < g.backAt)
}

// temperature follows utilization, plus the heat of a failed fan.
func (g *gpuPlan) temperature(t time.Duration, util float64, r *rand.Rand) float64 {
	normal := g.idleC + g.cPerUtil*util + triangular(r, 1.5)
	if g.fan == nil {
		return normal
	}
	return g.fan.temperature(t, normal, r)
}

// job is one workload on one GPU: a training run, a notebook. Its memory
// warms up, plateaus with evaluation spikes, and may leak, jump (a big
// batch) or sit idle; it ends at end, when its processes disappear.
type job struct {
	procs     []gpu.Process // identities; MemUsed is filled per sample
	workerMiB float64       // memory of the second process, if there is one

	start, end time.Duration // end 0: runs past the scenario's end
	baseMiB    float64       // memory after warm-up
	ramp       time.Duration // warm-up; 0: already warm at start
	rampPow    float64       // warm-up shape: 0.5 the allocator's sqrt curve, 1 linear
	memSD      float64       // memory noise, MiB

	util, utilSD float64 // utilization when computing, percent

	evalFirst, evalEvery, evalLen time.Duration // evaluation passes, from start
	evalMiB                       float64

	leakFrom time.Duration // 0: no leak
	leakRate float64       // MiB per minute
	wobble   wave          // the leak's unevenness, MiB

	spikeFrom, spikeUntil time.Duration // a bigger batch; until 0: to the end
	spikeMiB              float64       // the job's memory during the spike

	idleFrom time.Duration // from then on memory is held, nothing computed; 0: never

	habits *habits // how a realistic job behaves; nil in the first five scenarios
}

// leakMiB is a leaking job's memory at t, after leakFrom, without noise.
func (j *job) leakMiB(t time.Duration) float64 {
	return j.baseMiB + j.leakRate*(t-j.leakFrom).Minutes() + j.wobble.at(t-j.leakFrom) - j.wobble.at(0)
}

// jobState is a job's share of a GPU reading.
type jobState struct {
	memMiB, util, utilMem float64
}

// at is the job's state at offset t, and false when it is not running. Its
// memory never exceeds room, the memory left on the GPU.
func (j *job) at(t time.Duration, r *rand.Rand, room float64) (jobState, bool) {
	if t < j.start || (j.end > 0 && t >= j.end) {
		return jobState{}, false
	}
	if j.habits != nil {
		return j.habits.at(j, t, r, room), true
	}
	since := t - j.start
	mem := j.baseMiB
	loading := false
	if j.ramp > 0 && since < j.ramp {
		// The first sample already shows the first allocations.
		x := float64(since+rampLead) / float64(j.ramp+rampLead)
		mem *= math.Pow(x, j.rampPow)
		loading = since < j.ramp/4
	}
	if j.evalEvery > 0 && since >= j.evalFirst && (since-j.evalFirst)%j.evalEvery < j.evalLen {
		mem += j.evalMiB
	}
	if j.leakFrom > 0 && t >= j.leakFrom {
		mem += j.leakMiB(t) - j.baseMiB
	}
	if j.spikeMiB > 0 && t >= j.spikeFrom && (j.spikeUntil == 0 || t < j.spikeUntil) {
		mem = j.spikeMiB
	}
	mem = clamp(mem+r.NormFloat64()*j.memSD, 1, room)

	var st jobState
	st.memMiB = math.Round(mem)
	switch {
	case j.idleFrom > 0 && t >= j.idleFrom:
		// An idle notebook: the odd 1 % from a stray kernel.
		if r.Float64() < 0.15 {
			st.util = 1
		}
	case loading:
		st.util = clamp(20+r.NormFloat64()*10, 0, 100)
		st.utilMem = st.util * 0.5
	default:
		st.util = clamp(j.util+r.NormFloat64()*j.utilSD, 0, 100)
		st.utilMem = clamp(st.util*0.6+r.NormFloat64()*3.5, 0, 100)
	}
	return st, true
}

// appendProcesses appends the job's processes holding memMiB between them:
// the worker its fixed share, the main process the rest.
func (j *job) appendProcesses(dst []gpu.Process, memMiB float64) []gpu.Process {
	worker := 0.0
	if len(j.procs) > 1 {
		worker = math.Round(math.Min(j.workerMiB, memMiB/5))
	}
	for i, p := range j.procs {
		m := memMiB - worker
		if i > 0 {
			m = worker
		}
		p.MemUsed = uint64(m) * mib
		dst = append(dst, p)
	}
	return dst
}

// fanFailure heats a GPU: from from, its temperature climbs for ramp
// towards hotC and wobbles there until repaired (0: never), then cools back
// with time constant cool.
type fanFailure struct {
	from, ramp, repaired, cool time.Duration
	hotC                       float64 // centre of the wobble
	normalC                    float64 // the GPU's usual temperature under its load
	wobble                     wave
}

// temperature is the GPU's temperature at t given the one it would have
// with a working fan.
func (f *fanFailure) temperature(t time.Duration, normal float64, r *rand.Rand) float64 {
	switch {
	case t < f.from:
		return normal
	case f.repaired > 0 && t >= f.repaired:
		excess := f.hotC + f.wobble.at(f.repaired) - f.normalC
		return normal + excess*math.Exp(-float64(t-f.repaired)/float64(f.cool))
	}
	x := math.Min(1, float64(t-f.from)/float64(f.ramp))
	hot := f.hotC + f.wobble.at(t) + (r.Float64()*2-1)*1.5
	return (1-x)*normal + x*hot
}

// wave is a slow sinusoid: the unevenness of a leak, the wobble of a
// temperature.
type wave struct {
	amp    float64
	period time.Duration
	phase  float64
}

// at is the wave's value at t.
func (w wave) at(t time.Duration) float64 {
	if w.amp == 0 || w.period == 0 {
		return 0
	}
	return w.amp * math.Sin(2*math.Pi*float64(t)/float64(w.period)+w.phase)
}

// triangular is bounded noise in [-w, w], peaked at 0.
func triangular(r *rand.Rand, w float64) float64 {
	return (r.Float64() - r.Float64()) * w
}

func clamp(v, lo, hi float64) float64 {
	return math.Max(lo, math.Min(hi, v))
}
