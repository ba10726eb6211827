package rules

import (
	"math"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// Metric is a reading of one GPU that a condition can test, such as
// memory.used or temperature. The zero Metric is not a valid metric.
type Metric int

// The metrics of the condition language, in the order Metrics lists them.
const (
	MetricMemoryUsed        Metric = iota + 1 // memory.used, bytes
	MetricMemoryFree                          // memory.free, bytes jobs can still allocate
	MetricMemoryTotal                         // memory.total, bytes
	MetricMemoryUsedPercent                   // memory.used_percent, percent of what jobs can allocate
	MetricMemoryHeld                          // memory.held, bytes in use above the GPU's resting level
	MetricUtilizationGPU                      // utilization.gpu, percent
	MetricUtilizationMemory                   // utilization.memory, percent
	MetricTemperature                         // temperature, degrees Celsius
	MetricPower                               // power, watts
	MetricPowerPercent                        // power.percent, percent of the power limit
	MetricProcessMemory                       // process.memory, bytes held by the largest process
	MetricProcessCount                        // process.count, compute processes on the GPU
	MetricProcessJobs                         // process.jobs, jobs holding memory on the GPU
	MetricOOMExits                            // oom_exits, times the job on the GPU died of a likely out-of-memory in the last hour
	MetricXID                                 // xid, the XID codes of this snapshot's events
	MetricHeldFor                             // held_for, seconds the GPU has been held by its job
	MetricMissingFor                          // missing_for, seconds since the GPU last reported
	MetricXIDFault                            // xid.fault, who is at fault for this snapshot's XID errors
	MetricXIDAction                           // xid.action, what to do about them

	// The health readings (see health.go): counters, flags, states.
	MetricECCCorrectedVolatile    // ecc.corrected.volatile
	MetricECCUncorrectedVolatile  // ecc.uncorrected.volatile
	MetricECCCorrectedAggregate   // ecc.corrected.aggregate
	MetricECCUncorrectedAggregate // ecc.uncorrected.aggregate
	MetricRetiredPagesSBE         // retired_pages.sbe
	MetricRetiredPagesDBE         // retired_pages.dbe
	MetricRetiredPagesPending     // retired_pages.pending
	MetricRowRemapCorrectable     // row_remap.correctable
	MetricRowRemapUncorrectable   // row_remap.uncorrectable
	MetricRowRemapPending         // row_remap.pending
	MetricRowRemapFailed          // row_remap.failed
	MetricRecoveryAction          // recovery_action
	MetricThrottleHWSlowdown      // throttle.hw_slowdown
	MetricThrottleHWThermal       // throttle.hw_thermal
	MetricThrottleHWPowerBrake    // throttle.hw_power_brake
	MetricThrottleSWThermal       // throttle.sw_thermal
	MetricThrottleSWPowerCap      // throttle.sw_power_cap
	MetricPCIeLinkGen             // pcie.link.gen
	MetricPCIeLinkGenMax          // pcie.link.gen_max
	MetricPCIeLinkGenBelowMax     // pcie.link.gen_below_max
	MetricPCIeLinkWidth           // pcie.link.width
	MetricPCIeLinkWidthMax        // pcie.link.width_max
	MetricPCIeLinkWidthBelowMax   // pcie.link.width_below_max
	MetricPCIeReplays             // pcie.replays
	MetricNVLinkCRCErrors         // nvlink.crc_errors
	MetricNVLinkReplayErrors      // nvlink.replay_errors
	MetricNVLinkRecoveryErrors    // nvlink.recovery_errors
	MetricNVLinkLinks             // nvlink.links
	MetricNVLinkLinksDown         // nvlink.links_down
	MetricFanSpeed                // fan.speed
	MetricClockSM                 // clocks.sm
	MetricClockSMMax              // clocks.sm_max
	MetricClockMemory             // clocks.memory
	MetricClockMemoryMax          // clocks.memory_max

	metricEnd // one past the last metric
)

// Metrics returns every metric, in a fixed order, for documentation and for
// `gpuwatch check`.
func Metrics() []Metric {
	ms := make([]Metric, 0, metricEnd-1)
	for m := MetricMemoryUsed; m < metricEnd; m++ {
		ms = append(ms, m)
	}
	return ms
}

// String returns the metric's name in the condition language.
func (m Metric) String() string {
	switch m {
	case MetricMemoryUsed:
		return "memory.used"
	case MetricMemoryFree:
		return "memory.free"
	case MetricMemoryTotal:
		return "memory.total"
	case MetricMemoryUsedPercent:
		return "memory.used_percent"
	case MetricUtilizationGPU:
		return "utilization.gpu"
	case MetricUtilizationMemory:
		return "utilization.memory"
	case MetricTemperature:
		return "temperature"
	case MetricPower:
		return "power"
	case MetricPowerPercent:
		return "power.percent"
	case MetricProcessMemory:
		return "process.memory"
	case MetricProcessCount:
		return "process.count"
	case MetricProcessJobs:
		return "process.jobs"
	case MetricXID:
		return "xid"
	case MetricHeldFor:
		return "held_for"
	case MetricMissingFor:
		return "missing_for"
	case MetricMemoryHeld:
		return "memory.held"
	case MetricOOMExits:
		return "oom_exits"
	case MetricXIDFault:
		return "xid.fault"
	case MetricXIDAction:
		return "xid.action"
	}
	if h, ok := healthMetricOf(m); ok {
		return h.name
	}
	return "unknown"
}

// heldBytes is how much memory in use makes a GPU held when its source
// does not say which processes run on it: more than a CUDA context takes.
const heldBytes = 1 << 30

// Held reports whether a job holds d, judged from d alone: a compute
// process runs on it, or more than 1 GiB of its memory is in use. The
// engine also knows the GPU's resting level (see memory.held) and counts
// only the memory above it.
func Held(d *gpu.Device) bool {
	return len(d.Processes) > 0 || d.MemUsed > heldBytes
}

// Observed reports whether the metric is kept by the engine from the GPU's
// past (how long it has been held, how long it has been missing, the
// memory above its resting level, its jobs' deaths) rather than read from
// the snapshot alone.
func (m Metric) Observed() bool {
	switch m {
	case MetricHeldFor, MetricMissingFor, MetricMemoryHeld, MetricOOMExits:
		return true
	}
	return false
}

// IsEvent reports whether the metric is about the snapshot's XID events
// (xid, xid.fault, xid.action) rather than a reading of the GPU.
func (m Metric) IsEvent() bool { return m == MetricXID || m == MetricXIDFault || m == MetricXIDAction }

// Dimension returns what the metric measures, which decides the units a
// condition may compare it with.
func (m Metric) Dimension() Dimension {
	switch m {
	case MetricMemoryUsed, MetricMemoryFree, MetricMemoryTotal, MetricProcessMemory, MetricMemoryHeld:
		return Dimension{Base: Bytes}
	case MetricMemoryUsedPercent, MetricUtilizationGPU, MetricUtilizationMemory, MetricPowerPercent:
		return Dimension{Base: Percent}
	case MetricTemperature:
		return Dimension{Base: Celsius}
	case MetricPower:
		return Dimension{Base: Watts}
	case MetricHeldFor, MetricMissingFor:
		return Dimension{Base: Seconds}
	}
	if h, ok := healthMetricOf(m); ok {
		return Dimension{Base: h.dim}
	}
	return Dimension{Base: Count}
}

// Value reads the metric from d. It is NaN when d does not know the reading:
// memory metrics when d.MemTotal is 0 (but memory.used, when the source
// knows it without the total: see gpu.Device.MemUsedKnown), power.percent without a power limit,
// and always for xid, xid.fault and xid.action, whose values come from the
// snapshot's events (see EvalContext.XIDs), and the metrics the engine
// keeps (Observed: see EvalContext). A health reading is NaN when the GPU
// or the source does not give it. process.memory is the largest process's
// memory, 0 when the GPU runs no process; process.jobs counts the jobs
// whose processes hold memory (gpu.CountJobs).
func (m Metric) Value(d *gpu.Device) float64 {
	if d == nil {
		return math.NaN()
	}
	switch m {
	case MetricMemoryUsed:
		if !d.MemUsedKnown() {
			return math.NaN()
		}
		return float64(d.MemUsed)
	case MetricMemoryFree:
		return memValue(d, d.MemAllocatable()-min(d.MemUsed, d.MemAllocatable()))
	case MetricMemoryTotal:
		return memValue(d, d.MemTotal)
	case MetricMemoryUsedPercent:
		return usedPercent(d)
	case MetricUtilizationGPU:
		return d.UtilGPU
	case MetricUtilizationMemory:
		return d.UtilMem
	case MetricTemperature:
		return d.TempC
	case MetricPower:
		return d.PowerW
	case MetricPowerPercent:
		if !(d.PowerLimitW > 0) {
			return math.NaN()
		}
		return d.PowerW / d.PowerLimitW * 100
	case MetricProcessMemory:
		var most uint64
		for i := range d.Processes {
			most = max(most, d.Processes[i].MemUsed)
		}
		return float64(most)
	case MetricProcessCount:
		return float64(len(d.Processes))
	case MetricProcessJobs:
		return float64(gpu.CountJobs(d.Processes))
	}
	if h, ok := healthMetricOf(m); ok {
		return h.value(&d.Health)
	}
	return math.NaN()
}

// usedPercent is the share of the memory jobs can allocate (the total
// less what the driver reserves) in use, in percent; NaN when memory is
// unknown. A GPU is full at 100 %, whatever it reserves.
func usedPercent(d *gpu.Device) float64 {
	if !d.MemKnown() {
		return math.NaN()
	}
	return float64(d.MemUsed) / float64(d.MemAllocatable()) * 100
}

// memValue returns v as a float, or NaN when d's memory is unknown.
func memValue(d *gpu.Device, v uint64) float64 {
	if !d.MemKnown() {
		return math.NaN()
	}
	return float64(v)
}

// lookupMetric finds the metric called name.
func lookupMetric(name string) (Metric, bool) {
	for m := MetricMemoryUsed; m < metricEnd; m++ {
		if m.String() == name {
			return m, true
		}
	}
	return 0, false
}

// observedExample is a quantity to compare an Observed metric with, for
// error messages: "30m", "1GiB", "2".
func observedExample(m Metric) string {
	switch m.Dimension().Base {
	case Seconds:
		return "30m"
	case Bytes:
		return "1GiB"
	}
	return "2"
}
