package rules

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// condEnd is the time of the newest sample in the test windows.
var condEnd = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// condRate is how fast each metric of condDevice rose, per second, before
// the reading: memory grows by 100 MiB/min and temperature by 0.5 C/min;
// everything else is steady.
func condRate(m Metric) float64 {
	const memRate = 100 << 20 / 60.0
	switch m {
	case MetricMemoryUsed:
		return memRate
	case MetricMemoryFree:
		return -memRate
	case MetricMemoryUsedPercent:
		return memRate / (80 << 30) * 100
	case MetricTemperature:
		return 0.5 / 60
	}
	return 0
}

// condContext returns a context for c on d: each window holds the series
// that, at condRate, ends at d's reading at condEnd, sampled 20 times.
func condContext(c *Cond, d *gpu.Device, xids ...uint64) *EvalContext {
	ctx := &EvalContext{Device: d, XIDs: xids}
	for _, spec := range c.Windows() {
		w := NewWindow(spec.Span)
		step := spec.Span / 20
		for ago := spec.Span; ago >= 0; ago -= step {
			w.Add(condEnd.Add(-ago), spec.Metric.Value(d)-condRate(spec.Metric)*ago.Seconds())
		}
		ctx.Windows = append(ctx.Windows, w)
	}
	for _, spec := range c.Trends() {
		tr := NewTrendScales(spec.Span, spec.Longest)
		step := spec.Span / 20
		for ago := spec.Span; ago >= 0; ago -= step {
			tr.Add(condEnd.Add(-ago), spec.Metric.Value(d)-condRate(spec.Metric)*ago.Seconds())
		}
		ctx.Trends = append(ctx.Trends, tr)
	}
	return ctx
}

func mustParseCond(t testing.TB, src string) *Cond {
	t.Helper()
	c, err := ParseCond(src)
	if err != nil {
		t.Fatalf("ParseCond(%q): %v", src, err)
	}
	return c
}

func TestParseCondValid(t *testing.T) {
	tests := []struct {
		src  string
		want bool // on condDevice with XID 79, memory at 60 of 80 GiB growing 100 MiB/min
	}{
		{"memory.used_percent > 95", false},
		{"memory.used_percent > 70", true},
		{"memory.used_percent>74.9", true},
		{"slope(memory.used, 10m) > 200MiB/min and memory.used_percent > 50", false},
		{"slope(memory.used, 10m) > 50MiB/min and memory.used_percent > 50", true},
		{"slope(memory.used, 10m) < -1MiB/min", false},
		{"time_to_full(memory.used, 15m) < 20m", false},
		{"time_to_full(memory.used, 15m) < 4h", true},
		{"time_to_full(memory.used, 15m) > 12000s", true},
		{"time_to_full(memory.used_percent, 15m) < 3.5h", true},
		{"memory.used > 1GiB and avg(utilization.gpu, 30m) < 5", true},
		{"temperature > 85", true},
		{"temperature < 80", false},
		{"xid in (48, 63, 64, 74, 79, 94, 95)", true},
		{"xid > 0", true},
		{"xid == 13", false},
		{"not (power.percent >= 90 or process.count == 0)", true},
		{"slope(temperature, 5m) > 1C/min", false},
		{"slope(temperature, 5m) > 0.25 C/min", true},
		{"memory.used > 5 GiB", true},
		{"memory.used > 61440MiB", false},
		{"memory.used >= 61440MiB", true},
		{"memory.used > 64.4GB", true},
		{"power > 300W", true},
		{"power.percent > 77.9", true},
		{"memory.free < 20GiB", false},
		{"memory.free <= 20GiB", true},
		{"memory.total == 80GiB", true},
		{"utilization.memory != 1", false},
		{"utilization.gpu < 5%", true},
		{"process.memory > 39GiB", true},
		{"process.count in (1, 2, 3)", true},
		{"min(temperature, 10m) > 81", true},
		{"max(temperature, 10m) == 86C", true},
		{"avg(power, 1h) == 312", true},
		{"slope(utilization.gpu, 10m) == 0", true},
		{"slope(process.count, 1h) > 2/h", false},
		{"not temperature > 85", false},
		{"temperature > 85 AND power > 300W", true},
		{"(temperature > 90 or memory.used_percent > 70) and not xid in (13)", true},
		{"avg(utilization.gpu, 90s) < 5 and avg(utilization.gpu, 1.5h) < 5", true},
		{"((temperature > 1))", true},
		{"time_to_full(memory.used, 15m, 1h) < 4h", true},
		{"trend(memory.used, 10m, 80m) > 50MiB/min", true},
		{"trend(memory.used, 10m, 80m) > 200MiB/min", false},
	}
	for _, tt := range tests {
		c := mustParseCond(t, tt.src)
		if got := c.String(); got != tt.src {
			t.Errorf("ParseCond(%q).String(): got %q, want the source", tt.src, got)
		}
		if got := c.Eval(condContext(c, condDevice(), 79)); got != tt.want {
			t.Errorf("%q on the test device: got %v, want %v", tt.src, got, tt.want)
		}
	}
}

func TestParseCondInvalid(t *testing.T) {
	tests := []struct {
		src string
		col int
		msg string
	}{
		{"", 1, "empty condition; write a comparison such as memory.used_percent > 95"},
		{"memory.use > 5", 1, `unknown metric "memory.use" (did you mean "memory.used"?); metrics are memory.used, memory.free, memory.total, memory.used_percent, memory.held, utilization.gpu, utilization.memory, temperature, power, power.percent, process.memory, process.count, process.jobs, oom_exits, xid, held_for, missing_for, xid.fault, xid.action and the health readings ecc.*, retired_pages.*, row_remap.*, recovery_action, throttle.*, pcie.*, nvlink.*, fan.*, clocks.* (docs/rules.md lists them)`},
		{"memroy.used > 5", 1, `unknown metric "memroy.used" (did you mean "memory.used"?); metrics are memory.used, memory.free, memory.total, memory.used_percent, memory.held, utilization.gpu, utilization.memory, temperature, power, power.percent, process.memory, process.count, process.jobs, oom_exits, xid, held_for, missing_for, xid.fault, xid.action and the health readings ecc.*, retired_pages.*, row_remap.*, recovery_action, throttle.*, pcie.*, nvlink.*, fan.*, clocks.* (docs/rules.md lists them)`},
		{"temp > 85", 1, `unknown metric "temp" (did you mean "temperature"?); metrics are memory.used, memory.free, memory.total, memory.used_percent, memory.held, utilization.gpu, utilization.memory, temperature, power, power.percent, process.memory, process.count, process.jobs, oom_exits, xid, held_for, missing_for, xid.fault, xid.action and the health readings ecc.*, retired_pages.*, row_remap.*, recovery_action, throttle.*, pcie.*, nvlink.*, fan.*, clocks.* (docs/rules.md lists them)`},
		{"gpu_util > 5", 1, `unknown metric "gpu_util"; metrics are memory.used, memory.free, memory.total, memory.used_percent, memory.held, utilization.gpu, utilization.memory, temperature, power, power.percent, process.memory, process.count, process.jobs, oom_exits, xid, held_for, missing_for, xid.fault, xid.action and the health readings ecc.*, retired_pages.*, row_remap.*, recovery_action, throttle.*, pcie.*, nvlink.*, fan.*, clocks.* (docs/rules.md lists them)`},
		{"average(memory.used, 5m) > 3", 1, `unknown function "average"; functions are avg, min, max, slope, time_to_full, trend, rate, active, count`},
		{"slop(memory.used, 5m) > 3", 1, `unknown function "slop" (did you mean "slope"?); functions are avg, min, max, slope, time_to_full, trend, rate, active, count`},
		{"memory.used >", 14, `expected a number after ">", found the end`},
		{"temperature > 85 temperature < 80", 18, `unexpected "temperature" after a complete condition; join conditions with and/or`},
		{"(temperature > 85", 18, `missing ")" to close "(" at column 1`},
		{"temperature > 85)", 17, `unexpected ")" without a matching "("`},
		{"(temperature > 85 power > 300W)", 19, `expected "and", "or" or ")" to close "(" at column 1, found "power"`},
		{"temperature = 85", 13, `"=" is not a comparison; use == to test equality`},
		{"temperature => 85", 13, `"=" is not a comparison; use == to test equality`},
		{"temperature > 85 && power > 300W", 18, `"&&" is not an operator; use and`},
		{"temperature > 85 || power > 300W", 18, `"||" is not an operator; use or`},
		{"temperature ! 5", 13, `"!" is not an operator; use not`},
		{"memory.used > 5C", 16, `unit "C" is a temperature but memory.used is bytes; use B, KiB, MiB, GiB, TiB`},
		{"memory.used > 5 gib", 17, `unknown unit "gib" (did you mean "GiB"?); units are %, B, KiB, MiB, GiB, TiB, KB, MB, GB, TB, C, W, Hz, kHz, MHz, GHz, ms, s, m, min, h, d and rates such as MiB/min`},
		{"utilization.gpu < 5 %%", 21, `unknown unit "%%"; units are %, B, KiB, MiB, GiB, TiB, KB, MB, GB, TB, C, W, Hz, kHz, MHz, GHz, ms, s, m, min, h, d and rates such as MiB/min`},
		{"slope(memory.used, 10m) > 5MiB", 28, `unit "MiB" is a size but slope(memory.used, 10m) is bytes per second; use a rate such as MiB/s, MiB/min or GiB/h`},
		{"slope(memory.used, 10m) > 1/min", 28, `unit "/min" is a count per time but slope(memory.used, 10m) is bytes per second; use a rate such as MiB/s, MiB/min or GiB/h`},
		{"temperature > 85C/min", 17, `unit "C/min" is a rate of degrees Celsius per time but temperature is degrees Celsius; use C`},
		{"time_to_full(memory.used, 15m) < 20GiB", 36, `unit "GiB" is a size but time_to_full(memory.used, 15m) is seconds; use ms, s, m, h or d`},
		{"process.count > 5%", 18, `unit "%" is a percentage but process.count is a count; use a plain number`},
		{"slope(xid, 5m) > 1", 7, "slope does not apply to xid: it is an event, not a series; test it directly, e.g. xid in (79), or count its events, e.g. count(xid in (13, 31), 10m)"},
		{"time_to_full(temperature, 5m) < 5m", 14, "time_to_full works only on memory.used, memory.used_percent and process.memory, not temperature"},
		{"avg(utilization.gpu, 10) < 5", 22, "window 10 needs a unit: ms, s, m, h or d (e.g. 10m)"},
		{"avg(utilization.gpu, 0s) < 5", 22, "window 0s must be longer than 0"},
		{"slope(memory.used, -5m) > 1", 20, "window -5m must be longer than 0"},
		{"avg(utilization.gpu, 10MiB) < 5", 24, "window 10MiB must be a duration; use ms, s, m, h or d"},
		{"avg(utilization.gpu, 60d) < 5", 22, "window 60d is longer than the maximum of 31d"},
		{"avg(utilization.gpu 10m) < 5", 21, `expected "," and a window after utilization.gpu, found "10"; write e.g. avg(utilization.gpu, 10m)`},
		{"slope(memory.used) > 1", 18, `expected "," and a window after memory.used, found ")"; write e.g. slope(memory.used, 10m)`},
		{"avg(utilization.gpu, 10m < 5", 26, `expected ")" to close avg(, found "<"`},
		{"avg(utilization.gpu, 10m, 1h) < 5", 25, "avg takes one window; only trend and time_to_full take a longest time scale after it"},
		{"time_to_full(memory.used, 40m, 1h) < 5m", 32, "the longest time scale 1h must be at least twice the window 40m: time_to_full looks at the window and its doublings up to it, e.g. time_to_full(memory.used, 40m, 6h)"},
		{"trend(memory.used, 1m, 5h) > 0", 24, "the longest time scale 5h is more than 7 doublings of the window 1m; take a longer window or a shorter longest time scale"},
		{"trend(memory.used, 40m, ) > 0", 25, `expected a window such as 10m after the comma in trend(, found ")"`},
		{"trend(memory.used, 40m, 6h > 0", 28, `expected ")" to close trend(, found ">"`},
		{"trend(memory.used, 40m, 40d) > 0", 25, "window 40d is longer than the maximum of 31d"},
		{"avg(, 5m) > 1", 5, `expected a metric as the first argument of avg, found ","`},
		{"avg(avg(memory.used, 5m), 5m) > 1", 5, "functions cannot be nested; avg takes a metric, e.g. avg(memory.used, 10m)"},
		{"avg utilization.gpu < 5", 1, "avg is a function; write avg(metric, window), e.g. avg(utilization.gpu, 30m)"},
		{"memory.used(5) > 3", 1, "memory.used is a metric, not a function; functions are avg, min, max, slope, time_to_full, trend, rate, active, count"},
		{"memory.used", 12, `expected a comparison (> >= < <= == !=) or "in" after memory.used, found the end`},
		{"xid in 48", 8, `expected "(" after "in", found "48"; write e.g. xid in (48, 79)`},
		{"xid in (48MiB)", 11, `"in" takes plain numbers, not units such as "MiB"; use comparisons for quantities with units`},
		{"xid in ()", 9, `expected a number in the list of "in", found ")"`},
		{"xid in (48 63)", 12, `expected "," or ")" in the list of "in", found "63"`},
		{"xid in (79", 11, `expected "," or ")" in the list of "in", found the end`},
		{"memory.used > memory.free", 15, `expected a number after ">", found "memory.free"; a condition compares a value with a number, not with another metric`},
		{"95 < memory.used_percent", 1, `expected a metric, found number "95"; put the metric on the left, e.g. memory.used_percent > 95`},
		{"temperature > 85 @", 18, `unexpected character "@"`},
		{"temperature > 85 and ü > 3", 22, `unexpected character "ü"`},
		{"not", 4, `expected a condition after "not"`},
		{"temperature > 85 and", 21, `expected a condition after "and"`},
		{"memory.used_percent > 95 or", 28, `expected a condition after "or"`},
		{"and temperature > 85", 1, `expected a metric, function, "not" or "(", found "and"`},
		{"temperature > 85 or or power > 1", 21, `expected a metric, function, "not" or "(", found "or"`},
		{"()", 2, `empty parentheses; write a condition inside "(" and ")"`},
		{"memory.used > 1e400", 15, "number 1e400 is out of range"},
		{"temperature > 1e308 C and memory.used > 1e308 TiB", 41, "number 1e308 TiB is out of range"},
		{strings.Repeat("(", 200) + "temperature > 1" + strings.Repeat(")", 200), 101, "condition nested too deeply (more than 100 levels)"},
	}
	for _, tt := range tests {
		c, err := ParseCond(tt.src)
		if err == nil {
			t.Errorf("ParseCond(%q): got %q, want error %q", tt.src, c, tt.msg)
			continue
		}
		var ce *CondError
		if !errors.As(err, &ce) {
			t.Errorf("ParseCond(%q): got error %T %v, want a *CondError", tt.src, err, err)
			continue
		}
		if ce.Col != tt.col || ce.Msg != tt.msg {
			t.Errorf("ParseCond(%q):\n got column %d: %s\nwant column %d: %s", tt.src, ce.Col, ce.Msg, tt.col, tt.msg)
		}
	}
}

func TestCondErrorString(t *testing.T) {
	err := &CondError{Col: 7, Msg: "bad thing"}
	if got, want := err.Error(), "column 7: bad thing"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestQuantityConversion(t *testing.T) {
	tests := []struct {
		src  string
		want float64 // the compared number in base units
	}{
		{"memory.used > 1GiB", 1 << 30},
		{"memory.used > 5 GiB", 5 << 30},
		{"memory.used > 1.5KiB", 1536},
		{"memory.used > 2MB", 2e6},
		{"memory.used > 1TB", 1e12},
		{"memory.used > 1TiB", 1 << 40},
		{"memory.used > 123", 123},
		{"slope(memory.used, 10m) > 200MiB/min", 200 << 20 / 60.0},
		{"slope(memory.used, 10m) > 1GiB/h", (1 << 30) / 3600.0},
		{"slope(memory.used, 10m) > 3MiB/s", 3 << 20},
		{"slope(memory.used_percent, 10m) > 6%/min", 0.1},
		{"slope(temperature, 5m) > 1C/min", 1 / 60.0},
		{"slope(power, 5m) > 2W/s", 2},
		{"slope(process.count, 1h) > 36/h", 0.01},
		{"time_to_full(memory.used, 15m) < 20m", 1200},
		{"time_to_full(memory.used, 15m) < 1.5h", 5400},
		{"time_to_full(memory.used, 15m) < 2d", 172800},
		{"time_to_full(memory.used, 15m) < 500ms", 0.5},
		{"time_to_full(memory.used, 15m) < 90", 90},
		{"temperature > 85C", 85},
		{"power > 300 W", 300},
		{"utilization.gpu < 5%", 5},
		{"temperature > -5", -5},
		{"memory.used > 1e3", 1000},
	}
	for _, tt := range tests {
		c := mustParseCond(t, tt.src)
		if got := c.first.q; !sameFloat(got, tt.want, 1e-12) {
			t.Errorf("%q: got %v in base units, want %v", tt.src, got, tt.want)
		}
	}
}

func TestKleeneLogic(t *testing.T) {
	// T holds, F does not, U is unknown: utilization.gpu is NaN below.
	const (
		T = "temperature > 0"
		F = "temperature < 0"
		U = "utilization.gpu > 0"
	)
	tests := []struct {
		src  string
		want tri
	}{
		{T, triTrue}, {F, triFalse}, {U, triUnknown},
		{"not " + T, triFalse}, {"not " + F, triTrue}, {"not " + U, triUnknown},
		{T + " and " + T, triTrue}, {T + " and " + F, triFalse}, {T + " and " + U, triUnknown},
		{F + " and " + U, triFalse}, {U + " and " + F, triFalse}, {U + " and " + U, triUnknown},
		{T + " or " + F, triTrue}, {F + " or " + F, triFalse}, {T + " or " + U, triTrue},
		{U + " or " + T, triTrue}, {F + " or " + U, triUnknown}, {U + " or " + U, triUnknown},
		{"not (" + F + " or " + U + ")", triUnknown},
		{"not (" + F + " and " + U + ")", triTrue},
		{T + " and (" + U + " or " + T + ")", triTrue},
		{"xid in (79)", triFalse}, // no XID event in this snapshot: known false
		{"not xid > 0", triTrue},
		{"avg(temperature, 10m) > 0", triUnknown}, // the window is empty
	}
	d := condDevice()
	d.UtilGPU = math.NaN()
	for _, tt := range tests {
		c := mustParseCond(t, tt.src)
		ctx := &EvalContext{Device: d, Windows: []*Window{NewWindow(10 * time.Minute)}}
		if got, _ := c.root.eval(ctx); got != tt.want {
			t.Errorf("%q: got %v, want %v", tt.src, got, tt.want)
		}
		if got, want := c.Eval(ctx), tt.want == triTrue; got != want {
			t.Errorf("%q: Eval got %v, want %v", tt.src, got, want)
		}
	}
}

func TestXID(t *testing.T) {
	tests := []struct {
		src       string
		xids      []uint64
		want      bool
		wantValue float64
	}{
		{"xid in (48, 79)", []uint64{13, 79}, true, 79},
		{"xid in (48, 79)", []uint64{13, 31}, false, 13},
		{"xid in (48, 79)", nil, false, math.NaN()},
		{"xid > 0", []uint64{13}, true, 13},
		{"xid != 13", []uint64{13, 13}, false, 13},
		{"not xid in (13)", []uint64{79}, true, 79},
		{"not xid in (13)", nil, true, math.NaN()},
		{"temperature > 85 or xid == 79", nil, true, 86},
	}
	for _, tt := range tests {
		c := mustParseCond(t, tt.src)
		ctx := &EvalContext{Device: condDevice(), XIDs: tt.xids}
		if got := c.Eval(ctx); got != tt.want {
			t.Errorf("%q with XIDs %v: got %v, want %v", tt.src, tt.xids, got, tt.want)
		}
		if got := c.Value(ctx); !sameFloat(got, tt.wantValue, 0) {
			t.Errorf("%q with XIDs %v: got value %v, want %v", tt.src, tt.xids, got, tt.wantValue)
		}
	}
}

func TestTimeToFull(t *testing.T) {
	const span = 10 * time.Minute
	feed := func(start, perSecond float64, n int) *Trend {
		w := NewTrend(span)
		for i := range n {
			ago := span - time.Duration(i+1)*span/20
			w.Add(condEnd.Add(-ago), start+perSecond*(span-ago).Seconds())
		}
		return w
	}
	unknownMem := condDevice()
	unknownMem.MemTotal = 0
	tests := []struct {
		name string
		src  string
		d    *gpu.Device
		w    *Trend
		want float64
	}{
		// Rising 1 GiB/min for 10 min to 60 GiB leaves 20 min to 80 GiB.
		{"rising", "time_to_full(memory.used, 10m) < 1h", condDevice(), feed(50*condGiB, condGiB/60.0, 20), 1200},
		{"steady", "time_to_full(memory.used, 10m) < 1h", condDevice(), feed(60*condGiB, 0, 20), math.Inf(1)},
		{"falling", "time_to_full(memory.used, 10m) < 1h", condDevice(), feed(60*condGiB, -condGiB/60.0, 20), math.Inf(1)},
		{"already past full", "time_to_full(memory.used, 10m) < 1h", condDevice(), feed(90*condGiB, condGiB/60.0, 20), 0},
		{"not ready", "time_to_full(memory.used, 10m) < 1h", condDevice(), feed(60*condGiB, condGiB/60.0, 1), math.NaN()},
		{"memory unknown", "time_to_full(memory.used, 10m) < 1h", unknownMem, feed(60*condGiB, condGiB/60.0, 20), math.NaN()},
		// Rising 1%/min for 10 min to 60% leaves 40 min to 100%.
		{"percent", "time_to_full(memory.used_percent, 10m) < 1h", unknownMem, feed(50, 1/60.0, 20), 40 * 60},
	}
	for _, tt := range tests {
		c := mustParseCond(t, tt.src)
		ctx := &EvalContext{Device: tt.d, Trends: []*Trend{tt.w}}
		got := c.Value(ctx)
		if !sameFloat(got, tt.want, 1e-6) {
			t.Errorf("%s: got %v seconds, want %v", tt.name, got, tt.want)
		}
		if want := tt.want < 3600; c.Eval(ctx) != want {
			t.Errorf("%s: Eval got %v, want %v", tt.name, !want, want)
		}
	}
}

func TestMissingWindows(t *testing.T) {
	c := mustParseCond(t, "avg(utilization.gpu, 10m) < 5 or slope(memory.used, 5m) > 0")
	for _, ctx := range []*EvalContext{
		{Device: condDevice()},
		{Device: condDevice(), Windows: []*Window{nil, nil}},
		{Device: nil, Windows: []*Window{NewWindow(time.Minute)}},
		nil,
	} {
		if c.Eval(ctx) {
			t.Errorf("Eval with %d windows: got true, want false", len(condCtxWindows(ctx)))
		}
		if v := c.Value(ctx); !math.IsNaN(v) {
			t.Errorf("Value with %d windows: got %v, want NaN", len(condCtxWindows(ctx)), v)
		}
	}
	var nilCond *Cond
	if nilCond.Eval(&EvalContext{}) || !math.IsNaN(nilCond.Value(&EvalContext{})) || nilCond.ValueMetric() != 0 {
		t.Errorf("a nil Cond: got a value, want false, NaN and no metric")
	}
}

// sameFloat reports whether got is want within the relative error rel;
// NaN matches NaN and an infinity only itself.
func sameFloat(got, want, rel float64) bool {
	switch {
	case math.IsNaN(want):
		return math.IsNaN(got)
	case math.IsInf(want, 0):
		return got == want
	}
	return math.Abs(got-want) <= rel*max(1, math.Abs(want))
}

func condCtxWindows(ctx *EvalContext) []*Window {
	if ctx == nil {
		return nil
	}
	return ctx.Windows
}

func TestCondWindowsAndMetrics(t *testing.T) {
	tests := []struct {
		src     string
		windows []WindowSpec
		trends  []WindowSpec
		metrics []Metric
	}{
		{"temperature > 85", nil, nil, []Metric{MetricTemperature}},
		{
			"slope(memory.used, 10m) > 200MiB/min and memory.used_percent > 50",
			[]WindowSpec{{"slope", MetricMemoryUsed, 10 * time.Minute, 0}},
			nil,
			[]Metric{MetricMemoryUsed, MetricMemoryUsedPercent},
		},
		{
			"avg(memory.used, 10m) > 1 and slope(memory.used, 600s) > 0 or max(memory.used, 5m) > 0 and memory.used > 0",
			[]WindowSpec{{"avg", MetricMemoryUsed, 10 * time.Minute, 0}, {"max", MetricMemoryUsed, 5 * time.Minute, 0}},
			nil,
			[]Metric{MetricMemoryUsed},
		},
		{
			"xid in (79) or not (avg(utilization.gpu, 30m) < 5 and time_to_full(memory.used_percent, 1.5h) < 20m)",
			[]WindowSpec{{"avg", MetricUtilizationGPU, 30 * time.Minute, 0}},
			[]WindowSpec{{"time_to_full", MetricMemoryUsedPercent, 90 * time.Minute, 0}},
			[]Metric{MetricXID, MetricUtilizationGPU, MetricMemoryUsedPercent},
		},
		{
			"trend(memory.used, 40m) > 10MiB/min and time_to_full(memory.used, 40m) < 30m and held_for > 10m",
			nil,
			[]WindowSpec{{"trend", MetricMemoryUsed, 40 * time.Minute, 0}},
			[]Metric{MetricMemoryUsed, MetricHeldFor},
		},
		{
			"time_to_full(memory.used, 40m, 6h) < 24h or time_to_full(memory.used, 40m) < 30m or trend(memory.used, 2400s, 6h) > 0",
			nil,
			[]WindowSpec{{"time_to_full", MetricMemoryUsed, 40 * time.Minute, 6 * time.Hour}, {"time_to_full", MetricMemoryUsed, 40 * time.Minute, 0}},
			[]Metric{MetricMemoryUsed},
		},
	}
	for _, tt := range tests {
		c := mustParseCond(t, tt.src)
		if got := c.Windows(); !slices.Equal(got, tt.windows) {
			t.Errorf("%q: got windows %v, want %v", tt.src, got, tt.windows)
		}
		if got := c.Trends(); !slices.Equal(got, tt.trends) {
			t.Errorf("%q: got trends %v, want %v", tt.src, got, tt.trends)
		}
		if got := c.Metrics(); !slices.Equal(got, tt.metrics) {
			t.Errorf("%q: got metrics %v, want %v", tt.src, got, tt.metrics)
		}
	}
}

func TestCondValue(t *testing.T) {
	tests := []struct {
		src    string
		value  float64
		dim    Dimension
		metric Metric
		text   string
	}{
		{"memory.used_percent > 95", 75, Dimension{Base: Percent}, MetricMemoryUsedPercent, "75%"},
		{"not (memory.used > 1GiB) and temperature > 0", 60 * condGiB, Dimension{Base: Bytes}, MetricMemoryUsed, "60 GiB"},
		{"slope(memory.used, 10m) > 200MiB/min", 100 << 20 / 60.0, Dimension{Base: Bytes, PerSecond: true}, MetricMemoryUsed, "100 MiB/min"},
		{"time_to_full(memory.used, 15m) < 20m", 204.8 * 60, Dimension{Base: Seconds}, MetricMemoryUsed, "3h24m"},
		{"avg(utilization.gpu, 30m) < 5", 2, Dimension{Base: Percent}, MetricUtilizationGPU, "2%"},
		{"temperature > 85", 86, Dimension{Base: Celsius}, MetricTemperature, "86 C"},
		{"power > 300W", 312, Dimension{Base: Watts}, MetricPower, "312 W"},
		{"xid in (48, 79)", 79, Dimension{Base: Count}, MetricXID, "79"},
	}
	for _, tt := range tests {
		c := mustParseCond(t, tt.src)
		ctx := condContext(c, condDevice(), 79)
		got := c.Value(ctx)
		if !sameFloat(got, tt.value, 1e-6) {
			t.Errorf("%q: got value %v, want %v", tt.src, got, tt.value)
		}
		if got := c.ValueDimension(); got != tt.dim {
			t.Errorf("%q: got dimension %v, want %v", tt.src, got, tt.dim)
		}
		if got := c.ValueMetric(); got != tt.metric {
			t.Errorf("%q: got metric %v, want %v", tt.src, got, tt.metric)
		}
		if got := c.ValueDimension().Format(c.Value(ctx)); got != tt.text {
			t.Errorf("%q: got formatted value %q, want %q", tt.src, got, tt.text)
		}
	}
}

// benchConds are the conditions of DESIGN.md's example rules and of the
// defaults in config.example.yaml.
var benchConds = []string{
	"memory.used_percent > 95 and held_for > 10m and min(memory.used_percent, 5m) < 90",
	"trend(memory.used, 40m) > 10MiB/min",
	"time_to_full(memory.used, 40m) < 30m",
	"missing_for > 1m",
	"memory.used_percent > 95",
	"slope(memory.used, 10m) > 200MiB/min and memory.used_percent > 50",
	"time_to_full(memory.used, 15m) < 20m",
	"memory.used > 1GiB and avg(utilization.gpu, 30m) < 5",
	"temperature > 85",
	"xid in (48, 63, 64, 74, 79, 94, 95)",
	"not (power.percent >= 90 or process.count == 0)",
}

func TestCondEvalDoesNotAllocate(t *testing.T) {
	for _, src := range benchConds {
		c := mustParseCond(t, src)
		ctx := condContext(c, condDevice(), 13, 79)
		if n := testing.AllocsPerRun(100, func() { c.Eval(ctx); c.Value(ctx) }); n != 0 {
			t.Errorf("%q: got %v allocations per Eval, want 0", src, n)
		}
	}
}

func BenchmarkCondEval(b *testing.B) {
	for _, src := range benchConds {
		c := mustParseCond(b, src)
		ctx := condContext(c, condDevice(), 13, 79)
		b.Run(src, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.Eval(ctx)
			}
		})
	}
}

func BenchmarkParseCond(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		for _, src := range benchConds {
			if _, err := ParseCond(src); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func FuzzParseCond(f *testing.F) {
	for _, src := range benchConds {
		f.Add(src)
	}
	for _, src := range []string{
		"slope(temperature, 5m) > 1C/min", "memory.used > 5 GiB", "power > 300W", "temperature > 85 AND (xid > 0 or not utilization.gpu < 5%)",
		"memory.used > 1e400", "((((temperature > 1))))", "xid in (48,", "avg(utilization.gpu, 0.5h) <= -3.5e2", "temperature = 5 && x",
		"trend(held_for, 5m) > 0", "held_for > 10MiB", "trend(temperature, 1ms) < -1C/h", "missing_for in (1, 2)",
		"time_to_full(memory.used, 40m, 6h) < 24h", "trend(memory.used, 1ms, 127ms) > 0", "avg(power, 1m, 2m) > 0", "trend(memory.used, 1m, 1m) > 0",
	} {
		f.Add(src)
	}
	d := condDevice()
	f.Fuzz(func(t *testing.T, src string) {
		c, err := ParseCond(src)
		if err != nil {
			var ce *CondError
			if !errors.As(err, &ce) {
				t.Fatalf("ParseCond(%q): got error %T, want *CondError", src, err)
			}
			if ce.Col < 1 || ce.Col > utf8.RuneCountInString(src)+1 || ce.Msg == "" {
				t.Fatalf("ParseCond(%q): got column %d of %d characters, message %q", src, ce.Col, utf8.RuneCountInString(src), ce.Msg)
			}
			return
		}
		again, err := ParseCond(c.String())
		if err != nil {
			t.Fatalf("ParseCond(%q) re-parsed from String(): %v", src, err)
		}
		canon := c.canonicalString()
		if got := again.canonicalString(); got != canon {
			t.Fatalf("ParseCond(%q) re-parsed: got %q, want %q", src, got, canon)
		}
		fromCanon, err := ParseCond(canon)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, src, err)
		}
		if got := fromCanon.canonicalString(); got != canon {
			t.Fatalf("canonical form of %q: got %q, want %q", src, got, canon)
		}
		ctx := condContext(c, d, 79)
		c.Eval(ctx)
		c.Value(ctx)
		c.ValueDimension().Format(c.Value(ctx))
	})
}
