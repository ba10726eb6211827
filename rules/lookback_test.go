package rules

import (
	"testing"
	"time"
)

func TestLookback(t *testing.T) {
	for _, tc := range []struct {
		name, when string
		want       time.Duration
	}{
		{"no window", "xid in (79)", 0},
		// A rule on a reading keeps the half-hour trend and history its
		// notifications show.
		{"a reading", "temperature > 85", 30 * time.Minute},
		{"a longer window", "avg(utilization.gpu, 2h) < 5", 2 * time.Hour},
		{"a longer trend", "trend(memory.used, 40m) > 10MiB/min", 40 * time.Minute},
		// The longest of 40m, 80m, 160m and 320m.
		{"a trend over several time scales", "time_to_full(memory.used, 40m, 6h) < 1h", 320 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := mustRules(t, "rules:\n  - alert: A\n    when: "+tc.when+"\n")
			if got := NewEngine(rs, Options{}).Lookback(); got != tc.want {
				t.Errorf("Lookback of %q = %v, want %v", tc.when, got, tc.want)
			}
		})
	}
	if got, want := NewEngine(exampleRules(t), Options{}).Lookback(), 320*time.Minute; got != want {
		t.Errorf("Lookback of the example rules = %v, want %v", got, want)
	}
}

// TestFineLookback: the past before a trend's shortest scale is needed
// only for its longer scales, a sample every quarter of the second
// scale's slice.
func TestFineLookback(t *testing.T) {
	for _, tc := range []struct {
		name, when string
		fine, step time.Duration
	}{
		{"a window", "avg(utilization.gpu, 2h) < 5", 2 * time.Hour, 0},
		{"a trend of one scale", "trend(memory.used, 40m) > 10MiB/min", 40 * time.Minute, 0},
		// 40m to 320m: the 80m scale's slices are 6m40s.
		{"a trend over several time scales", "time_to_full(memory.used, 40m, 6h) < 1h", 40 * time.Minute, 100 * time.Second},
		{"a window shorter than the longest scale", "time_to_full(memory.used, 40m, 6h) < 1h and avg(utilization.gpu, 3h) < 5", 3 * time.Hour, 100 * time.Second},
		{"a window longer than every scale", "time_to_full(memory.used, 40m, 80m) < 1h and avg(utilization.gpu, 2h) < 5", 2 * time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := mustRules(t, "rules:\n  - alert: A\n    when: "+tc.when+"\n")
			fine, step := NewEngine(rs, Options{}).FineLookback()
			if fine != tc.fine || step != tc.step {
				t.Errorf("FineLookback of %q = %v, %v; want %v, %v", tc.when, fine, step, tc.fine, tc.step)
			}
		})
	}
	fine, step := NewEngine(exampleRules(t), Options{}).FineLookback()
	if fine != 40*time.Minute || step != 100*time.Second {
		t.Errorf("FineLookback of the example rules = %v, %v; want 40m, 1m40s", fine, step)
	}
}
