package sim

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"
)

// The scenarios of GPUs whose health fails, as Config.Scenario takes them.
const (
	ScenarioECCRowRemap  = "ecc-row-remap"
	ScenarioPowerBrake   = "power-brake"
	ScenarioPCIeDegraded = "pcie-degraded"
	ScenarioXIDStorm     = "xid-storm"
	ScenarioNVLinkErrors = "nvlink-errors"
)

// healthLength is the length of each health scenario.
const healthLength = time.Hour

// crashLinger is how long a process that an XID killed still holds its
// GPU after the driver reports the XID.
const crashLinger = 5 * time.Second

// HealthScenarios returns the names of the scenarios whose GPUs' health
// fails: an uncorrectable ECC error that leaves a row remap pending, a
// power brake, a PCIe link that trains at x8 after a reset, an XID 13
// storm next to a single XID 79, and NVLink errors climbing on one link
// of an 8-GPU node. Every one is an hour of H100s in training.
func HealthScenarios() []string {
	return []string{ScenarioECCRowRemap, ScenarioPowerBrake, ScenarioPCIeDegraded, ScenarioXIDStorm, ScenarioNVLinkErrors}
}

// healthBuilder returns the function that draws the plan of the named
// health scenario, or nil.
func healthBuilder(name string) func(*rand.Rand) *plan {
	switch name {
	case ScenarioECCRowRemap:
		return eccRowRemap
	case ScenarioPowerBrake:
		return powerBrake
	case ScenarioPCIeDegraded:
		return pcieDegraded
	case ScenarioXIDStorm:
		return xidStorm
	case ScenarioNVLinkErrors:
		return nvlinkErrors
	}
	return nil
}

// trainingNode is n H100s, each training from the start a job already
// warm, for a health scenario.
func trainingNode(r *rand.Rand, pp *people, n int) *plan {
	p := &plan{duration: healthLength}
	for range n {
		j := trainer(r, pp, 0, 0, between(r, 45000, 65000))
		p.gpus = append(p.gpus, &gpuPlan{model: h100(), jobs: []*job{j}})
	}
	return p
}

// healthyBut adds a healthy Truth for every GPU of p but those in sick,
// and orders the Truths by GPU, then by From.
func (p *plan) healthyBut(sick ...int) {
	for i := range p.gpus {
		if !slices.Contains(sick, i) {
			p.truth = append(p.truth, healthy(i, p.duration))
		}
	}
	slices.SortStableFunc(p.truth, func(a, b Truth) int { return cmp.Or(cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.From, b.From)) })
}

// eccRowRemap: two H100s train; 12–18 minutes in, GPU 0 meets an
// uncorrectable ECC error. The driver reports XID 94 (a contained error:
// the job that touched the memory dies) and XID 63 (a row is remapped,
// which takes effect at the next reset), and asks for a reset. The job is
// gone; 40–48 minutes in the operator resets the GPU (it is away 20 s),
// and a new job starts on it.
func eccRowRemap(r *rand.Rand) *plan {
	pp := newPeople(r)
	p := trainingNode(r, pp, 2)
	g := p.gpus[0]
	at := durBetween(r, 12*time.Minute, 18*time.Minute)
	reset := durBetween(r, 40*time.Minute, 48*time.Minute)
	g.jobs[0].end = at
	g.jobs = append(g.jobs, trainer(r, pp, reset+durBetween(r, time.Minute, 3*time.Minute), 90*time.Second, between(r, 40000, 60000)))
	g.faults = []fault{&eccFault{at: at, reset: reset, corrected: float64(r.IntN(40) + 3)}}
	g.xids = []xidAt{{at, 94}, {at, 63}}
	g.lostAt, g.backAt = reset, reset+20*time.Second
	p.truth = []Truth{{GPU: 0, Expect: ExpectECC, From: at, Until: reset}}
	p.healthyBut(0)
	return p
}

// powerBrake: two H100s of one server train; 15–25 minutes in, the
// server's power supply asserts the power brake for 10–14 minutes: both
// GPUs slow down to half their clock (hw_slowdown, hw_power_brake), their
// power drops, then they run at full speed again.
func powerBrake(r *rand.Rand) *plan {
	pp := newPeople(r)
	p := trainingNode(r, pp, 2)
	from := durBetween(r, 15*time.Minute, 25*time.Minute)
	brake := &brakeFault{from: from, until: from + durBetween(r, 10*time.Minute, 14*time.Minute)}
	for i, g := range p.gpus {
		g.faults = []fault{brake}
		p.truth = append(p.truth, Truth{GPU: i, Expect: ExpectThrottle, From: brake.from, Until: brake.until})
	}
	p.healthyBut(0, 1)
	return p
}

// pcieDegraded: two H100s train; 8–14 minutes in, GPU 0's job hangs and
// the operator resets the GPU (it is away 30 s). Its PCIe link comes back
// trained at x8 instead of x16 and retransmits a few packets a minute;
// the job restarts on it and runs to the end on half the bandwidth.
func pcieDegraded(r *rand.Rand) *plan {
	pp := newPeople(r)
	p := trainingNode(r, pp, 2)
	g := p.gpus[0]
	reset := durBetween(r, 8*time.Minute, 14*time.Minute)
	back := reset + 30*time.Second
	g.lostAt, g.backAt = reset, back
	g.jobs[0].end = reset
	g.jobs = append(g.jobs, trainer(r, pp, back+durBetween(r, 30*time.Second, 90*time.Second), 90*time.Second, between(r, 45000, 60000)))
	g.faults = []fault{&pcieFault{at: back, width: 8, replays: between(r, 2, 6)}}
	p.truth = []Truth{{GPU: 0, Expect: ExpectPCIe, From: back, Until: p.duration}}
	p.healthyBut(0)
	return p
}

// xidStorm: four H100s train. On GPU 1 a bad job crashes again and again
// from 8–12 minutes in: every 60–120 s it dies with XID 13 (a graphics
// engine exception: its out-of-range access) and XID 43, and its
// scheduler restarts it, for 15–20 minutes. 30–36 minutes in, GPU 3
// reports a single XID 79, falls off the bus, and is back after a reset
// 12–15 minutes later.
func xidStorm(r *rand.Rand) *plan {
	pp := newPeople(r)
	p := trainingNode(r, pp, 4)
	bad := p.gpus[1]
	stormFrom := durBetween(r, 8*time.Minute, 12*time.Minute)
	stormUntil := stormFrom + durBetween(r, 15*time.Minute, 20*time.Minute)
	first := bad.jobs[0]
	bad.xids = append(bad.xids, xidAt{stormFrom, 13}, xidAt{stormFrom, 43})
	// The driver reports each XID while the crashing process still holds
	// the GPU; it is gone a few seconds later, and restarted.
	first.end = stormFrom + crashLinger
	for at := stormFrom; at < stormUntil; {
		next := at + durBetween(r, 60*time.Second, 120*time.Second)
		j := trainer(r, pp, at+15*time.Second, 20*time.Second, between(r, 20000, 30000))
		j.procs = first.procs // the same job, restarted by its scheduler
		j.end = next + crashLinger
		if next >= stormUntil {
			j.end = 0 // the last restart runs on
		} else {
			bad.xids = append(bad.xids, xidAt{next, 13}, xidAt{next, 43})
		}
		bad.jobs = append(bad.jobs, j)
		at = next
	}
	lost := p.gpus[3]
	lost.lostAt = durBetween(r, 30*time.Minute, 36*time.Minute)
	lost.backAt = lost.lostAt + durBetween(r, 12*time.Minute, 15*time.Minute)
	lost.jobs[0].end = lost.lostAt
	lost.xids = []xidAt{{lost.lostAt, 79}}
	p.truth = []Truth{
		{GPU: 1, Expect: ExpectXIDApp, From: stormFrom, Until: stormUntil},
		{GPU: 3, Expect: ExpectXIDHW, From: lost.lostAt, Until: lost.backAt},
		{GPU: 3, Expect: ExpectLost, From: lost.lostAt, Until: lost.backAt},
	}
	p.healthyBut(1, 3)
	return p
}

// nvlinkErrors: eight H100s of one node train one job together; 15–25
// minutes in, one NVLink link of one GPU starts to fail: its CRC errors
// climb, faster every minute, with replays and recoveries, until the link
// goes down 25–30 minutes later.
func nvlinkErrors(r *rand.Rand) *plan {
	pp := newPeople(r)
	p := trainingNode(r, pp, 8)
	i := r.IntN(8)
	from := durBetween(r, 15*time.Minute, 25*time.Minute)
	f := &nvlinkFault{from: from, down: from + durBetween(r, 25*time.Minute, 30*time.Minute), growth: between(r, 8, 15)}
	p.gpus[i].faults = []fault{f}
	p.truth = []Truth{{GPU: i, Expect: ExpectNVLink, From: from, Until: p.duration}}
	p.healthyBut(i)
	return p
}
