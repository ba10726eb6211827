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
