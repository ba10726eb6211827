package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// digestNotification is a daily digest as the scheduler hands it over.
func digestNotification() *notifier.Notification {
	return &notifier.Notification{ID: 9, Receiver: "test", GroupKey: "test/digest/daily", Status: notifier.StatusDigest,
		CreatedAt: now, Digest: &notifier.Digest{
			Name:     "daily",
			Title:    "GPU usage on node1, Sun 29 Nov 09:00 – Mon 30 Nov 09:00",
			Text:     "GPU 0  avg 61%  peak 100%\nalice  20.5 GPU-hours",
			Markdown: "**GPU 0** avg 61% · peak 100%\n- **alice** 20.5 GPU-hours <at id=all>",
			Blocks:   json.RawMessage(`[{"type":"divider"}]`),
			Data:     json.RawMessage(`{"gpus":[{"gpu":0,"util_avg":61}],"users":[{"user":"alice","gpu_hours":20.5}]}`),
		}}
}

// digestTemplate is a body template for alerts and digests alike.
const digestTemplate = `{"status": {{json .Status}}, {{if .Digest}}"title": {{json .Digest.Title}}` +
	`{{else}}"alert": {{json (index .Alerts 0).Name}}{{end}}, "alerts": {{len .Alerts}}}`

// TestDigestGolden sends the digest in every format that takes one and
// compares the request with testdata/FORMAT.digest.json by meaning.
func TestDigestGolden(t *testing.T) {
	for _, fc := range formatCases() {
		if fc.format == FormatAlertmanager || fc.format == FormatPagerDuty {
			continue
		}
		t.Run(fc.format, func(t *testing.T) {
			srv := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
				return notifiertest.Response{Status: http.StatusOK, Body: fc.okBody}
			})
			c := fc.config(srv.URL)
			if fc.format == FormatTemplate {
				c.Template = digestTemplate
			}
			n := newNotifier(t, c)
			if retry, err := n.Notify(context.Background(), digestNotification()); err != nil {
				t.Fatalf("Notify: got %v (retry %v), want delivered", err, retry)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != http.MethodPost || r.Path != testPath || r.Header.Get("Authorization") != "Bearer "+testToken {
				t.Errorf("got %s %s with Authorization %q, want POST %s with the configured header", r.Method, r.Path,
					r.Header.Get("Authorization"), testPath)
			}
			if !strings.Contains(string(r.Body), "GPU usage on node1") {
				t.Errorf("body does not carry the title: %s", r.Body)
			}
			switch fc.format {
			case FormatFeishu:
				verifyFeishuSign(t, r.Body)
			case FormatDingTalk:
				verifyDingTalkSign(t, r.Query)
			}
			compareGolden(t, filepath.Join("testdata", fc.format+".digest.json"), r.Body)
		})
	}
}

func TestDigestGenericSchema(t *testing.T) {
	n := newNotifier(t, Config{URL: "http://127.0.0.1:1/x"})
	_, body, err := n.encodeDigest(digestNotification())
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Version, Receiver, Status string
		Digest                    struct {
			Name, Title, Text, Markdown string
			Data                        struct {
				Users []struct {
					User     string  `json:"user"`
					GPUHours float64 `json:"gpu_hours"`
				} `json:"users"`
			}
		}
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	if msg.Version != "1" || msg.Receiver != "test" || msg.Status != "digest" || msg.Digest.Name != "daily" ||
		msg.Digest.Text == "" || msg.Digest.Markdown == "" || len(msg.Digest.Data.Users) != 1 || msg.Digest.Data.Users[0].GPUHours != 20.5 {
		t.Errorf("got %+v, want version 1, receiver test, status digest and the digest with its data", msg)
	}
	m := digestNotification()
	m.Digest.Data = nil
	if _, body, _ := n.encodeDigest(m); !strings.Contains(string(body), `"data":null`) {
		t.Errorf("got %s, want data null when the digest has none", body)
	}
}

func TestDigestRefused(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		m    *notifier.Notification
		want string
	}{
		{"alertmanager", Config{Format: FormatAlertmanager}, digestNotification(), "alertmanager format takes alerts only"},
		{"pagerduty", Config{Format: FormatPagerDuty, RoutingKey: testRoutingKey}, digestNotification(), "pagerduty takes alerts, not digests"},
		{"no digest", Config{}, &notifier.Notification{Status: notifier.StatusDigest}, "without its digest"},
		{"template for alerts", Config{Format: FormatTemplate, Template: `{"a": {{json (index .Alerts 0).Name}}}`},
			digestNotification(), "template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := notifiertest.NewServer(t, nil)
			tt.c.URL = srv.URL + testPath
			retry, err := newNotifier(t, tt.c).Notify(context.Background(), tt.m)
			if err == nil || retry || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got retry=%v err %v, want a permanent error saying %q", retry, err, tt.want)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("got %d requests, want none", n)
			}
		})
	}
}

func TestDigestMarkdownFallback(t *testing.T) {
	tests := []struct {
		d    notifier.Digest
		want string
	}{
		{notifier.Digest{Markdown: "**m**", Text: "t"}, "**m**"},
		{notifier.Digest{Text: "t"}, "t"},
	}
	for _, tt := range tests {
		if got := digestMarkdown(&tt.d); got != tt.want {
			t.Errorf("digestMarkdown(%+v): got %q, want %q", tt.d, got, tt.want)
		}
	}
	if got, want := digestTitle(&notifier.Digest{Name: "weekly"}), "gpuwatch digest weekly"; got != want {
		t.Errorf("digestTitle: got %q, want %q", got, want)
	}
	if got, want := blankLines("a\nb\r\nc"), "a\n\nb\n\nc"; got != want {
		t.Errorf("blankLines: got %q, want %q", got, want)
	}
}

// FuzzEncodeDigest checks that any digest text gives valid JSON within the
// chats' limits in every format that takes digests.
func FuzzEncodeDigest(f *testing.F) {
	f.Add("GPU usage on node1", "**GPU 0** avg 61%\n- alice", `{"gpus":[]}`)
	f.Add("\xff\xfe", "@everyone <at id=all></at>", "not json")
	f.Add(strings.Repeat("日本語", 3000), strings.Repeat("x\n", 20000), "")
	f.Fuzz(func(t *testing.T, title, markdown, data string) {
		m := digestNotification()
		m.Digest.Title, m.Digest.Markdown, m.Digest.Data = title, markdown, nil
		if json.Valid([]byte(data)) {
			m.Digest.Data = json.RawMessage(data)
		}
		for _, fc := range formatCases() {
			if fc.format == FormatTemplate || fc.format == FormatPagerDuty || fc.format == FormatAlertmanager {
				continue
			}
			_, body, err := newNotifier(t, fc.config("http://h")).encodeDigest(m)
			checkEncoded(t, fc.format, body, err)
		}
	})
}

func BenchmarkEncodeDigest(b *testing.B) {
	m := digestNotification()
	m.Digest.Markdown = strings.Repeat("- **alice** 20.5 GPU-hours, 310 GiB-hours\n", 40)
	for _, format := range []string{FormatGeneric, FormatDiscord} {
		n := newNotifier(b, Config{URL: "http://h", Format: format})
		b.Run(format, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := n.encodeDigest(m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// checkEncoded fails unless an encoded body is JSON within its format's
// limits.
func checkEncoded(t *testing.T, format string, body []byte, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	if !json.Valid(body) {
		t.Fatalf("%s: body is not JSON: %s", format, body)
	}
	if format == FormatWeCom {
		var msg weComMessage
		json.Unmarshal(body, &msg)
		if len(msg.Markdown.Content) > weComMaxContent {
			t.Errorf("wecom: got %d bytes, want at most %d", len(msg.Markdown.Content), weComMaxContent)
		}
	}
}
