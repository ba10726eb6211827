package slackbot

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// answer sends a signed command and returns the answer as it was sent.
func (ta *testApp) answer(t *testing.T, text string) (string, []goslack.Block) {
	t.Helper()
	w := httptest.NewRecorder()
	ta.Handler().ServeHTTP(w, signed("/slack/commands", commandBody(text, "U0ADMIN", "admin", "https://hooks.slack.com/commands/T1/1/x")))
	if w.Code != http.StatusOK {
		t.Fatalf("/gpu %s: got HTTP %d %q, want 200", text, w.Code, w.Body)
	}
	var msg struct {
		Text   string         `json:"text"`
		Blocks goslack.Blocks `json:"blocks"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &msg); err != nil {
		t.Fatalf("/gpu %s: the answer is not a message: %v", text, err)
	}
	return msg.Text, msg.Blocks.BlockSet
}

// brokenEntity returns the first & of text that does not start an entity,
// or -1: escaped text cut in the middle of "&amp;".
func brokenEntity(text string) int {
	for i := 0; i < len(text); i++ {
		if text[i] != '&' {
			continue
		}
		rest := text[i:]
		if !strings.HasPrefix(rest, "&amp;") && !strings.HasPrefix(rest, "&lt;") && !strings.HasPrefix(rest, "&gt;") {
			return i
		}
	}
	return -1
}

// TestAnswersFitSlack runs every /gpu answer on a backend full of long text
// mrkdwn must escape: each answer passes Slack's limits and cuts no entity.
func TestAnswersFitSlack(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	hostile := strings.Repeat("&<>", 700)
	for i := range ta.b.snap.Devices {
		d := &ta.b.snap.Devices[i]
		d.Name = hostile
		d.Processes = append(d.Processes, hostileProcess(hostile))
	}
	for i := range 40 {
		ta.b.alerts = append(ta.b.alerts, ActiveAlert{Key: fmt.Sprintf("node1/A%d/GPU-0000", i), Name: hostile, Severity: hostile,
			State: "firing", Since: testNow, ValueText: hostile, Summary: hostile, Acknowledged: hostile})
		ta.b.silences = append(ta.b.silences, ta.b.silences[0])
		ta.b.silences[len(ta.b.silences)-1].Comment = hostile
		ta.b.silences[len(ta.b.silences)-1].CreatedBy = hostile
	}
	for _, cmd := range []string{"status", "top", "alerts", "silences", "history 0", "silence " + strings.Repeat("&", 200) + " 1h " + hostile, "help " + hostile} {
		text, blocks := ta.answer(t, cmd)
		name := cmd[:min(len(cmd), 20)]
		if err := blockkit.ValidateMessage(text, blocks); err != nil {
			t.Errorf("/gpu %s: the answer breaks Slack's limits: %v", name, err)
		}
		if len(blocks) == 0 {
			t.Errorf("/gpu %s: got the answer as plain text, want its blocks", name)
		}
		all := blockkit.PlainText(blocks)
		if i := brokenEntity(all); i >= 0 {
			t.Errorf("/gpu %s: an entity cut in two: %q", name, all[max(0, i-10):min(len(all), i+10)])
		}
	}
}

// TestOverLimitAnswerGoesAsText checks that an answer breaking Slack's
// limits (here a digest whose section is over 3,000 characters) is sent as
// its text rather than refused by Slack.
func TestOverLimitAnswerGoesAsText(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	ta.b.digest = func(time.Duration) (string, []byte, error) {
		long := strings.Repeat("alice 20.5 GPU-hours ", 200)
		return "GPU usage", fmt.Appendf(nil, `[{"type":"header","text":{"type":"plain_text","text":"GPU usage"}},`+
			`{"type":"section","text":{"type":"mrkdwn","text":%q}}]`, long), nil
	}
	text, blocks := ta.answer(t, "digest")
	if len(blocks) != 0 {
		t.Fatalf("got %d blocks, want the answer as text alone", len(blocks))
	}
	if !strings.HasPrefix(text, "*GPU usage*\n\nalice 20.5 GPU-hours") {
		t.Errorf("got text %q, want the digest's text", text[:min(len(text), 80)])
	}
	if !strings.Contains(ta.log.String(), "goes as plain text") {
		t.Errorf("got log\n%s\nwant the bug logged", ta.log.String())
	}
}

// TestResponseURLRefusesBlocks checks that when response_url refuses an
// answer's blocks, the answer is posted again as text.
func TestResponseURLRefusesBlocks(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	slack := notifiertest.NewServer(t, func(_ int, r *notifiertest.Request) notifiertest.Response {
		if strings.Contains(string(r.Body), `"blocks"`) {
			return notifiertest.Response{Status: http.StatusBadRequest, Body: "invalid_blocks"}
		}
		return notifiertest.Response{Body: "ok"}
	})
	body := url.Values{"payload": {actionPayload(ActionAcknowledge, alertKey, "U0ADMIN", "admin", "C0GPU", slack.URL+"/actions/T1/1/x")}}.Encode()
	ta.Handler().ServeHTTP(httptest.NewRecorder(), signed("/slack/actions", body))
	ta.wait()
	reqs := slack.Requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d posts to response_url, want the blocks and then the text", len(reqs))
	}
	var second reply
	if err := json.Unmarshal(reqs[1].Body, &second); err != nil {
		t.Fatal(err)
	}
	if second.Blocks != nil || !strings.Contains(second.Text, "Acknowledged by <@U0ADMIN>") || !second.ReplaceOriginal {
		t.Errorf("got second post %s, want the updated message as text alone", reqs[1].Body)
	}
}

func hostileProcess(text string) gpu.Process {
	return gpu.Process{PID: 1, User: text, Command: text, Container: text, MemUsed: 1 << 30}
}
