package daemon_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// secretEnv holds every secret a config can carry, each distinct, given
// to the config as ${VAR} the way users set them.
var secretEnv = map[string]string{
	"SLACK_BOT_TOKEN":  "xoxb-secret-bot-token-7f3a",
	"SLACK_HOOK_PATH":  "T0SECRET/B0SECRET/slackhooksecret9c1d",
	"GENERIC_PATH":     "pathsecret-41ab",
	"GENERIC_QUERY":    "querysecret-88cd",
	"AM_BEARER":        "hdrsecret-bearer-5e6f",
	"DISCORD_TOKEN":    "discordsecret-aa11",
	"TEAMS_TOKEN":      "teamssecret-bb22",
	"FEISHU_HOOK":      "feishusecret-cc33",
	"FEISHU_SECRET":    "feishusign-dd44",
	"DING_TOKEN":       "dingtoken-ee55",
	"DING_SECRET":      "dingsign-ff66",
	"WECOM_KEY":        "wecomkey-0a0b",
	"PD_ROUTING_KEY":   "pdroutingkey-1c1d",
	"TEMPLATE_TOKEN":   "tmpltoken-2e2f",
	"BASIC_PASSWORD":   "basicpass-3a3b",
	"ALERTMANAGER_KEY": "amquery-4c4d",
	"AM_PUSH_TOKEN":    "ampushtoken-5e5f",
	"AM_PUSH_PASSWORD": "ampushpass-6a6b",
}

// secretReceivers lists every integration, each with its secrets, every
// URL under base.
var secretReceivers = []struct{ name, block string }{
	{"slackbot", `slack: {channel: "#gpu"}`},
	{"slackhook", `slack: {webhook_url: "BASE/services/${SLACK_HOOK_PATH}"}`},
	{"generic", `webhook: {url: "BASE/generic/${GENERIC_PATH}?token=${GENERIC_QUERY}"}`},
	{"alertmanager", `webhook: {url: "BASE/am?key=${ALERTMANAGER_KEY}", format: alertmanager, headers: {Authorization: "Bearer ${AM_BEARER}"}}`},
	{"discord", `webhook: {url: "BASE/api/webhooks/123/${DISCORD_TOKEN}", format: discord}`},
	{"teams", `webhook: {url: "BASE/teams/${TEAMS_TOKEN}", format: teams}`},
	{"feishu", `webhook: {url: "BASE/open-apis/bot/v2/hook/${FEISHU_HOOK}", format: feishu, secret: "${FEISHU_SECRET}"}`},
	{"dingtalk", `webhook: {url: "BASE/robot/send?access_token=${DING_TOKEN}", format: dingtalk, secret: "${DING_SECRET}"}`},
	{"wecom", `webhook: {url: "BASE/cgi-bin/webhook/send?key=${WECOM_KEY}", format: wecom}`},
	{"pagerduty", `webhook: {url: "BASE/v2/enqueue", format: pagerduty, routing_key: "${PD_ROUTING_KEY}"}`},
	{"template", `webhook: {url: "BASE/tmpl", format: template, template: '{"status":"{{ .Status }}"}', headers: {Authorization: "Token ${TEMPLATE_TOKEN}"}}`},
	{"basic", `webhook: {url: "http://user:${BASIC_PASSWORD}@BASEHOST/basic"}`},
	{"am-bearer", `alertmanager: {urls: ["BASE/am-bearer"], bearer_token: "${AM_PUSH_TOKEN}"}`},
	{"am-basic", `alertmanager: {urls: ["BASE/am-basic"], basic_auth: {username: gpuwatch, password: "${AM_PUSH_PASSWORD}"}}`},
}

// secretsConfig sends GPUHot to every receiver of secretReceivers, with
// their URLs and Slack's API under base ("http://host:port").
func secretsConfig(base string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "source:\n  type: sim\nslack:\n  bot_token: ${SLACK_BOT_TOKEN}\n  api_url: %s/api/\nreceivers:\n", base)
	for _, r := range secretReceivers {
		block := strings.ReplaceAll(r.block, "BASEHOST", strings.TrimPrefix(base, "http://"))
		fmt.Fprintf(&b, "  - name: %s\n    %s\n", r.name, strings.ReplaceAll(block, "BASE", base))
	}
	b.WriteString("route:\n  receiver: slackbot\n  group_wait: 1ns\n  routes:\n")
	for _, r := range secretReceivers {
		fmt.Fprintf(&b, "    - {receiver: %s, matchers: ['alert=\"GPUHot\"'], continue: true}\n", r.name)
	}
	return b.String() + hotRule
}

// echoServer fails each path's first request with a 500 and the later ones
// with a 400, and quotes the whole request back in its answer, as careless
// servers do, so a notifier that quotes answers must redact them.
func echoServer(t *testing.T) *notifiertest.Server {
	var mu sync.Mutex
	seen := map[string]bool{}
	return notifiertest.NewServer(t, func(_ int, r *notifiertest.Request) notifiertest.Response {
		mu.Lock()
		status := http.StatusBadRequest
		if !seen[r.Path] {
			status = http.StatusInternalServerError
		}
		seen[r.Path] = true
		mu.Unlock()
		var headers []string
		for k, v := range r.Header {
			headers = append(headers, k+"="+strings.Join(v, ","))
		}
		slices.Sort(headers)
		echo := fmt.Sprintf("you sent %s?%s %s %s", r.Path, r.Query, strings.Join(headers, " "), r.Body)
		return notifiertest.Response{Status: status, Body: echo}
	})
}

// TestNoSecretLeaks runs every integration through failures (a host that
// refuses connections; a server answering 500, then 400, quoting the whole
// request) and searches the daemon's log, the dead letters and every API
// answer for the secrets.
func TestNoSecretLeaks(t *testing.T) {
	secrets := make([]string, 0, len(secretEnv))
	for _, v := range secretEnv {
		secrets = append(secrets, v)
	}
	// The alertmanager receiver's basic auth, as its header carries it.
	secrets = append(secrets, base64.StdEncoding.EncodeToString([]byte("gpuwatch:"+secretEnv["AM_PUSH_PASSWORD"])))
	echo := echoServer(t)
	rounds := []struct {
		name string
		base string
		// done says the round failed every receiver enough.
		done func(r *running) bool
	}{
		{"unreachable", "http://127.0.0.1:1", func(r *running) bool {
			logs := r.Logs.String()
			for _, rc := range secretReceivers {
				if strings.Count(logs, "receiver="+rc.name+" ") < 2 {
					return false
				}
			}
			return true
		}},
		{"500 then 400", echo.URL, func(r *running) bool {
			dead := map[string]bool{}
			for _, dl := range r.Outbox().DeadLetters {
				dead[dl.Receiver] = true
			}
			return len(dead) == len(secretReceivers)
		}},
	}
	for _, round := range rounds {
		t.Run(round.name, func(t *testing.T) {
			dir := t.TempDir()
			text := secretsConfig(round.base)
			r := start(t, parseConfig(t, dir, text, secretEnv), nil)
			r.Steps(base, 10*time.Second, []float64{90}, []float64{90})
			waitFor(t, "every receiver to fail", func() bool { return round.done(r) })

			answers := map[string]string{}
			for _, call := range []struct{ method, path, body string }{
				{http.MethodGet, "/api/v1/outbox", ""},
				{http.MethodGet, "/api/v1/silences", ""},
				{http.MethodGet, "/healthz", ""},
				{http.MethodPost, "/api/v1/silences", `{"matchers":["alert=\"GPUHot\""],"duration":"1h"}`},
				{http.MethodPost, "/api/v1/silences", `{"matchers":["nope"]}`},
			} {
				_, body := r.Do(call.method, call.path, call.body)
				answers[call.method+" "+call.path+" "+call.body] = body
			}
			r.Stop()
			for where, text := range answers {
				notifiertest.AssertNoSecrets(t, where, text, secrets...)
			}
			notifiertest.AssertNoSecrets(t, "the daemon's log", r.Logs.String(), secrets...)
			if !strings.Contains(r.Logs.String(), "receiver=pagerduty") {
				t.Errorf("the log says nothing of receiver pagerduty: the test did not run it\n%s", r.Logs)
			}
		})
	}
	// The secrets did travel, so the searches above could have found them.
	var sent strings.Builder
	for _, r := range echo.Requests() {
		fmt.Fprintf(&sent, "%s?%s %v %s\n", r.Path, r.Query, r.Header, r.Body)
	}
	for name, s := range secretEnv {
		switch name {
		case "FEISHU_SECRET", "DING_SECRET":
			continue // they sign; they are not sent
		case "BASIC_PASSWORD", "AM_PUSH_PASSWORD":
			continue // sent base64-encoded in Authorization: Basic
		}
		if !strings.Contains(sent.String(), s) {
			t.Errorf("secret %s never reached the server: the test does not exercise it", name)
		}
	}
}

// TestBasicCredentialNotLeaked: a URL's user:password travels as an
// Authorization: Basic header; a server that quotes it back must not put
// the credential, base64 or not, into the log.
func TestBasicCredentialNotLeaked(t *testing.T) {
	echo := echoServer(t)
	env := map[string]string{"BASIC_PASSWORD": secretEnv["BASIC_PASSWORD"]}
	text := fmt.Sprintf("source:\n  type: sim\nreceivers:\n  - name: basic\n    webhook: {url: \"http://user:${BASIC_PASSWORD}@%s/basic\"}\nroute:\n  receiver: basic\n  group_wait: 1ns\n%s",
		strings.TrimPrefix(echo.URL, "http://"), hotRule)
	r := start(t, parseConfig(t, t.TempDir(), text, env), nil)
	r.Steps(base, 10*time.Second, []float64{90}, []float64{90})
	waitFor(t, "a dead letter", func() bool { return len(r.Outbox().DeadLetters) == 1 })
	out := r.Outbox()
	r.Stop()
	credential := base64.StdEncoding.EncodeToString([]byte("user:" + env["BASIC_PASSWORD"]))
	notifiertest.AssertNoSecrets(t, "the daemon's log", r.Logs.String(), env["BASIC_PASSWORD"], credential)
	for _, dl := range out.DeadLetters {
		notifiertest.AssertNoSecrets(t, "the dead letter's reason", dl.Reason, env["BASIC_PASSWORD"], credential)
	}
}

// TestEchoedTokenNotLeaked: a receiver that refuses a request by quoting
// the token of its own URL alone ("unknown webhook token …"), not the
// whole URL, must not put the token into the log, the dead letters or the
// outbox API that `gpuwatch outbox list` prints.
func TestEchoedTokenNotLeaked(t *testing.T) {
	const token = "Zq4sEcReTtOkEn77"
	srv := notifiertest.NewServer(t, func(_ int, r *notifiertest.Request) notifiertest.Response {
		segments := strings.Split(r.Path, "/")
		return notifiertest.Response{Status: http.StatusNotFound, Body: "unknown webhook token " + segments[len(segments)-1]}
	})
	for _, c := range []struct {
		block  string
		quotes bool // the error quotes the answer's body (slack-go drops it)
	}{
		{`webhook: {url: "BASE/hooks/${HOOK_TOKEN}"}`, true},
		{`slack: {webhook_url: "BASE/services/T0AAA1111/B0BBB2222/${HOOK_TOKEN}"}`, false},
	} {
		block := c.block
		t.Run(strings.Fields(block)[0], func(t *testing.T) {
			text := fmt.Sprintf("source:\n  type: sim\nreceivers:\n  - name: hook\n    %s\nroute:\n  receiver: hook\n  group_wait: 1ns\n%s",
				strings.ReplaceAll(block, "BASE", srv.URL), hotRule)
			r := start(t, parseConfig(t, t.TempDir(), text, map[string]string{"HOOK_TOKEN": token}), nil)
			r.Steps(base, 10*time.Second, []float64{90}, []float64{90})
			waitFor(t, "a dead letter", func() bool { return len(r.Outbox().DeadLetters) == 1 })
			_, outbox := r.Do(http.MethodGet, "/api/v1/outbox", "")
			reason := r.Outbox().DeadLetters[0].Reason
			r.Stop()
			if c.quotes && !strings.Contains(reason, "unknown webhook token <redacted>") {
				t.Errorf("the dead letter's reason %q does not quote the far side's answer, redacted", reason)
			}
			notifiertest.AssertNoSecrets(t, "GET /api/v1/outbox", outbox, token)
			notifiertest.AssertNoSecrets(t, "the daemon's log", r.Logs.String(), token)
		})
	}
}
