package daemon_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
	"github.com/gpuwatch/gpuwatch/store"
)

// digestMessage is the generic webhook body of a digest, the fields the
// tests look at.
type digestMessage struct {
	Receiver string `json:"receiver"`
	Status   string `json:"status"`
	Digest   struct {
		Name string `json:"name"`
		Text string `json:"text"`
		Data struct {
			From time.Time `json:"from"`
			To   time.Time `json:"to"`
			GPUs []struct {
				GPU int `json:"gpu"`
			} `json:"gpus"`
		} `json:"data"`
	} `json:"digest"`
}

// digestHook is a webhook that accepts everything and decodes digests.
type digestHook struct{ *notifiertest.Server }

func newDigestHook(t *testing.T) digestHook {
	return digestHook{notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
		return notifiertest.Response{}
	})}
}

// Digests returns the digests the hook got, in order.
func (h digestHook) Digests(t *testing.T) []digestMessage {
	t.Helper()
	var out []digestMessage
	for _, r := range h.Requests() {
		var m digestMessage
		if err := json.Unmarshal(r.Body, &m); err != nil {
			t.Fatalf("webhook body is not JSON: %v: %s", err, r.Body)
		}
		if m.Status == "digest" {
			out = append(out, m)
		}
	}
	return out
}

// digestConfig is webhookConfig with an hourly digest to the webhook.
func digestConfig(t *testing.T, dir, url string) *config.Config {
	cfg := webhookConfig(t, dir, url, "1ns")
	cfg.Digests = []config.Digest{{Name: "hourly", Schedule: "@every 1h", Receivers: []string{"hook"},
		TopUsers: config.DefaultTopUsers, CatchUp: config.DefaultCatchUp}}
	return cfg
}

// TestDigestSentOnceAcrossRestarts: a due digest reaches the webhook as a
// "digest" notification with the usage of its window; asking again, or
// after a restart, sends nothing more; a run missed while gpuwatch was down,
// by less than catch_up, is sent once when it starts again.
func TestDigestSentOnceAcrossRestarts(t *testing.T) {
	h := newDigestHook(t)
	cfg := digestConfig(t, t.TempDir(), h.URL)
	clock := newClock(base)

	first := start(t, cfg, clock.Now)
	for i := range 70 {
		first.D.Step(snapshot(base.Add(time.Duration(i)*time.Minute), 60))
	}
	first.D.SendDigests(base.Add(59 * time.Minute))
	if n := first.Pending(); n != 0 {
		t.Fatalf("a minute before the digest is due: got %d pending, want 0", n)
	}
	first.D.SendDigests(base.Add(time.Hour))
	waitFor(t, "the first digest", func() bool { return len(h.Digests(t)) == 1 })
	first.D.SendDigests(base.Add(time.Hour))
	first.D.SendDigests(base.Add(time.Hour + 10*time.Minute))
	first.Drain()
	got := h.Digests(t)
	if len(got) != 1 {
		t.Fatalf("after asking again: got %d digests, want 1", len(got))
	}
	m := got[0]
	if m.Receiver != "hook" || m.Digest.Name != "hourly" {
		t.Errorf("digest: got receiver %q name %q, want hook and hourly", m.Receiver, m.Digest.Name)
	}
	if !m.Digest.Data.From.Equal(base) || !m.Digest.Data.To.Equal(base.Add(time.Hour)) {
		t.Errorf("digest window: got %v – %v, want %v – %v (since the previous run)", m.Digest.Data.From, m.Digest.Data.To, base, base.Add(time.Hour))
	}
	if len(m.Digest.Data.GPUs) != 1 || !strings.Contains(m.Digest.Text, "node1") {
		t.Errorf("digest content: got %d GPUs and text\n%s\nwant 1 GPU on node1", len(m.Digest.Data.GPUs), m.Digest.Text)
	}
	first.Stop()

	clock.Set(base.Add(time.Hour + 5*time.Minute))
	second := start(t, cfg, clock.Now)
	second.D.SendDigests(clock.Now())
	second.Drain()
	if n := len(h.Digests(t)); n != 1 {
		t.Fatalf("after a restart: got %d digests, want 1 (never twice)", n)
	}
	// The usage of before the restart survived it.
	report, err := second.D.UsageReport("hourly", 2*time.Hour)
	if err != nil {
		t.Fatalf("UsageReport: %v", err)
	}
	if len(report.GPUs) != 1 || report.CoveredHours < 69.0/60 {
		t.Errorf("usage after a restart: got %d GPUs covering %.2fh, want 1 covering at least %.2fh", len(report.GPUs), report.CoveredHours, 69.0/60)
	}
	second.Stop()

	// Down over the 11:00 run; back at 11:30, within catch_up (1h).
	clock.Set(base.Add(2*time.Hour + 30*time.Minute))
	third := start(t, cfg, clock.Now)
	waitFor(t, "the missed digest", func() bool { return len(h.Digests(t)) == 2 })
	third.D.SendDigests(clock.Now())
	third.Drain()
	got = h.Digests(t)
	if len(got) != 2 {
		t.Fatalf("after a restart past a run: got %d digests, want 2", len(got))
	}
	if at := got[1].Digest.Data.To; !at.Equal(base.Add(2 * time.Hour)) {
		t.Errorf("missed digest: got window to %v, want %v", at, base.Add(2*time.Hour))
	}
}

func TestDigestAPI(t *testing.T) {
	h := newDigestHook(t)
	r := start(t, digestConfig(t, t.TempDir(), h.URL), newClock(base).Now)
	for i := range 30 {
		r.D.Step(snapshot(base.Add(time.Duration(i)*time.Minute), 60, 40))
	}
	tests := []struct {
		query string
		code  int
		want  string
	}{
		{"?window=1h", http.StatusOK, "node1"},
		{"?name=hourly", http.StatusOK, "node1"},
		{"", http.StatusOK, "node1"},
		{"?window=soon", http.StatusBadRequest, `window "soon" is not a positive duration`},
		{"?window=-1h", http.StatusBadRequest, "not a positive duration"},
		{"?window=30m", http.StatusBadRequest, "window 30m is shorter than an hour"},
		{"?name=weekly", http.StatusNotFound, `no digest is named "weekly"; the config has hourly`},
	}
	for _, tt := range tests {
		code, body := r.Do(http.MethodGet, "/api/v1/digest"+tt.query, "")
		if code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("GET /api/v1/digest%s: got %d %q, want %d containing %q", tt.query, code, body, tt.code, tt.want)
		}
	}
}

// TestDigestCountsFiringAlerts is the morning digest that missed the
// alert firing all night: rollups count an alert when it resolves, and the
// digest adds the alerts still firing.
func TestDigestCountsFiringAlerts(t *testing.T) {
	h := newDigestHook(t)
	r := start(t, digestConfig(t, t.TempDir(), h.URL), newClock(base).Now)
	for i := range 120 {
		r.D.Step(snapshot(base.Add(time.Duration(i)*time.Minute), 90, 40)) // GPU 0 hot from the start
	}
	report, err := r.D.UsageReport("", 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Alerts) != 1 || report.Alerts[0].Alert != "GPUHot" || report.Alerts[0].StillFiring != 1 || report.AlertsFired != 1 {
		t.Fatalf("got alerts %+v (%d fired), want GPUHot fired once, still firing", report.Alerts, report.AlertsFired)
	}
	if want := "GPUHot fired 1 time, the longest for 1h59m (1 still firing)"; !strings.Contains(report.Text(), want) {
		t.Errorf("want %q in\n%s", want, report.Text())
	}
}

// TestRollupsCheckpointedAndPruned: the rollups reach the store every few
// minutes of sample time, so a crash (a copy of the live store) keeps all
// but the last minutes, and hours past storage.retention leave the store.
func TestRollupsCheckpointedAndPruned(t *testing.T) {
	h := newDigestHook(t)
	dir := t.TempDir()
	cfg := digestConfig(t, dir, h.URL)
	cfg.Storage.Retention = time.Hour
	r := start(t, cfg, newClock(base).Now)
	for i := range 3*60 + 12 {
		r.D.Step(snapshot(base.Add(time.Duration(i)*time.Minute), 60))
	}
	crashed := filepath.Join(dir, "crashed.db")
	copyFile(t, cfg.Storage.Path, crashed)
	r.Stop()

	db, err := store.Open(crashed, store.Options{})
	if err != nil {
		t.Fatalf("open the crashed store: %v", err)
	}
	defer db.Close()
	records, err := db.All(daemon.BucketRollups)
	if err != nil {
		t.Fatal(err)
	}
	hours := map[string]bool{}
	for k := range records {
		hour, _, _ := strings.Cut(k, "/")
		hours[hour] = true
	}
	// The last checkpoint was at 12:10: the hours ending after 11:10 are
	// kept (11:00 and 12:00); 09:00 and 10:00 are pruned.
	want := map[string]bool{"2026-11-29T11": true, "2026-11-29T12": true}
	if len(hours) != len(want) || !hours["2026-11-29T11"] || !hours["2026-11-29T12"] {
		t.Errorf("hours in the store: got %v, want %v", hours, want)
	}
	var last struct {
		Samples int `json:"samples"`
	}
	for k, v := range records {
		if strings.HasPrefix(k, "2026-11-29T12/gpu/") {
			if err := json.Unmarshal(v, &last); err != nil {
				t.Fatalf("record %s: %v", k, err)
			}
		}
	}
	// Samples 12:00 … 12:10 were checkpointed at 12:10; 12:11 was not yet.
	if last.Samples != 11 {
		t.Errorf("samples of 12:00 in the crashed store: got %d, want 11", last.Samples)
	}
}
