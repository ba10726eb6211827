package cli

import (
	"fmt"
	"math"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/rules"
)

// logColumns names, for each metric an nvidia-smi log can hold, the
// --query-gpu field that provides it.
var logColumns = map[rules.Metric]string{
	rules.MetricMemoryUsed: "memory.used", rules.MetricMemoryFree: "memory.used",
	rules.MetricMemoryTotal: "memory.total", rules.MetricMemoryUsedPercent: "memory.used and memory.total",
	rules.MetricUtilizationGPU: "utilization.gpu", rules.MetricUtilizationMemory: "utilization.memory",
	rules.MetricTemperature: "temperature.gpu", rules.MetricPower: "power.draw",
	rules.MetricPowerPercent: "power.draw and power.limit",
}

// logCoverage warns about rules that cannot fire on an nvidia-smi log
// because it lacks a metric they use, judged from the log's first snapshot.
// The example config's own rules (built in, or copied into the user's
// config unchanged) are written for a GPU server: those on metrics no log
// records (the XID rule) are known not to fire in a replay and get no
// warning on every run; the ones a log could feed do.
func logCoverage(rs []*rules.Rule, first *gpu.Snapshot, logName string) []string {
	example := exampleRuleConditions()
	var warnings []string
	for _, r := range rs {
		fromExample := example[r.Name] == r.When.String()
		for _, m := range r.When.Metrics() {
			column, fromLog := logColumns[m]
			switch {
			case m.Observed():
				// gpuwatch keeps it from the samples, whatever the log holds.
			case !fromLog && fromExample:
			case !fromLog:
				warnings = append(warnings, fmt.Sprintf("warning: rule %s uses %s, which nvidia-smi logs do not record; it cannot fire in a replay", r.Name, m))
			case !anyDevice(first, m):
				warnings = append(warnings, fmt.Sprintf("warning: rule %s uses %s, which %s does not provide; add %s to nvidia-smi --query-gpu", r.Name, m, logName, column))
			}
		}
	}
	return warnings
}

func anyDevice(s *gpu.Snapshot, m rules.Metric) bool {
	for i := range s.Devices {
		if !math.IsNaN(m.Value(&s.Devices[i])) {
			return true
		}
	}
	return false
}
