package webhook

import (
	"encoding/json"
	"time"

	"github.com/prometheus/common/model"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// alertmanagerMessage is Alertmanager's webhook payload, version 4, field
// for field, so any consumer of Alertmanager webhooks takes gpuwatch's.
type alertmanagerMessage struct {
	Receiver          string              `json:"receiver"`
	Status            string              `json:"status"`
	Alerts            []alertmanagerAlert `json:"alerts"`
	GroupLabels       map[string]string   `json:"groupLabels"`
	CommonLabels      map[string]string   `json:"commonLabels"`
	CommonAnnotations map[string]string   `json:"commonAnnotations"`
	ExternalURL       string              `json:"externalURL"`
	Version           string              `json:"version"`
	GroupKey          string              `json:"groupKey"`
	TruncatedAlerts   uint64              `json:"truncatedAlerts"`
}

type alertmanagerAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"` // zero (0001-01-01T00:00:00Z) while firing, as Alertmanager sends
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

func encodeAlertmanager(receiver string, m *notifier.Notification) ([]byte, error) {
	msg := alertmanagerMessage{Receiver: receiver, Status: string(m.Status), Version: "4",
		Alerts: make([]alertmanagerAlert, 0, len(m.Alerts))}
	for _, a := range m.Alerts {
		labels := make(map[string]string, len(a.Labels)+1)
		for k, v := range a.Labels {
			labels[k] = v
		}
		labels["alertname"] = a.Name
		annotations := map[string]string{"summary": a.Summary, "value": a.ValueText}
		if a.Description != "" {
			annotations["description"] = a.Description
		}
		out := alertmanagerAlert{Status: string(a.Status), Labels: labels, Annotations: annotations,
			StartsAt: a.StartsAt.UTC(), Fingerprint: labelSet(labels).Fingerprint().String()}
		if a.Status == notifier.StatusResolved {
			out.EndsAt = a.EndsAt.UTC()
		}
		msg.Alerts = append(msg.Alerts, out)
	}
	msg.GroupLabels = map[string]string{"alertname": m.Alerts[0].Name}
	msg.GroupKey = groupKey(msg.GroupLabels)
	msg.CommonLabels = common(msg.Alerts, func(a *alertmanagerAlert) map[string]string { return a.Labels })
	msg.CommonAnnotations = common(msg.Alerts, func(a *alertmanagerAlert) map[string]string { return a.Annotations })
	return json.Marshal(msg)
}

// groupKey is the key of a group of alerts, shaped as Alertmanager's
// (the root route's "{}", then the group labels): a rule's alerts are one
// group, whether they fire, repeat or resolve, so a consumer ties a
// resolve to its firing by it.
func groupKey(groupLabels map[string]string) string {
	return "{}:" + labelSet(groupLabels).String()
}

// labelSet is labels as Alertmanager's model holds them; its Fingerprint
// is the one Alertmanager gives the alert.
func labelSet(labels map[string]string) model.LabelSet {
	ls := make(model.LabelSet, len(labels))
	for k, v := range labels {
		ls[model.LabelName(k)] = model.LabelValue(v)
	}
	return ls
}

// common returns the pairs every alert shares, as Alertmanager's
// commonLabels and commonAnnotations do.
func common(alerts []alertmanagerAlert, pairs func(*alertmanagerAlert) map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range pairs(&alerts[0]) {
		out[k] = v
	}
	for i := 1; i < len(alerts); i++ {
		p := pairs(&alerts[i])
		for k, v := range out {
			if w, ok := p[k]; !ok || w != v {
				delete(out, k)
			}
		}
	}
	return out
}
