package slackbot

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

func TestHandlerRefusesBadSignatures(t *testing.T) {
	body := commandBody("silence all 1h", "U0ADMIN", "admin", "https://hooks.slack.com/x")
	cases := []struct {
		name string
		mod  func(r *http.Request)
	}{
		{"missing signature", func(r *http.Request) { r.Header.Del("X-Slack-Signature") }},
		{"missing timestamp", func(r *http.Request) { r.Header.Del("X-Slack-Request-Timestamp") }},
		{"tampered signature", func(r *http.Request) {
			r.Header.Set("X-Slack-Signature", Sign("wrong-secret", testNow, []byte(body)))
		}},
		{"stale", func(r *http.Request) {
			old := testNow.Add(-6 * time.Minute)
			r.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(old.Unix(), 10))
			r.Header.Set("X-Slack-Signature", Sign(testSecret, old, []byte(body)))
		}},
	}
	for _, path := range []string{"/slack/commands", "/slack/actions"} {
		for _, c := range cases {
			ta := newTestApp(t, 4, nil)
			r := signed(path, body)
			c.mod(r)
			w := httptest.NewRecorder()
			ta.Handler().ServeHTTP(w, r)
			if w.Code != http.StatusUnauthorized {
				t.Errorf("%s %s: got HTTP %d, want 401", path, c.name, w.Code)
			}
			if n := ta.b.callCount(); n != 0 {
				t.Errorf("%s %s: got %d backend calls, want none", path, c.name, n)
			}
			assertNoSecret(t, c.name+" answer", w.Body.String())
			assertNoSecret(t, c.name+" log", ta.log.String())
			if !strings.Contains(ta.log.String(), "slack request refused") {
				t.Errorf("%s %s: got log %q, want the refusal logged", path, c.name, ta.log.String())
			}
		}
	}
}

func TestHandlerTamperedBody(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	r := signed("/slack/commands", commandBody("status", "U1", "u", ""))
	r.Body = httptest.NewRequest(http.MethodPost, "/", strings.NewReader(commandBody("silence all 1h", "U0ADMIN", "a", ""))).Body
	w := httptest.NewRecorder()
	ta.Handler().ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized || ta.b.callCount() != 0 {
		t.Errorf("tampered body: got HTTP %d and %d backend calls, want 401 and none", w.Code, ta.b.callCount())
	}
}

func TestHandlerWithoutSecretRefusesAll(t *testing.T) {
	ta := newTestApp(t, 4, func(c *Config) { c.SigningSecret = "" })
	w := httptest.NewRecorder()
	ta.Handler().ServeHTTP(w, signed("/slack/commands", commandBody("status", "U1", "u", "")))
	if w.Code != http.StatusUnauthorized {
		t.Errorf("no signing secret: got HTTP %d, want 401", w.Code)
	}
}

func TestHandlerMethodAndSize(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	for _, path := range []string{"/slack/commands", "/slack/actions"} {
		for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
			w := httptest.NewRecorder()
			ta.Handler().ServeHTTP(w, httptest.NewRequest(m, path, nil))
			if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != http.MethodPost {
				t.Errorf("%s %s: got HTTP %d Allow %q, want 405 Allow POST", m, path, w.Code, w.Header().Get("Allow"))
			}
		}
		big := "text=" + strings.Repeat("a", MaxBodyBytes)
		w := httptest.NewRecorder()
		ta.Handler().ServeHTTP(w, signed(path, big))
		if w.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s with %d bytes: got HTTP %d, want 413", path, len(big), w.Code)
		}
		// Without a Content-Length the limit holds while reading.
		r := signed(path, big)
		r.ContentLength = -1
		w = httptest.NewRecorder()
		ta.Handler().ServeHTTP(w, r)
		if w.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s with %d bytes, unknown length: got HTTP %d, want 413", path, len(big), w.Code)
		}
	}
	if n := ta.b.callCount(); n != 0 {
		t.Errorf("got %d backend calls, want none", n)
	}
	w := httptest.NewRecorder()
	ta.Handler().ServeHTTP(w, signed("/slack/other", "x=1"))
	if w.Code != http.StatusNotFound {
		t.Errorf("POST /slack/other: got HTTP %d, want 404", w.Code)
	}
}

// contains fails the test unless every want is in the text.
func contains(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s: got %q, want it to contain %q", what, text, w)
		}
	}
}

func TestStatus(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	for _, text := range []string{"", "status"} {
		k := ta.run(t, text, "U1", "alice")
		if k.ResponseType != ephemeral {
			t.Errorf("/gpu %s: got response_type %q, want ephemeral", text, k.ResponseType)
		}
		heads := k.texts("header")
		if len(heads) != 1 || !strings.Contains(heads[0], "node1 · 4 GPUs") {
			t.Errorf("/gpu %s: got headers %q, want one saying node1 · 4 GPUs", text, heads)
		}
		secs := k.texts("section")
		if len(secs) != 4 {
			t.Fatalf("/gpu %s: got %d sections, want one per GPU (4): %q", text, len(secs), secs)
		}
		contains(t, "GPU 0", secs[0], "*GPU 0*", "NVIDIA H100", "10.0 GiB / 80.0 GiB (12%)", "util 0%", "40 C",
			"100 / 700 W", "alice", "python train.py", "(+1 more)", "🔥 *GPUMemoryLeak* firing 12m")
		contains(t, "GPU 2", secs[2], "30.0 GiB / 80.0 GiB (38%)", "carol", "&lt;!channel&gt; ./evil", "⏳ *GPUHot* pending 30s")
		if strings.Contains(secs[2], "<!channel>") {
			t.Errorf("GPU 2: got %q, want the command's <!channel> escaped", secs[2])
		}
		contains(t, "GPU 3", secs[3], "util n/a", "n/a", "no processes")
		if strings.Contains(secs[1], "GPUMemoryLeak") || strings.Contains(secs[1], "GPUHot") {
			t.Errorf("GPU 1: got %q, want no alerts", secs[1])
		}
		contains(t, "context", strings.Join(k.texts("context"), "\n"), "5s ago", "2 active alerts")
	}
}

func TestStatusBeforeFirstSample(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	ta.b.snap = nil
	for _, text := range []string{"status", "top"} {
		k := ta.run(t, text, "U1", "alice")
		contains(t, "/gpu "+text, k.all(), "has not read the GPUs yet")
	}
}

func TestPublicAnswersInChannel(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	for _, text := range []string{"public", "status public", "top PUBLIC", "public alerts", "history 0 public"} {
		if k := ta.run(t, text, "U1", "alice"); k.ResponseType != inChannel {
			t.Errorf("/gpu %s: got response_type %q, want in_channel", text, k.ResponseType)
		}
	}
}

func TestTop(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	k := ta.run(t, "top", "U1", "alice")
	secs := k.texts("section")
	if len(secs) != 1 {
		t.Fatalf("/gpu top: got sections %q, want one", secs)
	}
	lines := strings.Split(secs[0], "\n")
	if len(lines) != 5 {
		t.Fatalf("/gpu top: got %d lines %q, want 3 processes and 2 GPUs held by processes not named", len(lines), lines)
	}
	// Largest first: GPU 3 held (40 GiB) by processes the source does not
	// name, carol 30 GiB on GPU 2, GPU 1 held (20 GiB), alice 9 GiB and
	// bob 1 GiB on GPU 0.
	contains(t, "line 1", lines[0], "`GPU 3`", "40.0 GiB", "held · the source names no process")
	contains(t, "line 2", lines[1], "`GPU 2`", "30.0 GiB", "carol", "pid 777")
	contains(t, "line 3", lines[2], "`GPU 1`", "20.0 GiB", "held · the source names no process")
	contains(t, "line 4", lines[3], "`GPU 0`", "9.0 GiB", "alice", "python train.py --model llama-7b", "docker:3f2a9c1b7e4d")
	contains(t, "line 5", lines[4], "`GPU 0`", "1.0 GiB", "bob", "jupyter-lab")
}

// TestTopNamesPods: where the source names a GPU's pod, not its
// processes (dcgm-exporter on Kubernetes), /gpu top names the pod, its
// namespace and container.
func TestTopNamesPods(t *testing.T) {
	ta := newTestApp(t, 1, nil)
	pod := gpu.PodProcess("ml", "train-0", "trainer")
	pod.MemUsed = 9 << 30
	ta.b.snap.Devices[0].Processes = []gpu.Process{pod}
	k := ta.run(t, "top", "U1", "alice")
	contains(t, "/gpu top", strings.Join(k.texts("section"), "\n"), "`GPU 0` *9.0 GiB* pod ml/train-0, container trainer")
}

func TestAlerts(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	k := ta.run(t, "alerts", "U1", "alice")
	contains(t, "header", strings.Join(k.texts("header"), ""), "1 firing, 1 pending")
	secs := k.texts("section")
	if len(secs) != 2 {
		t.Fatalf("/gpu alerts: got sections %q, want 2", secs)
	}
	contains(t, "firing alert", secs[0], "🔥 *GPUMemoryLeak* · GPU 0 · critical", "firing since <!date^", "(12m)",
		"value 1.5 GiB/min", "GPU 0 memory keeps growing", "acknowledged by dave (U0DAVE)")
	contains(t, "pending alert", secs[1], "⏳ *GPUHot* · GPU 2 · warning", "pending since", "(30s)")

	ta.b.alerts = nil
	k = ta.run(t, "alerts", "U1", "alice")
	contains(t, "no alerts", k.all(), "No alerts are firing or pending")
}

// TestAlertsShowSilenced: a firing alert a silence mutes shows as
// silenced, until when and by whom, in /gpu alerts and /gpu status.
func TestAlertsShowSilenced(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	until := testNow.Add(2 * time.Hour)
	ta.b.alerts[0].Silenced = &notifier.Silence{ID: "3f2a9c1b", EndsAt: until, CreatedBy: "alice", Comment: "fan repair",
		Matchers: mustMatchers(`alert="GPUMemoryLeak"`)}
	k := ta.run(t, "alerts", "U1", "alice")
	contains(t, "header", strings.Join(k.texts("header"), ""), "0 firing, 1 silenced, 1 pending")
	secs := k.texts("section")
	if len(secs) != 2 {
		t.Fatalf("/gpu alerts: got sections %q, want 2", secs)
	}
	contains(t, "silenced alert", secs[0], "🔕 *GPUMemoryLeak* · GPU 0",
		fmt.Sprintf("🔕 silenced until <!date^%d^", until.Unix()), "by alice: fan repair", "`/gpu unsilence 3f2a9c1b`")
	k = ta.run(t, "status", "U1", "alice")
	contains(t, "status", k.all(), "2 active alerts", "🔕 *GPUMemoryLeak* silenced")
}

// TestHistory: without an uploader, /gpu history answers sparklines of
// one GPU, or of every GPU of the host, over the window (6h by default).
func TestHistory(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	k := ta.run(t, "history 1 6h", "U1", "alice")
	contains(t, "header", strings.Join(k.texts("header"), ""), "node1 GPU 1 · last 6h")
	secs := k.texts("section")
	if len(secs) != 1 {
		t.Fatalf("/gpu history: got sections %q, want 1", secs)
	}
	lines := strings.Split(secs[0], "\n")
	mem := between(lines[0], "`")
	if n := len([]rune(mem)); n != historyWidth {
		t.Errorf("memory sparkline: got %d bars, want %d (361 points downsampled)", n, historyWidth)
	}
	if r := []rune(mem); r[0] != '▁' || r[len(r)-1] != '█' {
		t.Errorf("memory sparkline %q: got first %q last %q, want ▁ then █ (rising 0 to 100%%)", mem, r[0], r[len(r)-1])
	}
	contains(t, "utilization", lines[1], "now 50% · max 50%")
	contains(t, "temperature", lines[2], "now 60 °C · max 60 °C")
	contains(t, "note", strings.Join(k.texts("context"), ""), "2026-11-29 03:59:00 UTC", "to", "2026-11-29 09:59:00 UTC")

	k = ta.run(t, "history", "U1", "alice")
	contains(t, "every GPU", strings.Join(k.texts("header"), ""), "node1 · last 6h")
	if secs := k.texts("section"); len(secs) != 4 || !strings.HasPrefix(secs[3], "*GPU 3*") {
		t.Errorf("/gpu history: got sections %q, want one per GPU", secs)
	}

	k = ta.run(t, "history 9", "U1", "alice")
	contains(t, "unknown GPU", k.all(), "GPU 9 is unknown: this host has GPUs 0, 1, 2, 3")
}

// between is the text between the first two seps.
func between(s, sep string) string {
	parts := strings.SplitN(s, sep, 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[1]
}

// TestNotUnderstoodGetsOneLine: what /gpu does not understand is answered
// with the one line that fits what was typed, not the whole help.
func TestNotUnderstoodGetsOneLine(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	cases := []struct{ text, want string }{
		{"dance", `"dance" is not a /gpu command: /gpu help lists the commands`},
		{"stauts", `"stauts" is not a /gpu command; did you mean /gpu status?`},
		{"history 0 1", "/gpu history shows one GPU, or every GPU of a host: got GPUs 0 and 1; write /gpu history 0, or /gpu history [host] for all"},
		{"history 6h 0", "the window goes last: write /gpu history 0 6h"},
		{"history 0 soon", `history window: "soon" is not a duration: write a duration like 30m, 2h, 1d12h or 1w; write /gpu history [host] [gpu] [window]`},
		{"silence GPUHot forever", `silence duration: "forever" is not a duration`},
		{"digest 30m", "digest window 30m is out of range: use 1h to 35d; write /gpu digest [window]"},
	}
	for _, c := range cases {
		k := ta.run(t, c.text, "U1", "alice")
		secs := k.texts("section")
		if len(secs) != 1 || strings.Contains(secs[0], "\n") {
			t.Errorf("/gpu %s: got %q, want one line", c.text, secs)
			continue
		}
		contains(t, "/gpu "+c.text, secs[0], "🤔 "+c.want)
		if strings.Contains(secs[0], "/gpu top") || len(secs[0]) > 400 {
			t.Errorf("/gpu %s: got %d characters %q, want one short line, not the list of commands", c.text, len(secs[0]), secs[0])
		}
		if k.ResponseType != "ephemeral" {
			t.Errorf("/gpu %s: got response type %q, want ephemeral", c.text, k.ResponseType)
		}
	}
	k := ta.run(t, "help", "U1", "alice")
	contains(t, "/gpu help", k.all(), "/gpu top", "/gpu silence &lt;alert|gpu N|all&gt; &lt;duration&gt; [reason]", "/gpu unsilence &lt;id&gt;")
	if strings.Contains(k.all(), "🤔") {
		t.Errorf("/gpu help: got %q, want the list without a complaint", k.all())
	}
}

func TestSilenceByAdmin(t *testing.T) {
	cases := []struct {
		text, userID, userName string
		matchers               string
		d                      time.Duration
		comment                string
	}{
		{"silence GPUHot 2h fan repair", "U0ADMIN", "admin", `{alert="GPUHot"}`, 2 * time.Hour, "fan repair"},
		{"silence gpu 3 30m", "U9", "root", `{gpu="3"}`, 30 * time.Minute, "silenced with /gpu silence in Slack"},
		{"silence all 1d public", "U0ADMIN", "admin", `{alert=~".+"}`, 24 * time.Hour, "silenced with /gpu silence in Slack"},
	}
	for _, c := range cases {
		ta := newTestApp(t, 4, nil)
		k := ta.run(t, c.text, c.userID, c.userName)
		if len(ta.b.added) != 1 {
			t.Fatalf("/gpu %s: got %d silences added, want 1", c.text, len(ta.b.added))
		}
		s := ta.b.added[0]
		if got := s.Matchers.String(); got != c.matchers {
			t.Errorf("/gpu %s: got matchers %s, want %s", c.text, got, c.matchers)
		}
		if !s.StartsAt.Equal(testNow) || s.EndsAt.Sub(s.StartsAt) != c.d {
			t.Errorf("/gpu %s: got %s to %s, want %s from now", c.text, s.StartsAt, s.EndsAt, c.d)
		}
		if want := c.userName + " (" + c.userID + ")"; s.CreatedBy != want {
			t.Errorf("/gpu %s: got created_by %q, want %q", c.text, s.CreatedBy, want)
		}
		if s.Comment != c.comment {
			t.Errorf("/gpu %s: got comment %q, want %q", c.text, s.Comment, c.comment)
		}
		contains(t, "/gpu "+c.text, k.all(), "silenced", "<@"+c.userID+">", "sil1", "/gpu unsilence sil1")
	}
}

func TestSilenceUnknownAlertWarns(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	k := ta.run(t, "silence gpuhot 1h", "U0ADMIN", "admin")
	contains(t, "note", strings.Join(k.texts("context"), ""), "No alert called gpuhot is pending or firing now")
}

func TestSilenceByNonAdminIsRefused(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	for _, text := range []string{"silence GPUHot 2h", "silence all 1h public", "unsilence s-active"} {
		k := ta.run(t, text, "U1", "alice")
		if k.ResponseType != ephemeral {
			t.Errorf("/gpu %s by non-admin: got response_type %q, want ephemeral", text, k.ResponseType)
		}
		contains(t, "/gpu "+text, k.all(), "only gpuwatch admins can", "ask one of <@U0ADMIN>, @root")
	}
	if len(ta.b.added) != 0 || len(ta.b.expired) != 0 {
		t.Errorf("non-admin: got %d silences added and %d expired, want none", len(ta.b.added), len(ta.b.expired))
	}
}

func TestEveryoneIsAdminWithoutAdmins(t *testing.T) {
	ta := newTestApp(t, 4, func(c *Config) { c.Admins = nil })
	ta.run(t, "silence GPUHot 2h", "U1", "alice")
	if len(ta.b.added) != 1 {
		t.Errorf("no admins configured: got %d silences added, want 1", len(ta.b.added))
	}
}

func TestSilencesAndUnsilence(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	k := ta.run(t, "silences", "U1", "alice")
	all := k.all()
	contains(t, "/gpu silences", all, "`s-active`", `{alert="GPUHot"}`, "(1h0m left)", "erin (U0ERIN)", "fan repair", "1 expired silence not shown")
	if strings.Contains(all, "s-old") {
		t.Errorf("/gpu silences: got %q, want the expired silence left out", all)
	}

	k = ta.run(t, "unsilence s-active", "U0ADMIN", "admin")
	if !slices.Equal(ta.b.expired, []string{"s-active"}) {
		t.Errorf("unsilence: got expired %q, want [s-active]", ta.b.expired)
	}
	contains(t, "unsilence", k.all(), "<@U0ADMIN> ended silence `s-active`")

	k = ta.run(t, "unsilence nope", "U0ADMIN", "admin")
	contains(t, "unsilence unknown", k.all(), "No silence has ID `nope`")
}

func TestChannelNotAllowed(t *testing.T) {
	for _, allowed := range [][]string{{"C0OTHER"}, {"#random"}} {
		ta := newTestApp(t, 4, func(c *Config) { c.AllowedChannels = allowed })
		k := ta.run(t, "silence all 1h", "U0ADMIN", "admin")
		contains(t, "disallowed channel", k.all(), "gpuwatch does not answer in this channel")
		if n := ta.b.callCount(); n != 0 {
			t.Errorf("allowed %q: got %d backend calls, want none", allowed, n)
		}
	}
	for _, allowed := range [][]string{{"C0GPU"}, {"#gpu"}, {"gpu"}} {
		ta := newTestApp(t, 4, func(c *Config) { c.AllowedChannels = allowed })
		k := ta.run(t, "status", "U1", "alice")
		if strings.Contains(k.all(), "does not answer") {
			t.Errorf("allowed %q: got a refusal in #gpu (C0GPU)", allowed)
		}
	}
}

func TestSlowCommandAnswersLater(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	ta.slowAfter = 10 * time.Millisecond
	ta.b.block = make(chan struct{})
	slack := notifiertest.NewServer(t, nil)
	w := httptest.NewRecorder()
	ta.Handler().ServeHTTP(w, signed("/slack/commands", commandBody("status public", "U1", "alice", slack.URL+"/commands/T1/1/x")))
	k := decodeKit(t, w.Body.Bytes())
	contains(t, "first answer", k.all(), "Working on it")
	if k.ResponseType != ephemeral {
		t.Errorf("working on it: got response_type %q, want ephemeral", k.ResponseType)
	}
	close(ta.b.block)
	ta.wait()
	reqs := slack.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d posts to response_url, want 1", len(reqs))
	}
	if reqs[0].Path != "/commands/T1/1/x" || reqs[0].Header.Get("Content-Type") != "application/json" {
		t.Errorf("got POST %s (%s), want /commands/T1/1/x as JSON", reqs[0].Path, reqs[0].Header.Get("Content-Type"))
	}
	later := decodeKit(t, reqs[0].Body)
	if later.ResponseType != inChannel {
		t.Errorf("later answer: got response_type %q, want in_channel", later.ResponseType)
	}
	contains(t, "later answer", strings.Join(later.texts("header"), ""), "node1 · 4 GPUs")
}

func TestNoSecretInAnswersOrLogs(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	for _, text := range []string{"", "top", "alerts", "history 0", "silences", "help", "dance", "silence all 1h"} {
		ta.run(t, text, "U0ADMIN", "admin") // run checks each answer
	}
	w := httptest.NewRecorder()
	r := signed("/slack/commands", "x=1")
	r.Header.Set("X-Slack-Signature", "v0=00")
	ta.Handler().ServeHTTP(w, r)
	assertNoSecret(t, "log", ta.log.String())
	b, _ := json.Marshal(ta.b.added)
	assertNoSecret(t, "silences", string(b))
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := New(nil, Config{}); err == nil {
		t.Error("New(nil backend): got nil error, want one")
	}
	for _, c := range []Config{{AllowedChannels: []string{" "}}, {Admins: []string{""}}} {
		if _, err := New(newFakeBackend(1), c); err == nil {
			t.Errorf("New(%+v): got nil error, want one", c)
		}
	}
}
