package promexport

import (
	"fmt"
	"slices"
)

// What vmalert needs beyond the PromQL both engines read.

// keepFiring carries keep_firing_for into vmalert, which has no such
// field before 1.91: an alert with one also fires where it fired at its
// last evaluation and its condition held within keep_firing_for, which a
// recording rule of where the condition holds (gpuwatch:holds:ALERT)
// keeps the history of.
func (x *exporter) keepFiring() {
	f := x.file
	for i := 0; i < len(f.Rules); i++ {
		a := &f.Rules[i]
		if a.Alert == "" || a.KeepFiringFor == 0 {
			continue
		}
		holds := "gpuwatch:holds:" + a.Alert
		rec := Rule{Group: a.Group, Record: holds, Expr: "max by (" + x.s.gpuLabels() + ") (\n" + indent(a.Expr) + "\n)",
			Comment: []string{a.Alert + ": where its condition holds, for its keep_firing_for"}}
		firing := fmt.Sprintf(`max by (%s) (ALERTS{alertname=%s, alertstate="firing"})`, x.s.gpuLabels(), quote(a.Alert))
		a.Expr = fmt.Sprintf("%s\nor\n(last_over_time(%s[%s]) and %s)", a.Expr, holds, duration(a.KeepFiringFor), firing)
		n := Note{Rule: a.Alert, Kind: Caveat, Part: "keep_firing_for",
			Why: fmt.Sprintf("vmalert has no keep_firing_for before 1.91: the alert keeps firing while its condition held within the last %s, as the recording rule %s keeps it", duration(a.KeepFiringFor), holds)}
		a.Comment = append(a.Comment, n.String())
		f.Notes = append(f.Notes, n)
		a.KeepFiringFor = 0
		f.Rules = slices.Insert(f.Rules, i, rec)
		i++
	}
}
