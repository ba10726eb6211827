package rules

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// healthDevice is an H100 with every health reading: a row remap
// pending, the power brake on, its link trained at x8, one NVLink down.
func healthDevice() *gpu.Device {
	d := condDevice()
	h := &d.Health
	h.Set(gpu.ECCCorrectedVolatile, 12)
	h.Set(gpu.ECCUncorrectedVolatile, 1)
	h.Set(gpu.RowRemapUncorrectable, 1)
	h.Set(gpu.RowRemapPending, 1)
	h.Set(gpu.RowRemapFailed, 0)
	h.Set(gpu.RecoveryActionReading, float64(gpu.RecoveryReset))
	h.Set(gpu.ClockEventReasons, float64(gpu.ClockEventHWSlowdown|gpu.ClockEventHWPowerBrake))
	h.Set(gpu.PCIeLinkGen, 5)
	h.Set(gpu.PCIeLinkGenMax, 5)
	h.Set(gpu.PCIeLinkWidth, 8)
	h.Set(gpu.PCIeLinkWidthMax, 16)
	h.Set(gpu.NVLinkLinks, 18)
	h.Set(gpu.NVLinkLinksDown, 1)
	h.Set(gpu.SMClock, 1980)
	h.Set(gpu.SMClockMax, 1980)
	return d
}

func TestHealthMetricValues(t *testing.T) {
	d := healthDevice()
	nan := math.NaN()
	for _, tc := range []struct {
		m    Metric
		want float64
	}{
		{MetricECCCorrectedVolatile, 12},
		{MetricECCUncorrectedVolatile, 1},
		{MetricECCCorrectedAggregate, nan}, // not given: missing, not 0
		{MetricRowRemapPending, 1},
		{MetricRowRemapFailed, 0},
		{MetricRecoveryAction, float64(gpu.RecoveryReset)},
		{MetricThrottleHWSlowdown, 1},
		{MetricThrottleHWPowerBrake, 1},
		{MetricThrottleHWThermal, 0},
		{MetricThrottleSWPowerCap, 0},
		{MetricPCIeLinkWidth, 8},
		{MetricPCIeLinkWidthBelowMax, 8},
		{MetricPCIeLinkGenBelowMax, 0},
		{MetricNVLinkLinksDown, 1},
		{MetricFanSpeed, nan}, // an SXM card has no fan
		{MetricClockSM, 1980e6},
		{MetricClockMemory, nan},
	} {
		if got := tc.m.Value(d); !sameFloat(got, tc.want, 0) {
			t.Errorf("%s = %v, want %v", tc.m, got, tc.want)
		}
	}
	bare := condDevice()
	for _, m := range Metrics() {
		if _, ok := healthMetricOf(m); ok && !math.IsNaN(m.Value(bare)) {
			t.Errorf("%s of a GPU without health readings = %v, want NaN (missing, not 0)", m, m.Value(bare))
		}
	}
	onlyWidth := condDevice()
	onlyWidth.Health.Set(gpu.PCIeLinkWidth, 8)
	if got := MetricPCIeLinkWidthBelowMax.Value(onlyWidth); !math.IsNaN(got) {
		t.Errorf("pcie.link.width_below_max without the maximum = %v, want NaN", got)
	}
}

func TestParseHealthConditions(t *testing.T) {
	for _, tc := range []struct {
		src, canonical string
	}{
		{`recovery_action != "none"`, `recovery_action != "none"`},
		{`xid.fault == 'hardware'`, `xid.fault == "hardware"`},
		{`xid.action in ("reset", "reboot")`, `xid.action in ("reset", "reboot")`},
		{`count(xid in (13, 31, 43), 10m) >= 3`, `count(xid in (13, 31, 43), 600s) >= 3`},
		{`count(xid.fault == "application", 10m) >= 3`, `count(xid.fault == "application", 600s) >= 3`},
		{`rate(nvlink.crc_errors, 5m) > 10/min`, `rate(nvlink.crc_errors, 300s) > 0.16666666666666666`},
		{`active(throttle.hw_power_brake, 5m) >= 4m`, `active(throttle.hw_power_brake, 300s) >= 240`},
		{`clocks.sm < 1GHz`, `clocks.sm < 1000000000`},
		{`fan.speed < 5% and temperature > 80`, `(fan.speed < 5 and temperature > 80)`},
		{`pcie.link.width_below_max > 0`, `pcie.link.width_below_max > 0`},
	} {
		c, err := ParseCond(tc.src)
		if err != nil {
			t.Errorf("ParseCond(%q): %v", tc.src, err)
			continue
		}
		if got := c.canonicalString(); got != tc.canonical {
			t.Errorf("ParseCond(%q): got %s, want %s", tc.src, got, tc.canonical)
		}
	}
}

func TestParseHealthConditionsInvalid(t *testing.T) {
	for _, tc := range []struct {
		src, want string
	}{
		{`recovery_action == 1`, `recovery_action is compared by name: write e.g. recovery_action == "drain_and_reset"; its names are "none", "reset", "reboot", "drain", "drain_and_reset"`},
		{`recovery_action > "none"`, `recovery_action is compared by name with == or != (or in), not ">"`},
		{`recovery_action == "rest"`, `recovery_action has no state "rest" (did you mean "reset"?)`},
		{`xid.fault == "hw"`, `xid.fault has no state "hw"`},
		{`temperature == "hot"`, `temperature is a number, not a name; names in quotes compare xid.fault, xid.action, recovery_action`},
		{`xid in ("hardware")`, `xid is a number, not a name`},
		{`xid.action in (1, 2)`, `expected a name in quotes in the list of "in"`},
		{`xid.fault == "hardware`, `missing " to end the name begun here`},
		{`rate(temperature, 5m) > 1`, `rate works on counters (ecc.corrected.volatile,`},
		{`active(fan.speed, 5m) > 1m`, `active works on flags (retired_pages.pending, row_remap.pending, row_remap.failed, throttle.hw_slowdown,`},
		{`avg(recovery_action, 5m) > 1`, `avg does not apply to recovery_action: it is a state, compared by name, e.g. recovery_action != "none"`},
		{`avg(xid.fault, 5m) > 1`, `avg does not apply to xid.fault: it is an event`},
		{`count(temperature > 80, 10m) > 3`, `count counts XID events: its first argument tests xid, xid.fault or xid.action`},
		{`count(xid in (13), 10m, 1h) > 3`, `expected ")" to close count(`},
		{`count(xid in (13)) > 3`, `expected "," and a window after xid in (13)`},
		{`rate(pcie.replays, 5m) > 1GiB/s`, `unit "GiB/s" is a rate of bytes per time but rate(pcie.replays, 5m) is a count per second`},
		{`clocks.sm < 1500`, ``}, // a bare number is hertz: valid
		{`clocks.sm < 1500C`, `unit "C" is a temperature but clocks.sm is hertz; use MHz or GHz`},
	} {
		_, err := ParseCond(tc.src)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("ParseCond(%q): got %v, want no error", tc.src, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ParseCond(%q): got %v, want an error containing %q", tc.src, err, tc.want)
		}
	}
}

func TestXIDMeaningConditions(t *testing.T) {
	hardware := mustParseCond(t, `xid.fault == "hardware"`)
	reset := mustParseCond(t, `xid.action in ("reset", "reboot")`)
	d := condDevice()
	for _, tc := range []struct {
		xids              []uint64
		hardware, resetOK bool
		value             float64
	}{
		{nil, false, false, math.NaN()},
		{[]uint64{13, 43}, false, false, 13},
		{[]uint64{13, 79}, true, true, 79}, // the value is the XID that passed
		{[]uint64{48}, true, true, 48},
		{[]uint64{94}, true, false, 94}, // contained ECC: restart the application
		{[]uint64{999}, false, false, 999},
	} {
		ctx := &EvalContext{Device: d, XIDs: tc.xids}
		if got := hardware.Eval(ctx); got != tc.hardware {
			t.Errorf("%s with XIDs %v: got %v, want %v", hardware, tc.xids, got, tc.hardware)
		}
		if got := reset.Eval(ctx); got != tc.resetOK {
			t.Errorf("%s with XIDs %v: got %v, want %v", reset, tc.xids, got, tc.resetOK)
		}
		if got := hardware.Value(ctx); !sameFloat(got, tc.value, 0) {
			t.Errorf("%s with XIDs %v: value %v, want %v", hardware, tc.xids, got, tc.value)
		}
	}
	if got, want := hardware.FormatValue(0, 79), "XID 79: the GPU has fallen off the bus — reset the GPU or reboot the node"; got != want {
		t.Errorf("FormatValue(79): got %q, want %q", got, want)
	}
	if got, want := hardware.FormatValue(0, 150), "XID 150: not in gpuwatch's catalogue: see https://docs.nvidia.com/deploy/xid-errors/ — drain the GPU and call NVIDIA support"; got != want {
		t.Errorf("FormatValue(150): got %q, want %q", got, want)
	}
	now, _ := hardware.Explain(&EvalContext{Device: d}, 0)
	if want := `no new XID with xid.fault == "hardware"`; now != want {
		t.Errorf("Explain with no XID: got %q, want %q", now, want)
	}
	rec := mustParseCond(t, `recovery_action != "none"`)
	hd := healthDevice()
	if !rec.Eval(&EvalContext{Device: hd}) {
		t.Errorf("%s on a GPU whose driver asks for a reset: false, want true", rec)
	}
	hd.Health.Set(gpu.RecoveryActionReading, float64(gpu.RecoveryNone))
	if now, _ := rec.Explain(&EvalContext{Device: hd}, 0); now != "recovery_action is none now" {
		t.Errorf("Explain: got %q", now)
	}
	if rec.Truth(&EvalContext{Device: condDevice()}) != TruthUnknown {
		t.Errorf("%s on a GPU without the reading: want unknown", rec)
	}
}

// healthEngine runs rules over snapshots of one GPU, one a minute from
// condEnd, each made by step(i, device) and with the XIDs xids(i).
func healthEngine(t *testing.T, src string, n int, step func(i int, d *gpu.Device), xids func(i int) []uint64) []Transition {
	t.Helper()
	r := &Rule{Name: "Health", When: mustParseCond(t, src), Severity: SeverityWarning}
	e := NewEngine([]*Rule{r}, Options{})
	var out []Transition
	for i := range n {
		d := *condDevice()
		step(i, &d)
		s := &gpu.Snapshot{Time: condEnd.Add(time.Duration(i) * time.Minute), Host: "h", Devices: []gpu.Device{d}}
		for _, x := range xids(i) {
			s.Events = append(s.Events, gpu.Event{Time: s.Time, Kind: gpu.EventXID, GPU: d.Index, UUID: d.UUID, XID: x})
		}
		for _, tr := range e.Eval(s) {
			tr.At = s.Time
			out = append(out, tr)
		}
	}
	return out
}

func TestCountOfXIDs(t *testing.T) {
	noHealth := func(int, *gpu.Device) {}
	// An XID 13 at minutes 0, 4, 8 and 20: three within 10 minutes at 8,
	// two at 10 (minute 0 left), none after 18 but the one at 20.
	ts := healthEngine(t, `count(xid in (13, 31, 43), 10m) >= 3`, 30, noHealth, func(i int) []uint64 {
		if i == 0 || i == 4 || i == 8 || i == 20 {
			return []uint64{13}
		}
		return nil
	})
	if len(ts) != 2 || ts[0].Resolved() || ts[0].At != condEnd.Add(8*time.Minute) || !ts[1].Resolved() || ts[1].At != condEnd.Add(10*time.Minute) {
		t.Fatalf("got %v, want a firing at 8m and its resolve at 10m", ts)
	}
	if ts[0].Value != 3 || ts[0].ValueText != "3" {
		t.Errorf("firing value %v (%q), want 3", ts[0].Value, ts[0].ValueText)
	}
	// Spread out, never three within 10 minutes: silent.
	if ts := healthEngine(t, `count(xid.fault == "application", 10m) >= 3`, 40, noHealth, func(i int) []uint64 {
		if i%6 == 0 {
			return []uint64{31}
		}
		return nil
	}); len(ts) != 0 {
		t.Errorf("XIDs 6 minutes apart: got %v, want nothing", ts)
	}
	// A hardware XID does not count as an application's.
	if ts := healthEngine(t, `count(xid.fault == "application", 10m) >= 1`, 5, noHealth, func(int) []uint64 { return []uint64{79} }); len(ts) != 0 {
		t.Errorf("XID 79 counted as an application XID: %v", ts)
	}
}

func TestRateOfCounterAcrossReset(t *testing.T) {
	// 10 replays a minute, the counter reset to 0 at minute 6 (the GPU
	// was reset): the rate stays 10 a minute, never negative.
	ts := healthEngine(t, `rate(pcie.replays, 5m) > 5/min`, 12, func(i int, d *gpu.Device) {
		v := float64(i * 10)
		if i >= 6 {
			v = float64((i - 6) * 10)
		}
		d.Health.Set(gpu.PCIeReplays, v)
	}, func(int) []uint64 { return nil })
	if len(ts) != 1 || ts[0].Resolved() {
		t.Fatalf("got %v, want one firing that does not resolve at the reset", ts)
	}
	if ts[0].ValueText != "10/min" {
		t.Errorf("value %q, want 10/min", ts[0].ValueText)
	}
}

func TestActiveTimeOfFlag(t *testing.T) {
	// The power brake on from minute 3 to minute 12.
	ts := healthEngine(t, `active(throttle.hw_power_brake, 5m) >= 4m`, 20, func(i int, d *gpu.Device) {
		reasons := gpu.ClockEvents(0)
		if i >= 3 && i < 12 {
			reasons = gpu.ClockEventHWPowerBrake | gpu.ClockEventHWSlowdown
		}
		d.Health.Set(gpu.ClockEventReasons, float64(reasons))
	}, func(int) []uint64 { return nil })
	// The window of 5 minutes holds 5 samples: 4 braked of them are 4m.
	if len(ts) != 2 || ts[0].At != condEnd.Add(6*time.Minute) || ts[1].At != condEnd.Add(13*time.Minute) {
		t.Fatalf("got %v, want a firing at 6m (4 of the window's 5 samples braked) and a resolve at 13m", ts)
	}
	if ts[0].ValueText != "4m" {
		t.Errorf("value %q, want 4m", ts[0].ValueText)
	}
	// A GPU that does not say: unknown, silent.
	if ts := healthEngine(t, `active(throttle.hw_power_brake, 5m) >= 0`, 20, func(int, *gpu.Device) {}, func(int) []uint64 { return nil }); len(ts) != 0 {
		t.Errorf("a GPU without clock event reasons: got %v, want nothing", ts)
	}
}

func TestEventCount(t *testing.T) {
	c := NewEventCount(10 * time.Minute)
	at := func(m int) time.Time { return condEnd.Add(time.Duration(m) * time.Minute) }
	c.Add(at(0), 2)
	c.Add(at(5), 1)
	if c.Value() != 3 {
		t.Errorf("got %v, want 3", c.Value())
	}
	c.Add(at(3), 5) // earlier than the latest: ignored
	c.Add(at(10), 0)
	if c.Value() != 1 {
		t.Errorf("after 10 minutes: got %v, want 1 (the two at 0 left)", c.Value())
	}
	c.Reset()
	if c.Value() != 0 {
		t.Errorf("after Reset: got %v, want 0", c.Value())
	}
}

// TestEngineReadsEveryMetricAsMetricValue checks that the readings the
// engine feeds its windows with are each metric's Value, health readings
// (which it reads without looking up how) included.
func TestEngineReadsEveryMetricAsMetricValue(t *testing.T) {
	d := device(0, 40, 80, 60, gpu.Process{PID: 7, MemUsed: 40 << 30, Job: "slurm:1"})
	for _, r := range gpu.HealthReadings() {
		d.Health.Set(r, float64(r)+0.5)
	}
	d.Health.Set(gpu.ClockEventReasons, float64(gpu.ClockEventHWSlowdown|gpu.ClockEventSWPowerCap))
	d.Health.Set(gpu.RecoveryActionReading, float64(gpu.RecoveryNone))
	e := NewEngine(nil, Options{})
	e.readings = newReadings(nil, nil, Metrics())
	gs := e.state("node1", d.UUID, &d)
	e.feed(t0, &d, gs)
	for i, m := range e.readings.metrics {
		got, want := e.readings.values[i], m.Value(&d)
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("%s: the engine reads %v, Value %v", m, got, want)
		}
	}
}
