package replay

import (
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// healthLog is nvidia-smi logging the health fields of two GPUs:
//
//	nvidia-smi --query-gpu=timestamp,index,ecc.errors.uncorrected.volatile.total,remapped_rows.pending,remapped_rows.failure,clocks_event_reasons.hw_slowdown,clocks_event_reasons.hw_power_brake_slowdown,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,fan.speed,clocks.sm,clocks.max.sm --format=csv -l 5
//
// GPU 1 is a consumer card: no ECC, no row remapping.
const healthLog = "timestamp, index, ecc.errors.uncorrected.volatile.total, remapped_rows.pending, remapped_rows.failure, " +
	"clocks_event_reasons.hw_slowdown, clocks_event_reasons.hw_power_brake_slowdown, pcie.link.gen.current, pcie.link.gen.max, " +
	"pcie.link.width.current, pcie.link.width.max, fan.speed [%], clocks.sm [MHz], clocks.max.sm [MHz]\n" +
	"2026/11/29 09:00:00.000, 0, 1, Yes, No, Active, Active, 5, 5, 8, 16, [N/A], 855 MHz, 1980 MHz\n" +
	"2026/11/29 09:00:00.004, 1, [N/A], [N/A], [N/A], Not Active, Not Active, 4, 4, 16, 16, 45 %, 2520 MHz, 2520 MHz\n"

func TestHealthColumns(t *testing.T) {
	snaps, err := parse(healthLog, Options{})
	if err != nil || len(snaps) != 1 || len(snaps[0].Devices) != 2 {
		t.Fatalf("got %v, %v; want one snapshot of two GPUs", snaps, err)
	}
	for i, want := range []map[gpu.HealthReading]float64{
		{gpu.ECCUncorrectedVolatile: 1, gpu.RowRemapPending: 1, gpu.RowRemapFailed: 0,
			gpu.ClockEventReasons: float64(gpu.ClockEventHWSlowdown | gpu.ClockEventHWPowerBrake),
			gpu.PCIeLinkGen:       5, gpu.PCIeLinkGenMax: 5, gpu.PCIeLinkWidth: 8, gpu.PCIeLinkWidthMax: 16, gpu.SMClock: 855, gpu.SMClockMax: 1980},
		{gpu.ClockEventReasons: 0, gpu.PCIeLinkGen: 4, gpu.PCIeLinkGenMax: 4, gpu.PCIeLinkWidth: 16, gpu.PCIeLinkWidthMax: 16,
			gpu.FanSpeed: 45, gpu.SMClock: 2520, gpu.SMClockMax: 2520},
	} {
		h := &snaps[0].Devices[i].Health
		for _, r := range gpu.HealthReadings() {
			got, ok := h.Get(r)
			w, wanted := want[r]
			if ok != wanted || got != w {
				t.Errorf("GPU %d: %s = %v (%v), want %v (%v): [N/A] is missing, not 0", i, r, got, ok, w, wanted)
			}
		}
	}
}

func TestHealthColumnsBadValues(t *testing.T) {
	for _, tc := range []struct{ header, value, want string }{
		{"clocks_event_reasons.hw_slowdown", "maybe", `clocks_event_reasons.hw_slowdown: "maybe" is not Active or Not Active`},
		{"clocks_event_reasons.active", "0xZZ", `clocks_event_reasons.active: "0xZZ" is not a bitmask such as 0x0000000000000001`},
		{"fan.speed [%]", "fast", `fan.speed: "fast" is not a number; want one such as 12, 45 % or 1980 MHz`},
		{"clocks.sm [MHz]", "1980 W", `clocks.sm: "1980 W" is not a number`},
	} {
		_, err := parse("timestamp, index, "+tc.header+"\n2026/11/29 09:00:00.000, 0, "+tc.value+"\n", Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "gpu.csv:2:") {
			t.Errorf("%s = %q: got %v, want an error at gpu.csv:2 saying %q", tc.header, tc.value, err, tc.want)
		}
	}
	snaps, err := parse("timestamp, index, clocks_throttle_reasons.active\n2026/11/29 09:00:00.000, 0, 0x0000000000000088\n", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := snaps[0].Devices[0].Health.ClockEvents(); !e.Has(gpu.ClockEventHWPowerBrake) || !e.Has(gpu.ClockEventHWSlowdown) {
		t.Errorf("clocks_throttle_reasons.active 0x88: got %v, want hw_slowdown and hw_power_brake", e.Names())
	}
}
