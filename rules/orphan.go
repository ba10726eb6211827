package rules

import (
	"fmt"
	"math"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// orphanDescription says why an orphan's alert resolved.
const orphanDescription = "Resolved because its rule is no longer in the config."

// orphan is a firing alert whose rule is gone: a reload or a restart with a
// config that no longer has it. Left alone it would fire forever where it
// was sent (Slack's message, Alertmanager re-sends it); the engine resolves
// it at the GPU's next evaluation instead.
type orphan struct {
	rule  *Rule // the rule it fired under, or a stand-in made of its saved record
	alert Alert
}

// adoptOrphans keeps the firing alerts of old rules that rules no longer
// has, for resolving.
func adoptOrphans(gs *gpuState, oldRules []*Rule, oldAlerts []Alert, rules []*Rule) {
	for j, a := range oldAlerts {
		if a.State == StateFiring && !hasRule(rules, oldRules[j].Name) {
			gs.orphans = append(gs.orphans, orphan{rule: oldRules[j], alert: a})
		}
	}
}

func hasRule(rules []*Rule, name string) bool {
	for _, r := range rules {
		if r.Name == name {
			return true
		}
	}
	return false
}

// resolveOrphans emits a resolve for each orphan of the GPU, at the
// snapshot's time, and forgets them.
func (e *Engine) resolveOrphans(s *gpu.Snapshot, d *gpu.Device, gs *gpuState, procs []gpu.Process) {
	for _, o := range gs.orphans {
		a := o.alert
		a.State, a.ResolvedAt = StateInactive, s.Time
		a.ActiveAt, a.ClearingSince = time.Time{}, time.Time{}
		t := Transition{
			At: s.Time, Rule: o.rule, Alert: o.rule.Name, State: StateInactive,
			Severity: o.rule.Severity, Host: s.Host, GPU: d.Index, UUID: d.UUID, GPUName: d.Name, MIG: d.MIG,
			Value: math.NaN(), Trend: math.NaN(), TimeToFull: time.Duration(math.MinInt64),
			StartsAt: a.FiredAt, EndsAt: s.Time, Labels: alertLabels(o.rule, s.Host, d, e.ctx.Process),
			Summary:       fmt.Sprintf("%s on %s: %s is no longer a rule in the config", d.Label(), s.Host, o.rule.Name),
			FiringSummary: a.Summary, Description: orphanDescription, AlertState: a,
			Processes: sortedProcesses(procs),
		}
		if p := e.ctx.Process; p != nil {
			t.Process = new(*p)
		}
		e.out = append(e.out, t)
	}
	gs.orphans = gs.orphans[:0]
}
