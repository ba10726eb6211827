package replay

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// healthColumn is what a column of a GPU's health holds: a reading, or
// one clock event reason (bit) of the clock event reasons.
type healthColumn struct {
	reading gpu.HealthReading
	bit     gpu.ClockEvents
}

// healthColumns maps the names nvidia-smi --query-gpu gives the health
// readings (normalized, see normalizeName) to them: ECC errors, retired
// pages, remapped rows, the clock event reasons (under their names before
// driver 535, clocks_throttle_reasons, and after, clocks_event_reasons),
// the PCIe link, the fan and the clocks.
func healthColumns() map[string]healthColumn {
	m := map[string]healthColumn{
		"ecc_errors_corrected_volatile_total":     {reading: gpu.ECCCorrectedVolatile},
		"ecc_errors_uncorrected_volatile_total":   {reading: gpu.ECCUncorrectedVolatile},
		"ecc_errors_corrected_aggregate_total":    {reading: gpu.ECCCorrectedAggregate},
		"ecc_errors_uncorrected_aggregate_total":  {reading: gpu.ECCUncorrectedAggregate},
		"retired_pages_single_bit_ecc_count":      {reading: gpu.RetiredPagesSBE},
		"retired_pages_sbe":                       {reading: gpu.RetiredPagesSBE},
		"retired_pages_double_bit_count":          {reading: gpu.RetiredPagesDBE},
		"retired_pages_dbe":                       {reading: gpu.RetiredPagesDBE},
		"retired_pages_pending":                   {reading: gpu.RetiredPagesPending},
		"remapped_rows_correctable":               {reading: gpu.RowRemapCorrectable},
		"remapped_rows_uncorrectable":             {reading: gpu.RowRemapUncorrectable},
		"remapped_rows_pending":                   {reading: gpu.RowRemapPending},
		"remapped_rows_failure":                   {reading: gpu.RowRemapFailed},
		"clocks_event_reasons_active":             {reading: gpu.ClockEventReasons},
		"clocks_throttle_reasons_active":          {reading: gpu.ClockEventReasons},
		"pcie_link_gen_current":                   {reading: gpu.PCIeLinkGen},
		"pcie_link_gen_gpucurrent":                {reading: gpu.PCIeLinkGen},
		"pcie_link_gen_max":                       {reading: gpu.PCIeLinkGenMax},
		"pcie_link_gen_gpumax":                    {reading: gpu.PCIeLinkGenMax},
		"pcie_link_width_current":                 {reading: gpu.PCIeLinkWidth},
		"pcie_link_width_max":                     {reading: gpu.PCIeLinkWidthMax},
		"fan_speed":                               {reading: gpu.FanSpeed},
		"clocks_current_sm":                       {reading: gpu.SMClock},
		"clocks_sm":                               {reading: gpu.SMClock},
		"clocks_max_sm":                           {reading: gpu.SMClockMax},
		"clocks_max_streaming_multiprocessor":     {reading: gpu.SMClockMax},
		"clocks_current_memory":                   {reading: gpu.MemClock},
		"clocks_mem":                              {reading: gpu.MemClock},
		"clocks_max_memory":                       {reading: gpu.MemClockMax},
		"clocks_max_mem":                          {reading: gpu.MemClockMax},
		"clocks_current_streaming_multiprocessor": {reading: gpu.SMClock},
	}
	for _, prefix := range []string{"clocks_event_reasons_", "clocks_throttle_reasons_"} {
		for name, bit := range map[string]gpu.ClockEvents{
			"sw_power_cap": gpu.ClockEventSWPowerCap, "hw_slowdown": gpu.ClockEventHWSlowdown,
			"sw_thermal_slowdown": gpu.ClockEventSWThermal, "hw_thermal_slowdown": gpu.ClockEventHWThermal,
			"hw_power_brake_slowdown": gpu.ClockEventHWPowerBrake,
		} {
			m[prefix+name] = healthColumn{reading: gpu.ClockEventReasons, bit: bit}
		}
	}
	return m
}

// healthField parses a health column's value into d's health: a count or
// reading ("12", "1980 MHz", "45 %"), a flag ("Yes", "No"), a clock event
// reason ("Active", "Not Active") or the reasons' bitmask
// ("0x0000000000000088"). Unknown values ([N/A], [Not Supported]) leave
// the reading missing.
func healthField(d *gpu.Device, c *column, col int, v []byte) *fieldError {
	v = trimSpace(unquote(v))
	if isUnknown(v) {
		return nil
	}
	h := &d.Health
	if c.bit != 0 {
		var on bool
		switch string(v) {
		case "Active", "active", "1", "Yes", "yes":
			on = true
		case "Not Active", "Not active", "not active", "0", "No", "no":
		default:
			return &fieldError{col, fmt.Sprintf("%s: %q is not Active or Not Active", c.name, v)}
		}
		reasons, _ := h.ClockEvents()
		if on {
			reasons |= c.bit
		} else {
			reasons &^= c.bit
		}
		h.Set(gpu.ClockEventReasons, float64(reasons))
		return nil
	}
	switch string(v) {
	case "Yes", "yes", "Active":
		h.Set(c.health, 1)
		return nil
	case "No", "no", "Not Active":
		h.Set(c.health, 0)
		return nil
	}
	if c.health == gpu.ClockEventReasons {
		mask, err := strconv.ParseUint(string(bytes.TrimPrefix(bytes.TrimPrefix(v, []byte("0x")), []byte("0X"))), 16, 64)
		if err != nil {
			return &fieldError{col, fmt.Sprintf("%s: %q is not a bitmask such as 0x0000000000000001", c.name, v)}
		}
		h.Set(gpu.ClockEventReasons, float64(mask))
		return nil
	}
	num, unit := splitUnit(v)
	f, ok := parseFloat(num)
	if u := string(trimSpace(unit)); !ok || u != "" && u != "%" && u != "MHz" {
		return &fieldError{col, fmt.Sprintf("%s: %q is not a number; want one such as 12, 45 %% or 1980 MHz", c.name, v)}
	}
	h.Set(c.health, f)
	return nil
}
