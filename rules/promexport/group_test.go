package promexport_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/rules/promexport"
)

// TestLongWindowsHaveTheirOwnGroup: a window that holds ten evaluations
// at a longer interval than its rule's group needs is recorded in a group
// at that interval, which the rule reads as of its latest evaluation, and
// says so; with --interval every group is evaluated alike and the window
// stays with its rule.
func TestLongWindowsHaveTheirOwnGroup(t *testing.T) {
	when, err := rules.ParseCond("min(memory.used, 1m) > 70GiB and max(memory.used, 30m) < 75GiB and max(memory.used_percent, 30m) < 95")
	if err != nil {
		t.Fatal(err)
	}
	rs := []*rules.Rule{{Name: "MemoryRoseRecently", When: when, Severity: rules.SeverityWarning}}
	f, _ := export(t, rs, promexport.Options{Schema: promexport.SchemaGPUWatch})
	if g := recordGroup(t, f, "gpuwatch:memory_used:min_1m"); g != "gpuwatch:MemoryRoseRecently" || groupInterval(t, f, g) != 5*time.Second {
		t.Errorf("min_1m in %s every %v, want the rule's group every 5s", g, groupInterval(t, f, g))
	}
	if g := recordGroup(t, f, "gpuwatch:memory_used:max_30m"); g != "gpuwatch:windows_1m" || groupInterval(t, f, g) != time.Minute {
		t.Errorf("max_30m in %s every %v, want gpuwatch:windows_1m every 1m", g, groupInterval(t, f, g))
	}
	// Its scaling too: memory.used_percent's is memory.used's × 100 / total.
	if g := recordGroup(t, f, "gpuwatch:memory_used_percent:max_30m"); g != "gpuwatch:windows_1m" {
		t.Errorf("memory_used_percent:max_30m in %s, want gpuwatch:windows_1m", g)
	}
	if !slices.ContainsFunc(f.Notes, func(n promexport.Note) bool {
		return n.Rule == "MemoryRoseRecently" && strings.Contains(n.Why, "gpuwatch:memory_used:max_30m, gpuwatch:memory_used_percent:max_30m from the group gpuwatch:windows_1m, as of its latest evaluation (every 1m)")
	}) {
		t.Errorf("no note says the rule reads max_30m as of the window group's latest evaluation: %+v", f.Notes)
	}

	f, _ = export(t, rs, promexport.Options{Schema: promexport.SchemaGPUWatch, Interval: 10 * time.Second})
	if g := recordGroup(t, f, "gpuwatch:memory_used:max_30m"); g != "gpuwatch:MemoryRoseRecently" {
		t.Errorf("with --interval 10s max_30m is in %s, want the rule's group", g)
	}
}

// TestTrendsHaveGroupsOfTheirOwn: a trend, its rate and its time_to_full
// are computed in the trend's group, at four evaluations a slice, and
// what changes once a slice in its slice group; an alert on it has a group
// of its own, at what its other conditions need, listed after the trend's
// (promtool's tests evaluate the groups in the file's order), and says
// that it reads the trend as of the trend group's latest evaluation; in
// Prometheus and in vmalert.
func TestTrendsHaveGroupsOfTheirOwn(t *testing.T) {
	when, err := rules.ParseCond("time_to_full(memory.used, 5m) < 1h and max(temperature, 50s) > 80")
	if err != nil {
		t.Fatal(err)
	}
	rs := []*rules.Rule{{Name: "FillingUp", When: when, Timing: rules.Timing{For: 2 * time.Minute}, Severity: rules.SeverityWarning}}
	for _, target := range []promexport.Target{promexport.TargetPrometheus, promexport.TargetVMAlert} {
		t.Run(string(target), func(t *testing.T) {
			f, _ := export(t, rs, promexport.Options{Schema: promexport.SchemaGPUWatch, Target: target})
			trendsHaveGroupsOfTheirOwn(t, f)
		})
	}
}

// trendsHaveGroupsOfTheirOwn checks f, the export of the test's rule, for
// one target.
func trendsHaveGroupsOfTheirOwn(t *testing.T, f *promexport.File) {
	const trendGroup = "gpuwatch:memory_used:trend_5m"
	for record, group := range map[string]string{
		"gpuwatch:memory_used:time_to_full_5m": trendGroup,
		"gpuwatch:memory_used:trend_5m":        trendGroup,
		"gpuwatch:memory_used:trend_floor_5m":  trendGroup,
		"gpuwatch:memory_used:trend_rates_5m":  trendGroup + ":slices",
	} {
		if g := recordGroup(t, f, record); g != group {
			t.Errorf("%s in %s, want %s", record, g, group)
		}
	}
	if d := groupInterval(t, f, trendGroup); d != 5*time.Second {
		t.Errorf("%s every %v, want 5s (four evaluations a 25s slice, rounded down)", trendGroup, d)
	}
	if d := groupInterval(t, f, "gpuwatch:FillingUp"); d != 5*time.Second {
		t.Errorf("the alert's group every %v, want 5s", d)
	}
	i := slices.IndexFunc(f.Rules, func(r promexport.Rule) bool { return r.Alert == "FillingUp" })
	if i < 0 || f.Rules[i].Group != "gpuwatch:FillingUp" {
		t.Fatalf("the alert is not in its own group: %+v", f.Rules)
	}
	trendAt := slices.IndexFunc(f.Groups, func(g promexport.Group) bool { return g.Name == trendGroup })
	alertAt := slices.IndexFunc(f.Groups, func(g promexport.Group) bool { return g.Name == "gpuwatch:FillingUp" })
	if trendAt > alertAt {
		t.Errorf("the trend's group is listed after the alert's that reads it: %+v", f.Groups)
	}
	if !slices.ContainsFunc(f.Notes, func(n promexport.Note) bool {
		return n.Rule == "FillingUp" && strings.Contains(n.Why, "gpuwatch:memory_used:time_to_full_5m from the group "+trendGroup+", as of its latest evaluation (every 5s)")
	}) {
		t.Errorf("no note says the alert reads time_to_full as of the trend group's latest evaluation: %+v", f.Notes)
	}
}

// recordGroup is the group of the record named record in f.
func recordGroup(t *testing.T, f *promexport.File, record string) string {
	t.Helper()
	i := slices.IndexFunc(f.Rules, func(r promexport.Rule) bool { return r.Record == record })
	if i < 0 {
		t.Fatalf("no record %s", record)
	}
	return f.Rules[i].Group
}

// groupInterval is the interval of f's group named group.
func groupInterval(t *testing.T, f *promexport.File, group string) time.Duration {
	t.Helper()
	i := slices.IndexFunc(f.Groups, func(g promexport.Group) bool { return g.Name == group })
	if i < 0 {
		t.Fatalf("no group %s", group)
	}
	return f.Groups[i].Interval
}
