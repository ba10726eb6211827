package gpu

import (
	"encoding/json"
	"fmt"
	"math"
)

// HealthReading names one of the readings a GPU gives of its own health:
// what NVIDIA's DCGM health watches and dcgm-exporter report, and what
// operators page on. Its String is the reading's name in the rule
// language, the API and gpuwatch's /metrics.
type HealthReading uint8

// The health readings. Counters count since the driver loaded (volatile)
// or over the GPU's life (aggregate), or since the counter began; flags
// are 1 or 0.
const (
	ECCCorrectedVolatile    HealthReading = iota // corrected (single-bit) ECC errors since the driver loaded
	ECCUncorrectedVolatile                       // uncorrected (double-bit) ECC errors since the driver loaded
	ECCCorrectedAggregate                        // corrected ECC errors over the GPU's life
	ECCUncorrectedAggregate                      // uncorrected ECC errors over the GPU's life
	RetiredPagesSBE                              // pages retired for single-bit errors (before Ampere)
	RetiredPagesDBE                              // pages retired for double-bit errors (before Ampere)
	RetiredPagesPending                          // flag: a retired page waits for a GPU reset to take effect
	RowRemapCorrectable                          // rows remapped for correctable errors (Ampere and later)
	RowRemapUncorrectable                        // rows remapped for uncorrectable errors
	RowRemapPending                              // flag: a remap waits for a GPU reset to take effect
	RowRemapFailed                               // flag: a remap failed: NVIDIA's criterion to replace the GPU
	RecoveryActionReading                        // the recovery the driver asks for, a Recovery
	ClockEventReasons                            // the clock event (throttle) reasons now, a ClockEvents mask
	PCIeLinkGen                                  // PCIe link generation now
	PCIeLinkGenMax                               // the highest PCIe generation GPU and slot support
	PCIeLinkWidth                                // PCIe link width now, in lanes
	PCIeLinkWidthMax                             // the widest link GPU and slot support, in lanes
	PCIeReplays                                  // counter: PCIe replays (retransmitted packets)
	NVLinkCRCErrors                              // counter: NVLink CRC errors (flit and data), all links
	NVLinkReplayErrors                           // counter: NVLink replays, all links
	NVLinkRecoveryErrors                         // counter: NVLink recoveries, all links
	NVLinkLinks                                  // NVLink links the GPU has
	NVLinkLinksDown                              // of those, links that are not up
	FanSpeed                                     // percent of the fan's full speed
	SMClock                                      // SM clock now, MHz
	SMClockMax                                   // highest SM clock, MHz
	MemClock                                     // memory clock now, MHz
	MemClockMax                                  // highest memory clock, MHz

	healthReadings // the number of readings
)

// HealthReadings returns every health reading, in a fixed order.
func HealthReadings() []HealthReading {
	out := make([]HealthReading, healthReadings)
	for i := range out {
		out[i] = HealthReading(i)
	}
	return out
}

// healthNames are the readings' names, by reading.
var healthNames = [healthReadings]string{
	ECCCorrectedVolatile:    "ecc.corrected.volatile",
	ECCUncorrectedVolatile:  "ecc.uncorrected.volatile",
	ECCCorrectedAggregate:   "ecc.corrected.aggregate",
	ECCUncorrectedAggregate: "ecc.uncorrected.aggregate",
	RetiredPagesSBE:         "retired_pages.sbe",
	RetiredPagesDBE:         "retired_pages.dbe",
	RetiredPagesPending:     "retired_pages.pending",
	RowRemapCorrectable:     "row_remap.correctable",
	RowRemapUncorrectable:   "row_remap.uncorrectable",
	RowRemapPending:         "row_remap.pending",
	RowRemapFailed:          "row_remap.failed",
	RecoveryActionReading:   "recovery_action",
	ClockEventReasons:       "throttle.reasons",
	PCIeLinkGen:             "pcie.link.gen",
	PCIeLinkGenMax:          "pcie.link.gen_max",
	PCIeLinkWidth:           "pcie.link.width",
	PCIeLinkWidthMax:        "pcie.link.width_max",
	PCIeReplays:             "pcie.replays",
	NVLinkCRCErrors:         "nvlink.crc_errors",
	NVLinkReplayErrors:      "nvlink.replay_errors",
	NVLinkRecoveryErrors:    "nvlink.recovery_errors",
	NVLinkLinks:             "nvlink.links",
	NVLinkLinksDown:         "nvlink.links_down",
	FanSpeed:                "fan.speed",
	SMClock:                 "clocks.sm",
	SMClockMax:              "clocks.sm_max",
	MemClock:                "clocks.memory",
	MemClockMax:             "clocks.memory_max",
}

// String returns the reading's name: "ecc.uncorrected.volatile".
func (r HealthReading) String() string {
	if r < healthReadings {
		return healthNames[r]
	}
	return "unknown"
}

// LookupHealthReading finds the reading called name.
func LookupHealthReading(name string) (HealthReading, bool) {
	for r, n := range healthNames {
		if n == name {
			return HealthReading(r), true
		}
	}
	return 0, false
}

// IsCounter reports whether the reading only grows (until the driver
// reloads or the GPU resets): what matters is how fast it rises.
func (r HealthReading) IsCounter() bool {
	switch r {
	case ECCCorrectedVolatile, ECCUncorrectedVolatile, ECCCorrectedAggregate, ECCUncorrectedAggregate,
		RetiredPagesSBE, RetiredPagesDBE, RowRemapCorrectable, RowRemapUncorrectable,
		PCIeReplays, NVLinkCRCErrors, NVLinkReplayErrors, NVLinkRecoveryErrors:
		return true
	}
	return false
}

// Health is what a GPU says of its own health, each reading known or
// missing. A reading the GPU, its driver or the source does not give is
// missing, never 0; the zero Health knows nothing.
type Health struct {
	known uint64 // bit r set: v[r] is a reading
	v     [healthReadings]float64
}

// Set records reading r. A NaN value leaves it missing.
func (h *Health) Set(r HealthReading, v float64) {
	if r >= healthReadings {
		return
	}
	if math.IsNaN(v) {
		h.Clear(r)
		return
	}
	h.v[r] = v
	h.known |= 1 << r
}

// Clear makes reading r missing.
func (h *Health) Clear(r HealthReading) {
	if r < healthReadings {
		h.known &^= 1 << r
		h.v[r] = 0
	}
}

// Get returns reading r and whether it is known.
func (h *Health) Get(r HealthReading) (float64, bool) {
	if r >= healthReadings || h.known&(1<<r) == 0 {
		return 0, false
	}
	return h.v[r], true
}

// Value returns reading r, NaN when it is missing.
func (h *Health) Value(r HealthReading) float64 {
	if v, ok := h.Get(r); ok {
		return v
	}
	return math.NaN()
}

// Known reports whether any reading is known.
func (h *Health) Known() bool { return h.known != 0 }

// Flag reports whether the flag reading r is known and set.
func (h *Health) Flag(r HealthReading) bool {
	v, ok := h.Get(r)
	return ok && v != 0
}

// ClockEvents returns the clock event reasons, and whether they are known.
func (h *Health) ClockEvents() (ClockEvents, bool) {
	v, ok := h.Get(ClockEventReasons)
	return ClockEvents(v), ok
}

// Recovery returns the recovery the driver asks for, and whether it is
// known.
func (h *Health) Recovery() (Recovery, bool) {
	v, ok := h.Get(RecoveryActionReading)
	return Recovery(v), ok
}

// MarshalJSON writes the known readings as an object by name; the clock
// event reasons as the list of the named reasons in force, the recovery
// action by its name.
func (h Health) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, healthReadings)
	for r := range healthReadings {
		v, ok := h.Get(r)
		switch {
		case !ok:
		case r == ClockEventReasons:
			m[r.String()] = ClockEvents(v).Names()
		case r == RecoveryActionReading:
			m[r.String()] = Recovery(v).String()
		default:
			m[r.String()] = v
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON wrote; a name it does not know is
// left out, as a reading of a newer gpuwatch.
func (h *Health) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*h = Health{}
	for name, raw := range m {
		r, ok := LookupHealthReading(name)
		if !ok {
			continue
		}
		switch r {
		case ClockEventReasons:
			var names []string
			if err := json.Unmarshal(raw, &names); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			var e ClockEvents
			for _, n := range names {
				bit, _ := LookupClockEvent(n)
				e |= bit
			}
			h.Set(r, float64(e))
		case RecoveryActionReading:
			var n string
			if err := json.Unmarshal(raw, &n); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if rec, ok := LookupRecovery(n); ok {
				h.Set(r, float64(rec))
			}
		default:
			var v float64
			if err := json.Unmarshal(raw, &v); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			h.Set(r, v)
		}
	}
	return nil
}

// ClockEvents is a set of clock event (throttle) reasons: why the GPU's
// clocks are below their maximum. The bits are NVML's and DCGM's
// (nvmlClocksEventReason*, DCGM_CLOCKS_EVENT_REASON_*).
type ClockEvents uint64

// The clock event reasons gpuwatch names. Hardware slowdowns (HW*) are the
// GPU protecting itself: a thermal or power emergency, or the power brake
// a server's power supply asserts. Software ones are the driver keeping
// the GPU within its power cap and thermal limit.
const (
	ClockEventSWPowerCap   ClockEvents = 0x04 // the driver holds power at the power cap
	ClockEventHWSlowdown   ClockEvents = 0x08 // hardware slowdown (thermal or power), clocks cut by half or more
	ClockEventSWThermal    ClockEvents = 0x20 // the driver keeps the GPU below its thermal limit
	ClockEventHWThermal    ClockEvents = 0x40 // hardware thermal slowdown: the GPU is too hot
	ClockEventHWPowerBrake ClockEvents = 0x80 // the power brake: the server's power supply asked the GPU to slow down
)

// clockEventNames names the reasons, in the order the rule language lists
// them.
var clockEventNames = [...]struct {
	bit  ClockEvents
	name string
}{
	{ClockEventHWSlowdown, "hw_slowdown"},
	{ClockEventHWThermal, "hw_thermal"},
	{ClockEventHWPowerBrake, "hw_power_brake"},
	{ClockEventSWThermal, "sw_thermal"},
	{ClockEventSWPowerCap, "sw_power_cap"},
}

// ClockEventNames returns the named reasons, "hw_slowdown", …, in a fixed
// order.
func ClockEventNames() []string {
	out := make([]string, len(clockEventNames))
	for i, c := range clockEventNames {
		out[i] = c.name
	}
	return out
}

// LookupClockEvent finds the reason called name.
func LookupClockEvent(name string) (ClockEvents, bool) {
	for _, c := range clockEventNames {
		if c.name == name {
			return c.bit, true
		}
	}
	return 0, false
}

// Has reports whether every reason of c is in e.
func (e ClockEvents) Has(c ClockEvents) bool { return c != 0 && e&c == c }

// Names lists the named reasons in e.
func (e ClockEvents) Names() []string {
	out := []string{}
	for _, c := range clockEventNames {
		if e.Has(c.bit) {
			out = append(out, c.name)
		}
	}
	return out
}

// Hardware reports whether e holds a hardware slowdown: the GPU's clocks
// are cut to protect it, whatever its job.
func (e ClockEvents) Hardware() bool {
	return e&(ClockEventHWSlowdown|ClockEventHWThermal|ClockEventHWPowerBrake) != 0
}

// Recovery is the recovery the driver asks for after an error, as NVML's
// GPU recovery action (nvmlDeviceGpuRecoveryAction_t) and DCGM's
// DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION number them.
type Recovery uint8

// The recoveries.
const (
	RecoveryNone          Recovery = 0 // nothing to do
	RecoveryReset         Recovery = 1 // reset the GPU
	RecoveryReboot        Recovery = 2 // reboot the node
	RecoveryDrain         Recovery = 3 // drain the node of peer-to-peer work
	RecoveryDrainAndReset Recovery = 4 // drain, then reset the GPU
)

// recoveryNames are the recoveries' names in the rule language.
var recoveryNames = [...]string{RecoveryNone: "none", RecoveryReset: "reset", RecoveryReboot: "reboot",
	RecoveryDrain: "drain", RecoveryDrainAndReset: "drain_and_reset"}

// String names the recovery: "none", "reset", "reboot", "drain",
// "drain_and_reset"; "unknown" for a number NVML may add.
func (r Recovery) String() string {
	if int(r) < len(recoveryNames) {
		return recoveryNames[r]
	}
	return "unknown"
}

// RecoveryNames lists the recoveries' names.
func RecoveryNames() []string { return append([]string(nil), recoveryNames[:]...) }

// LookupRecovery finds the recovery called name.
func LookupRecovery(name string) (Recovery, bool) {
	for r, n := range recoveryNames {
		if n == name {
			return Recovery(r), true
		}
	}
	return 0, false
}

// Advice says what to do, for people: "reset the GPU".
func (r Recovery) Advice() string {
	switch r {
	case RecoveryNone:
		return "nothing to do"
	case RecoveryReset:
		return "reset the GPU"
	case RecoveryReboot:
		return "reboot the node"
	case RecoveryDrain:
		return "drain the node of its peer-to-peer jobs"
	case RecoveryDrainAndReset:
		return "drain the GPU's jobs, then reset it"
	}
	return "see what nvidia-smi -q says"
}
