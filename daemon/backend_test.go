package daemon_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/history"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/slackbot"
)

// backendConfig sends to the webhook at url at once (group_wait 1ns) and
// reminds every minute; GPUHot (hotRule) fires above 85 °C at once,
// GPUWarm above 70 °C after 10 minutes (so it is pending in these tests).
// slack is the slack: section, if any.
func backendConfig(t testing.TB, dir, url, slack string) string {
	t.Helper()
	return fmt.Sprintf(`
source: {type: sim}
%s
receivers: [{name: hook, webhook: {url: %q, format: generic}}]
route: {receiver: hook, group_wait: 1ns, repeat_interval: 1m}
%s
  - alert: GPUWarm
    when: temperature > 70
    for: 10m
    severity: warning
`, slack, url, strings.TrimRight(hotRule, "\n"))
}

// alertKey is the key of rule on GPU gpu of the harness's snapshots.
func alertKey(rule string, gpu int) string {
	return notifier.AlertKey("node1", rule, snapshot(base, make([]float64, gpu+1)...).Devices[gpu].UUID)
}

func TestBackendAlerts(t *testing.T) {
	h := newHook(t, nil)
	dir := t.TempDir()
	r := start(t, parseConfig(t, dir, backendConfig(t, dir, h.URL, ""), nil), newClock(base).Now)
	if s := r.D.Snapshot(); s != nil {
		t.Errorf("Snapshot before any sample: got %v, want nil", s)
	}
	r.Steps(base, 30*time.Second, []float64{90, 75}, []float64{91, 76})
	if s := r.D.Snapshot(); s == nil || !s.Time.Equal(base.Add(30*time.Second)) || s.Devices[0].TempC != 91 {
		t.Errorf("Snapshot: got %+v, want the second sample", s)
	}
	if s := r.D.Snapshots(); len(s) != 1 || s[0] != r.D.Snapshot() {
		t.Errorf("Snapshots: got %v, want the one host's latest sample", s)
	}
	got := r.D.Alerts()
	want := []slackbot.ActiveAlert{
		{Key: alertKey("GPUHot", 0), Host: "node1", Name: "GPUHot", Severity: "critical", State: "firing", GPU: 0,
			UUID: snapshot(base, 0).Devices[0].UUID, Since: base, ValueText: "91 C", Summary: "GPU 0 is hot"},
		// Pending alerts have a summary too, though the engine renders the
		// rule's only when it fires.
		{Key: alertKey("GPUWarm", 0), Host: "node1", Name: "GPUWarm", Severity: "warning", State: "pending", GPU: 0,
			UUID: snapshot(base, 0).Devices[0].UUID, Since: base, ValueText: "91 C", Summary: "GPUWarm on GPU 0: 91 C"},
		{Key: alertKey("GPUWarm", 1), Host: "node1", Name: "GPUWarm", Severity: "warning", State: "pending", GPU: 1,
			UUID: snapshot(base, 0, 0).Devices[1].UUID, Since: base, ValueText: "76 C", Summary: "GPUWarm on GPU 1: 76 C"},
	}
	if !slices.EqualFunc(got, want, func(a, b slackbot.ActiveAlert) bool { return a.Since.Equal(b.Since) && a == withSince(b, a.Since) }) {
		t.Errorf("Alerts:\ngot  %+v\nwant %+v", got, want)
	}
}

// TestBackendPendingSummaryIsTrue: a pending alert's summary says how long
// its condition has held so far, not the `for` it will fire at; once it
// fired and resolved, a new pending alert does not show the summary of the
// last firing.
func TestBackendPendingSummaryIsTrue(t *testing.T) {
	h := newHook(t, nil)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`
source: {type: sim}
receivers: [{name: hook, webhook: {url: %q, format: generic}}]
route: {receiver: hook, group_wait: 1ns}
rules:
  - alert: GPUWarm
    when: temperature > 70
    for: 10m
    summary: "GPU {{.GPU}} above 70 C for {{.TrueFor | duration}}"
`, h.URL)
	r := start(t, parseConfig(t, dir, cfg, nil), newClock(base).Now)
	summary := func() string {
		alerts := r.D.Alerts()
		if len(alerts) != 1 {
			t.Fatalf("got %d alerts, want GPUWarm", len(alerts))
		}
		return alerts[0].State + ": " + alerts[0].Summary
	}
	temps := []float64{75, 75, 75, 75, 75, 75, 75, 75, 75, 75, 75, 60, 75, 75, 75, 75}
	for i, temp := range temps {
		r.D.Step(snapshot(base.Add(time.Duration(i)*time.Minute), temp))
		var want string
		switch i {
		case 4:
			want = "pending: GPU 0 above 70 C for 4m"
		case 10:
			want = "firing: GPU 0 above 70 C for 10m"
		case 15:
			want = "pending: GPU 0 above 70 C for 3m"
		default:
			continue
		}
		if got := summary(); got != want {
			t.Errorf("after %d minutes: %q, want %q", i, got, want)
		}
	}
}

// withSince is a with its Since replaced, for comparing times by instant.
func withSince(a slackbot.ActiveAlert, since time.Time) slackbot.ActiveAlert {
	a.Since = since
	return a
}

// TestBackendHistory: the daemon answers a history query from the minutes
// it keeps: one GPU or every GPU of a host, a point a minute over the
// window, unknown where nothing was sampled.
func TestBackendHistory(t *testing.T) {
	dir := t.TempDir()
	r := start(t, parseConfig(t, dir, backendConfig(t, dir, "http://127.0.0.1:1/", ""), nil), nil)
	for i := range 10 { // one sample every 30s for 5 minutes
		r.D.Step(snapshot(base.Add(time.Duration(i)*30*time.Second), 50, 50))
	}
	end := base.Add(4 * time.Minute)
	got, err := r.D.History(t.Context(), history.Query{Host: "node1", GPU: 1, From: end.Add(-9 * time.Minute), To: end})
	if err != nil || len(got) != 1 {
		t.Fatalf("History(node1, 1): got %d GPUs, %v; want GPU 1's history", len(got), err)
	}
	g := got[0]
	if g.Host != "node1" || g.Index != 1 || g.Name == "" {
		t.Errorf("got %s GPU %d (%q), want node1 GPU 1 with its model", g.Host, g.Index, g.Name)
	}
	if mem := g.MemoryPercent; len(mem.Values) != 10 || !mem.At(9).Equal(end) {
		t.Fatalf("got %d points ending %v, want 10 ending %v", len(mem.Values), mem.At(len(mem.Values)-1), end)
	}
	for i := range 10 {
		wantMem, wantUtil := math.NaN(), math.NaN()
		if i >= 5 { // the five minutes sampled: 20 of 80 GiB, 90% busy
			wantMem, wantUtil = 25, 90
		}
		if m, u := g.MemoryPercent.Values[i], g.Utilization.Values[i]; !(m == wantMem || math.IsNaN(m) && math.IsNaN(wantMem)) ||
			!(u == wantUtil || math.IsNaN(u) && math.IsNaN(wantUtil)) {
			t.Errorf("point %d: got memory %v utilization %v, want %v and %v", i, m, u, wantMem, wantUtil)
		}
	}
	all, _ := r.D.History(t.Context(), history.Query{Host: "node1", GPU: history.AllGPUs, From: base, To: end})
	if len(all) != 2 || all[0].Index != 0 || all[1].Index != 1 {
		t.Errorf("History(node1, all): got %d GPUs, want GPU 0 and GPU 1", len(all))
	}
	for _, q := range []history.Query{{Host: "node1", GPU: 2, From: base, To: end}, {Host: "node2", GPU: 1, From: base, To: end}} {
		if got, _ := r.D.History(t.Context(), q); len(got) != 0 {
			t.Errorf("History(%s, %d): got %d GPUs of a GPU or host the daemon does not sample, want none", q.Host, q.GPU, len(got))
		}
	}
}

func TestBackendSilences(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(base)
	r := start(t, parseConfig(t, dir, backendConfig(t, dir, "http://127.0.0.1:1/", ""), nil), clk.Now)
	m, err := notifier.ParseMatcher(`alert="GPUHot"`)
	if err != nil {
		t.Fatal(err)
	}
	added, err := r.D.AddSilence(notifier.Silence{Matchers: notifier.Matchers{m}, StartsAt: r.D.Now(), EndsAt: base.Add(time.Hour), CreatedBy: "U1"})
	if err != nil || added.ID == "" {
		t.Fatalf("AddSilence: got %+v, %v, want a silence with an ID", added, err)
	}
	if _, err := r.D.AddSilence(notifier.Silence{StartsAt: base, EndsAt: base.Add(time.Hour)}); err == nil {
		t.Errorf("AddSilence without matchers: got no error, want one")
	}
	if got := r.D.Silences(); len(got) != 1 || got[0].ID != added.ID || got[0].CreatedBy != "U1" {
		t.Errorf("Silences: got %+v, want the one added by U1", got)
	}
	clk.Add(time.Minute)
	if err := r.D.ExpireSilence(added.ID); err != nil {
		t.Fatalf("ExpireSilence: %v", err)
	}
	if got := r.D.Silences(); len(got) != 1 || !got[0].EndsAt.Equal(base.Add(time.Minute)) {
		t.Errorf("after ExpireSilence: got %+v, want it ended at %v", got, base.Add(time.Minute))
	}
	if err := r.D.ExpireSilence("nope"); err == nil {
		t.Errorf("ExpireSilence of an unknown ID: got no error, want one")
	}
}

// reminders counts the accepted reminders per GPU.
func reminders(h *hook) map[int]int {
	out := map[int]int{}
	for _, m := range h.Accepted() {
		for _, a := range m.Alerts {
			if a.Repeat {
				out[a.GPU]++
			}
		}
	}
	return out
}

// TestAcknowledgeStopsReminders: GPUs 0 and 1 fire; GPU 0 is acknowledged
// and gets no reminder at the 1m repeat_interval, GPU 1 does; both resolve
// normally and the acknowledgement ends with GPU 0's alert.
func TestAcknowledgeStopsReminders(t *testing.T) {
	h := newHook(t, nil)
	dir := t.TempDir()
	clk := newClock(base)
	r := start(t, parseConfig(t, dir, backendConfig(t, dir, h.URL, ""), nil), clk.Now)
	r.Steps(base, 10*time.Second, []float64{90, 90}, []float64{90, 90})
	h.WaitAccepted(t, 1)

	tests := []struct{ key, wantErr string }{
		{alertKey("GPUWarm", 0), "alert " + alertKey("GPUWarm", 0) + " is not firing"},
		{"node1/NoSuchRule/GPU-x", "alert node1/NoSuchRule/GPU-x is not firing"},
		{alertKey("GPUHot", 0), ""},
	}
	for _, tt := range tests {
		err := r.D.Acknowledge(tt.key, "U123")
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("Acknowledge(%s): got %v, want %q", tt.key, err, tt.wantErr)
		}
	}
	if got := r.D.Alerts(); got[0].Key != alertKey("GPUHot", 0) || got[0].Acknowledged != "U123" || got[1].Acknowledged != "" {
		t.Errorf("Alerts after the ack: got %+v, want GPU 0's GPUHot acknowledged by U123 and GPU 1's not", got[:2])
	}

	r.Steps(base.Add(20*time.Second), 10*time.Second, slices.Repeat([][]float64{{90, 90}}, 18)...) // 3 minutes
	r.Drain()
	if got := reminders(h); got[0] != 0 || got[1] < 2 {
		t.Errorf("reminders per GPU over 3 minutes: got %v, want none for the acknowledged GPU 0 and 2 or more for GPU 1", got)
	}

	end := base.Add(4 * time.Minute)
	r.Steps(end, 10*time.Second, []float64{50, 50}, []float64{50, 50})
	r.Drain()
	accepted := h.Accepted()
	if last := accepted[len(accepted)-1]; last.String() != "resolved[0,1]" {
		t.Errorf("last message: got %s, want resolved[0,1] (an acknowledged alert still says it resolved)", last)
	}
	if err := r.D.Acknowledge(alertKey("GPUHot", 0), "U123"); err == nil || !strings.Contains(err.Error(), "is not firing") {
		t.Errorf("Acknowledge after the resolve: got %v, want not firing", err)
	}

	// Firing again, the alert starts without an acknowledgement.
	r.Steps(end.Add(time.Minute), 10*time.Second, []float64{90, 50})
	if got := r.D.Alerts(); len(got) == 0 || got[0].State != "firing" || got[0].Acknowledged != "" {
		t.Errorf("firing again: got %+v, want GPU 0 firing, not acknowledged", got)
	}
}

func TestAcknowledgeSurvivesRestart(t *testing.T) {
	h := newHook(t, nil)
	dir := t.TempDir()
	cfg := parseConfig(t, dir, backendConfig(t, dir, h.URL, ""), nil)
	first := start(t, cfg, nil)
	first.Steps(base, 10*time.Second, []float64{90}, []float64{90})
	h.WaitAccepted(t, 1)
	if err := first.D.Acknowledge(alertKey("GPUHot", 0), "U7"); err != nil {
		t.Fatalf("Acknowledge: %v", err)
	}
	first.Drain()
	first.Stop()

	second := start(t, cfg, nil)
	second.Steps(base.Add(20*time.Second), 10*time.Second, slices.Repeat([][]float64{{90}}, 18)...)
	second.Drain()
	if got := second.D.Alerts(); len(got) == 0 || got[0].Acknowledged != "U7" {
		t.Errorf("after a restart: got %+v, want GPU 0 acknowledged by U7", got)
	}
	if got := reminders(h); got[0] != 0 {
		t.Errorf("reminders after a restart: got %d, want none for the acknowledged alert", got[0])
	}
}
