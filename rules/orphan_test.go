package rules

import (
	"testing"
	"time"
)

const twoRules = `
rules:
  - alert: Hot
    when: temperature > 85
    severity: critical
    labels: {team: ml}
  - alert: Full
    when: memory.used_percent > 95
`

// TestReloadResolvesAlertsOfRemovedRules: a reload that drops a rule whose
// alert fires resolves that alert at the GPU's next evaluation, instead of
// leaving it firing forever where it was sent; the other rules keep theirs.
func TestReloadResolvesAlertsOfRemovedRules(t *testing.T) {
	old := NewEngine(mustRules(t, twoRules), Options{})
	evalAt(old, 0, device(0, 79, 90, 88)) // both fire
	e := NewEngine(mustRules(t, "rules:\n  - alert: Full\n    when: memory.used_percent > 95\n"), Options{})
	e.Inherit(old)
	got := evalAt(e, time.Minute, device(0, 79, 90, 88))
	tr, ok := got["Hot/resolved"]
	if !ok || len(got) != 1 {
		t.Fatalf("after a reload without Hot: got %v, want Hot resolved and nothing else", keys(got))
	}
	if tr.Severity != SeverityCritical || tr.Labels["team"] != "ml" || tr.Description != orphanDescription ||
		!tr.StartsAt.Equal(t0) || !tr.EndsAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("got %+v, want the rule's severity and labels, its start, and why it resolved", tr)
	}
	if a := e.Active(); len(a) != 1 || a[0].Rule.Name != "Full" {
		t.Errorf("Active() = %v, want Full still firing", a)
	}
	if got := evalAt(e, 2*time.Minute, device(0, 79, 90, 88)); len(got) != 0 {
		t.Errorf("the next evaluation: got %v, want nothing (resolved once)", keys(got))
	}
}

// TestRestartResolvesAlertsOfRemovedRules: a restart whose config no
// longer has the rule of a saved firing alert resolves it, with the
// severity and labels saved with it.
func TestRestartResolvesAlertsOfRemovedRules(t *testing.T) {
	e := NewEngine(mustRules(t, "rules:\n  - alert: Full\n    when: memory.used_percent > 95\n"), Options{})
	d := device(0, 40, 90, 60)
	e.Restore([]AlertRecord{
		{Rule: "Hot", UUID: d.UUID, Severity: SeverityCritical, Labels: map[string]string{"team": "ml"},
			Alert: Alert{State: StateFiring, FiredAt: t0.Add(-time.Hour), Summary: "GPU 0 at 88 C"}},
		{Rule: "Gone", UUID: d.UUID, Alert: Alert{State: StatePending, ActiveAt: t0}},
	})
	got := evalAt(e, 0, d)
	tr, ok := got["Hot/resolved"]
	if !ok || len(got) != 1 {
		t.Fatalf("first evaluation after the restart: got %v, want Hot resolved, the pending one dropped", keys(got))
	}
	if tr.Severity != SeverityCritical || tr.Labels["team"] != "ml" || tr.FiringSummary != "GPU 0 at 88 C" ||
		tr.Summary != "GPU 0 on node1: Hot is no longer a rule in the config" {
		t.Errorf("got %+v, want the saved severity, labels and firing summary, and why it resolved", tr)
	}
}
