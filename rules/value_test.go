package rules

import (
	"math"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// TestFiringInTheBandReportsTheValueThatMadeItTrue: a rule with clear_when
// whose firing alert is reminded of while its condition no longer holds
// (83 C after 86 C, waiting for the GPU to cool below 80 C) reports the
// 86 C that made it true, and says the 83 C of now apart, rather than "at
// 83 C" under "> 85".
func TestFiringInTheBandReportsTheValueThatMadeItTrue(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: Hot
    when: temperature > 85
    clear_when: temperature < 80
    for: 1m
    summary: "GPU {{.GPU}} at {{.ValueText}}"
`), Options{RepeatInterval: 2 * time.Minute})
	temps := []float64{70, 86, 87, 86, 86, 86, 84, 83, 83, 83, 83, 83, 83, 83, 83, 83}
	var fired, repeat *Transition
	for i, temp := range temps {
		for _, tr := range e.Eval(snapshot(time.Duration(i)*15*time.Second, device(0, 10, 90, temp))) {
			switch {
			case tr.Repeat:
				repeat = &tr
			default:
				fired = &tr
			}
		}
	}
	if fired == nil || repeat == nil {
		t.Fatalf("fired %v, repeated %v: want both", fired != nil, repeat != nil)
	}
	valueAt := t0.Add(5 * 15 * time.Second) // the last sample over 85 C, when it fired
	for _, tr := range []*Transition{fired, repeat} {
		if tr.Value != 86 || tr.ValueText != "86 C" || tr.Summary != "GPU 0 at 86 C" {
			t.Errorf("value %v (%q), summary %q; want 86 C, the value that made temperature > 85 true", tr.Value, tr.ValueText, tr.Summary)
		}
		if !tr.ValueAt.Equal(valueAt) || tr.ValueExpr != "temperature" {
			t.Errorf("value of %s at %v; want temperature at %v", tr.ValueExpr, tr.ValueAt, valueAt)
		}
	}
	if fired.NowText != "" || repeat.NowText != "83 C" {
		t.Errorf("now %q when it fired, %q in the reminder; want none (the value is now's), then 83 C", fired.NowText, repeat.NowText)
	}
}

// TestValueIsTheComparisonThatDecided: in "a or b" the alert reports the
// comparison that holds, not the one written first.
func TestValueIsTheComparisonThatDecided(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: HotOrHungry
    when: temperature > 85 or power > 600W
`), Options{})
	d := device(0, 10, 90, 60)
	d.PowerW = 650
	ts := e.Eval(snapshot(0, d))
	if len(ts) != 1 {
		t.Fatalf("got %d transitions, want the firing", len(ts))
	}
	if tr := ts[0]; tr.ValueText != "650 W" || tr.ValueExpr != "power" || tr.NowText != "" {
		t.Errorf("value %q of %q (now %q), want 650 W of power: the comparison that made it true", tr.ValueText, tr.ValueExpr, tr.NowText)
	}
}

// TestResolveSaysWhatIsTrueNow: a resolve's summary says what holds now,
// in the words of the comparison that resolved it, never the firing
// summary again (which reads as still broken).
func TestResolveSaysWhatIsTrueNow(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: Hot
    when: temperature > 85
    clear_when: temperature < 80
    summary: "GPU {{.GPU}} at {{.ValueText}}"
  - alert: Busy
    when: utilization.gpu > 95
    summary: "GPU {{.GPU}} busy"
  - alert: OOMSoon
    when: time_to_full(memory.used, 10m) < 30m
    clear_when: time_to_full(memory.used, 10m) > 1h or memory.used < 1GiB
  - alert: Lost
    when: missing_for > 1m
  - alert: Xid
    when: xid in (79)
    keep_firing_for: 5m
`), Options{})
	resolved := map[string]Transition{}
	fired := map[string]Transition{}
	record := func(ts []Transition) {
		for _, tr := range ts {
			if tr.Resolved() {
				resolved[tr.Alert] = tr
			} else {
				fired[tr.Alert] = tr
			}
		}
	}
	// GPU 0 runs hot, busy, and leaks 1 GiB a minute; GPU 1 throws XID
	// 79 once and later stops reporting for two minutes.
	at := time.Duration(0)
	step := func(gpu0 gpu.Device, gpu1 *gpu.Device, xid bool) {
		s := snapshot(at, gpu0)
		if gpu1 != nil {
			s.Devices = append(s.Devices, *gpu1)
		}
		if xid {
			s.Events = []gpu.Event{{Kind: gpu.EventXID, GPU: 1, XID: 79, Time: s.Time}}
		}
		record(e.Eval(s))
		at += 30 * time.Second
	}
	g1 := device(1, 1, 0, 40)
	for i := range 30 {
		step(device(0, 40+float64(i)/2, 99, 90), &g1, i == 0)
	}
	for range 12 {
		step(device(0, 0.5, 10, 70), nil, false) // the job ended; GPU 1 is missing
	}
	step(device(0, 0.5, 10, 70), &g1, false)
	for name := range map[string]bool{"Hot": true, "Busy": true, "OOMSoon": true, "Lost": true, "Xid": true} {
		if _, ok := fired[name]; !ok {
			t.Errorf("%s never fired", name)
		}
	}
	want := map[string]string{
		"Hot":     "GPU 0 on node1: temperature is 70 C now, under 80 C",
		"Busy":    "GPU 0 on node1: utilization.gpu is 10% now, at or under 95%",
		"OOMSoon": "GPU 0 on node1: time_to_full(memory.used, 10m) is never now: memory does not grow",
		"Lost":    "GPU 1 on node1: the GPU reports again",
		"Xid":     "GPU 1 on node1: no new XID in (79) for 5m",
	}
	for name, summary := range want {
		tr, ok := resolved[name]
		if !ok {
			t.Errorf("%s never resolved", name)
			continue
		}
		if tr.Summary != summary {
			t.Errorf("%s resolved saying %q, want %q", name, tr.Summary, summary)
		}
		if tr.FiringSummary != fired[name].Summary {
			t.Errorf("%s resolved with firing summary %q, want the one it fired with, %q", name, tr.FiringSummary, fired[name].Summary)
		}
	}
	if tr := resolved["Hot"]; tr.Value != 70 || tr.ValueText != "70 C" {
		t.Errorf("Hot resolved with value %v (%q), want 70 C, the value now", tr.Value, tr.ValueText)
	}
	if tr := resolved["OOMSoon"]; !math.IsInf(tr.Value, 1) || tr.ValueText != "never" {
		t.Errorf("OOMSoon resolved with value %v (%q), want never: memory does not grow now", tr.Value, tr.ValueText)
	}
}

// TestFractionOfAPercentWarns: memory.used_percent > 0.95 is valid but
// almost surely means 95%; check warns at the number's column.
func TestFractionOfAPercentWarns(t *testing.T) {
	tests := []struct {
		cond string
		col  int // 0: no warning
	}{
		{"memory.used_percent > 0.95", 23},
		{"memory.used > 1GiB and avg(utilization.gpu, 5m) < 0.05", 51},
		{"memory.used_percent > 0.95%", 0}, // the unit says it is meant
		{"memory.used_percent > 95", 0},
		{"memory.used_percent > 0", 0},
		{"memory.used > 0.5", 0}, // bytes, not a percentage
		{"process.count in (0.5)", 0},
	}
	for _, tt := range tests {
		ws := mustParseCond(t, tt.cond).Warnings()
		switch {
		case tt.col == 0 && len(ws) > 0:
			t.Errorf("%q: warned %v, want no warning", tt.cond, ws)
		case tt.col != 0 && (len(ws) != 1 || ws[0].Col != tt.col):
			t.Errorf("%q: warned %v, want one warning at column %d", tt.cond, ws, tt.col)
		}
	}
}

// TestValueNeverReadsAsItsThreshold: a value just past its threshold is
// written with the digits that show it past: the 60.4s of missing_for > 1m
// is not "1m".
func TestValueNeverReadsAsItsThreshold(t *testing.T) {
	tests := []struct {
		cond string
		v    float64
		want string
	}{
		{"missing_for > 1m", 60.4, "60.4s"},
		{"missing_for > 1m", 65, "1m5s"},
		{"memory.used_percent > 95", 95.004, "95.004%"},
		{"memory.used_percent > 95", 97.3, "97.3%"},
		{"memory.used > 1GiB", 1<<30 + 4096, "1073745920 B"},
		{"temperature > 85", 85, "85 C"}, // at the threshold: as it is
		{"trend(memory.used, 40m) > 10MiB/min", 10.0001 * (1 << 20) / 60, "10485865 B/min"},
	}
	for _, tt := range tests {
		if got := mustParseCond(t, tt.cond).FormatValue(0, tt.v); got != tt.want {
			t.Errorf("%s: FormatValue(%v) = %q, want %q", tt.cond, tt.v, got, tt.want)
		}
	}
}
