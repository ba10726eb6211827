package slack

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// TestAlertNotAboutAGPU: a Slack message, its fallback text and its
// thread replies leave the GPU out of an alert with GPU -1 (a hub's
// GPUWatchSourceDown).
func TestAlertNotAboutAGPU(t *testing.T) {
	for _, status := range []notifier.Status{notifier.StatusFiring, notifier.StatusResolved} {
		alerts := notifiertest.SourceDown(status).Alerts
		blocks, text := render(alerts, notifiertest.Start)
		raw, err := json.Marshal(blocks)
		if err != nil {
			t.Fatal(err)
		}
		all := string(raw) + text + repeatReply(alerts, notifiertest.Start) + resolvedReply(alerts, notifiertest.Start) + moreAlerts(alerts)
		if notifiertest.NamesAGPU(all) || !strings.Contains(text, "GPUWatchSourceDown [critical] on hub") {
			t.Errorf("%s: got %s\n%s, want the alert on hub without a GPU", status, raw, text)
		}
	}
}
