package sim

import (
	"math"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// card is what a GPU product says of its health when nothing is wrong:
// its PCIe link, NVLink links, clocks, fan and ECC.
type card struct {
	pcieGen, pcieWidth int     // the link's maxima, what a healthy link trains at under load
	nvlinks            int     // NVLink links; 0: none
	smMHz, smIdleMHz   float64 // the SM clock at full speed and idle
	memMHz             float64 // the memory clock
	fan                bool    // the driver reads a fan (PCIe cards); SXM modules have none
	ecc                bool    // ECC is on and rows are remapped (data-center cards)
}

// The health of the simulated products.
func h100Card() card {
	return card{pcieGen: 5, pcieWidth: 16, nvlinks: 18, smMHz: 1980, smIdleMHz: 345, memMHz: 2619, ecc: true}
}

func a100Card() card {
	return card{pcieGen: 4, pcieWidth: 16, nvlinks: 12, smMHz: 1410, smIdleMHz: 210, memMHz: 1215, ecc: true}
}

func a10Card() card {
	return card{pcieGen: 4, pcieWidth: 16, smMHz: 1695, smIdleMHz: 210, memMHz: 6251, fan: true, ecc: true}
}

func rtxCard() card {
	return card{pcieGen: 4, pcieWidth: 16, smMHz: 2520, smIdleMHz: 210, memMHz: 10501, fan: true}
}

// health is what the GPU says of its health at offset t, running at util
// percent, tempC and powerW: a healthy card's readings, changed by its
// faults. It draws nothing from the noise streams, so the other readings
// of a scenario are those of a card without health.
func (g *gpuPlan) health(t time.Duration, util, tempC, powerW float64) gpu.Health {
	c := g.card
	var h gpu.Health
	if c.smMHz == 0 {
		return h // a card the scenario gives no health
	}
	if c.ecc {
		for _, r := range []gpu.HealthReading{gpu.ECCCorrectedVolatile, gpu.ECCUncorrectedVolatile, gpu.ECCCorrectedAggregate,
			gpu.ECCUncorrectedAggregate, gpu.RowRemapCorrectable, gpu.RowRemapUncorrectable, gpu.RowRemapPending, gpu.RowRemapFailed} {
			h.Set(r, 0)
		}
		h.Set(gpu.RecoveryActionReading, float64(gpu.RecoveryNone))
	}
	// A busy GPU runs its link at full speed; an idle one saves power at
	// PCIe gen 1, as real ones do.
	gen := float64(c.pcieGen)
	if util < 1 {
		gen = 1
	}
	h.Set(gpu.PCIeLinkGen, gen)
	h.Set(gpu.PCIeLinkGenMax, float64(c.pcieGen))
	h.Set(gpu.PCIeLinkWidth, float64(c.pcieWidth))
	h.Set(gpu.PCIeLinkWidthMax, float64(c.pcieWidth))
	h.Set(gpu.PCIeReplays, 0)
	if c.nvlinks > 0 {
		for _, r := range []gpu.HealthReading{gpu.NVLinkCRCErrors, gpu.NVLinkReplayErrors, gpu.NVLinkRecoveryErrors, gpu.NVLinkLinksDown} {
			h.Set(r, 0)
		}
		h.Set(gpu.NVLinkLinks, float64(c.nvlinks))
	}
	if c.fan && !math.IsNaN(tempC) {
		h.Set(gpu.FanSpeed, math.Round(clamp(30+(tempC-35)*1.4, 30, 100)))
	}
	var reasons gpu.ClockEvents
	sm := c.smMHz
	switch {
	case util < 1:
		reasons, sm = 1, c.smIdleMHz // nvmlClocksEventReasonGpuIdle
	case powerW >= 0.98*g.powerLimitW:
		reasons = gpu.ClockEventSWPowerCap
		sm = math.Round(c.smMHz * 0.93)
	}
	if tempC >= 87 {
		reasons |= gpu.ClockEventSWThermal
	}
	h.Set(gpu.SMClock, sm)
	h.Set(gpu.SMClockMax, c.smMHz)
	h.Set(gpu.MemClock, c.memMHz)
	h.Set(gpu.MemClockMax, c.memMHz)
	h.Set(gpu.ClockEventReasons, float64(reasons))
	for _, f := range g.faults {
		f.apply(t, &h)
	}
	return h
}

// fault is something wrong with a GPU's health from some time on.
type fault interface {
	// apply changes the readings of a healthy GPU at offset t.
	apply(t time.Duration, h *gpu.Health)
}

// xidAt is an XID error a GPU reports at offset at.
type xidAt struct {
	at   time.Duration
	code uint64
}

// eccFault is an uncorrectable ECC error at at whose row remap waits for
// a GPU reset, which comes at reset (0: never): the corrected errors that
// led to it, the uncorrectable one, the remapped row and the driver asking
// for a reset. The reset clears what counts since the driver loaded; the
// remapped row and the GPU's lifetime counts stay.
type eccFault struct {
	at, reset time.Duration
	corrected float64 // corrected errors before the uncorrectable one
}

func (f *eccFault) apply(t time.Duration, h *gpu.Health) {
	if t < f.at {
		return
	}
	h.Set(gpu.ECCCorrectedAggregate, f.corrected)
	h.Set(gpu.ECCUncorrectedAggregate, 1)
	h.Set(gpu.RowRemapUncorrectable, 1)
	if f.reset > 0 && t >= f.reset {
		return
	}
	h.Set(gpu.ECCCorrectedVolatile, f.corrected)
	h.Set(gpu.ECCUncorrectedVolatile, 1)
	h.Set(gpu.RowRemapPending, 1)
	h.Set(gpu.RecoveryActionReading, float64(gpu.RecoveryReset))
}

// brakeFault is the server's power supply holding the power brake from
// from until until: a hardware slowdown that halves the SM clock.
type brakeFault struct {
	from, until time.Duration
}

// braked reports whether the brake is on at t.
func (f *brakeFault) braked(t time.Duration) bool { return t >= f.from && t < f.until }

func (f *brakeFault) apply(t time.Duration, h *gpu.Health) {
	if !f.braked(t) {
		return
	}
	reasons, _ := h.ClockEvents()
	h.Set(gpu.ClockEventReasons, float64(reasons&^gpu.ClockEventSWPowerCap|gpu.ClockEventHWSlowdown|gpu.ClockEventHWPowerBrake))
	if sm, ok := h.Get(gpu.SMClock); ok {
		h.Set(gpu.SMClock, math.Round(sm*0.45))
	}
}

// pcieFault is a PCIe link that trains at width lanes from at on (after a
// reset), and retransmits: replays replays a minute.
type pcieFault struct {
	at      time.Duration
	width   float64
	replays float64
}

func (f *pcieFault) apply(t time.Duration, h *gpu.Health) {
	if t < f.at {
		return
	}
	h.Set(gpu.PCIeLinkWidth, f.width)
	h.Set(gpu.PCIeReplays, math.Floor(f.replays*(t-f.at).Minutes()))
}

// nvlinkFault is one NVLink link whose errors climb from from on: CRC
// errors at a rate that grows by growth a minute every minute, replays
// and recoveries with them, until the link goes down at down (0: never).
type nvlinkFault struct {
	from, down time.Duration
	growth     float64
}

func (f *nvlinkFault) apply(t time.Duration, h *gpu.Health) {
	if t < f.from {
		return
	}
	m := (t - f.from).Minutes()
	crc := math.Floor(f.growth * m * m / 2) // the integral of a rate growing linearly
	h.Set(gpu.NVLinkCRCErrors, crc)
	h.Set(gpu.NVLinkReplayErrors, math.Floor(crc/8))
	h.Set(gpu.NVLinkRecoveryErrors, math.Floor(crc/400))
	if f.down > 0 && t >= f.down {
		h.Set(gpu.NVLinkLinksDown, 1)
	}
}

// brakedAt reports whether a fault of g holds the power brake at t.
func (g *gpuPlan) brakedAt(t time.Duration) bool {
	for _, f := range g.faults {
		if b, ok := f.(*brakeFault); ok && b.braked(t) {
			return true
		}
	}
	return false
}

// xidsIn appends to events the XID errors g reports in (after, upTo].
func (g *gpuPlan) xidsIn(events []gpu.Event, after, upTo time.Duration, at time.Time, index int, uuid string) []gpu.Event {
	for _, x := range g.xids {
		if x.at > after && x.at <= upTo {
			info, _ := gpu.LookupXID(x.code)
			events = append(events, gpu.Event{Time: at, Kind: gpu.EventXID, GPU: index, UUID: uuid, XID: x.code, Detail: info.Text()})
		}
	}
	return events
}
