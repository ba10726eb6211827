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
	when, err := rules.ParseCond("min(memory.used, 1m) > 70GiB and max(memory.used, 30m) < 75GiB")
	if err != nil {
		t.Fatal(err)
	}
	rs := []*rules.Rule{{Name: "MemoryRoseRecently", When: when, Severity: rules.SeverityWarning}}
	groupOf := func(f *promexport.File, record string) string {
		i := slices.IndexFunc(f.Rules, func(r promexport.Rule) bool { return r.Record == record })
		if i < 0 {
			t.Fatalf("no record %s", record)
		}
		return f.Rules[i].Group
	}
	intervalOf := func(f *promexport.File, group string) time.Duration {
		i := slices.IndexFunc(f.Groups, func(g promexport.Group) bool { return g.Name == group })
		if i < 0 {
			t.Fatalf("no group %s", group)
		}
		return f.Groups[i].Interval
	}

	f, _ := export(t, rs, promexport.Options{Schema: promexport.SchemaGPUWatch})
	if g := groupOf(f, "gpuwatch:memory_used:min_1m"); g != "gpuwatch:MemoryRoseRecently" || intervalOf(f, g) != 5*time.Second {
		t.Errorf("min_1m in %s every %v, want the rule's group every 5s", g, intervalOf(f, g))
	}
	if g := groupOf(f, "gpuwatch:memory_used:max_30m"); g != "gpuwatch:windows_1m" || intervalOf(f, g) != time.Minute {
		t.Errorf("max_30m in %s every %v, want gpuwatch:windows_1m every 1m", g, intervalOf(f, g))
	}
	if !slices.ContainsFunc(f.Notes, func(n promexport.Note) bool {
		return n.Rule == "MemoryRoseRecently" && strings.Contains(n.Why, "gpuwatch:memory_used:max_30m from the group gpuwatch:windows_1m, as of its latest evaluation (every 1m)")
	}) {
		t.Errorf("no note says the rule reads max_30m as of the window group's latest evaluation: %+v", f.Notes)
	}

	f, _ = export(t, rs, promexport.Options{Schema: promexport.SchemaGPUWatch, Interval: 10 * time.Second})
	if g := groupOf(f, "gpuwatch:memory_used:max_30m"); g != "gpuwatch:MemoryRoseRecently" {
		t.Errorf("with --interval 10s max_30m is in %s, want the rule's group", g)
	}
}
