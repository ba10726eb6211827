package webhook

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"time"

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
	msg := alertmanagerMessage{Receiver: receiver, Status: string(m.Status), Version: "4", GroupKey: m.GroupKey,
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
			StartsAt: a.StartsAt.UTC(), Fingerprint: fingerprint(a.Key)}
		if a.Status == notifier.StatusResolved {
			out.EndsAt = a.EndsAt.UTC()
		}
		msg.Alerts = append(msg.Alerts, out)
	}
	msg.GroupLabels = map[string]string{"alertname": m.Alerts[0].Name}
	msg.CommonLabels = common(msg.Alerts, func(a *alertmanagerAlert) map[string]string { return a.Labels })
	msg.CommonAnnotations = common(msg.Alerts, func(a *alertmanagerAlert) map[string]string { return a.Annotations })
	return json.Marshal(msg)
}

// fingerprint is a stable hex identity of an alert key, shaped like
// Alertmanager's (16 hex digits of a 64-bit hash).
func fingerprint(key string) string {
	h := fnv.New64a()
	h.Write([]byte(key))
	return fmt.Sprintf("%016x", h.Sum64())
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
