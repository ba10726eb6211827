package rules

import (
	"slices"
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

// TestLookbacks: every sample of windows and counts, of a trend's shortest scale
// and of the half hour of history; of a trend's longer scales, a sample
// every quarter of the second scale's slice; memory.used and
// process.count (who holds the GPU) wherever anything is read.
func TestLookbacks(t *testing.T) {
	l := func(m Metric, span, step time.Duration) MetricLookback {
		return MetricLookback{Metric: m, Span: span, Step: step}
	}
	for _, tc := range []struct {
		name, when string
		want       []MetricLookback
	}{
		{"no window", "xid in (79)", nil},
		{"a window", "avg(utilization.gpu, 2h) < 5", []MetricLookback{
			l(MetricMemoryUsed, 2*time.Hour, 0), l(MetricUtilizationGPU, 2*time.Hour, 0), l(MetricProcessCount, 2*time.Hour, 0)}},
		{"a reading", "temperature > 85", []MetricLookback{
			l(MetricMemoryUsed, 30*time.Minute, 0), l(MetricTemperature, 30*time.Minute, 0), l(MetricProcessCount, 30*time.Minute, 0)}},
		// A count of XIDs reads the XID events of its span.
		{"a count of XIDs", `count(xid.fault == "application", 10m) >= 3`, []MetricLookback{
			l(MetricMemoryUsed, 10*time.Minute, 0), l(MetricProcessCount, 10*time.Minute, 0), l(MetricXID, 10*time.Minute, 0)}},
		{"how long a flag held", "active(throttle.hw_slowdown, 5m) >= 4m", []MetricLookback{
			l(MetricMemoryUsed, 5*time.Minute, 0), l(MetricProcessCount, 5*time.Minute, 0), l(MetricThrottleHWSlowdown, 5*time.Minute, 0)}},
		{"a counter's rate", "rate(nvlink.crc_errors, 5m) > 10/min", []MetricLookback{
			l(MetricMemoryUsed, 5*time.Minute, 0), l(MetricProcessCount, 5*time.Minute, 0), l(MetricNVLinkCRCErrors, 5*time.Minute, 0)}},
		// 40m to 320m: the 80m scale's slices are 6m40s.
		{"a trend over several time scales", "time_to_full(memory.used, 40m, 6h) < 1h", []MetricLookback{
			l(MetricMemoryUsed, 40*time.Minute, 0), l(MetricMemoryUsed, 320*time.Minute, 100*time.Second),
			l(MetricProcessCount, 40*time.Minute, 0), l(MetricProcessCount, 320*time.Minute, 100*time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := mustRules(t, "rules:\n  - alert: A\n    when: "+tc.when+"\n")
			got := NewEngine(rs, Options{}).Lookbacks()
			if !slices.Equal(got, tc.want) {
				t.Errorf("Lookbacks of %q =\n%v\nwant\n%v", tc.when, got, tc.want)
			}
		})
	}
}
