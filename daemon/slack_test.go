package daemon_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
	slacknotifier "github.com/gpuwatch/gpuwatch/notifier/slack"
)

// slackCall is one Web API call the fake Slack received, decoded.
type slackCall struct {
	Method string
	Form   url.Values
	TS     string // the ts the fake answered a chat.postMessage with
}

// fakeSlack plays Slack's Web API under /api/: chat.postMessage answers
// ts "N.0001" for its N-th request (1-based), chat.update echoes the ts;
// channel "#gone" does not exist.
func fakeSlack(t testing.TB) *notifiertest.Server {
	return notifiertest.NewServer(t, func(n int, r *notifiertest.Request) notifiertest.Response {
		form, _ := url.ParseQuery(string(r.Body))
		body := `{"ok":false,"error":"unknown_method"}`
		switch method := strings.TrimPrefix(r.Path, "/api/"); {
		case form.Get("channel") == "#gone":
			body = `{"ok":false,"error":"channel_not_found"}`
		case method == "chat.postMessage":
			body = fmt.Sprintf(`{"ok":true,"channel":"C1","ts":"%d.0001"}`, n+1)
		case method == "chat.update":
			body = fmt.Sprintf(`{"ok":true,"channel":"C1","ts":%q,"text":""}`, form.Get("ts"))
		case method == "auth.test":
			// A token without files:write: these tests are about messages;
			// cli's TestRunLeakUploadsChart follows charts.
			return notifiertest.Response{Body: `{"ok":true}`, Header: map[string]string{"Content-Type": "application/json", "X-OAuth-Scopes": "chat:write"}}
		}
		return notifiertest.Response{Body: body, Header: map[string]string{"Content-Type": "application/json"}}
	})
}

func slackCalls(t testing.TB, srv *notifiertest.Server) []slackCall {
	t.Helper()
	var out []slackCall
	for i, r := range srv.Requests() {
		if r.Path == "/api/auth.test" {
			continue // the scope check at start
		}
		form, err := url.ParseQuery(string(r.Body))
		if err != nil {
			t.Fatalf("request %d to %s: the body is not a form: %v", i, r.Path, err)
		}
		c := slackCall{Method: strings.TrimPrefix(r.Path, "/api/"), Form: form}
		if c.Method == "chat.postMessage" {
			c.TS = fmt.Sprintf("%d.0001", i+1)
		}
		out = append(out, c)
	}
	return out
}

// slackConfig has two bot-mode Slack receivers: "slack" posts to #gpu,
// "gone" to a channel that does not exist. Every GPUHot alert goes to both.
func slackConfig(apiURL string) string {
	return fmt.Sprintf(`
source:
  type: sim
slack:
  bot_token: ${SLACK_BOT_TOKEN}
  api_url: %s/api/
receivers:
  - name: slack
    slack: {channel: "#gpu"}
  - name: gone
    slack: {channel: "#gone"}
route:
  receiver: slack
  group_wait: 1ns
  routes:
    - {receiver: gone, matchers: ['alert="GPUHot"'], continue: true}
    - {receiver: slack, matchers: ['alert="GPUHot"']}
%s`, apiURL, hotRule)
}

// TestSlackThroughDaemon: a firing alert is a chat.postMessage; its
// resolution updates that message in place and replies in its thread; a
// channel Slack does not know turns both into dead letters the API shows.
func TestSlackThroughDaemon(t *testing.T) {
	fake := fakeSlack(t)
	dir := t.TempDir()
	env := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1111-2222-daemontest"}
	r := start(t, parseConfig(t, dir, slackConfig(fake.URL), env), nil)

	r.Steps(base, 10*time.Second, []float64{90}, []float64{90})
	var posted slackCall
	waitFor(t, "chat.postMessage to #gpu", func() bool {
		i := slices.IndexFunc(slackCalls(t, fake), func(c slackCall) bool {
			return c.Method == "chat.postMessage" && c.Form.Get("channel") == "#gpu"
		})
		if i >= 0 {
			posted = slackCalls(t, fake)[i]
		}
		return i >= 0
	})
	if posted.Form.Get("thread_ts") != "" {
		t.Errorf("firing post: got thread_ts %q, want a new channel message", posted.Form.Get("thread_ts"))
	}
	if got := posted.Form.Get("text"); !strings.Contains(got, "GPUHot") || !strings.Contains(got, "node1 GPU 0") {
		t.Errorf("firing post text: got %q, want the alert, host and GPU", got)
	}
	if got, tok := posted.Form.Get("token"), fake.Requests()[0].Header.Get("Authorization"); got != env["SLACK_BOT_TOKEN"] && tok != "Bearer "+env["SLACK_BOT_TOKEN"] {
		t.Errorf("the firing post carries token %q, Authorization %q: want the bot token in one of them", got, tok)
	}
	r.Drain()

	r.Steps(base.Add(time.Minute), 10*time.Second, []float64{50}, []float64{50})
	r.Drain()
	var update, reply []slackCall
	for _, c := range slackCalls(t, fake) {
		switch {
		case c.Method == "chat.update":
			update = append(update, c)
		case c.Method == "chat.postMessage" && c.Form.Get("thread_ts") != "":
			reply = append(reply, c)
		}
	}
	if len(update) != 1 {
		t.Fatalf("chat.update calls: got %d, want 1", len(update))
	}
	if got := update[0].Form; got.Get("channel") != "C1" || got.Get("ts") != posted.TS {
		t.Errorf("chat.update of channel %q ts %q, want C1 %q (the firing message)", got.Get("channel"), got.Get("ts"), posted.TS)
	}
	if got := update[0].Form.Get("text"); !strings.Contains(got, "resolved") {
		t.Errorf("updated text: got %q, want it marked resolved", got)
	}
	if len(reply) != 1 {
		t.Fatalf("thread replies: got %d, want 1", len(reply))
	}
	if got := reply[0].Form; got.Get("thread_ts") != posted.TS || got.Get("channel") != "C1" {
		t.Errorf("thread reply in channel %q thread %q, want C1 %q", got.Get("channel"), got.Get("thread_ts"), posted.TS)
	}
	if got := reply[0].Form.Get("text"); !strings.Contains(got, "resolved") {
		t.Errorf("thread reply: got %q, want it to say resolved", got)
	}

	// The receiver whose channel does not exist: two dead letters.
	out := r.Outbox()
	var statuses []string
	for _, dl := range out.DeadLetters {
		if dl.Receiver != "gone" {
			t.Errorf("dead letter of receiver %q: want only receiver gone's", dl.Receiver)
			continue
		}
		statuses = append(statuses, dl.Status)
		if !strings.Contains(dl.Reason, "channel_not_found") {
			t.Errorf("dead letter reason: got %q, want Slack's channel_not_found", dl.Reason)
		}
		if dl.Attempts != 1 {
			t.Errorf("dead letter attempts: got %d, want 1 (channel_not_found is permanent)", dl.Attempts)
		}
		if want := []string{"GPUHot on GPU 0"}; !slices.Equal(dl.Alerts, want) {
			t.Errorf("dead letter alerts: got %v, want %v", dl.Alerts, want)
		}
	}
	slices.Sort(statuses)
	if want := []string{"firing", "resolved"}; !slices.Equal(statuses, want) {
		t.Errorf("dead letters: got statuses %v, want %v", statuses, want)
	}
	if got := out.Pending; got["gone"] != 0 || got["slack"] != 0 {
		t.Errorf("pending: got %v, want both receivers empty", got)
	}
	if !strings.Contains(r.Logs.String(), "refused a notification for good") {
		t.Errorf("the log does not say a notification was refused for good:\n%s", r.Logs)
	}
}

// TestAcknowledgementKeptOnRedraw: GPU 0's and GPU 1's alerts share one
// Slack message; GPU 0's is acknowledged with the button; when GPU 1's
// resolves, chat.update redraws the message and must still say who
// acknowledged GPU 0, without its buttons coming back.
func TestAcknowledgementKeptOnRedraw(t *testing.T) {
	fake := fakeSlack(t)
	respond := notifiertest.NewServer(t, nil) // response_url
	dir := t.TempDir()
	env := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1111-2222-acktest", "SLACK_SIGNING_SECRET": signingSecret}
	cfg := parseConfig(t, dir, fmt.Sprintf(`
source: {type: sim}
slack:
  bot_token: ${SLACK_BOT_TOKEN}
  signing_secret: ${SLACK_SIGNING_SECRET}
  api_url: %s/api/
receivers: [{name: slack, slack: {channel: "#gpu"}}]
route: {receiver: slack, group_wait: 1ns}
%s`, fake.URL, hotRule), env)
	r := start(t, cfg, newClock(base).Now)
	r.Steps(base, 10*time.Second, []float64{90, 90}, []float64{90, 90})
	r.Drain()
	if n := len(slackCalls(t, fake)); n != 1 {
		t.Fatalf("got %d Slack calls, want one message for both GPUs", n)
	}

	clickAcknowledge(t, r.D.SlackHandler(), respond.URL+"/actions/1", alertKey("GPUHot", 0))
	waitFor(t, "the acknowledgement", func() bool {
		a := r.D.Alerts()
		return len(a) > 0 && a[0].Acknowledged != ""
	})

	r.Steps(base.Add(time.Minute), 10*time.Second, []float64{90, 50}, []float64{90, 50})
	r.Drain()
	var update *slackCall
	for _, c := range slackCalls(t, fake) {
		if c.Method == "chat.update" {
			update = &c
		}
	}
	if update == nil {
		t.Fatal("got no chat.update after GPU 1 resolved")
	}
	blocks := update.Form.Get("blocks")
	if !strings.Contains(blocks, `Acknowledged by \u003c@U123\u003e`) {
		t.Errorf("the redrawn message: got blocks\n%s\nwant GPU 0 acknowledged by <@U123>", blocks)
	}
	if strings.Contains(blocks, slacknotifier.ActionAcknowledge) {
		t.Errorf("the redrawn message: got an Acknowledge button back\n%s", blocks)
	}
}
