package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// TestIdempotencyKey: every request of every format carries the
// notification's Idempotency-Key; a retry of the same notification,
// decoded again from its outbox record as after a restart, carries the
// same key, and another notification another one. PagerDuty's events,
// one per alert, each have their own.
func TestIdempotencyKey(t *testing.T) {
	for _, fc := range formatCases() {
		t.Run(fc.format, func(t *testing.T) {
			answers := 0
			srv := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
				answers++
				if answers == 1 {
					return notifiertest.Response{Status: http.StatusServiceUnavailable}
				}
				return notifiertest.Response{Status: http.StatusAccepted, Body: fc.okBody}
			})
			n := newNotifier(t, fc.config(srv.URL))
			m := notifiertest.Notification(notifier.StatusFiring)
			m.Receiver, m.GroupKey, m.CreatedAt = "test", "test/GPUMemoryLeak/firing", notifiertest.Start
			m.Alerts = append(m.Alerts, m.Alerts[0])
			m.Alerts[1].Key = "node1/GPUMemoryLeak/GPU-1111"
			raw, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // the first try fails, the retry is read back from the outbox
				var again notifier.Notification
				if err := json.Unmarshal(raw, &again); err != nil {
					t.Fatal(err)
				}
				n.Notify(context.Background(), &again)
			}
			other := *m
			other.Alerts = []notifier.Alert{m.Alerts[0]}
			other.Alerts[0].At = other.Alerts[0].At.Add(time.Minute)
			if _, err := n.Notify(context.Background(), &other); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			perTry := len(reqs) / 2
			if fc.format == FormatPagerDuty {
				perTry = 2
			}
			keys := make([]string, len(reqs))
			for i, r := range reqs {
				keys[i] = r.Header.Get(notifier.IdempotencyHeader)
				if !strings.HasPrefix(keys[i], "gpuwatch-") {
					t.Fatalf("request %d: %s %q, want a key", i, notifier.IdempotencyHeader, keys[i])
				}
			}
			for i := range perTry {
				if keys[i] != keys[perTry+i] {
					t.Errorf("the retry's key %q, want the first try's %q", keys[perTry+i], keys[i])
				}
			}
			if fc.format == FormatPagerDuty && keys[0] == keys[1] {
				t.Errorf("PagerDuty's two events share the key %q", keys[0])
			}
			if last := keys[len(keys)-1]; last == keys[0] || (fc.format == FormatPagerDuty && last == keys[1]) {
				t.Errorf("another notification has the same key %q", last)
			}
		})
	}
}
