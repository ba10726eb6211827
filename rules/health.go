package rules

import (
	"math"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// healthKind says how a health metric behaves, which decides the
// functions that apply to it.
type healthKind uint8

const (
	healthGauge   healthKind = iota + 1 // a reading that goes up and down
	healthCounter                       // only grows (until a reset): rate() applies
	healthFlag                          // 1 or 0: active() applies
	healthState                         // one of named states: compared by name
)

// healthMetric is a metric read from a GPU's health readings.
type healthMetric struct {
	name    string
	dim     BaseDim
	kind    healthKind
	reading gpu.HealthReading
	// throttle, for a throttle.* flag, is its clock event reason.
	throttle gpu.ClockEvents
	// belowMax, for pcie.link.*_below_max, is the reading's maximum: the
	// metric is how far reading is below it.
	belowMax gpu.HealthReading
	// scale converts the reading to the metric's base unit (MHz to Hz).
	scale float64
}

// healthMetricOf returns how metric m reads a GPU's health, false for a
// metric that is not a health reading.
func healthMetricOf(m Metric) (healthMetric, bool) {
	h := healthMetric{dim: Count, kind: healthGauge, scale: 1}
	switch m {
	case MetricECCCorrectedVolatile:
		h.reading, h.kind = gpu.ECCCorrectedVolatile, healthCounter
	case MetricECCUncorrectedVolatile:
		h.reading, h.kind = gpu.ECCUncorrectedVolatile, healthCounter
	case MetricECCCorrectedAggregate:
		h.reading, h.kind = gpu.ECCCorrectedAggregate, healthCounter
	case MetricECCUncorrectedAggregate:
		h.reading, h.kind = gpu.ECCUncorrectedAggregate, healthCounter
	case MetricRetiredPagesSBE:
		h.reading, h.kind = gpu.RetiredPagesSBE, healthCounter
	case MetricRetiredPagesDBE:
		h.reading, h.kind = gpu.RetiredPagesDBE, healthCounter
	case MetricRetiredPagesPending:
		h.reading, h.kind = gpu.RetiredPagesPending, healthFlag
	case MetricRowRemapCorrectable:
		h.reading, h.kind = gpu.RowRemapCorrectable, healthCounter
	case MetricRowRemapUncorrectable:
		h.reading, h.kind = gpu.RowRemapUncorrectable, healthCounter
	case MetricRowRemapPending:
		h.reading, h.kind = gpu.RowRemapPending, healthFlag
	case MetricRowRemapFailed:
		h.reading, h.kind = gpu.RowRemapFailed, healthFlag
	case MetricRecoveryAction:
		h.reading, h.kind = gpu.RecoveryActionReading, healthState
	case MetricThrottleHWSlowdown:
		h.reading, h.kind, h.throttle, h.name = gpu.ClockEventReasons, healthFlag, gpu.ClockEventHWSlowdown, "throttle.hw_slowdown"
	case MetricThrottleHWThermal:
		h.reading, h.kind, h.throttle, h.name = gpu.ClockEventReasons, healthFlag, gpu.ClockEventHWThermal, "throttle.hw_thermal"
	case MetricThrottleHWPowerBrake:
		h.reading, h.kind, h.throttle, h.name = gpu.ClockEventReasons, healthFlag, gpu.ClockEventHWPowerBrake, "throttle.hw_power_brake"
	case MetricThrottleSWThermal:
		h.reading, h.kind, h.throttle, h.name = gpu.ClockEventReasons, healthFlag, gpu.ClockEventSWThermal, "throttle.sw_thermal"
	case MetricThrottleSWPowerCap:
		h.reading, h.kind, h.throttle, h.name = gpu.ClockEventReasons, healthFlag, gpu.ClockEventSWPowerCap, "throttle.sw_power_cap"
	case MetricPCIeLinkGen:
		h.reading = gpu.PCIeLinkGen
	case MetricPCIeLinkGenMax:
		h.reading = gpu.PCIeLinkGenMax
	case MetricPCIeLinkGenBelowMax:
		h.reading, h.belowMax, h.name = gpu.PCIeLinkGen, gpu.PCIeLinkGenMax, "pcie.link.gen_below_max"
	case MetricPCIeLinkWidth:
		h.reading = gpu.PCIeLinkWidth
	case MetricPCIeLinkWidthMax:
		h.reading = gpu.PCIeLinkWidthMax
	case MetricPCIeLinkWidthBelowMax:
		h.reading, h.belowMax, h.name = gpu.PCIeLinkWidth, gpu.PCIeLinkWidthMax, "pcie.link.width_below_max"
	case MetricPCIeReplays:
		h.reading, h.kind = gpu.PCIeReplays, healthCounter
	case MetricNVLinkCRCErrors:
		h.reading, h.kind = gpu.NVLinkCRCErrors, healthCounter
	case MetricNVLinkReplayErrors:
		h.reading, h.kind = gpu.NVLinkReplayErrors, healthCounter
	case MetricNVLinkRecoveryErrors:
		h.reading, h.kind = gpu.NVLinkRecoveryErrors, healthCounter
	case MetricNVLinkLinks:
		h.reading = gpu.NVLinkLinks
	case MetricNVLinkLinksDown:
		h.reading = gpu.NVLinkLinksDown
	case MetricFanSpeed:
		h.reading, h.dim = gpu.FanSpeed, Percent
	case MetricClockSM:
		h.reading, h.dim, h.scale = gpu.SMClock, Hertz, 1e6
	case MetricClockSMMax:
		h.reading, h.dim, h.scale = gpu.SMClockMax, Hertz, 1e6
	case MetricClockMemory:
		h.reading, h.dim, h.scale = gpu.MemClock, Hertz, 1e6
	case MetricClockMemoryMax:
		h.reading, h.dim, h.scale = gpu.MemClockMax, Hertz, 1e6
	default:
		return healthMetric{}, false
	}
	if h.name == "" {
		h.name = h.reading.String()
	}
	return h, true
}

// value reads the metric from h, NaN when the GPU does not give it.
func (m healthMetric) value(h *gpu.Health) float64 {
	v, ok := h.Get(m.reading)
	switch {
	case !ok:
		return math.NaN()
	case m.throttle != 0:
		if gpu.ClockEvents(v).Has(m.throttle) {
			return 1
		}
		return 0
	case m.belowMax != 0:
		most, ok := h.Get(m.belowMax)
		if !ok {
			return math.NaN()
		}
		return max(most-v, 0)
	}
	return v * m.scale
}

// set records v, a value of the metric in its base unit, as the GPU's
// reading; a throttle flag sets or clears its reason among the clock
// event reasons. NaN leaves the reading as it is.
func (m healthMetric) set(h *gpu.Health, v float64) {
	switch {
	case math.IsNaN(v) || m.belowMax != 0:
	case m.throttle != 0:
		reasons, _ := h.ClockEvents()
		if v != 0 {
			reasons |= m.throttle
		} else {
			reasons &^= m.throttle
		}
		h.Set(gpu.ClockEventReasons, float64(reasons))
	default:
		h.Set(m.reading, v/m.scale)
	}
}

// metricKind returns how metric m behaves; 0 for a metric that is not a
// health reading.
func metricKind(m Metric) healthKind {
	h, _ := healthMetricOf(m)
	return h.kind
}

// IsCounter reports whether the metric only grows until a reset (ECC
// errors, PCIe replays, NVLink errors): rate() gives how fast.
func (m Metric) IsCounter() bool { return metricKind(m) == healthCounter }

// IsFlag reports whether the metric is 1 or 0 (a throttle reason, a
// pending or failed remap): active() gives how long it held.
func (m Metric) IsFlag() bool { return metricKind(m) == healthFlag }

// States returns the names a metric of states is compared with
// (recovery_action == "reset", xid.fault == "hardware"), in the order of
// their numbers; nil for a metric of numbers.
func (m Metric) States() []string {
	switch m {
	case MetricRecoveryAction:
		return gpu.RecoveryNames()
	case MetricXIDFault:
		return gpu.XIDFaultNames()
	case MetricXIDAction:
		return gpu.XIDActionNames()
	}
	return nil
}

// stateName names state v of metric m; "" when m has no states or v is
// not one of them.
func (m Metric) stateName(v float64) string {
	names := m.States()
	if i := int(v); float64(i) == v && i >= 0 && i < len(names) {
		return names[i]
	}
	return ""
}

// xidValue is what an XID code is for an event metric: the code for xid,
// its fault for xid.fault, its action for xid.action.
func xidValue(m Metric, code uint64) float64 {
	switch m {
	case MetricXIDFault:
		return float64(gpu.XIDFaultOf(code))
	case MetricXIDAction:
		return float64(gpu.XIDActionOf(code))
	}
	return float64(code)
}

// HealthSource says how a health metric is read from a GPU's health: the
// reading (in the metric's base unit × 1/Scale: clocks are read in MHz,
// compared in Hz), the clock event reason a throttle.* flag tests, or the
// maximum a *_below_max metric is below.
type HealthSource struct {
	Reading  gpu.HealthReading
	Throttle gpu.ClockEvents // a throttle.* flag: 1 while this reason is in Reading's mask
	BelowMax bool            // a *_below_max metric: Max − Reading, at least 0
	Max      gpu.HealthReading
	Scale    float64
}

// HealthSource returns how metric m reads a GPU's health, false for a
// metric that is not a health reading.
func (m Metric) HealthSource() (HealthSource, bool) {
	h, ok := healthMetricOf(m)
	if !ok {
		return HealthSource{}, false
	}
	return HealthSource{Reading: h.reading, Throttle: h.throttle, BelowMax: h.belowMax != 0, Max: h.belowMax, Scale: h.scale}, true
}
