package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// pagerDutyURL is PagerDuty's Events API v2, used when url is empty.
const pagerDutyURL = "https://events.pagerduty.com/v2/enqueue"

// pagerDutyMaxSummary is PagerDuty's limit on a summary.
const pagerDutyMaxSummary = 1024

// pagerDutyEvent is one Events API v2 event.
type pagerDutyEvent struct {
	RoutingKey  string            `json:"routing_key"`
	EventAction string            `json:"event_action"`
	DedupKey    string            `json:"dedup_key"`
	Payload     *pagerDutyPayload `json:"payload,omitempty"`
	Client      string            `json:"client"`
}

type pagerDutyPayload struct {
	Summary       string         `json:"summary"`
	Source        string         `json:"source"`
	Severity      string         `json:"severity"`
	Timestamp     time.Time      `json:"timestamp"`
	Component     string         `json:"component"`
	Group         string         `json:"group"`
	Class         string         `json:"class"`
	CustomDetails map[string]any `json:"custom_details"`
}

// encodePagerDuty builds the event of one alert: a trigger while firing, a
// resolve once resolved, both keyed by the alert's stable key so PagerDuty
// folds repeats and retries into one incident.
func encodePagerDuty(routingKey string, a *notifier.Alert) ([]byte, error) {
	ev := pagerDutyEvent{RoutingKey: routingKey, EventAction: "trigger", DedupKey: a.Key, Client: userAgent}
	if a.Status == notifier.StatusResolved {
		ev.EventAction = "resolve" // PagerDuty needs only the dedup key
		return json.Marshal(ev)
	}
	summary := a.Summary
	if summary == "" {
		summary = strings.TrimSpace(fmt.Sprintf("%s on %s %s", a.Name, a.Host, a.Subject()))
	}
	details := map[string]any{"value": a.ValueText, "gpu_name": a.GPUName, "uuid": a.UUID, "labels": a.Labels,
		"starts_at": a.StartsAt.UTC()}
	if a.TrendText != "" {
		details["trend"] = a.TrendText
	}
	if a.TimeToFull.Known() {
		details["time_to_full"] = formatDuration(float64(a.TimeToFull))
	}
	if a.Description != "" {
		details["description"] = a.Description
	}
	if len(a.Processes) > 0 {
		details["processes"] = a.Processes
	}
	ev.Payload = &pagerDutyPayload{Summary: shorten(summary, pagerDutyMaxSummary), Source: a.Host,
		Severity: pagerDutySeverity(a.Severity), Timestamp: a.At.UTC(), Component: pagerDutyComponent(a),
		Group: a.Host, Class: a.Name, CustomDetails: details}
	return json.Marshal(ev)
}

// pagerDutyComponent is the part of the host the alert is about: its GPU,
// or gpuwatch itself.
func pagerDutyComponent(a *notifier.Alert) string {
	if !a.OnGPU() {
		return "gpuwatch"
	}
	return a.Label()
}

// pagerDutySeverity maps ours onto PagerDuty's critical, error, warning, info.
func pagerDutySeverity(s string) string {
	switch s {
	case "critical", "error", "warning", "info":
		return s
	}
	return "warning"
}

// notifyPagerDuty sends one event per alert, every one even when some
// fail: a retry resends them all, and PagerDuty deduplicates by key. It
// is worth a retry when any failure is, after the longest Retry-After.
func (n *Notifier) notifyPagerDuty(ctx context.Context, m *notifier.Notification) (bool, error) {
	var errs []error
	retry := false
	for i := range m.Alerts {
		a := &m.Alerts[i]
		body, err := encodePagerDuty(n.cfg.RoutingKey, a)
		if err == nil {
			var r bool
			r, err = n.post(ctx, n.url, body, m.IdempotencyKey()+"-"+strconv.Itoa(i), nil)
			retry = retry || r
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("alert %s: %w", a.Key, err))
		}
		if ctx.Err() != nil && i+1 < len(m.Alerts) {
			errs = append(errs, fmt.Errorf("%d more events not sent: %w", len(m.Alerts)-i-1, ctx.Err()))
			retry = true
			break
		}
	}
	switch len(errs) {
	case 0:
		return false, nil
	case 1:
		return retry, n.fail(errs[0])
	}
	var err error = &eventErrors{total: len(m.Alerts), errs: errs}
	if after := longestRetryAfter(errs); after > 0 {
		err = &notifier.RetryAfterError{After: after, Err: err}
	}
	return retry, n.fail(err)
}

func longestRetryAfter(errs []error) time.Duration {
	var longest time.Duration
	for _, err := range errs {
		var ra *notifier.RetryAfterError
		if errors.As(err, &ra) && ra.After > longest {
			longest = ra.After
		}
	}
	return longest
}

// eventErrors are the failures of one notification's events, on one line.
type eventErrors struct {
	total int
	errs  []error
}

func (e *eventErrors) Error() string {
	msgs := make([]string, len(e.errs))
	for i, err := range e.errs {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("%d of %d events failed: %s", len(e.errs), e.total, strings.Join(msgs, "; "))
}

func (e *eventErrors) Unwrap() []error { return e.errs }
