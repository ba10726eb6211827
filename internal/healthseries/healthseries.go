// Package healthseries names the Prometheus series each GPU health
// reading is exported under: by gpuwatch agents (their /metrics), and by
// NVIDIA dcgm-exporter under the field names of its 3.x and 4.0–4.8
// releases and the renamed ones of 4.9 (DCGM 4.7's naming standard). The
// agent's exporter, the hub's Prometheus source, `gpuwatch rules export`
// and the tests' dcgm-exporter read this one table.
package healthseries

import "github.com/gpuwatch/gpuwatch/gpu"

// Generation is a generation of dcgm-exporter's field names.
type Generation int

// The generations: before 4.9 (3.x and 4.0–4.8), and from 4.9 on.
const (
	DCGMLegacy Generation = iota + 1
	DCGM49
)

// Field is one dcgm-exporter series of a reading: its name, its
// generation, and the reading in the series' unit (series = reading ×
// Scale). Several fields of one generation add up to the reading when Sum
// is set (NVLink's flit and data CRC errors); otherwise they are other
// spellings of it, of which a GPU reports one.
type Field struct {
	Name  string
	Gen   Generation
	Scale float64
	Sum   bool
}

// Series is how one health reading is exported.
type Series struct {
	Reading gpu.HealthReading
	// Name is gpuwatch's series, in the reading's unit × Scale; Counter
	// says it only grows (until the driver reloads).
	Name    string
	Help    string
	Scale   float64
	Counter bool
	// DCGM are dcgm-exporter's fields of the reading; none when it has
	// none.
	DCGM []Field
}

// legacy and renamed are fields of each generation.
func legacy(name string) Field  { return Field{Name: name, Gen: DCGMLegacy, Scale: 1} }
func renamed(name string) Field { return Field{Name: name, Gen: DCGM49, Scale: 1} }

// both is a field dcgm-exporter did not rename in 4.9.
func both(name string) []Field { return []Field{legacy(name), renamed(name)} }

// scaled is f with its unit changed.
func scaled(f Field, scale float64) Field { f.Scale = scale; return f }

// summed is f, added to the other fields of its generation.
func summed(f Field) Field { f.Sum = true; return f }

// All returns every health reading's series, in the readings' order.
func All() []Series {
	return []Series{
		{gpu.ECCCorrectedVolatile, "gpuwatch_gpu_ecc_corrected_volatile_total", "Corrected (single-bit) ECC errors since the driver loaded.", 1, true,
			both("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL")},
		{gpu.ECCUncorrectedVolatile, "gpuwatch_gpu_ecc_uncorrected_volatile_total", "Uncorrected (double-bit) ECC errors since the driver loaded.", 1, true,
			both("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")},
		{gpu.ECCCorrectedAggregate, "gpuwatch_gpu_ecc_corrected_aggregate_total", "Corrected ECC errors over the GPU's life.", 1, true,
			both("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL")},
		{gpu.ECCUncorrectedAggregate, "gpuwatch_gpu_ecc_uncorrected_aggregate_total", "Uncorrected ECC errors over the GPU's life.", 1, true,
			both("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL")},
		{gpu.RetiredPagesSBE, "gpuwatch_gpu_retired_pages_sbe", "Memory pages retired for single-bit errors (GPUs before Ampere).", 1, false,
			[]Field{legacy("DCGM_FI_DEV_RETIRED_SBE"), renamed("DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL")}},
		{gpu.RetiredPagesDBE, "gpuwatch_gpu_retired_pages_dbe", "Memory pages retired for double-bit errors (GPUs before Ampere).", 1, false,
			[]Field{legacy("DCGM_FI_DEV_RETIRED_DBE"), renamed("DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL")}},
		{gpu.RetiredPagesPending, "gpuwatch_gpu_retired_pages_pending", "1 while a retired page waits for a GPU reset to take effect, else 0.", 1, false,
			[]Field{legacy("DCGM_FI_DEV_RETIRED_PENDING"), renamed("DCGM_FI_DEV_PAGE_RETIRED_PENDING")}},
		{gpu.RowRemapCorrectable, "gpuwatch_gpu_remapped_rows_correctable", "Memory rows remapped for correctable errors (Ampere and later).", 1, false,
			[]Field{legacy("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"), renamed("DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL")}},
		{gpu.RowRemapUncorrectable, "gpuwatch_gpu_remapped_rows_uncorrectable", "Memory rows remapped for uncorrectable errors (Ampere and later).", 1, false,
			[]Field{legacy("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"), renamed("DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL")}},
		{gpu.RowRemapPending, "gpuwatch_gpu_row_remap_pending", "1 while a row remap waits for a GPU reset to take effect, else 0.", 1, false,
			both("DCGM_FI_DEV_ROW_REMAP_PENDING")},
		{gpu.RowRemapFailed, "gpuwatch_gpu_row_remap_failed", "1 when a row remap failed (NVIDIA's criterion to replace the GPU), else 0.", 1, false,
			[]Field{legacy("DCGM_FI_DEV_ROW_REMAP_FAILURE"), renamed("DCGM_FI_DEV_ROW_REMAP_FAILED")}},
		{gpu.RecoveryActionReading, "gpuwatch_gpu_recovery_action", "The recovery the driver asks for: 0 none, 1 reset the GPU, 2 reboot the node, 3 drain, 4 drain and reset.", 1, false,
			[]Field{legacy("DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION"), renamed("DCGM_FI_DEV_GPU_RECOVERY_ACTION")}},
		{gpu.ClockEventReasons, "gpuwatch_gpu_clock_event_reasons", "Why the clocks are below their maximum now, as NVML's bitmask: 4 sw_power_cap, 8 hw_slowdown, 32 sw_thermal, 64 hw_thermal, 128 hw_power_brake.", 1, false,
			[]Field{legacy("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"), legacy("DCGM_FI_DEV_CLOCKS_EVENT_REASONS"), renamed("DCGM_FI_DEV_CLOCKS_EVENT_REASONS")}},
		{gpu.PCIeLinkGen, "gpuwatch_gpu_pcie_link_generation", "PCIe link generation now.", 1, false, both("DCGM_FI_DEV_PCIE_LINK_GEN")},
		{gpu.PCIeLinkGenMax, "gpuwatch_gpu_pcie_link_generation_max", "Highest PCIe link generation GPU and slot support.", 1, false, both("DCGM_FI_DEV_PCIE_MAX_LINK_GEN")},
		{gpu.PCIeLinkWidth, "gpuwatch_gpu_pcie_link_width", "PCIe link width now, in lanes.", 1, false, both("DCGM_FI_DEV_PCIE_LINK_WIDTH")},
		{gpu.PCIeLinkWidthMax, "gpuwatch_gpu_pcie_link_width_max", "Widest PCIe link GPU and slot support, in lanes.", 1, false, both("DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH")},
		{gpu.PCIeReplays, "gpuwatch_gpu_pcie_replays_total", "PCIe replays: packets the link sent again.", 1, true,
			[]Field{legacy("DCGM_FI_DEV_PCIE_REPLAY_COUNTER"), renamed("DCGM_FI_DEV_PCIE_REPLAY_TOTAL")}},
		{gpu.NVLinkCRCErrors, "gpuwatch_gpu_nvlink_crc_errors_total", "NVLink CRC errors (flit and data) of all links.", 1, true,
			[]Field{summed(legacy("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL")), summed(legacy("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL")),
				summed(renamed("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL")), summed(renamed("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL"))}},
		{gpu.NVLinkReplayErrors, "gpuwatch_gpu_nvlink_replay_errors_total", "NVLink replays of all links.", 1, true,
			[]Field{legacy("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"), renamed("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL")}},
		{gpu.NVLinkRecoveryErrors, "gpuwatch_gpu_nvlink_recovery_errors_total", "NVLink recoveries of all links.", 1, true,
			[]Field{legacy("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"), renamed("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL")}},
		{gpu.NVLinkLinks, "gpuwatch_gpu_nvlink_links", "NVLink links the GPU has.", 1, false, nil},
		{gpu.NVLinkLinksDown, "gpuwatch_gpu_nvlink_links_down", "NVLink links of the GPU that are not up.", 1, false, nil},
		{gpu.FanSpeed, "gpuwatch_gpu_fan_speed_ratio", "Fan speed, from 0 to 1 of its full speed.", 0.01, false,
			[]Field{legacy("DCGM_FI_DEV_FAN_SPEED"), scaled(renamed("DCGM_FI_DEV_FAN_SPEED_RATIO"), 0.01)}},
		{gpu.SMClock, "gpuwatch_gpu_sm_clock_hertz", "SM clock now, in hertz.", 1e6, false,
			[]Field{legacy("DCGM_FI_DEV_SM_CLOCK"), scaled(renamed("DCGM_FI_DEV_SM_CLOCK_HERTZ"), 1e6)}},
		{gpu.SMClockMax, "gpuwatch_gpu_sm_clock_max_hertz", "Highest SM clock, in hertz.", 1e6, false,
			[]Field{legacy("DCGM_FI_DEV_MAX_SM_CLOCK"), scaled(renamed("DCGM_FI_DEV_SM_MAX_CLOCK_HERTZ"), 1e6)}},
		{gpu.MemClock, "gpuwatch_gpu_memory_clock_hertz", "Memory clock now, in hertz.", 1e6, false,
			[]Field{legacy("DCGM_FI_DEV_MEM_CLOCK"), scaled(renamed("DCGM_FI_DEV_MEMORY_CLOCK_HERTZ"), 1e6)}},
		{gpu.MemClockMax, "gpuwatch_gpu_memory_clock_max_hertz", "Highest memory clock, in hertz.", 1e6, false,
			[]Field{legacy("DCGM_FI_DEV_MAX_MEM_CLOCK"), scaled(renamed("DCGM_FI_DEV_MEMORY_MAX_CLOCK_HERTZ"), 1e6)}},
	}
}

// XID series of dcgm-exporter: the code of the latest XID, by generation;
// and its count of XIDs by code within a window (label xid, window in
// window_size_in_ms), the same in both.
const (
	DCGMLastXID       = "DCGM_FI_DEV_XID_ERRORS"
	DCGM49LastXID     = "DCGM_FI_DEV_XID_ERROR"
	DCGMXIDCount      = "DCGM_EXP_XID_ERRORS_COUNT"
	DCGMXIDCountLabel = "window_size_in_ms"
)

// Value is one series' value.
type Value struct {
	Name    string
	Value   float64
	Counter bool
}

// DCGMValues is what dcgm-exporter of generation gen exports of h: each
// known reading under its first field of that generation, in the field's
// unit (a reading dcgm-exporter adds up from several fields is all in the
// first; the others read 0).
func DCGMValues(h *gpu.Health, gen Generation) []Value {
	var out []Value
	for _, s := range All() {
		v, ok := h.Get(s.Reading)
		if !ok {
			continue
		}
		first := true
		for _, f := range s.DCGM {
			if f.Gen != gen || !first && !f.Sum {
				continue
			}
			x := v * f.Scale
			if !first {
				x = 0
			}
			out = append(out, Value{Name: f.Name, Value: x, Counter: s.Counter})
			first = false
		}
	}
	return out
}
