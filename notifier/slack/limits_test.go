package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// strictSlack is fakeSlack refusing, as Slack does, a message with a text
// over 3,000 characters (invalid_blocks), counted as sent: escaped.
func strictSlack(t testing.TB) *notifiertest.Server {
	return fakeSlack(t, func(_ int, _ string, form url.Values) (notifiertest.Response, bool) {
		if overLimit(form.Get("blocks")) {
			return okJSON(`{"ok":false,"error":"invalid_blocks"}`), true
		}
		return notifiertest.Response{}, false
	})
}

// overLimit reports whether any text of the blocks is over 3,000
// characters or a header over 150.
func overLimit(blocks string) bool {
	if blocks == "" {
		return false
	}
	var decoded []map[string]any
	if json.Unmarshal([]byte(blocks), &decoded) != nil {
		return true
	}
	over := false
	var walk func(v any, header bool)
	walk = func(v any, header bool) {
		switch v := v.(type) {
		case map[string]any:
			if s, ok := v["text"].(string); ok {
				n := utf8.RuneCountInString(s)
				over = over || n > 3000 || (header && n > 150)
			}
			for _, x := range v {
				walk(x, header)
			}
		case []any:
			for _, x := range v {
				walk(x, header)
			}
		}
	}
	for _, b := range decoded {
		walk(b, b["type"] == "header")
	}
	return over
}

// hostileAlert is an alert whose user text is as long as it may be and made
// of characters mrkdwn must escape: escaped, each & is five characters.
func hostileAlert(status notifier.Status) *notifier.Notification {
	m := notifiertest.Notification(status)
	a := &m.Alerts[0]
	a.Summary = strings.Repeat("&", 600)
	a.Description = strings.Repeat("<>", 300)
	a.GPUName = strings.Repeat("&", 300)
	a.Host = strings.Repeat("<", 300)
	a.ValueText = strings.Repeat("&", 300)
	a.Labels["team"] = strings.Repeat("&", 700)
	for i := range a.Processes {
		a.Processes[i].Command = strings.Repeat("&", 500)
		a.Processes[i].User = strings.Repeat(">", 100)
	}
	return m
}

// TestHostileTextFitsSlack is the alert Slack refused for good: a summary
// clipped to 600 characters and then escaped passed 3,000. Escaped and
// then clipped, every part fits, so the message goes with its blocks.
func TestHostileTextFitsSlack(t *testing.T) {
	srv := strictSlack(t)
	n := newBot(t, srv, newMemStore())
	notify(t, n, hostileAlert(notifier.StatusFiring))
	notify(t, n, hostileAlert(notifier.StatusResolved))
	got := calls(t, srv)
	if len(got) != 3 {
		t.Fatalf("got %d calls, want the post, the update and the thread reply", len(got))
	}
	for i, c := range got {
		if overLimit(c.Form.Get("blocks")) {
			t.Errorf("call %d (%s): blocks over Slack's limits", i, c.Method)
		}
		if c.Method != "chat.postMessage" || c.Form.Get("thread_ts") == "" {
			if len(c.Blocks) == 0 {
				t.Errorf("call %d (%s): got no blocks, want the message with its blocks", i, c.Method)
			}
		}
		if n := utf8.RuneCountInString(c.Form.Get("text")); n > blockkit.MaxMessageText {
			t.Errorf("call %d (%s): text of %d characters", i, c.Method, n)
		}
	}
	blocks, text := render(hostileAlert(notifier.StatusFiring).Alerts, notifiertest.Start)
	if err := blockkit.ValidateMessage(text, blocks); err != nil {
		t.Errorf("the hostile alert's message does not validate: %v", err)
	}
}

// TestRefusedBlocksGoAsPlainText checks that a message Slack refuses for
// its blocks is sent again as plain text, in every way a message goes out:
// a new message, an update, a webhook post, a digest.
func TestRefusedBlocksGoAsPlainText(t *testing.T) {
	refuseBlocks := func(_ int, _ string, form url.Values) (notifiertest.Response, bool) {
		if form.Get("blocks") != "" && form.Get("blocks") != "[]" {
			return okJSON(`{"ok":false,"error":"invalid_blocks"}`), true
		}
		return notifiertest.Response{}, false
	}
	t.Run("bot", func(t *testing.T) {
		srv := fakeSlack(t, refuseBlocks)
		var logs bytes.Buffer
		n, err := New(receiver, Config{Channel: "#gpu-alerts"}, Options{BotToken: "xoxb-test", APIURL: srv.URL + "/api/",
			HTTPClient: srv.Client(), Messages: newMemStore(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		notify(t, n, notifiertest.Notification(notifier.StatusFiring))
		notify(t, n, notifiertest.Notification(notifier.StatusResolved))
		got := calls(t, srv)
		var methods []string
		for _, c := range got {
			methods = append(methods, c.Method)
		}
		want := "chat.postMessage chat.postMessage chat.update chat.update chat.postMessage"
		if strings.Join(methods, " ") != want {
			t.Fatalf("got calls %v, want %s (each refused message again as text)", methods, want)
		}
		for _, i := range []int{1, 3} {
			if text := got[i].Form.Get("text"); len(got[i].Blocks) != 0 || !strings.Contains(text, "GPUMemoryLeak") || !strings.Contains(text, "python train.py") {
				t.Errorf("call %d: got blocks %v text %q, want the whole alert as text alone", i, got[i].Blocks, got[i].Form.Get("text"))
			}
		}
		if got[3].Form.Get("blocks") != "[]" {
			t.Errorf("the plain update: got blocks %q, want [] to clear the old ones", got[3].Form.Get("blocks"))
		}
		if !strings.Contains(logs.String(), "sending it as plain text") {
			t.Errorf("got log\n%s\nwant the refusal logged", logs.String())
		}
	})
	t.Run("webhook", func(t *testing.T) {
		srv := notifiertest.NewServer(t, func(_ int, r *notifiertest.Request) notifiertest.Response {
			if bytes.Contains(r.Body, []byte(`"blocks"`)) {
				return notifiertest.Response{Status: 400, Body: "invalid_blocks"}
			}
			return notifiertest.Response{Body: "ok"}
		})
		n, err := New(receiver, Config{WebhookURL: srv.URL + "/services/T0/B0/X"}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		notify(t, n, notifiertest.Notification(notifier.StatusFiring))
		notify(t, n, digestNotification(digestBlocksJSON))
		reqs := srv.Requests()
		if len(reqs) != 4 {
			t.Fatalf("got %d requests, want each message twice: with blocks, then as text", len(reqs))
		}
		for i, want := range []string{"GPU 0 memory keeps growing", "*GPU 0* avg 61%"} {
			var msg struct {
				Text   string `json:"text"`
				Blocks []any  `json:"blocks"`
			}
			if err := json.Unmarshal(reqs[2*i+1].Body, &msg); err != nil {
				t.Fatal(err)
			}
			if len(msg.Blocks) != 0 || !strings.Contains(msg.Text, want) {
				t.Errorf("request %d: got %+v, want text alone saying %q", 2*i+1, msg, want)
			}
		}
	})
}

// TestInvalidBlocksNeverSent checks that blocks breaking a limit (a bug in
// gpuwatch) are not sent: the text goes alone and the bug is logged.
func TestInvalidBlocksNeverSent(t *testing.T) {
	srv := fakeSlack(t, nil)
	var logs bytes.Buffer
	n, err := New(receiver, Config{Channel: "#gpu-alerts"}, Options{BotToken: "xoxb-test", APIURL: srv.URL + "/api/",
		HTTPClient: srv.Client(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	blocks := []goslack.Block{goslack.NewSectionBlock(mrkdwn(strings.Repeat("x", 3001)), nil, nil)}
	if _, _, err := n.post(context.Background(), "", blocks, "text"); err != nil {
		t.Fatal(err)
	}
	got := calls(t, srv)
	if len(got) != 1 || len(got[0].Blocks) != 0 || got[0].Form.Get("text") != blockkit.ClipEscaped(strings.Repeat("x", 3001), 40000) {
		t.Fatalf("got calls %+v, want one with the plain text alone", got)
	}
	if !strings.Contains(logs.String(), "a gpuwatch bug") {
		t.Errorf("got log\n%s\nwant the bug logged", logs.String())
	}
}
