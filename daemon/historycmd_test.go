package daemon_test

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/history"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// historySlack is a slack section with the app's signing secret and a
// bot token for fake's Web API.
func historySlack(fake *notifiertest.Server) string {
	return fmt.Sprintf("slack:\n  signing_secret: %s\n  bot_token: xoxb-1111-2222-historycmd\n  api_url: %s/api/", signingSecret, fake.URL)
}

// askHistory sends the app "/gpu TEXT" from U123 in channel C1, signed
// at, and returns the answer.
func askHistory(t *testing.T, app http.Handler, text string, at time.Time) string {
	t.Helper()
	form := url.Values{"command": {"/gpu"}, "text": {text}, "user_id": {"U123"}, "user_name": {"alice"}, "channel_id": {"C1"},
		"response_url": {"http://127.0.0.1:1/commands/1"}, "trigger_id": {text}}
	w := httptest.NewRecorder()
	app.ServeHTTP(w, slackRequest("/slack/commands", form.Encode(), signingSecret, at))
	if w.Code != http.StatusOK {
		t.Fatalf("/gpu %s: HTTP %d %s", text, w.Code, w.Body)
	}
	return w.Body.String()
}

// oneChart waits for the one chart the fake gets and checks it is a PNG
// a phone reads, shared in C1 by the command.
func oneChart(t *testing.T, fake *notifiertest.Server, title string) {
	t.Helper()
	waitFor(t, "the chart's upload", func() bool { return len(notifiertest.SlackUploads(t, fake)) > 0 })
	ups := notifiertest.SlackUploads(t, fake)
	if len(ups) != 1 || ups[0].Channel != "C1" || !strings.Contains(ups[0].Comment, title) {
		t.Fatalf("uploads %+v, want one chart %q in C1", ups, title)
	}
	if w := notifiertest.DecodePNG(t, ups[0].PNG).Bounds().Dx(); w < 1000 {
		t.Errorf("the chart is %d px wide, want at least 1000", w)
	}
}

// TestHistoryCommandChart: on a GPU server, "/gpu history 0 public"
// answers with a chart of the day the daemon keeps, uploaded through the
// bot token with Slack's upload flow.
func TestHistoryCommandChart(t *testing.T) {
	fake := notifiertest.NewSlack(t, notifiertest.SlackOptions{Scopes: "chat:write,commands,files:write,users:read",
		Zones: map[string]string{"U123": "America/New_York"}})
	h := newHook(t, nil)
	dir := t.TempDir()
	r := start(t, parseConfig(t, dir, backendConfig(t, dir, h.URL, historySlack(fake)), nil), newClock(base).Now)
	for i := range 120 { // two hours, a sample a minute
		r.D.Step(snapshot(base.Add(time.Duration(i)*time.Minute), 50, 60))
	}
	// Within Slack's 3 seconds the answer says the chart is posted; on a
	// loaded machine it says it is working on it, and the upload follows.
	answer := askHistory(t, r.D.SlackHandler(), "history 0 public", base)
	if !strings.Contains(answer, "the chart is posted here") && !strings.Contains(answer, "Working on it") {
		t.Errorf("answer %s, want it to say the chart is posted", answer)
	}
	oneChart(t, fake, "node1 GPU 0 · last 6h")
	if n := len(fake.Requests()); n == 0 || !strings.Contains(requestPaths(fake), "/api/users.info") {
		t.Errorf("Slack calls %s: want users.info for the asker's zone", requestPaths(fake))
	}
}

// TestHubHistoryFromPrometheus: a hub answers /gpu history from its
// Prometheus, range queries over the window, so it shows hours from
// before it started; the chart is uploaded as on a GPU server.
func TestHubHistoryFromPrometheus(t *testing.T) {
	prom := newHubPrometheus(t)
	fake := notifiertest.NewSlack(t, notifiertest.SlackOptions{Scopes: "chat:write,commands,files:write"})
	hook := notifiertest.NewServer(t, nil)
	d, _, _ := runHub(t, hubConfig(t, t.TempDir(), prom.URL, hook.URL, historySlack(fake)))
	waitFor(t, "both hosts", func() bool { return len(d.Snapshots()) == 2 })

	// The hub has run for a moment; Prometheus has the hours before.
	now := time.Now().Truncate(time.Minute)
	gpus, err := d.History(t.Context(), history.Query{Host: "b", GPU: 0, From: now.Add(-6 * time.Hour), To: now})
	if err != nil || len(gpus) != 1 || gpus[0].Host != "b" || gpus[0].Index != 0 {
		t.Fatalf("History(b, 0): %d GPUs, %v; want b's GPU 0", len(gpus), err)
	}
	mem := gpus[0].MemoryPercent
	at := now.Add(-5 * time.Hour).Truncate(time.Hour).Add(30 * time.Minute)
	i := int(at.Sub(mem.Start) / mem.Step)
	if i < 0 || i >= len(mem.Values) {
		t.Fatalf("b GPU 0's memory starts at %v, every %v, with %d values: none at %v", mem.Start, mem.Step, len(mem.Values), at)
	}
	if v := mem.Values[i]; !(math.Abs(v-50) <= 2) {
		t.Errorf("b GPU 0's memory at %v, five hours before the hub started: %v%%, want 50%% from Prometheus", at, v)
	}
	ranges := prom.ranges.Load()
	askHistory(t, d.SlackHandler(), "history b 0 public", time.Now())
	oneChart(t, fake, "b GPU 0 · last 6h")
	if prom.ranges.Load() == ranges {
		t.Error("the command made no range query: the hub must answer from Prometheus")
	}
}

// requestPaths lists the paths a fake got, for a message.
func requestPaths(fake *notifiertest.Server) string {
	var paths []string
	for _, r := range fake.Requests() {
		paths = append(paths, r.Path)
	}
	return strings.Join(paths, " ")
}
