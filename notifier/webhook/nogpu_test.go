package webhook

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// TestAlertNotAboutAGPU: every format leaves the GPU out of an alert with
// GPU -1 (a hub's GPUWatchSourceDown), and the generic JSON says null.
func TestAlertNotAboutAGPU(t *testing.T) {
	for _, fc := range formatCases() {
		if fc.format == FormatTemplate {
			continue // the user's template prints what it prints
		}
		for _, status := range []notifier.Status{notifier.StatusFiring, notifier.StatusResolved} {
			t.Run(fc.format+"/"+string(status), func(t *testing.T) {
				srv := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
					return notifiertest.Response{Status: http.StatusAccepted, Body: fc.okBody}
				})
				n := newNotifier(t, fc.config(srv.URL))
				if _, err := n.Notify(context.Background(), notifiertest.SourceDown(status)); err != nil {
					t.Fatal(err)
				}
				body := string(srv.Requests()[0].Body)
				if notifiertest.NamesAGPU(body) || !strings.Contains(body, "GPUWatchSourceDown") {
					t.Errorf("got %s, want the alert without a GPU", body)
				}
				if fc.format == FormatGeneric && !strings.Contains(body, `"gpu":null`) {
					t.Errorf("generic: got %s, want \"gpu\":null", body)
				}
			})
		}
	}
}
