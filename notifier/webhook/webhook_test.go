package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var _ notifier.Notifier = (*Notifier)(nil)

// now is the fixed clock feishu and dingtalk sign with.
var now = time.Date(2026, 11, 29, 9, 41, 6, 0, time.UTC)

func fixedNow() time.Time { return now }

const (
	testSecret     = "SEC-signing-secret-0123"
	testRoutingKey = "R0UTINGKEY0123456789abcdef"
	testToken      = "HEADER-TOKEN-abcdef"
	testPath       = "/hook/PATH-TOKEN-0123"
)

// formatCase is one format as the tests drive it.
type formatCase struct {
	format string
	okBody string // what the far side answers when it takes a message
	config func(url string) Config
}

func formatCases() []formatCase {
	base := func(format string) func(string) Config {
		return func(u string) Config {
			return Config{URL: u + testPath, Format: format, Headers: map[string]string{"Authorization": "Bearer " + testToken}}
		}
	}
	signed := func(format string) func(string) Config {
		return func(u string) Config {
			c := base(format)(u)
			c.Secret = testSecret
			if format == FormatDingTalk {
				c.URL += "?access_token=DING-TOKEN-0123"
			}
			return c
		}
	}
	return []formatCase{
		{FormatGeneric, "", base(FormatGeneric)},
		{FormatAlertmanager, "", base(FormatAlertmanager)},
		{FormatDiscord, "", base(FormatDiscord)},
		{FormatTeams, "", base(FormatTeams)},
		{FormatFeishu, `{"code":0,"msg":"success","data":{}}`, signed(FormatFeishu)},
		{FormatDingTalk, `{"errcode":0,"errmsg":"ok"}`, signed(FormatDingTalk)},
		{FormatWeCom, `{"errcode":0,"errmsg":"ok"}`, base(FormatWeCom)},
		{FormatPagerDuty, `{"status":"success","message":"Event processed","dedup_key":"x"}`, func(u string) Config {
			c := base(FormatPagerDuty)(u)
			c.RoutingKey = testRoutingKey
			return c
		}},
		{FormatTemplate, "", func(u string) Config {
			c := base(FormatTemplate)(u)
			c.Template = `{"text": {{json (printf "%s %s on %s GPU %d: %s" .Status (index .Alerts 0).Name (index .Alerts 0).Host (index .Alerts 0).GPU (index .Alerts 0).ValueText)}},` +
				` "full_in": {{json (duration (index .Alerts 0).TimeToFull)}}, "largest": {{json (bytes (index (index .Alerts 0).Processes 0).MemUsed)}}}`
			return c
		}},
	}
}

func newNotifier(t testing.TB, c Config) *Notifier {
	t.Helper()
	n, err := New("test", c, nil, fixedNow)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return n
}

// TestGolden sends the sample notification in every format and compares
// the request with testdata/FORMAT.STATUS.json by meaning.
func TestGolden(t *testing.T) {
	for _, fc := range formatCases() {
		for _, status := range []notifier.Status{notifier.StatusFiring, notifier.StatusResolved} {
			t.Run(fc.format+"/"+string(status), func(t *testing.T) {
				srv := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
					return notifiertest.Response{Status: http.StatusAccepted, Body: fc.okBody}
				})
				n := newNotifier(t, fc.config(srv.URL))
				if retry, err := n.Notify(context.Background(), notifiertest.Notification(status)); err != nil {
					t.Fatalf("Notify: got %v (retry %v), want delivered", err, retry)
				}
				reqs := srv.Requests()
				if len(reqs) != 1 {
					t.Fatalf("got %d requests, want 1", len(reqs))
				}
				r := reqs[0]
				checks := []struct{ what, got, want string }{
					{"method", r.Method, http.MethodPost},
					{"path", r.Path, testPath},
					{"Content-Type", r.Header.Get("Content-Type"), "application/json"},
					{"Authorization", r.Header.Get("Authorization"), "Bearer " + testToken},
					{"User-Agent", r.Header.Get("User-Agent"), "gpuwatch"},
				}
				for _, c := range checks {
					if c.got != c.want {
						t.Errorf("%s: got %q, want %q", c.what, c.got, c.want)
					}
				}
				switch fc.format {
				case FormatFeishu:
					verifyFeishuSign(t, r.Body)
				case FormatDingTalk:
					verifyDingTalkSign(t, r.Query)
				}
				compareGolden(t, filepath.Join("testdata", fc.format+"."+string(status)+".json"), r.Body)
			})
		}
	}
}

// compareGolden compares JSON by meaning: both sides are decoded into any.
func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	var gotV any
	if err := json.Unmarshal(got, &gotV); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, got)
	}
	if *update {
		pretty, err := json.MarshalIndent(gotV, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(pretty, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to write it): %v", err)
	}
	var wantV any
	if err := json.Unmarshal(want, &wantV); err != nil {
		t.Fatalf("golden file %s is not JSON: %v", path, err)
	}
	if !reflect.DeepEqual(gotV, wantV) {
		pretty, _ := json.MarshalIndent(gotV, "", "  ")
		t.Errorf("body differs from %s (run go test -update to accept):\ngot:\n%s\nwant:\n%s", path, pretty, want)
	}
}

// verifyFeishuSign checks the body's signature as Feishu's server does.
func verifyFeishuSign(t *testing.T, body []byte) {
	t.Helper()
	var msg struct{ Timestamp, Sign string }
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatal(err)
	}
	if want := strconv.FormatInt(now.Unix(), 10); msg.Timestamp != want {
		t.Errorf("feishu timestamp: got %q, want %q", msg.Timestamp, want)
	}
	mac := hmac.New(sha256.New, []byte(msg.Timestamp+"\n"+testSecret))
	if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); msg.Sign != want {
		t.Errorf("feishu sign: got %q, want %q", msg.Sign, want)
	}
}

// verifyDingTalkSign checks the query's signature as DingTalk's server does.
func verifyDingTalkSign(t *testing.T, rawQuery string) {
	t.Helper()
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Get("access_token"); got != "DING-TOKEN-0123" {
		t.Errorf("dingtalk access_token: got %q, want it kept", got)
	}
	ts := q["timestamp"]
	if want := strconv.FormatInt(now.UnixMilli(), 10); len(ts) != 1 || ts[0] != want {
		t.Fatalf("dingtalk timestamp: got %q, want one %q", ts, want)
	}
	mac := hmac.New(sha256.New, []byte(testSecret))
	mac.Write([]byte(ts[0] + "\n" + testSecret))
	if got, want := q["sign"], base64.StdEncoding.EncodeToString(mac.Sum(nil)); len(got) != 1 || got[0] != want {
		t.Errorf("dingtalk sign: got %q, want one %q", got, want)
	}
}

func TestStatusTable(t *testing.T) {
	for _, fc := range formatCases() {
		t.Run(fc.format, func(t *testing.T) {
			notifiertest.RunStatusTable(t, fc.okBody, func(u string) notifier.Notifier {
				return newNotifier(t, fc.config(u))
			})
		})
	}
}

// TestAnswerCodes: Feishu, DingTalk and WeCom refuse messages with HTTP 200
// and a code in the body.
func TestAnswerCodes(t *testing.T) {
	cases := []struct {
		format, body string
		ok, retry    bool
		errHas       string
	}{
		{FormatFeishu, `{"code":0,"msg":"success","data":{}}`, true, false, ""},
		{FormatFeishu, `{"StatusCode":0,"StatusMessage":"success"}`, true, false, ""},
		{FormatFeishu, `{"code":19021,"msg":"sign match fail or timestamp is not within one hour from current time"}`, false, false, "code 19021: sign match fail"},
		{FormatFeishu, `{"code":19024,"msg":"Key Words Not Found"}`, false, false, "code 19024"},
		{FormatFeishu, `{"code":11232,"msg":"frequency limited"}`, false, true, "code 11232"},
		{FormatFeishu, `<html>proxy login</html>`, false, false, "not the JSON"},
		{FormatFeishu, ``, true, false, ""},
		{FormatDingTalk, `{"errcode":0,"errmsg":"ok"}`, true, false, ""},
		{FormatDingTalk, `{"errcode":310000,"errmsg":"keywords not in content"}`, false, false, "code 310000: keywords not in content"},
		{FormatDingTalk, `{"errcode":130101,"errmsg":"send too fast, exceed 20 times per minute"}`, false, true, "code 130101"},
		{FormatWeCom, `{"errcode":0,"errmsg":"ok"}`, true, false, ""},
		{FormatWeCom, `{"errcode":93000,"errmsg":"invalid webhook url"}`, false, false, "code 93000"},
		{FormatWeCom, `{"errcode":45009,"errmsg":"api freq out of limit"}`, false, true, "code 45009"},
		{FormatWeCom, `{"errcode":-1,"errmsg":"system busy"}`, false, true, "code -1"},
	}
	for _, c := range cases {
		t.Run(c.format+"/"+c.body, func(t *testing.T) {
			srv := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
				return notifiertest.Response{Body: c.body}
			})
			n := newNotifier(t, Config{URL: srv.URL + testPath, Format: c.format})
			retry, err := n.Notify(context.Background(), notifiertest.Notification(notifier.StatusFiring))
			switch {
			case c.ok && err != nil:
				t.Fatalf("got error %v, want delivered", err)
			case !c.ok && err == nil:
				t.Fatalf("got delivered, want an error")
			case !c.ok && retry != c.retry:
				t.Errorf("got retry=%v (%v), want retry=%v", retry, err, c.retry)
			case !c.ok && !strings.Contains(err.Error(), c.errHas):
				t.Errorf("got error %q, want it to say %q", err, c.errHas)
			}
		})
	}
}

// TestNoSecretsInErrors runs every format through failures and searches
// the errors for the URL, its tokens, the secret, the routing key and the
// header values.
func TestNoSecretsInErrors(t *testing.T) {
	secrets := []string{testSecret, testRoutingKey, testToken, "PATH-TOKEN-0123", "QUERY-TOKEN-0123", "DING-TOKEN-0123"}
	withSecrets := func(fc formatCase, u string) Config {
		c := fc.config(u)
		c.URL = u + testPath + "?key=QUERY-TOKEN-0123&access_token=DING-TOKEN-0123"
		if fc.format == FormatFeishu || fc.format == FormatDingTalk {
			c.Secret = testSecret
		}
		return c
	}
	// echo answers with everything it was sent, as a careless server would.
	echo := func(status int) func(int, *notifiertest.Request) notifiertest.Response {
		return func(_ int, r *notifiertest.Request) notifiertest.Response {
			var sent struct {
				RoutingKey string `json:"routing_key"`
			}
			json.Unmarshal(r.Body, &sent)
			body := r.Path + "?" + r.Query + " " + r.Header.Get("Authorization") + " " + sent.RoutingKey
			if status == http.StatusOK {
				body = `{"code":1,"errcode":1,"msg":"` + body + `","errmsg":"` + body + `"}`
			}
			return notifiertest.Response{Status: status, Body: body, Header: map[string]string{"Retry-After": "3"}}
		}
	}
	for _, fc := range formatCases() {
		for _, where := range []string{"unreachable", "500", "429", "200 with a code"} {
			t.Run(fc.format+"/"+where, func(t *testing.T) {
				base := "http://127.0.0.1:1"
				switch where {
				case "500":
					base = notifiertest.NewServer(t, echo(http.StatusInternalServerError)).URL
				case "429":
					base = notifiertest.NewServer(t, echo(http.StatusTooManyRequests)).URL
				case "200 with a code":
					if fc.format != FormatFeishu && fc.format != FormatDingTalk && fc.format != FormatWeCom {
						t.Skip("format reads no code from a 200")
					}
					base = notifiertest.NewServer(t, echo(http.StatusOK)).URL
				}
				c := withSecrets(fc, base)
				n := newNotifier(t, c)
				m := notifiertest.Notification(notifier.StatusFiring)
				m.Alerts = append(m.Alerts, m.Alerts[0]) // pagerduty: two events, two failures
				_, err := n.Notify(context.Background(), m)
				if err == nil {
					t.Fatal("got delivered, want an error")
				}
				text := err.Error()
				var ra *notifier.RetryAfterError
				if errors.As(err, &ra) {
					text += " " + ra.Err.Error()
				}
				notifiertest.AssertNoSecrets(t, "error", text, append(secrets, c.URL)...)
				if where != "unreachable" && !strings.Contains(text, "<redacted>") {
					t.Errorf("error %q: want the echoed secrets shown as <redacted>", text)
				}
			})
		}
	}
}

func TestConfigCheck(t *testing.T) {
	ok := "https://example.net/hook"
	cases := []struct {
		name string
		cfg  Config
		want []string // substrings, one per problem, in order
	}{
		{"generic by default", Config{URL: ok}, nil},
		{"every format", Config{URL: ok, Format: FormatDiscord, Timeout: time.Second}, nil},
		{"unknown format", Config{URL: ok, Format: "slackk"},
			[]string{`format "slackk" is not one of generic, alertmanager, discord, teams, feishu, dingtalk, wecom, pagerduty, template`}},
		{"no url", Config{Format: FormatTeams}, []string{"url is missing"}},
		{"not http", Config{URL: "ftp://example.net/x"}, []string{`url must start with http:// or https://, not "ftp:"`}},
		{"no scheme", Config{URL: "example.net/hook"}, []string{"url must start with http:// or https://"}},
		{"no host", Config{URL: "https:///hook"}, []string{"url has no host"}},
		{"bad url", Config{URL: "https://exa mple.net/%zz"}, []string{"url is not a valid URL"}},
		{"pagerduty default url", Config{Format: FormatPagerDuty, RoutingKey: "k"}, nil},
		{"pagerduty without key", Config{Format: FormatPagerDuty}, []string{"format pagerduty needs routing_key"}},
		{"routing key elsewhere", Config{URL: ok, RoutingKey: "k"}, []string{"routing_key is only used by format pagerduty"}},
		{"secret elsewhere", Config{URL: ok, Format: FormatWeCom, Secret: "s"}, []string{"secret is only used by formats feishu and dingtalk, not wecom"}},
		{"signed feishu", Config{URL: ok, Format: FormatFeishu, Secret: "s"}, nil},
		{"template missing", Config{URL: ok, Format: FormatTemplate}, []string{"format template needs template"}},
		{"template does not parse", Config{URL: ok, Format: FormatTemplate, Template: "{{.Status"}, []string{"template does not parse"}},
		{"template unknown func", Config{URL: ok, Format: FormatTemplate, Template: "{{bogus .Status}}"}, []string{`function "bogus" not defined`}},
		{"template unknown field", Config{URL: ok, Format: FormatTemplate, Template: `{"s": {{json .Statuz}}}`},
			[]string{`can't evaluate field Statuz`}},
		{"template not JSON", Config{URL: ok, Format: FormatTemplate, Template: `{"s": "{{(index .Alerts 0).Summary}}"}`},
			[]string{"not JSON"}},
		{"template text body", Config{URL: ok, Format: FormatTemplate, Template: `{{.Status}}`,
			Headers: map[string]string{"content-type": "text/plain"}}, nil},
		{"template elsewhere", Config{URL: ok, Template: "{{.Status}}"}, []string{"template is only used by format template"}},
		{"content type elsewhere", Config{URL: ok, Headers: map[string]string{"Content-Type": "text/plain"}},
			[]string{"header Content-Type cannot be set for format generic"}},
		{"host header", Config{URL: ok, Headers: map[string]string{"host": "x"}}, []string{"header Host cannot be set"}},
		{"bad header name", Config{URL: ok, Headers: map[string]string{"X Token": "x"}}, []string{`header "X Token" is not a valid`}},
		{"header line break", Config{URL: ok, Headers: map[string]string{"X-Token": "a\r\nb"}}, []string{"header X-Token has a line break"}},
		{"negative timeout", Config{URL: ok, Timeout: -time.Second}, []string{"timeout -1s is negative"}},
		{"many at once", Config{Format: FormatPagerDuty, Secret: "s", Timeout: -1},
			[]string{"secret is only used", "needs routing_key", "is negative"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.cfg.Check()
			if len(got) != len(c.want) {
				t.Fatalf("got %d problems %q, want %d like %q", len(got), got, len(c.want), c.want)
			}
			for i := range got {
				if !strings.Contains(got[i], c.want[i]) {
					t.Errorf("problem %d: got %q, want it to say %q", i, got[i], c.want[i])
				}
			}
		})
	}
}

func TestCheckHidesURL(t *testing.T) {
	secret := "ftp://example.net/TOKEN-9876"
	c := Config{URL: secret}
	notifiertest.AssertNoSecrets(t, "Check", strings.Join(c.Check(), "\n"), secret, "TOKEN-9876")
	_, err := New("r", c, nil, nil)
	if err == nil {
		t.Fatal("New: got no error for an ftp url, want one")
	}
	notifiertest.AssertNoSecrets(t, "New", err.Error(), secret, "TOKEN-9876")
}

func TestNewDefaults(t *testing.T) {
	n, err := New("r", Config{Format: FormatPagerDuty, RoutingKey: "key"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n.url != pagerDutyURL {
		t.Errorf("pagerduty url: got %q, want %q", n.url, pagerDutyURL)
	}
	if n.client.Timeout != DefaultTimeout || n.timeout != DefaultTimeout {
		t.Errorf("timeout: got client %v, request %v, want %v", n.client.Timeout, n.timeout, DefaultTimeout)
	}
	n, err = New("r", Config{URL: "http://h/x", Timeout: 3 * time.Second}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n.cfg.Format != FormatGeneric || n.client.Timeout != 3*time.Second {
		t.Errorf("got format %q timeout %v, want generic and 3s", n.cfg.Format, n.client.Timeout)
	}
}

// TestTimeout: a server that never answers is a retryable deadline.
func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	n := newNotifier(t, Config{URL: srv.URL, Timeout: 20 * time.Millisecond})
	retry, err := n.Notify(context.Background(), notifiertest.Notification(notifier.StatusFiring))
	if err == nil || !retry {
		t.Fatalf("got retry=%v err=%v, want a retryable error", retry, err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want errors.Is(err, context.DeadlineExceeded)", err)
	}
}

func TestEmptyNotification(t *testing.T) {
	n := newNotifier(t, Config{URL: "http://127.0.0.1:1/x"})
	for _, m := range []*notifier.Notification{nil, {Status: notifier.StatusFiring}} {
		if retry, err := n.Notify(context.Background(), m); err == nil || retry {
			t.Errorf("Notify(%v): got retry=%v err=%v, want a permanent error", m, retry, err)
		}
	}
}

// TestRetryAfterHTTPDate: a 429 or 503 whose Retry-After is an HTTP date
// five seconds ahead is retried after five seconds, not after the backoff.
func TestRetryAfterHTTPDate(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		srv := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
			return notifiertest.RetryAt(status, 5*time.Second)
		})
		_, err := newNotifier(t, Config{URL: srv.URL, Format: FormatGeneric}).Notify(context.Background(), notifiertest.Notification(notifier.StatusFiring))
		var ra *notifier.RetryAfterError
		if !errors.As(err, &ra) || ra.After != 5*time.Second {
			t.Errorf("HTTP %d with Retry-After a date 5s ahead: got %v, want a retry after 5s", status, err)
		}
	}
}
