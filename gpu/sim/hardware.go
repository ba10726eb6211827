package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// The GPUs of the second trace set (shared/traces/v2), with power fitted to
// it: power.draw is idle + (full − idle) × utilization, with noise of 1.4 %
// of full, and never reads below 0.8 × idle. Temperatures are drawn per
// GPU (newServerGPU).
func serverH100() model {
	return model{name: "NVIDIA H100 80GB HBM3", memMiB: 81559, powerLimitW: 700, idleW: 72, fullW: 616, card: h100Card()}
}

func serverA100() model {
	return model{name: "NVIDIA A100-SXM4-40GB", memMiB: 40960, powerLimitW: 400, idleW: 55, fullW: 352, card: a100Card()}
}

func serverA100x80() model {
	return model{name: "NVIDIA A100-SXM4-80GB", memMiB: 81920, powerLimitW: 400, idleW: 62, fullW: 352, card: a100Card()}
}

func serverRTX() model {
	return model{name: "NVIDIA GeForce RTX 4090", memMiB: 24564, powerLimitW: 450, idleW: 24, fullW: 396, card: rtxCard()}
}

// Power readings of the realistic GPUs: noise as a share of full power, the
// floor as a share of idle power.
const (
	powerNoiseShare = 0.014
	powerFloorShare = 0.8
)

// hardware is how a realistic GPU's sensors read: a temperature that
// follows the load with the lag of the heatsink's thermal mass, a cooling
// that may fail to keep up (throttling), sensors that answer [N/A], and a
// GPU that may fall off the bus. It keeps the temperature from one sample
// to the next, so a GPU's samples must be taken in time order.
type hardware struct {
	tau      time.Duration // thermal time constant
	tempSD   float64       // sensor noise, degrees
	throttle *throttling   // nil: the cooling keeps up
	noPower  bool          // power.draw is [N/A] on every row
	tempNA   float64       // the share of temperature readings that are [N/A]
	tempOut  []span        // temperature is [N/A] throughout these

	// The heatsink's temperature at the last sample, without the heat of
	// throttling.
	tempC     float64
	sampledAt time.Duration
	warm      bool
}

// newServerGPU draws a GPU of model m in a server: its idle temperature,
// how much it warms per percent of load, how fast, and the memory its
// driver holds with no process.
func newServerGPU(r *rand.Rand, m model) *gpuPlan {
	m.idleC = between(r, 29.5, 37)
	m.cPerUtil = between(r, 0.24, 0.37)
	return &gpuPlan{
		model:       m,
		baselineMiB: float64(r.IntN(5)),
		hw: &hardware{
			tau:    durBetween(r, 80*time.Second, 110*time.Second),
			tempSD: 0.45,
		},
	}
}

// read returns the temperature and power of g at offset t, under util.
func (h *hardware) read(g *gpuPlan, t time.Duration, util float64, r *rand.Rand) (tempC, powerW float64) {
	steady := g.idleC + g.cPerUtil*util
	if !h.warm {
		h.tempC, h.warm = g.idleC, true
	} else {
		decay := math.Exp(-float64(t-h.sampledAt) / float64(h.tau))
		h.tempC = steady + (h.tempC-steady)*decay
	}
	h.sampledAt = t
	temp, powerShare := h.tempC, 1.0
	if h.throttle != nil {
		temp, powerShare = h.throttle.at(t, h.tempC)
	}
	tempC = math.Round(clamp(temp+r.NormFloat64()*h.tempSD, 20, maxTempC))
	power := g.idleW + (g.fullW-g.idleW)*util/100 + r.NormFloat64()*powerNoiseShare*g.fullW
	powerW = math.Round(clamp(power*powerShare, powerFloorShare*g.idleW, powerOvershoot*g.powerLimitW)*100) / 100
	if h.tempNA > 0 && r.Float64() < h.tempNA || inSpans(h.tempOut, t) {
		tempC = math.NaN()
	}
	if h.noPower {
		powerW = math.NaN()
	}
	return tempC, powerW
}

// throttling is a GPU whose cooling cannot keep up: from heatFrom it heats
// steadily to lowC, reached at cycleFrom; until cycleUntil it throttles,
// its temperature cycling between lowC and highC every period (the clocks
// drop when it is hot, so it cools, and rise again); then it cools with the
// heatsink's time constant to its usual temperature plus afterC (the
// chassis stays warmer).
type throttling struct {
	heatFrom, cycleFrom, cycleUntil time.Duration
	period                          time.Duration
	period2                         time.Duration // a second, slower cycle on top of the first; 0: none
	lowC, highC                     float64
	normalC                         float64 // the GPU's usual temperature under its load
	afterC                          float64
	tau                             time.Duration
	powerCut                        float64 // the share of power shed at highC
}

// at returns the temperature at t of a GPU whose heatsink alone would read
// normal, and the share of its power it draws.
func (th *throttling) at(t time.Duration, normal float64) (tempC, powerShare float64) {
	switch {
	case t < th.heatFrom:
		return normal, 1
	case t < th.cycleFrom:
		x := float64(t-th.heatFrom) / float64(th.cycleFrom-th.heatFrom)
		return normal + x*(th.lowC-th.normalC), 1
	case t < th.cycleUntil:
		// The throttling sets the pace, whatever the load does.
		temp := th.cycle(t)
		return temp, 1 - th.powerCut*clamp((temp-th.lowC)/(th.highC-th.lowC), 0, 1)
	}
	excess := th.cycle(th.cycleUntil) - th.normalC - th.afterC
	return normal + th.afterC + excess*math.Exp(-float64(t-th.cycleUntil)/float64(th.tau)), 1
}

// cycle is the throttling temperature at t: lowC at cycleFrom, highC half
// a period later; with a second period, the mean of the two cycles.
func (th *throttling) cycle(t time.Duration) float64 {
	mid, amp := (th.lowC+th.highC)/2, (th.highC-th.lowC)/2
	c := math.Cos(2 * math.Pi * float64(t-th.cycleFrom) / float64(th.period))
	if th.period2 > 0 {
		c = (c + math.Cos(2*math.Pi*float64(t-th.cycleFrom)/float64(th.period2))) / 2
	}
	return mid - amp*c
}

// lostEvent reports that GPU index fell off the bus, as the NVML source
// reports it.
func lostEvent(at time.Time, index int, uuid string) gpu.Event {
	return gpu.Event{
		Time:   at,
		Kind:   gpu.EventGPULost,
		GPU:    index,
		UUID:   uuid,
		Detail: fmt.Sprintf("GPU %d (%s) is lost: it fell off the bus or stopped answering NVML; check the kernel log (dmesg) for XID 79, then reset the GPU (nvidia-smi -r) or reboot", index, uuid),
	}
}
