package slackbot

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

const alertKey = "node1/GPUMemoryLeak/GPU-0000"

// alertMessageBlocks are a message of two alerts as notifier/slack posts
// it: each alert's section and its buttons, one row with a runbook link
// that is not ours.
const alertMessageBlocks = `[
 {"type":"section","block_id":"s0","text":{"type":"mrkdwn","text":"🔥 *GPUMemoryLeak* on GPU 0 of node1"}},
 {"type":"actions","block_id":"gpuwatch_actions_0","elements":[
  {"type":"button","action_id":"gpuwatch_silence_1h","text":{"type":"plain_text","text":"Silence 1h"},"value":"` + alertKey + `"},
  {"type":"button","action_id":"gpuwatch_silence_24h","text":{"type":"plain_text","text":"Silence 24h"},"value":"` + alertKey + `"},
  {"type":"button","action_id":"gpuwatch_ack","text":{"type":"plain_text","text":"Acknowledge"},"value":"` + alertKey + `"},
  {"type":"button","action_id":"runbook","text":{"type":"plain_text","text":"Runbook"},"url":"https://wiki.example/runbook"}]},
 {"type":"section","block_id":"s1","text":{"type":"mrkdwn","text":"🔥 *GPUMemoryLeak* on GPU 1 of node1"}},
 {"type":"actions","block_id":"gpuwatch_actions_1","elements":[
  {"type":"button","action_id":"gpuwatch_silence_1h","text":{"type":"plain_text","text":"Silence 1h"},"value":"node1/GPUMemoryLeak/GPU-0001"},
  {"type":"button","action_id":"gpuwatch_silence_24h","text":{"type":"plain_text","text":"Silence 24h"},"value":"node1/GPUMemoryLeak/GPU-0001"},
  {"type":"button","action_id":"gpuwatch_ack","text":{"type":"plain_text","text":"Acknowledge"},"value":"node1/GPUMemoryLeak/GPU-0001"}]}
]`

// actionPayload is a block_actions payload of a click on actionID, in the
// first alert's buttons, by user.
func actionPayload(actionID, value, userID, userName, channelID, responseURL string) string {
	return actionPayloadIn("gpuwatch_actions_0", actionID, value, userID, userName, channelID, responseURL)
}

// actionPayloadIn is a click on a button of block blockID.
func actionPayloadIn(blockID, actionID, value, userID, userName, channelID, responseURL string) string {
	p := map[string]any{
		"type":      "block_actions",
		"user":      map[string]string{"id": userID, "username": userName, "name": userName, "team_id": "T1"},
		"team":      map[string]string{"id": "T1", "domain": "lab"},
		"container": map[string]any{"type": "message", "message_ts": "1700000000.000100", "channel_id": channelID},
		"channel":   map[string]string{"id": channelID, "name": "gpu"},
		"message": map[string]any{
			"type": "message", "ts": "1700000000.000100", "text": "GPUMemoryLeak firing on node1 GPU 0",
			"blocks": json.RawMessage(alertMessageBlocks),
		},
		"response_url": responseURL,
		"actions": []map[string]any{{
			"type": "button", "action_id": actionID, "block_id": blockID, "value": value, "action_ts": "1700000001.1",
			"text": map[string]string{"type": "plain_text", "text": "Silence"},
		}},
	}
	b, _ := json.Marshal(p)
	return string(b)
}

// click posts a signed button click and returns what response_url got.
func (ta *testApp) click(t *testing.T, actionID, value, userID, userName, channelID string) []notifiertest.Request {
	t.Helper()
	return ta.clickIn(t, "gpuwatch_actions_0", actionID, value, userID, userName, channelID)
}

// clickIn posts a click on a button of block blockID.
func (ta *testApp) clickIn(t *testing.T, blockID, actionID, value, userID, userName, channelID string) []notifiertest.Request {
	t.Helper()
	slack := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
		return notifiertest.Response{Body: `{"ok":true}`}
	})
	body := url.Values{"payload": {actionPayloadIn(blockID, actionID, value, userID, userName, channelID, slack.URL+"/actions/T1/1/x")}}.Encode()
	w := httptest.NewRecorder()
	ta.Handler().ServeHTTP(w, signed("/slack/actions", body))
	if w.Code != http.StatusOK {
		t.Fatalf("click %s: got HTTP %d %q, want 200", actionID, w.Code, w.Body)
	}
	if w.Body.Len() != 0 {
		t.Errorf("click %s: got body %q, want none (the answer goes to response_url)", actionID, w.Body)
	}
	ta.wait()
	reqs := slack.Requests()
	for _, r := range reqs {
		if r.Path != "/actions/T1/1/x" {
			t.Errorf("click %s: got a post to %s, want /actions/T1/1/x", actionID, r.Path)
		}
		assertNoSecret(t, "response_url post", string(r.Body))
	}
	assertNoSecret(t, "log", ta.log.String())
	return reqs
}

func TestButtonSilences(t *testing.T) {
	cases := []struct {
		action string
		d      time.Duration
		line   string
	}{
		{ActionSilence1h, time.Hour, "🔕 Silenced for 1h by <@U0ADMIN>"},
		{ActionSilence24h, 24 * time.Hour, "🔕 Silenced for 1d by <@U0ADMIN>"},
	}
	for _, c := range cases {
		ta := newTestApp(t, 4, nil)
		reqs := ta.click(t, c.action, alertKey, "U0ADMIN", "admin", "C0GPU")
		if len(ta.b.added) != 1 {
			t.Fatalf("%s: got %d silences added, want 1", c.action, len(ta.b.added))
		}
		s := ta.b.added[0]
		if got, want := s.Matchers.String(), `{alert="GPUMemoryLeak", uuid="GPU-0000", host="node1"}`; got != want {
			t.Errorf("%s: got matchers %s, want %s", c.action, got, want)
		}
		if !s.StartsAt.Equal(testNow) || s.EndsAt.Sub(s.StartsAt) != c.d || s.CreatedBy != "admin (U0ADMIN)" {
			t.Errorf("%s: got %s to %s by %q, want %s from now by admin (U0ADMIN)", c.action, s.StartsAt, s.EndsAt, s.CreatedBy, c.d)
		}
		checkUpdated(t, c.action, reqs, c.line, "runbook")
	}
}

func TestButtonAcknowledges(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	reqs := ta.click(t, ActionAcknowledge, alertKey, "U0ADMIN", "admin", "C0GPU")
	if len(ta.b.acks) != 1 || ta.b.acks[0] != [2]string{alertKey, "admin (U0ADMIN)"} {
		t.Errorf("acknowledge: got %q, want [%s admin (U0ADMIN)]", ta.b.acks, alertKey)
	}
	if len(ta.b.added) != 0 {
		t.Errorf("acknowledge: got %d silences, want none", len(ta.b.added))
	}
	// The alert can still be silenced from its message.
	checkUpdated(t, "acknowledge", reqs, "👀 Acknowledged by <@U0ADMIN>", "gpuwatch_silence_1h,gpuwatch_silence_24h,runbook")
}

// checkUpdated checks the one post that replaces the alert message: the
// clicked alert's buttons left as buttons, followed by the context line,
// the runbook link and the other alert's buttons kept.
func checkUpdated(t *testing.T, what string, reqs []notifiertest.Request, line, buttons string) {
	t.Helper()
	k := updated(t, what, reqs)
	if got := blockTypes(k); got != "section,actions,context,section,actions" {
		t.Fatalf("%s: got blocks %s, want section,actions (the runbook),context,section,actions (the other alert's)", what, got)
	}
	if got := actionIDs(k, 1); got != buttons {
		t.Errorf("%s: got the clicked row's buttons %q, want %s", what, got, buttons)
	}
	if got := actionIDs(k, 4); got != "gpuwatch_silence_1h,gpuwatch_silence_24h,gpuwatch_ack" {
		t.Errorf("%s: got the other alert's buttons %q, want them all", what, got)
	}
	if got := k.texts("section"); len(got) != 2 || got[0] != "🔥 *GPUMemoryLeak* on GPU 0 of node1" {
		t.Errorf("%s: got sections %q, want the original ones", what, got)
	}
	if got := k.texts("context"); len(got) != 1 || got[0] != line {
		t.Errorf("%s: got context %q, want %q", what, got, line)
	}
}

// updated decodes the one post to response_url, which must replace the
// original message and keep its text.
func updated(t *testing.T, what string, reqs []notifiertest.Request) kit {
	t.Helper()
	if len(reqs) != 1 {
		t.Fatalf("%s: got %d posts to response_url, want 1", what, len(reqs))
	}
	k := decodeKit(t, reqs[0].Body)
	if !k.ReplaceOriginal {
		t.Errorf("%s: got replace_original false, want true", what)
	}
	if k.Text != "GPUMemoryLeak firing on node1 GPU 0" {
		t.Errorf("%s: got text %q, want the original message's", what, k.Text)
	}
	return k
}

func blockTypes(k kit) string {
	var types []string
	for _, b := range k.Blocks {
		types = append(types, b.Type)
	}
	return strings.Join(types, ",")
}

func actionIDs(k kit, block int) string {
	var ids []string
	for _, e := range k.Blocks[block].Elements {
		ids = append(ids, e.ActionID)
	}
	return strings.Join(ids, ",")
}

func TestButtonInUnknownBlockRemovesAllOurButtons(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	k := updated(t, "unknown block", ta.clickIn(t, "", ActionSilence1h, alertKey, "U0ADMIN", "admin", "C0GPU"))
	if got := blockTypes(k); got != "section,actions,section,context" {
		t.Fatalf("unknown block: got blocks %s, want section,actions (the runbook),section,context", got)
	}
	if got := actionIDs(k, 1); got != "runbook" {
		t.Errorf("unknown block: got buttons %q, want only runbook", got)
	}
	if got := k.texts("context"); len(got) != 1 || got[0] != "🔕 Silenced for 1h by <@U0ADMIN>" {
		t.Errorf("unknown block: got context %q, want the silence", got)
	}
	// An acknowledgement in an unknown block takes only the Acknowledge
	// buttons: every alert can still be silenced.
	ta = newTestApp(t, 4, nil)
	k = updated(t, "unknown block", ta.clickIn(t, "", ActionAcknowledge, alertKey, "U0ADMIN", "admin", "C0GPU"))
	if got := blockTypes(k); got != "section,actions,section,actions,context" {
		t.Fatalf("unknown block: got blocks %s, want section,actions,section,actions,context", got)
	}
	if got, want := actionIDs(k, 1)+" "+actionIDs(k, 3), "gpuwatch_silence_1h,gpuwatch_silence_24h,runbook gpuwatch_silence_1h,gpuwatch_silence_24h"; got != want {
		t.Errorf("unknown block: got buttons %q, want %q", got, want)
	}
}

func TestActionIDs(t *testing.T) {
	for _, c := range [][2]string{{ActionSilence1h, "gpuwatch_silence_1h"}, {ActionSilence24h, "gpuwatch_silence_24h"}, {ActionAcknowledge, "gpuwatch_ack"}} {
		if c[0] != c[1] {
			t.Errorf("got action ID %q, want %q", c[0], c[1])
		}
	}
}

func TestButtonRefusals(t *testing.T) {
	cases := []struct {
		name, action, user, channel string
		allowed                     []string
		want                        string
	}{
		{"non-admin silences", ActionSilence1h, "U1", "C0GPU", nil, "only gpuwatch admins can silence alerts; ask one of <@U0ADMIN>, @root"},
		{"non-admin acknowledges", ActionAcknowledge, "U1", "C0GPU", nil, "only gpuwatch admins can acknowledge alerts"},
		{"admin in another channel", ActionSilence24h, "U0ADMIN", "C0OTHER", []string{"C0GPU"}, "gpuwatch does not answer in this channel"},
	}
	for _, c := range cases {
		ta := newTestApp(t, 4, func(cf *Config) { cf.AllowedChannels = c.allowed })
		reqs := ta.click(t, c.action, alertKey, c.user, "someone", c.channel)
		if len(ta.b.added) != 0 || len(ta.b.acks) != 0 {
			t.Errorf("%s: got %d silences and %d acks, want none", c.name, len(ta.b.added), len(ta.b.acks))
		}
		if len(reqs) != 1 {
			t.Fatalf("%s: got %d posts, want one refusal", c.name, len(reqs))
		}
		k := decodeKit(t, reqs[0].Body)
		if k.ReplaceOriginal || k.ResponseType != ephemeral {
			t.Errorf("%s: got replace_original %v response_type %q, want an ephemeral message", c.name, k.ReplaceOriginal, k.ResponseType)
		}
		contains(t, c.name, k.all(), c.want)
	}
}

func TestButtonBadKey(t *testing.T) {
	for _, key := range []string{"", "node1", "node1/GPUHot", "/GPUHot/GPU-1", "node1//GPU-1", "node1/GPUHot/"} {
		ta := newTestApp(t, 4, nil)
		reqs := ta.click(t, ActionSilence1h, key, "U0ADMIN", "admin", "C0GPU")
		if len(ta.b.added) != 0 {
			t.Errorf("key %q: got %d silences, want none", key, len(ta.b.added))
		}
		if len(reqs) != 1 {
			t.Fatalf("key %q: got %d posts, want one error", key, len(reqs))
		}
		contains(t, "key "+key, decodeKit(t, reqs[0].Body).all(), "is not host/rule/uuid")
	}
}

func TestButtonOthersIgnored(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	if reqs := ta.click(t, "runbook", "", "U0ADMIN", "admin", "C0GPU"); len(reqs) != 0 {
		t.Errorf("someone else's button: got %d posts, want none", len(reqs))
	}
	if n := ta.b.callCount(); n != 0 {
		t.Errorf("someone else's button: got %d backend calls, want none", n)
	}
}

func TestActionBadPayload(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	w := httptest.NewRecorder()
	ta.Handler().ServeHTTP(w, signed("/slack/actions", "payload=%7Bnot+json"))
	if w.Code != http.StatusBadRequest {
		t.Errorf("bad payload: got HTTP %d, want 400", w.Code)
	}
}

// TestAdminsByUserID checks who may act: admins listed by user ID are
// matched by the ID Slack sends, never by a user name that looks like an
// ID; admins listed by name still work, with a warning in the log that
// gives the ID to list instead.
func TestAdminsByUserID(t *testing.T) {
	cases := []struct {
		name, userID, userName string
		allowed                bool
		warn                   string // a substring of the log
	}{
		{"the admin's ID", "U0ADMIN", "admin", true, ""},
		{"the admin's ID under another name", "U0ADMIN", "renamed", true, ""},
		{"an ID as a user name", "U9EVE", "U0ADMIN", false, ""},
		{"a name listed in admins", "U0ROOT", "root", true, "user_id=U0ROOT"},
		{"nobody", "U1", "someone", false, ""},
	}
	for _, c := range cases {
		ta := newTestApp(t, 4, nil)
		if !strings.Contains(ta.log.String(), "slack.admins lists a user name") || !strings.Contains(ta.log.String(), "admin=root") {
			t.Errorf("New: got log\n%s\nwant a warning about the admin listed by name", ta.log.String())
		}
		ta.click(t, ActionAcknowledge, alertKey, c.userID, c.userName, "C0GPU")
		if got := len(ta.b.acks) == 1; got != c.allowed {
			t.Errorf("%s: acknowledged %v, want %v", c.name, got, c.allowed)
		}
		if c.warn != "" && !strings.Contains(ta.log.String(), c.warn) {
			t.Errorf("%s: got log\n%s\nwant a warning with %q", c.name, ta.log.String(), c.warn)
		}
	}
}

// TestClickAnsweredBeforeTheStore checks that Slack gets its 200 for a
// click at once, while the store is still writing the acknowledgement or
// the silence (Slack retries a click it has no answer for in 3 seconds).
func TestClickAnsweredBeforeTheStore(t *testing.T) {
	for _, action := range []string{ActionAcknowledge, ActionSilence1h} {
		ta := newTestApp(t, 4, nil)
		ta.b.writes = make(chan struct{})
		slack := notifiertest.NewServer(t, nil)
		body := url.Values{"payload": {actionPayload(action, alertKey, "U0ADMIN", "admin", "C0GPU", slack.URL+"/actions/T1/1/x")}}.Encode()
		answered := make(chan int, 1)
		go func() {
			w := httptest.NewRecorder()
			ta.Handler().ServeHTTP(w, signed("/slack/actions", body))
			answered <- w.Code
		}()
		select {
		case code := <-answered:
			if code != http.StatusOK {
				t.Errorf("%s: got HTTP %d, want 200", action, code)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no answer while the store is busy, want 200 at once", action)
		}
		close(ta.b.writes)
		ta.wait()
		if len(ta.b.acks)+len(ta.b.added) != 1 {
			t.Errorf("%s: got %d acks and %d silences, want the click done after the answer", action, len(ta.b.acks), len(ta.b.added))
		}
		if reqs := slack.Requests(); len(reqs) != 1 {
			t.Errorf("%s: got %d posts to response_url, want the updated message", action, len(reqs))
		}
	}
}
