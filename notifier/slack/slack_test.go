package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var _ notifier.Notifier = (*Notifier)(nil)

const receiver = "team-slack"

func newBot(t testing.TB, srv *notifiertest.Server, store MessageStore) *Notifier {
	t.Helper()
	n, err := New(receiver, Config{Channel: "#gpu-alerts"}, Options{
		BotToken: "xoxb-test", APIURL: srv.URL + "/api/", HTTPClient: srv.Client(), Messages: store})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return n
}

func notify(t testing.TB, n *Notifier, m *notifier.Notification) {
	t.Helper()
	if retry, err := n.Notify(context.Background(), m); err != nil {
		t.Fatalf("Notify %s: got retry=%v err %v, want delivered", m.Status, retry, err)
	}
}

func TestFiringMessage(t *testing.T) {
	srv := fakeSlack(t, nil)
	store := newMemStore()
	m := notifiertest.Notification(notifier.StatusFiring)
	notify(t, newBot(t, srv, store), m)

	got := calls(t, srv)
	if len(got) != 1 || got[0].Method != "chat.postMessage" {
		t.Fatalf("got calls %+v, want one chat.postMessage", got)
	}
	c := got[0]
	if ch := c.Form.Get("channel"); ch != "#gpu-alerts" {
		t.Errorf("got channel %q, want #gpu-alerts", ch)
	}
	if c.Form.Has("thread_ts") {
		t.Errorf("got thread_ts %q, want a channel message", c.Form.Get("thread_ts"))
	}
	if text := c.Form.Get("text"); !strings.Contains(text, "GPUMemoryLeak") || !strings.Contains(text, "node1") {
		t.Errorf("got fallback text %q, want the alert and the host", text)
	}
	if h := headerText(c.Blocks); !strings.HasPrefix(h, "🔴") || !strings.Contains(h, "GPUMemoryLeak") ||
		!strings.Contains(h, "node1") || !strings.Contains(h, "critical") {
		t.Errorf("got header %q, want 🔴, the alert, the host and the severity", h)
	}
	text, fields := gpuSection(c.Blocks, 0)
	if !strings.Contains(text, "NVIDIA H100 80GB HBM3") || !strings.Contains(text, "node1") ||
		!strings.Contains(text, m.Alerts[0].Summary) {
		t.Errorf("got GPU 0 section %q, want GPU name, host and summary", text)
	}
	wantFields := map[string]string{
		"Value": "1.5 GiB/min", "Trend": "+1.5 GiB/min",
		"Full in": fmt.Sprintf("12m (<!date^%d^{date_short_pretty} {time}|2026-11-29 09:53 UTC>)", notifiertest.Start.Add(12*time.Minute).Unix()),
		"Since":   fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|2026-11-29 09:41 UTC>", notifiertest.Start.Unix()),
	}
	if !reflect.DeepEqual(fields, wantFields) {
		t.Errorf("got fields %v, want %v", fields, wantFields)
	}
	all := allText(c.Blocks)
	for _, want := range []string{"alice", "python train.py --model llama-7b", "docker:3f2a9c1b7e4d", "61 GiB", "bob",
		"jupyter-lab", "last 30 min", Sparkline(m.Alerts[0].History), "team=ml"} {
		if !strings.Contains(all, want) {
			t.Errorf("message does not say %q:\n%s", want, all)
		}
	}

	rec := store.record(t, receiver+"/"+m.Alerts[0].Key)
	if rec == nil || rec.Channel != "C123" || rec.TS != "1764409265.000001" || len(rec.Alerts) != 1 {
		t.Errorf("got record %+v, want channel C123, ts 1764409265.000001 and the alert", rec)
	}
	golden(t, "message.firing.json", c.Form.Get("blocks"))
}

// golden compares JSON with testdata/name by meaning; -update rewrites it.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, []byte(got), "", "  "); err != nil {
		t.Fatalf("%s: got invalid JSON: %v", name, err)
	}
	if *update {
		if err := os.WriteFile(path, append(pretty.Bytes(), '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s: got\n%s\nwant\n%s\n(run go test -update if the change is right)", name, pretty.String(), want)
	}
}

func TestFlowFiringRepeatResolved(t *testing.T) {
	srv := fakeSlack(t, nil)
	store := newMemStore()
	n := newBot(t, srv, store)
	firing := notifiertest.Notification(notifier.StatusFiring)
	notify(t, n, firing)
	notify(t, n, firing) // a retry of a delivered notification posts nothing
	if got := len(srv.Requests()); got != 1 {
		t.Fatalf("after firing twice: got %d calls, want 1", got)
	}
	first := "1764409265.000001"

	repeat := notifiertest.Notification(notifier.StatusFiring)
	repeat.Alerts[0].Repeat = true
	repeat.Alerts[0].At = notifiertest.Start.Add(4 * time.Hour)
	notify(t, n, repeat)
	notify(t, n, repeat) // retried: no second reply

	resolved := notifiertest.Notification(notifier.StatusResolved)
	resolved.Alerts[0].EndsAt = notifiertest.Start.Add(18*time.Minute + 5*time.Second)
	resolved.Alerts[0].At = resolved.Alerts[0].EndsAt
	notify(t, n, resolved)
	notify(t, n, resolved) // retried: no second update

	got := calls(t, srv)
	if len(got) != 4 {
		var methods []string
		for _, c := range got {
			methods = append(methods, c.Method+" "+c.Form.Get("thread_ts"))
		}
		t.Fatalf("got calls %q, want 4 (post, repeat reply, update, resolved reply)", methods)
	}
	reply := got[1]
	if reply.Method != "chat.postMessage" || reply.Form.Get("thread_ts") != first || reply.Form.Get("channel") != "C123" {
		t.Errorf("repeat: got %s channel %q thread_ts %q, want a reply in C123 thread %s",
			reply.Method, reply.Form.Get("channel"), reply.Form.Get("thread_ts"), first)
	}
	if text := reply.Form.Get("text"); !strings.Contains(text, "still firing after 4h") ||
		!strings.Contains(text, "value 1.5 GiB/min") || !strings.Contains(text, "trend +1.5 GiB/min") {
		t.Errorf("repeat: got reply %q, want still firing, value and trend", text)
	}
	if reply.Blocks != nil {
		t.Errorf("repeat: got blocks in a thread reply, want a short text")
	}

	upd := got[2]
	if upd.Method != "chat.update" || upd.Form.Get("ts") != first || upd.Form.Get("channel") != "C123" {
		t.Errorf("resolve: got %s channel %q ts %q, want chat.update of C123 %s",
			upd.Method, upd.Form.Get("channel"), upd.Form.Get("ts"), first)
	}
	if h := headerText(upd.Blocks); !strings.HasPrefix(h, "✅") {
		t.Errorf("resolve: got header %q, want ✅", h)
	}
	text, fields := gpuSection(upd.Blocks, 0)
	if !strings.Contains(text, "✅ *resolved* after 18m5s") {
		t.Errorf("resolve: got GPU 0 section %q, want ✅ resolved after 18m5s", text)
	}
	if _, ok := fields["Value"]; ok || fields["Full in"] != "" || fields["Trend"] != "" {
		t.Errorf("resolve: got fields %v, want no value, trend or time to full: the summary says what is true now", fields)
	}
	if !strings.Contains(text, "GPU 0 on node1: memory.used is 0 B now, under 1 GiB") ||
		!strings.Contains(text, "_Fired: GPU 0 memory keeps growing: 1.5 GiB/min over the last 30 minutes_") {
		t.Errorf("resolve: got GPU 0 section %q, want what is true now and what it fired about", text)
	}
	if !strings.Contains(text, "pid 4242 (alice, python train.py --model llama-7b) exited with the GPU at 99.6% — a CUDA out-of-memory is likely") {
		t.Errorf("resolve: got GPU 0 section %q, want the job that exited and its likely OOM", text)
	}

	done := got[3]
	if done.Method != "chat.postMessage" || done.Form.Get("thread_ts") != first {
		t.Errorf("resolve: got %s thread_ts %q, want a reply in thread %s", done.Method, done.Form.Get("thread_ts"), first)
	}
	if text := done.Form.Get("text"); !strings.HasPrefix(text, "✅ GPUMemoryLeak resolved after 18m5s: GPU 0 on node1: memory.used is 0 B now, under 1 GiB") ||
		!strings.Contains(text, "a CUDA out-of-memory is likely") {
		t.Errorf("resolve: got reply %q, want ✅ resolved after 18m5s, the GPU and the job that exited", text)
	}

	// The alert fires again: a new message, not the old thread.
	again := notifiertest.Notification(notifier.StatusFiring)
	again.Alerts[0].StartsAt = notifiertest.Start.Add(time.Hour)
	notify(t, n, again)
	got = calls(t, srv)
	if last := got[len(got)-1]; len(got) != 5 || last.Method != "chat.postMessage" || last.Form.Has("thread_ts") {
		t.Errorf("firing again: got %d calls, last %s thread_ts %q, want a fifth, new channel message",
			len(got), last.Method, last.Form.Get("thread_ts"))
	}
}

func TestTwoAlertsOneMessage(t *testing.T) {
	srv := fakeSlack(t, nil)
	n := newBot(t, srv, newMemStore())
	notify(t, n, twoGPUs(notifier.StatusFiring))
	got := calls(t, srv)
	if len(got) != 1 {
		t.Fatalf("got %d calls, want one message for both GPUs", len(got))
	}
	for gpu := range 2 {
		if text, fields := gpuSection(got[0].Blocks, gpu); text == "" || fields["Value"] == "" {
			t.Errorf("GPU %d: got section %q fields %v, want a section with its value", gpu, text, fields)
		}
	}

	// GPU 1 resolves: the message shows it resolved and GPU 0 still firing.
	res := twoGPUs(notifier.StatusResolved)
	res.Alerts = res.Alerts[1:]
	notify(t, n, res)
	got = calls(t, srv)
	if len(got) != 3 || got[1].Method != "chat.update" || got[1].Form.Get("ts") != "1764409265.000001" {
		t.Fatalf("got %+v, want chat.update of the first message then a reply", got)
	}
	if text, _ := gpuSection(got[1].Blocks, 1); !strings.Contains(text, "*resolved*") {
		t.Errorf("GPU 1: got %q, want resolved", text)
	}
	if text, _ := gpuSection(got[1].Blocks, 0); strings.Contains(text, "resolved") || !strings.Contains(text, "firing") {
		t.Errorf("GPU 0: got %q, want still firing", text)
	}
	if h := headerText(got[1].Blocks); !strings.HasPrefix(h, "🔴") || !strings.Contains(h, "1 of 2 resolved") {
		t.Errorf("got header %q, want 🔴 and 1 of 2 resolved", h)
	}

	// GPU 0 resolves later: both are resolved in the message.
	res = twoGPUs(notifier.StatusResolved)
	res.Alerts = res.Alerts[:1]
	notify(t, n, res)
	got = calls(t, srv)
	if len(got) != 5 || got[3].Method != "chat.update" {
		t.Fatalf("got %d calls, want a second update and reply", len(got))
	}
	for gpu := range 2 {
		if text, _ := gpuSection(got[3].Blocks, gpu); !strings.Contains(text, "*resolved*") {
			t.Errorf("GPU %d after both resolved: got %q, want resolved", gpu, text)
		}
	}
	if h := headerText(got[3].Blocks); !strings.HasPrefix(h, "✅ Resolved") {
		t.Errorf("got header %q, want ✅ Resolved", h)
	}
}

func TestRetryAfterPartialFailure(t *testing.T) {
	// GPU 0 and GPU 1 fired in two messages and resolve together; updating
	// the second message fails once. The retry must not touch the first.
	updates := 0
	srv := fakeSlack(t, func(_ int, method string, _ url.Values) (notifiertest.Response, bool) {
		if method == "chat.update" {
			updates++
			if updates == 2 {
				return notifiertest.Response{Status: 503, Body: "down"}, true
			}
		}
		return notifiertest.Response{}, false
	})
	n := newBot(t, srv, newMemStore())
	both := twoGPUs(notifier.StatusFiring)
	for i := range both.Alerts {
		one := *both
		one.Alerts = both.Alerts[i : i+1]
		notify(t, n, &one)
	}
	res := twoGPUs(notifier.StatusResolved)
	retry, err := n.Notify(context.Background(), res)
	if err == nil || !retry {
		t.Fatalf("first try: got retry=%v err %v, want a retry after the 503", retry, err)
	}
	notify(t, n, res)
	perThread := map[string]int{}
	for _, c := range calls(t, srv)[2:] {
		perThread[c.Method+" "+c.Form.Get("ts")+c.Form.Get("thread_ts")]++
	}
	want := map[string]int{
		"chat.update 1764409265.000001": 1, "chat.postMessage 1764409265.000001": 1,
		"chat.update 1764409265.000002": 2, "chat.postMessage 1764409265.000002": 1,
	}
	if !reflect.DeepEqual(perThread, want) {
		t.Errorf("got calls %v, want %v", perThread, want)
	}
}

func TestMessageGoneGetsNewMessage(t *testing.T) {
	srv := fakeSlack(t, func(_ int, method string, _ url.Values) (notifiertest.Response, bool) {
		if method == "chat.update" {
			return okJSON(`{"ok":false,"error":"message_not_found"}`), true
		}
		return notifiertest.Response{}, false
	})
	n := newBot(t, srv, newMemStore())
	notify(t, n, notifiertest.Notification(notifier.StatusFiring))
	notify(t, n, notifiertest.Notification(notifier.StatusResolved))
	got := calls(t, srv)
	if len(got) != 3 {
		t.Fatalf("got %d calls, want post, failed update, new post", len(got))
	}
	last := got[2]
	if last.Method != "chat.postMessage" || last.Form.Has("thread_ts") || !strings.HasPrefix(headerText(last.Blocks), "✅") {
		t.Errorf("got %s thread_ts %q header %q, want a new ✅ channel message", last.Method, last.Form.Get("thread_ts"), headerText(last.Blocks))
	}
}

// TestStoreFailureDoesNotRepost: with the store refusing the message
// records (a full disk), an alert still gets one channel message: a retry
// of its notification posts nothing, its repeat replies in the thread and
// its resolve updates the message. The records reach the store once it
// takes writes again.
func TestStoreFailureDoesNotRepost(t *testing.T) {
	srv := fakeSlack(t, nil)
	store := newMemStore()
	store.failPut = errors.New("write state.db: no space left on device")
	var logs bytes.Buffer
	n, err := New(receiver, Config{Channel: "#gpu-alerts"}, Options{BotToken: "xoxb-test", APIURL: srv.URL + "/api/",
		Messages: store, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	firing := notifiertest.Notification(notifier.StatusFiring)
	retry, err := n.Notify(context.Background(), firing)
	if err != nil {
		t.Fatalf("got retry=%v err %v, want delivered: the message is in Slack", retry, err)
	}
	if !strings.Contains(logs.String(), "no space left on device") {
		t.Errorf("got log %q, want the store error", logs.String())
	}
	notify(t, n, firing) // the outbox could not ack it either: sent again
	repeat := notifiertest.Notification(notifier.StatusFiring)
	repeat.Alerts[0].Repeat = true
	repeat.Alerts[0].At = notifiertest.Start.Add(4 * time.Hour)
	notify(t, n, repeat)
	notify(t, n, notifiertest.Notification(notifier.StatusResolved))

	var channelMessages []string
	for _, c := range calls(t, srv) {
		if c.Method == "chat.postMessage" && !c.Form.Has("thread_ts") {
			channelMessages = append(channelMessages, c.Form.Get("text"))
		}
	}
	if len(channelMessages) != 1 {
		t.Errorf("got %d channel messages for one alert, want 1: %q", len(channelMessages), channelMessages)
	}
	if got := calls(t, srv); len(got) != 4 || got[2].Method != "chat.update" {
		t.Errorf("got %d calls, want 4: post, repeat reply, update, resolved reply", len(got))
	}

	store.mu.Lock()
	store.failPut = nil
	store.mu.Unlock()
	other := notifiertest.Notification(notifier.StatusFiring)
	other.Alerts[0].Key, other.Alerts[0].GPU = "node1/GPUMemoryLeak/GPU-other", 1
	notify(t, n, other) // the next delivery writes what waited in memory
	if rec := store.record(t, receiver+"/"+firing.Alerts[0].Key); rec == nil || rec.TS != "1764409265.000001" ||
		rec.Alerts[0].Status != notifier.StatusResolved {
		t.Errorf("after the store recovered: got record %+v, want the first message's, resolved", rec)
	}
}

func TestNoStore(t *testing.T) {
	srv := fakeSlack(t, nil)
	n := newBot(t, srv, nil)
	notify(t, n, notifiertest.Notification(notifier.StatusFiring))
	notify(t, n, notifiertest.Notification(notifier.StatusResolved))
	for i, c := range calls(t, srv) {
		if c.Method != "chat.postMessage" || c.Form.Has("thread_ts") {
			t.Errorf("call %d: got %s thread_ts %q, want a channel message", i, c.Method, c.Form.Get("thread_ts"))
		}
	}
}

func TestWebhook(t *testing.T) {
	srv := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
		return notifiertest.Response{Body: "ok"}
	})
	n, err := New(receiver, Config{WebhookURL: srv.URL + "/services/T0/B0/XyZsecret", Username: "gpuwatch"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	repeat := notifiertest.Notification(notifier.StatusFiring)
	repeat.Alerts[0].Repeat = true
	repeat.Alerts[0].At = notifiertest.Start.Add(4 * time.Hour)
	notify(t, n, notifiertest.Notification(notifier.StatusFiring))
	notify(t, n, repeat)
	notify(t, n, notifiertest.Notification(notifier.StatusResolved))

	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("got %d requests, want one per notification", len(reqs))
	}
	wantHeader := []string{"🔴 GPUMemoryLeak on node1 · critical", "🔴 Still firing: GPUMemoryLeak on node1", "✅ Resolved: GPUMemoryLeak"}
	for i, r := range reqs {
		if r.Method != "POST" || r.Path != "/services/T0/B0/XyZsecret" {
			t.Errorf("request %d: got %s %s, want POST to the webhook path", i, r.Method, r.Path)
		}
		var msg struct {
			Username string           `json:"username"`
			Text     string           `json:"text"`
			Blocks   []map[string]any `json:"blocks"`
		}
		if err := json.Unmarshal(r.Body, &msg); err != nil {
			t.Fatalf("request %d: body is not JSON: %v", i, err)
		}
		if h := headerText(msg.Blocks); !strings.HasPrefix(h, wantHeader[i]) {
			t.Errorf("request %d: got header %q, want it to start with %q", i, h, wantHeader[i])
		}
		if msg.Username != "gpuwatch" || msg.Text == "" {
			t.Errorf("request %d: got username %q text %q, want gpuwatch and a fallback text", i, msg.Username, msg.Text)
		}
		if text, _ := gpuSection(msg.Blocks, 0); text == "" {
			t.Errorf("request %d: no GPU 0 section", i)
		}
	}
}

func TestStatusTable(t *testing.T) {
	t.Run("bot", func(t *testing.T) {
		notifiertest.RunStatusTable(t, `{"ok":true,"channel":"C1","ts":"1.2"}`, func(u string) notifier.Notifier {
			n, err := New(receiver, Config{Channel: "#gpu-alerts"}, Options{BotToken: "xoxb-test", APIURL: u + "/api/"})
			if err != nil {
				t.Fatal(err)
			}
			return n
		})
	})
	t.Run("webhook", func(t *testing.T) {
		notifiertest.RunStatusTable(t, "ok", func(u string) notifier.Notifier {
			n, err := New(receiver, Config{WebhookURL: u + "/services/T0/B0/X"}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			return n
		})
	})
}

func TestSlackAnswers(t *testing.T) {
	cases := []struct {
		name      string
		resp      notifiertest.Response
		retry     bool
		after     time.Duration // a RetryAfterError of this when > 0
		errSays   string
		delivered bool
	}{
		{"ok", okJSON(`{"ok":true,"channel":"C1","ts":"1.2"}`), false, 0, "", true},
		{"channel not found", okJSON(`{"ok":false,"error":"channel_not_found"}`), false, 0, "invite the bot", false},
		{"not in channel", okJSON(`{"ok":false,"error":"not_in_channel"}`), false, 0, "/invite", false},
		{"invalid auth", okJSON(`{"ok":false,"error":"invalid_auth"}`), false, 0, "slack.bot_token", false},
		{"missing scope", okJSON(`{"ok":false,"error":"missing_scope","needed":"chat:write"}`), false, 0, "needed scope chat:write", false},
		{"ratelimited", okJSON(`{"ok":false,"error":"ratelimited"}`), true, 0, "ratelimited", false},
		{"internal error", okJSON(`{"ok":false,"error":"internal_error"}`), true, 0, "internal_error", false},
		{"fatal error", okJSON(`{"ok":false,"error":"fatal_error"}`), true, 0, "fatal_error", false},
		{"service unavailable", okJSON(`{"ok":false,"error":"service_unavailable"}`), true, 0, "", false},
		{"request timeout", okJSON(`{"ok":false,"error":"request_timeout"}`), true, 0, "", false},
		{"429 retry-after", notifiertest.Response{Status: 429, Header: map[string]string{"Retry-After": "30"}}, true, 30 * time.Second, "rate limit", false},
		{"429 bad retry-after", notifiertest.Response{Status: 429, Header: map[string]string{"Retry-After": "soon"}}, true, 0, "", false},
		{"503", notifiertest.Response{Status: 503, Body: "<html>"}, true, 0, "503", false},
		{"404", notifiertest.Response{Status: 404}, false, 0, "404", false},
		{"html 200", notifiertest.Response{Body: "<html>proxy login</html>"}, false, 0, "api_url", false},
		{"empty 200", notifiertest.Response{}, false, 0, "api_url", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return c.resp })
			retry, err := newBot(t, srv, nil).Notify(context.Background(), notifiertest.Notification(notifier.StatusFiring))
			if c.delivered {
				if err != nil {
					t.Fatalf("got %v, want delivered", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got delivered, want an error")
			}
			if retry != c.retry {
				t.Errorf("got retry=%v (%v), want %v", retry, err, c.retry)
			}
			if !strings.Contains(err.Error(), c.errSays) || !strings.HasPrefix(err.Error(), "slack chat.postMessage: ") {
				t.Errorf("got error %q, want it to name the call and say %q", err, c.errSays)
			}
			var ra *notifier.RetryAfterError
			if got := errors.As(err, &ra); got != (c.after > 0) || (got && ra.After != c.after) {
				t.Errorf("got RetryAfterError %v (%v), want one of %v: %v", got, ra, c.after, err)
			}
		})
	}
}

func TestNoSecretsInErrors(t *testing.T) {
	const token = "xoxb-SECRET-TOKEN-123"
	const secretPath = "/services/T0SECRET/B0SECRET/hunter2hunter2"
	down := notifiertest.NewServer(t, nil)
	down.Close() // an address nobody answers
	failing := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
		return notifiertest.Response{Status: 500, Body: "error at " + secretPath}
	})
	hang := make(chan struct{})
	slow := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
		<-hang
		return notifiertest.Response{}
	})
	defer close(hang)
	for _, base := range []struct{ name, url string }{{"unreachable", down.URL}, {"500", failing.URL}, {"timeout", slow.URL}} {
		for _, mode := range []string{"bot", "webhook"} {
			hook := base.url + secretPath
			var logs bytes.Buffer
			cfg := Config{Channel: "#gpu-alerts"}
			if mode == "webhook" {
				cfg = Config{WebhookURL: hook}
			}
			n, err := New(receiver, cfg, Options{BotToken: token, APIURL: base.url + "/api/", Timeout: 200 * time.Millisecond,
				Messages: newMemStore(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			retry, err := n.Notify(context.Background(), notifiertest.Notification(notifier.StatusFiring))
			if err == nil || !retry {
				t.Errorf("%s %s: got retry=%v err %v, want a retried error", base.name, mode, retry, err)
				continue
			}
			where := base.name + " " + mode
			notifiertest.AssertNoSecrets(t, where+" error", err.Error(), token, hook, secretPath, "hunter2hunter2")
			notifiertest.AssertNoSecrets(t, where+" log", logs.String(), token, hook, secretPath)
			for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
				notifiertest.AssertNoSecrets(t, where+" wrapped error", e.Error(), token, hook, secretPath)
			}
		}
	}
}

func TestConfigCheck(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		token   bool
		problem string // "" when fine; else a part of the one problem
	}{
		{"channel with token", Config{Channel: "#gpu-alerts"}, true, ""},
		{"channel ID", Config{Channel: "C0123456789"}, true, ""},
		{"webhook", Config{WebhookURL: "https://hooks.slack.com/services/T0/B0/X"}, false, ""},
		{"webhook on loopback http", Config{WebhookURL: "http://127.0.0.1:8080/hook"}, false, ""},
		{"webhook on localhost http", Config{WebhookURL: "http://localhost/hook"}, false, ""},
		{"webhook on ::1 http", Config{WebhookURL: "http://[::1]:9/hook"}, false, ""},
		{"nothing", Config{}, true, "set slack.channel (with slack.bot_token) or slack.webhook_url"},
		{"both", Config{Channel: "#a", WebhookURL: "https://hooks.slack.com/x"}, true, "only one"},
		{"channel without token", Config{Channel: "#gpu-alerts"}, false, "set slack.bot_token (e.g. ${SLACK_BOT_TOKEN}) or use webhook_url"},
		{"bare #", Config{Channel: "#"}, true, "not a channel"},
		{"channel with space", Config{Channel: "#gpu alerts"}, true, "not a channel"},
		{"http webhook", Config{WebhookURL: "http://hooks.example.com/services/SECRET"}, false, "must be https"},
		{"not a URL", Config{WebhookURL: "hooks.slack.com/services/SECRET"}, false, "not a URL"},
		{"bad URL", Config{WebhookURL: "https://%zz/SECRET"}, false, "not a URL"},
		{"ftp", Config{WebhookURL: "ftp://x/SECRET"}, false, "not a URL"},
		{"username", Config{WebhookURL: "https://hooks.slack.com/x", Username: "a\nb"}, false, "control characters"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.cfg.Check(c.token)
			switch {
			case c.problem == "" && len(got) > 0:
				t.Errorf("got %q, want no problem", got)
			case c.problem != "" && (len(got) != 1 || !strings.Contains(got[0], c.problem)):
				t.Errorf("got %q, want one problem saying %q", got, c.problem)
			}
			for _, p := range got {
				notifiertest.AssertNoSecrets(t, "problem", p, "SECRET")
			}
			_, err := New(receiver, c.cfg, Options{BotToken: map[bool]string{true: "xoxb-1"}[c.token]})
			if (err == nil) != (len(got) == 0) {
				t.Errorf("New: got %v, want an error exactly when Check finds problems", err)
			}
		})
	}
}

func TestSparkline(t *testing.T) {
	nan := notifier.Float(math.NaN())
	cases := []struct {
		in   []notifier.Float
		want string
	}{
		{nil, ""},
		{[]notifier.Float{nan, nan}, ""},
		{[]notifier.Float{0, 1, 2, 3, 4, 5, 6, 7}, "▁▂▃▄▅▆▇█"},
		{[]notifier.Float{5, 5, 5}, "▄▄▄"},
		{[]notifier.Float{0, nan, 10, notifier.Float(math.Inf(1))}, "▁ █ "},
		{[]notifier.Float{-1, 1}, "▁█"},
	}
	for _, c := range cases {
		if got := Sparkline(c.in); got != c.want {
			t.Errorf("Sparkline(%v): got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestFormat(t *testing.T) {
	durations := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"}, {45 * time.Second, "45s"}, {12 * time.Minute, "12m"}, {18*time.Minute + 5*time.Second, "18m5s"},
		{4 * time.Hour, "4h"}, {4*time.Hour + 5*time.Minute + 9*time.Second, "4h5m"}, {51 * time.Hour, "2d3h"}, {-time.Second, "0s"},
	}
	for _, c := range durations {
		if got := shortDuration(c.in); got != c.want {
			t.Errorf("shortDuration(%v): got %q, want %q", c.in, got, c.want)
		}
	}
	values := []struct {
		v    float64
		unit string
		want string
	}{
		{61 << 30, "bytes", "61 GiB"}, {1.5 * (1 << 30), "bytes", "1.5 GiB"}, {512, "bytes", "512 B"},
		{97.4, "percent", "97%"}, {86, "C", "86 C"}, {86, "degrees Celsius", "86 C"}, {300, "W", "300 W"}, {720, "seconds", "12m"},
		{3, "", "3"}, {2.5, "xids", "2.5 xids"}, {math.NaN(), "bytes", "n/a"},
	}
	for _, c := range values {
		if got := formatValue(c.v, c.unit); got != c.want {
			t.Errorf("formatValue(%v, %q): got %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}

func TestManyGPUsFitSlackLimits(t *testing.T) {
	m := notifiertest.Notification(notifier.StatusFiring)
	base := m.Alerts[0]
	m.Alerts = nil
	for i := range 16 {
		a := base
		a.GPU, a.Key = i, fmt.Sprintf("node1/GPUMemoryLeak/GPU-%d", i)
		a.Summary = strings.Repeat("long summary ", 400)
		m.Alerts = append(m.Alerts, a)
	}
	blocks, text := render(m.Alerts, time.Time{})
	if len(blocks) > 50 {
		t.Errorf("got %d blocks, want at most Slack's 50", len(blocks))
	}
	b, _ := json.Marshal(blocks)
	var decoded []map[string]any
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	for _, blk := range decoded {
		if n := len([]rune(textOf(blk["text"]))); n > 3000 {
			t.Errorf("a %s block has %d characters, want at most 3000", blk["type"], n)
		}
	}
	if !strings.Contains(allText(decoded), "… and 7 more") {
		t.Errorf("want the GPUs beyond the limit summed up")
	}
	if !strings.Contains(text, "… and 11 more") {
		t.Errorf("got fallback %q, want the alerts beyond 5 summed up", text)
	}
}

// TestUnreadableRecordSetAside: a message record that cannot be read is
// set aside (its bytes kept), not deleted, and the alert gets a new
// message.
func TestUnreadableRecordSetAside(t *testing.T) {
	srv := fakeSlack(t, nil)
	store := newMemStore()
	resolved := notifiertest.Notification(notifier.StatusResolved)
	key := receiver + "/" + resolved.Alerts[0].Key
	store.m[key] = []byte(`{"channel":"C123","ts":`)
	notify(t, newBot(t, srv, store), resolved)
	if why := store.aside[key]; why == nil || !strings.Contains(why.Error(), "decode slack message record") {
		t.Errorf("set aside: %v, want the record, saying why", store.aside)
	}
	if got := calls(t, srv); len(got) != 1 || got[0].Method != "chat.postMessage" || got[0].Form.Get("thread_ts") != "" {
		t.Errorf("got %d calls, want one new message", len(got))
	}
}

// TestRetryAfterHTTPDate: Slack's 503 with a Retry-After that is an HTTP
// date five seconds ahead is retried after five seconds.
func TestRetryAfterHTTPDate(t *testing.T) {
	srv := fakeSlack(t, func(int, string, url.Values) (notifiertest.Response, bool) {
		return notifiertest.RetryAt(http.StatusServiceUnavailable, 5*time.Second), true
	})
	_, err := newBot(t, srv, newMemStore()).Notify(context.Background(), notifiertest.Notification(notifier.StatusFiring))
	var ra *notifier.RetryAfterError
	if !errors.As(err, &ra) || ra.After != 5*time.Second {
		t.Errorf("HTTP 503 with Retry-After a date 5s ahead: got %v, want a retry after 5s", err)
	}
}
