package promexport_test

import (
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/rules/promexport"
)

// TestNeededInterval: the example rules need an evaluation every 5 s
// (GPUMemoryFillingFast's time_to_full over 5 minutes: slices of 25 s,
// four evaluations each);
// a rule of short windows needs more, and none less than a second or more
// than a minute.
func TestNeededInterval(t *testing.T) {
	if got := promexport.NeededInterval(exampleRules(t)); got != 5*time.Second {
		t.Errorf("the example rules: %v, want 5s", got)
	}
	for _, tc := range []struct {
		when string
		for_ time.Duration
		want time.Duration
	}{
		{"temperature > 85", 0, time.Minute},
		{"avg(utilization.gpu, 2m) < 5", 0, 10 * time.Second},
		{"temperature > 85", 20 * time.Second, 10 * time.Second},
		{"trend(memory.used, 1h) > 1MiB/min", 0, time.Minute},
		{"max(temperature, 5s) > 85", 0, time.Second},
	} {
		when, err := rules.ParseCond(tc.when)
		if err != nil {
			t.Fatal(err)
		}
		rs := []*rules.Rule{{Name: "A", When: when, Timing: rules.Timing{For: tc.for_}, Severity: rules.SeverityWarning}}
		if got := promexport.NeededInterval(rs); got != tc.want {
			t.Errorf("%s for %v: %v, want %v", tc.when, tc.for_, got, tc.want)
		}
	}
}
