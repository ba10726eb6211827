package notifier

import (
	"math"
	"time"

	"github.com/gpuwatch/gpuwatch/rules"
)

// AlertKey identifies an alert across transitions and restarts.
func AlertKey(host, rule, uuid string) string { return host + "/" + rule + "/" + uuid }

// FromTransition turns an engine transition into the alert receivers see.
func FromTransition(t *rules.Transition) Alert {
	a := Alert{
		Key: AlertKey(t.Host, t.Alert, t.SeriesID()), Name: t.Alert, Status: StatusFiring, Repeat: t.Repeat,
		Severity: string(t.Severity), Host: t.Host, GPU: t.GPU, UUID: t.UUID, GPUName: t.GPUName, MIG: t.MIG, Process: t.Process,
		Labels: t.Labels, Summary: t.Summary, FiringSummary: t.FiringSummary, Description: t.Description,
		Value: Float(t.Value), ValueText: t.ValueText, ValueExpr: t.ValueExpr, NowText: t.NowText,
		Trend: Float(t.Trend), TrendText: t.TrendText,
		TimeToFull: Float(math.NaN()), StartsAt: t.StartsAt, EndsAt: t.EndsAt, At: t.At,
		Processes: t.Processes, HistoryUnit: t.HistoryDim.String(), LastReport: t.LastReport, Idle: Idle(t.Rule),
	}
	if x := t.Exit; x != nil {
		a.Exit = &Exit{At: x.At, MemoryPercent: Float(x.MemPercent), OOMLikely: x.OOMLikely, Text: x.Text(t.Label())}
	}
	if t.Resolved() {
		a.Status = StatusResolved
	}
	if t.ValueAt.Before(t.At) {
		a.ValueAt = t.ValueAt
	}
	if t.HasTimeToFull() && t.TimeToFull != time.Duration(math.MaxInt64) {
		a.TimeToFull = Float(t.TimeToFull.Seconds())
	}
	if len(t.History) > 0 {
		a.History = make([]Float, len(t.History))
		for i, v := range t.History {
			a.History[i] = Float(v)
		}
	}
	return a
}
