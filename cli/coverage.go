package cli

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

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
			case !anyDevice(first, m) && needsTotal(m) && anyUsedOnly(first):
				warnings = append(warnings, fmt.Sprintf("warning: rule %s uses %s, which %s does not provide without memory.total; "+
					"give the GPUs' memory with --memory-total (as in --memory-total 80GiB), or log memory.total", r.Name, m, logName))
			case !anyDevice(first, m):
				warnings = append(warnings, fmt.Sprintf("warning: rule %s uses %s, which %s does not provide; add %s to nvidia-smi --query-gpu", r.Name, m, logName, column))
			}
		}
	}
	return warnings
}

// needsTotal reports whether a memory metric needs memory.total.
func needsTotal(m rules.Metric) bool {
	return m == rules.MetricMemoryFree || m == rules.MetricMemoryTotal || m == rules.MetricMemoryUsedPercent
}

// anyUsedOnly reports whether a GPU of the snapshot has its memory used
// without a total.
func anyUsedOnly(s *gpu.Snapshot) bool {
	for i := range s.Devices {
		if d := &s.Devices[i]; d.MemUsedKnown() && !d.MemKnown() {
			return true
		}
	}
	return false
}

func anyDevice(s *gpu.Snapshot, m rules.Metric) bool {
	for i := range s.Devices {
		if !math.IsNaN(m.Value(&s.Devices[i])) {
			return true
		}
	}
	return false
}

// sparseWarning names, in one warning, the rules whose windows a log
// sampled every step cannot fill: a window holds a value only with two
// samples in it, so a rule with a window not much longer than the log's
// step never fires on it. Empty when every window fits.
func sparseWarning(rs []*rules.Rule, step time.Duration) string {
	if step <= 0 {
		return ""
	}
	var blind []string
	shortest := time.Duration(0)
	for _, r := range rs {
		for _, c := range []*rules.Cond{r.When, r.ClearWhen} {
			if c == nil {
				continue
			}
			for _, w := range append(c.Windows(), c.Trends()...) {
				if 5*step <= 4*w.Span {
					continue // two samples, most of the window apart
				}
				what := fmt.Sprintf("%s's %s window (%s)", r.Name, formatDuration(w.Span), w.Fn)
				if !slices.Contains(blind, what) {
					blind = append(blind, what)
				}
				if shortest == 0 || w.Span < shortest {
					shortest = w.Span
				}
			}
		}
	}
	if len(blind) == 0 {
		return ""
	}
	return fmt.Sprintf("warning: %s %s shorter than this log's %s step: a window needs two samples in it, so %s cannot fire on this log "+
		"(gpuwatch run, sampling every few seconds, fills %s)",
		strings.Join(blind, ", "), choose(len(blind), "is", "are"), formatDuration(step), choose(len(blind), "that rule", "these rules"),
		choose(len(blind), "it", "them"))
}

// formatDuration writes a duration as gpuwatch's messages do: "5m", "1h30m".
func formatDuration(d time.Duration) string {
	return rules.Dimension{Base: rules.Seconds}.Format(d.Seconds())
}

// choose picks the singular or the plural form for n things.
func choose(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
