package webhook

import (
	"encoding/json"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// decodeAlertmanager encodes m in the alertmanager format and decodes it back.
func decodeAlertmanager(t *testing.T, m *notifier.Notification) alertmanagerMessage {
	t.Helper()
	body, err := encodeAlertmanager("ops", m)
	if err != nil {
		t.Fatal(err)
	}
	var msg alertmanagerMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatal(err)
	}
	return msg
}

// TestAlertmanagerGroupKeyKeepsAcrossResolve: a consumer of Alertmanager
// webhooks ties a resolve to its firing by groupKey, so both carry the
// same one, shaped as Alertmanager's ("{}:{alertname=…}").
func TestAlertmanagerGroupKeyKeepsAcrossResolve(t *testing.T) {
	firing := decodeAlertmanager(t, threeGPUs(notifier.StatusFiring))
	resolved := decodeAlertmanager(t, threeGPUs(notifier.StatusResolved))
	if firing.GroupKey != resolved.GroupKey {
		t.Errorf("groupKey: got %q firing and %q resolved, want the same", firing.GroupKey, resolved.GroupKey)
	}
	if want := `{}:{alertname="GPUMemoryLeak"}`; firing.GroupKey != want {
		t.Errorf("groupKey: got %q, want %q", firing.GroupKey, want)
	}
	repeat := threeGPUs(notifier.StatusFiring)
	repeat.GroupKey = "test/GPUMemoryLeak/repeat"
	if got := decodeAlertmanager(t, repeat).GroupKey; got != firing.GroupKey {
		t.Errorf("groupKey of a reminder: got %q, want %q as when it fired", got, firing.GroupKey)
	}
}

// TestAlertmanagerFingerprintIsLabelSets: each alert's fingerprint is
// Alertmanager's own fingerprint of the labels it carries, so it matches
// what Alertmanager shows for the same alert, firing or resolved.
func TestAlertmanagerFingerprintIsLabelSets(t *testing.T) {
	for _, status := range []notifier.Status{notifier.StatusFiring, notifier.StatusResolved} {
		msg := decodeAlertmanager(t, threeGPUs(status))
		for i, a := range msg.Alerts {
			ls := model.LabelSet{}
			for k, v := range a.Labels {
				ls[model.LabelName(k)] = model.LabelValue(v)
			}
			if want := ls.Fingerprint().String(); a.Fingerprint != want {
				t.Errorf("%s alert %d: got fingerprint %q, want %q (the fingerprint of its labels %v)", status, i, a.Fingerprint, want, a.Labels)
			}
		}
	}
	// A known value: Alertmanager's fingerprint of {alertname="GPUHot"}.
	one := notifiertest.Notification(notifier.StatusFiring)
	one.Alerts[0].Labels = map[string]string{"alertname": "GPUHot"}
	one.Alerts[0].Name = "GPUHot"
	if got, want := decodeAlertmanager(t, one).Alerts[0].Fingerprint, "d36e03eea8164253"; got != want {
		t.Errorf("fingerprint of {alertname=GPUHot}: got %q, want %q", got, want)
	}
}
