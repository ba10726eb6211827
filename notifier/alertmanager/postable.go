package alertmanager

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// postableAlert is one alert as Alertmanager's API takes it (its
// postableAlert schema). Alertmanager identifies an alert by its labels.
type postableAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// postable is the alert as Alertmanager gets it, but for its endsAt (see
// endAt).
func (n *Notifier) postable(a *notifier.Alert) postableAlert {
	annotations := map[string]string{"summary": a.Summary}
	if a.Description != "" {
		annotations["description"] = a.Description
	}
	starts := a.StartsAt
	if starts.IsZero() {
		starts = a.At
	}
	return postableAlert{Labels: labels(a), Annotations: annotations, StartsAt: starts.UTC(), GeneratorURL: n.generator}
}

// labels returns the labels an alert has in Alertmanager: alertname, host,
// gpu (the index), uuid, severity and the rule's own labels. An alert
// about no one GPU (gpu -1) has neither gpu nor uuid; empty values are
// left out, as Alertmanager treats them as absent.
func labels(a *notifier.Alert) map[string]string {
	out := make(map[string]string, len(a.Labels)+1)
	for k, v := range a.Labels {
		if v != "" {
			out[k] = v
		}
	}
	delete(out, "alert") // gpuwatch's name for alertname
	set := func(k, v string) {
		if v == "" {
			delete(out, k)
			return
		}
		out[k] = v
	}
	set("alertname", a.Name)
	set("host", a.Host)
	set("severity", a.Severity)
	set("uuid", a.UUID)
	if a.GPU >= 0 {
		set("gpu", strconv.Itoa(a.GPU))
	} else {
		set("gpu", "")
	}
	return out
}

// endAt sets the alert's endsAt: while it fires, lifetime after now, so
// Alertmanager resolves it by itself should gpuwatch fall silent; once
// resolved, when it resolved.
func (p *postableAlert) endAt(a *notifier.Alert, now time.Time, lifetime time.Duration) {
	if a.Status == notifier.StatusResolved {
		ends := a.EndsAt
		if ends.IsZero() {
			ends = a.At
		}
		p.EndsAt = later(ends.UTC(), p.StartsAt)
		return
	}
	p.fireUntil(now, lifetime)
}

// fireUntil sets a firing alert's endsAt to lifetime after now, and never
// before it started, or Alertmanager refuses it.
func (p *postableAlert) fireUntil(now time.Time, lifetime time.Duration) {
	p.EndsAt = later(now.UTC(), p.StartsAt).Add(lifetime)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func encode(alerts []postableAlert) ([]byte, error) {
	return json.Marshal(alerts)
}
