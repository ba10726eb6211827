package daemon_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
	slacknotifier "github.com/gpuwatch/gpuwatch/notifier/slack"
)

const signingSecret = "8f742231b10e8888abcd99yyyzzz85a5"

// slackRequest is a request to the Slack app signed with secret at time
// at, as Slack signs them.
func slackRequest(path, body, secret string, at time.Time) *http.Request {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:%s", ts, body)
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return req
}

func TestSlackHandlerOnlyWithSigningSecret(t *testing.T) {
	tests := []struct {
		name, slack string
		want        bool
	}{
		{"no slack section", "", false},
		{"app token only (Socket Mode)", "slack:\n  app_token: xapp-1-A1-1-abc\n  bot_token: xoxb-1\n  api_url: http://127.0.0.1:1/api/", false},
		{"signing secret", "slack:\n  signing_secret: " + signingSecret, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			r := start(t, parseConfig(t, dir, backendConfig(t, dir, "http://127.0.0.1:1/", tt.slack), nil), nil)
			if got := r.D.SlackHandler() != nil; got != tt.want {
				t.Errorf("SlackHandler present: got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSlackButtonFlow: a command and a click on an alert message's
// Acknowledge button, signed as Slack signs them, reach the daemon: the
// command sees the firing alert, the click acknowledges it, and the
// message at response_url is updated.
func TestSlackButtonFlow(t *testing.T) {
	h := newHook(t, nil)
	slack := notifiertest.NewServer(t, nil) // response_url
	dir := t.TempDir()
	clk := newClock(base)
	cfg := parseConfig(t, dir, backendConfig(t, dir, h.URL, "slack:\n  signing_secret: ${SLACK_SIGNING_SECRET}"),
		map[string]string{"SLACK_SIGNING_SECRET": signingSecret})
	r := start(t, cfg, clk.Now)
	r.Steps(base, 10*time.Second, []float64{90}, []float64{90})
	app := r.D.SlackHandler()

	form := url.Values{"command": {"/gpu"}, "text": {"alerts"}, "user_id": {"U123"}, "channel_id": {"C1"}, "response_url": {slack.URL + "/commands/1"}}
	tampered := slackRequest("/slack/commands", form.Encode(), signingSecret, base)
	tampered.Header.Set("X-Slack-Signature", "v0="+strings.Repeat("0", 64))
	for _, tt := range []struct {
		name     string
		req      *http.Request
		wantCode int
		wantBody string
	}{
		{"signed", slackRequest("/slack/commands", form.Encode(), signingSecret, base), http.StatusOK, "GPUHot"},
		{"tampered", tampered, http.StatusUnauthorized, ""},
		{"stale", slackRequest("/slack/commands", form.Encode(), signingSecret, base.Add(-time.Hour)), http.StatusUnauthorized, ""},
	} {
		w := httptest.NewRecorder()
		app.ServeHTTP(w, tt.req)
		if w.Code != tt.wantCode || !strings.Contains(w.Body.String(), tt.wantBody) {
			t.Errorf("%s /gpu alerts: got HTTP %d %s, want %d with %q", tt.name, w.Code, w.Body, tt.wantCode, tt.wantBody)
		}
		notifiertest.AssertNoSecrets(t, tt.name+" answer", w.Body.String(), signingSecret)
	}

	w := clickAcknowledge(t, app, slack.URL+"/actions/1", alertKey("GPUHot", 0))
	if w.Code != http.StatusOK {
		t.Fatalf("Acknowledge click: got HTTP %d %s, want 200", w.Code, w.Body)
	}
	waitFor(t, "the updated message at response_url", func() bool { return len(slack.Requests()) > 0 })
	if got := r.D.Alerts(); len(got) == 0 || !strings.Contains(got[0].Acknowledged, "U123") {
		t.Errorf("after the click: got %+v, want GPUHot acknowledged by U123", got)
	}
	if body := string(slack.Requests()[0].Body); !strings.Contains(body, "Acknowledged by") {
		t.Errorf("response_url got %s, want the message saying who acknowledged", body)
	}
}

// clickAcknowledge sends the app a signed click on the Acknowledge button
// of the alert with key, by U123 in channel C1; the answer to the click
// goes to responseURL.
func clickAcknowledge(t *testing.T, app http.Handler, responseURL, key string) *httptest.ResponseRecorder {
	t.Helper()
	payload, err := json.Marshal(map[string]any{
		"type": "block_actions", "user": map[string]string{"id": "U123", "name": "alice"},
		"channel": map[string]string{"id": "C1", "name": "gpu-alerts"}, "response_url": responseURL,
		"message": map[string]any{"text": "GPUHot", "blocks": []any{}},
		"actions": []map[string]string{{"type": "button", "block_id": slacknotifier.ActionsBlockPrefix + "0",
			"action_id": slacknotifier.ActionAcknowledge, "value": key}},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	app.ServeHTTP(w, slackRequest("/slack/actions", url.Values{"payload": {string(payload)}}.Encode(), signingSecret, base))
	return w
}

// TestSocketModeRefusedToken: with slack.app_token set, Run connects over
// Socket Mode; a token Slack refuses is logged (without the token) and
// gpuwatch keeps running.
func TestSocketModeRefusedToken(t *testing.T) {
	api := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
		return notifiertest.Response{Header: map[string]string{"Content-Type": "application/json"}, Body: `{"ok":false,"error":"invalid_auth"}`}
	})
	env := map[string]string{"SLACK_APP_TOKEN": "xapp-1-A0-1-0123456789abcdef", "SLACK_BOT_TOKEN": "xoxb-1-secret-bot"}
	dir := t.TempDir()
	slackYAML := fmt.Sprintf("slack:\n  app_token: ${SLACK_APP_TOKEN}\n  bot_token: ${SLACK_BOT_TOKEN}\n  api_url: %s/api/", api.URL)
	r := start(t, parseConfig(t, dir, backendConfig(t, dir, "http://127.0.0.1:1/", slackYAML), env), nil)
	waitFor(t, "the Socket Mode failure in the log", func() bool { return strings.Contains(r.Logs.String(), "Socket Mode connection stopped") })
	// auth.test (the bot token's scopes, for charts) may come first.
	reqs := api.Requests()
	if !slices.ContainsFunc(reqs, func(r notifiertest.Request) bool { return strings.HasSuffix(r.Path, "apps.connections.open") }) {
		t.Errorf("got requests %+v, want apps.connections.open", reqs)
	}
	r.Steps(base, 10*time.Second, []float64{50}) // still evaluating
	if s := r.D.Snapshot(); s == nil {
		t.Errorf("after the Socket Mode failure: the daemon took no snapshot")
	}
	notifiertest.AssertNoSecrets(t, "the log", r.Logs.String(), env["SLACK_APP_TOKEN"], env["SLACK_BOT_TOKEN"])
}
