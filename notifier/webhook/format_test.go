package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// threeGPUs is the sample notification with the alert on GPUs 0, 1 and 2.
func threeGPUs(status notifier.Status) *notifier.Notification {
	m := notifiertest.Notification(status)
	for i := 1; i < 3; i++ {
		a := m.Alerts[0]
		a.GPU, a.UUID = i, fmt.Sprintf("GPU-%d", i)
		a.Key = "node1/GPUMemoryLeak/" + a.UUID
		a.Labels = map[string]string{"alert": a.Name, "severity": a.Severity, "host": a.Host, "gpu": fmt.Sprint(i), "uuid": a.UUID}
		m.Alerts = append(m.Alerts, a)
	}
	return m
}

func TestPagerDutyOneEventPerAlert(t *testing.T) {
	cases := []struct {
		name      string
		answer    func(n int) int // HTTP status of the n-th event
		wantErr   bool
		wantRetry bool
		wantAfter time.Duration
	}{
		{"all accepted", func(int) int { return http.StatusAccepted }, false, false, 0},
		{"second fails 500", func(n int) int { return map[bool]int{true: 500, false: 202}[n == 1] }, true, true, 0},
		{"second rejected 400", func(n int) int { return map[bool]int{true: 400, false: 202}[n == 1] }, true, false, 0},
		{"two rate limited", func(n int) int { return map[bool]int{true: 429, false: 202}[n >= 1] }, true, true, 7 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := notifiertest.NewServer(t, func(n int, _ *notifiertest.Request) notifiertest.Response {
				return notifiertest.Response{Status: c.answer(n), Body: `{"status":"x"}`, Header: map[string]string{"Retry-After": "7"}}
			})
			n := newNotifier(t, Config{URL: srv.URL, Format: FormatPagerDuty, RoutingKey: testRoutingKey})
			retry, err := n.Notify(context.Background(), threeGPUs(notifier.StatusFiring))
			if (err != nil) != c.wantErr || (err != nil && retry != c.wantRetry) {
				t.Fatalf("got retry=%v err=%v, want error %v retry %v", retry, err, c.wantErr, c.wantRetry)
			}
			var ra *notifier.RetryAfterError
			if c.wantAfter > 0 && (!errors.As(err, &ra) || ra.After != c.wantAfter) {
				t.Errorf("got %v, want a RetryAfterError of %v", err, c.wantAfter)
			}
			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("got %d requests, want 3 (one event per alert, all sent even after a failure)", len(reqs))
			}
			for i, r := range reqs {
				var ev struct {
					RoutingKey  string `json:"routing_key"`
					EventAction string `json:"event_action"`
					DedupKey    string `json:"dedup_key"`
					Payload     struct{ Component string }
				}
				if err := json.Unmarshal(r.Body, &ev); err != nil {
					t.Fatal(err)
				}
				want := fmt.Sprintf("node1/GPUMemoryLeak/GPU-%d", i)
				if i == 0 {
					want = notifiertest.Notification(notifier.StatusFiring).Alerts[0].Key
				}
				if ev.DedupKey != want || ev.EventAction != "trigger" || ev.RoutingKey != testRoutingKey ||
					ev.Payload.Component != fmt.Sprintf("GPU %d", i) {
					t.Errorf("event %d: got %+v, want a trigger with dedup_key %q for gpu %d", i, ev, want, i)
				}
			}
		})
	}
}

func TestPagerDutyStableDedupKey(t *testing.T) {
	firing, err := encodePagerDuty("k", &notifiertest.Notification(notifier.StatusFiring).Alerts[0])
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := encodePagerDuty("k", &notifiertest.Notification(notifier.StatusResolved).Alerts[0])
	if err != nil {
		t.Fatal(err)
	}
	var f, r struct {
		DedupKey string `json:"dedup_key"`
	}
	json.Unmarshal(firing, &f)
	json.Unmarshal(resolved, &r)
	if f.DedupKey == "" || f.DedupKey != r.DedupKey {
		t.Errorf("dedup keys: got trigger %q and resolve %q, want the same, non-empty", f.DedupKey, r.DedupKey)
	}
}

func TestPagerDutySeverity(t *testing.T) {
	for in, want := range map[string]string{"critical": "critical", "warning": "warning", "info": "info", "": "warning", "page": "warning"} {
		if got := pagerDutySeverity(in); got != want {
			t.Errorf("pagerDutySeverity(%q): got %q, want %q", in, got, want)
		}
	}
}

func TestAlertmanagerGroup(t *testing.T) {
	body, err := encodeAlertmanager("ops", threeGPUs(notifier.StatusFiring))
	if err != nil {
		t.Fatal(err)
	}
	var msg alertmanagerMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatal(err)
	}
	wantCommon := map[string]string{"alert": "GPUMemoryLeak", "alertname": "GPUMemoryLeak", "severity": "critical", "host": "node1"}
	if fmt.Sprint(msg.CommonLabels) != fmt.Sprint(wantCommon) {
		t.Errorf("commonLabels: got %v, want %v", msg.CommonLabels, wantCommon)
	}
	if len(msg.Alerts) != 3 || msg.Alerts[0].Fingerprint == msg.Alerts[1].Fingerprint {
		t.Errorf("got %d alerts with fingerprints %q, %q; want 3 with distinct fingerprints", len(msg.Alerts),
			msg.Alerts[0].Fingerprint, msg.Alerts[1].Fingerprint)
	}
}

func TestDiscordLimits(t *testing.T) {
	m := notifiertest.Notification(notifier.StatusFiring)
	for len(m.Alerts) < 15 {
		m.Alerts = append(m.Alerts, m.Alerts[0])
	}
	m.Alerts[0].Processes[0].Command = "@everyone *bold* " + strings.Repeat("x", 5000)
	body, err := encodeDiscord(m)
	if err != nil {
		t.Fatal(err)
	}
	var msg discordMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, e := range msg.Embeds {
		total += len([]rune(e.Title)) + len([]rune(e.Description))
	}
	if len(msg.Embeds) > discordMaxEmbeds || total > discordMaxEmbedChars {
		t.Errorf("got %d embeds of %d characters, want at most %d and %d", len(msg.Embeds), total, discordMaxEmbeds, discordMaxEmbedChars)
	}
	if !strings.Contains(msg.Content, "more alerts not shown") {
		t.Errorf("content %q: want it to count the alerts left out", msg.Content)
	}
	if msg.AllowedMentions.Parse == nil || len(msg.AllowedMentions.Parse) != 0 {
		t.Errorf("allowed_mentions: got %v, want an empty parse list", msg.AllowedMentions.Parse)
	}
	if !strings.Contains(msg.Embeds[0].Description, `\*bold\*`) {
		t.Errorf("description: want markdown in the command escaped, got %q", msg.Embeds[0].Description)
	}
}

func TestWeComLimit(t *testing.T) {
	m := notifiertest.Notification(notifier.StatusFiring)
	m.Alerts[0].Description = strings.Repeat("日本", 3000)
	body, err := encodeWeCom(m)
	if err != nil {
		t.Fatal(err)
	}
	var msg weComMessage
	json.Unmarshal(body, &msg)
	if n := len(msg.Markdown.Content); n > weComMaxContent || !strings.HasSuffix(msg.Markdown.Content, "…") {
		t.Errorf("content: got %d bytes ending %q, want at most %d ending in …", n, msg.Markdown.Content[n-8:], weComMaxContent)
	}
}

func TestDingTalkSignDoesNotAccumulate(t *testing.T) {
	srv := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
		return notifiertest.Response{Body: `{"errcode":0}`}
	})
	n := newNotifier(t, Config{URL: srv.URL + "/robot/send?access_token=T0K3N&timestamp=1&sign=old", Format: FormatDingTalk, Secret: testSecret})
	for range 2 {
		if _, err := n.Notify(context.Background(), notifiertest.Notification(notifier.StatusFiring)); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range srv.Requests() {
		q, _ := url.ParseQuery(r.Query)
		if len(q["timestamp"]) != 1 || len(q["sign"]) != 1 || q.Get("access_token") != "T0K3N" {
			t.Errorf("query %q: want one timestamp, one sign and the access token", r.Query)
		}
		verifyDingTalkSign(t, strings.Replace(r.Query, "T0K3N", "DING-TOKEN-0123", 1))
	}
}

func TestTemplateFormat(t *testing.T) {
	cases := []struct {
		name, template, contentType string
		want                        string
		wantErr                     string
	}{
		{"funcs", `{{with index .Alerts 0}}{{.Value | percent}} {{.TimeToFull | duration}} {{(index .Processes 0).MemUsed | bytes}} {{json .Host}}{{end}}`,
			"text/plain", `26843545.6% 12m 61 GiB "node1"`, ""},
		{"text body", `{{.Status}}: {{range .Alerts}}{{.Name}} gpu{{.GPU}}{{end}}`, "text/plain; charset=utf-8", "firing: GPUMemoryLeak gpu0", ""},
		{"json body", `{"status": {{json .Status}}}`, "", `{"status": "firing"}`, ""},
		{"not JSON", `{"summary": "{{(index .Alerts 0).Summary}}"`, "", "", "not JSON"},
		{"bad func arg", `{{bytes .Status}}`, "text/plain", "", "want a number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := notifiertest.NewServer(t, nil)
			cfg := Config{URL: srv.URL, Format: FormatTemplate, Template: c.template}
			if c.contentType != "" {
				cfg.Headers = map[string]string{"Content-Type": c.contentType}
			}
			n, err := New("r", cfg, nil, nil)
			if err != nil {
				if c.wantErr != "" && strings.Contains(err.Error(), c.wantErr) {
					return // Check caught it on the sample notification
				}
				t.Fatal(err)
			}
			retry, err := n.Notify(context.Background(), notifiertest.Notification(notifier.StatusFiring))
			if c.wantErr != "" {
				if err == nil || retry || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got retry=%v err=%v, want a permanent error saying %q", retry, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := srv.Requests()[0]
			wantType := c.contentType
			if wantType == "" {
				wantType = "application/json"
			}
			if string(r.Body) != c.want || r.Header.Get("Content-Type") != wantType {
				t.Errorf("got body %q type %q, want %q type %q", r.Body, r.Header.Get("Content-Type"), c.want, wantType)
			}
		})
	}
}

func TestAlertText(t *testing.T) {
	firing := notifiertest.Notification(notifier.StatusFiring)
	a := &firing.Alerts[0]
	a.Processes = append(a.Processes, gpu.Process{PID: 7, User: "carol", Command: "a"}, gpu.Process{PID: 8, User: "dave", Command: "b"})
	a.At = a.StartsAt.Add(4 * time.Hour)
	a.Repeat = true
	text := alertText(a, style{br: "\n"})
	for _, want := range []string{"GPU 0 memory keeps growing", "**Severity:** critical", "**Host:** node1", "· **GPU 0** (NVIDIA H100 80GB HBM3)",
		"**Value:** 1.5 GiB/min", "**Trend:** +1.5 GiB/min", "**Full in:** 12m", "**Since:** 2026-11-29 09:41:05 UTC (firing for 4h)",
		"- alice · python train.py --model llama-7b · docker:3f2a9c1b7e4d · 61 GiB · pid 4242", "- bob · jupyter-lab · 2 GiB · pid 5151",
		"- carol · a · 0 B · pid 7", "- … and 1 more"} {
		if !strings.Contains(text, want) {
			t.Errorf("firing text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "dave") {
		t.Errorf("firing text lists a 4th process:\n%s", text)
	}
	if got := alertTitle(a); got != "🔴 STILL FIRING [critical] GPUMemoryLeak · node1 GPU 0" {
		t.Errorf("title: got %q", got)
	}
	resolved := notifiertest.Notification(notifier.StatusResolved)
	text = alertText(&resolved.Alerts[0], style{br: "\n"})
	for _, want := range []string{"**Resolved** after 18m", "exited with the GPU at 99.6% — a CUDA out-of-memory is likely"} {
		if !strings.Contains(text, want) {
			t.Errorf("resolved text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Full in") {
		t.Errorf("resolved text shows a time to full:\n%s", text)
	}
	if got, want := headline(threeGPUs(notifier.StatusResolved)), "✅ RESOLVED GPUMemoryLeak on 3 GPUs of node1"; got != want {
		t.Errorf("headline: got %q, want %q", got, want)
	}
}

func TestFormatHelpers(t *testing.T) {
	cases := []struct{ got, want string }{
		{formatDuration(0), "0s"}, {formatDuration(45), "45s"}, {formatDuration(720), "12m"},
		{formatDuration(5400), "1h30m"}, {formatDuration(3630), "1h"}, {formatDuration(2*86400 + 4*3600 + 59), "2d4h"},
		{formatDuration(-90), "-1m30s"}, {formatDuration(math.Inf(1)), "n/a"},
		{formatBytes(0), "0 B"}, {formatBytes(1536), "1.5 KiB"}, {formatBytes(61 << 30), "61 GiB"}, {formatBytes(math.NaN()), "n/a"},
		{formatPercent(95.33), "95.3%"}, {formatPercent(100), "100%"},
		{truncate("héllo", 5), "h\n…"}, {truncate("hello", 5), "hello"}, {shorten("abcdef", 4), "abc…"},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %q, want %q", i, c.got, c.want)
		}
	}
}

func FuzzCheckCodeAnswer(f *testing.F) {
	for _, s := range []string{``, `{"code":0}`, `{"errcode":130101,"errmsg":"send too fast"}`, `{"StatusCode":0}`,
		`{"code":"x"}`, `<html>`, `{"code":1e40}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		retry, err := checkCodeAnswer(body, 1)
		if err == nil && retry {
			t.Errorf("checkCodeAnswer(%q): retry without an error", body)
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	for _, fc := range formatCases() {
		n := newNotifier(b, fc.config("http://127.0.0.1:1"))
		m := threeGPUs(notifier.StatusFiring)
		b.Run(fc.format, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if fc.format == FormatPagerDuty {
					for i := range m.Alerts {
						encodePagerDuty(testRoutingKey, &m.Alerts[i])
					}
					continue
				}
				if _, _, err := n.encode(m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkNotify(b *testing.B) {
	srv := notifiertest.NewServer(b, nil)
	n := newNotifier(b, Config{URL: srv.URL, Format: FormatGeneric})
	m := notifiertest.Notification(notifier.StatusFiring)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := n.Notify(context.Background(), m); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzEncode feeds text from the GPU side (commands, summaries, names) to
// every chat format: the body is JSON and within the target's limits.
func FuzzEncode(f *testing.F) {
	f.Add("python train.py", "GPU 0 memory at 95%", "node1", 3)
	f.Add("@everyone <at id=all></at> *x* _y_ `z`", "\xff\xfe broken utf-8", "", 40)
	f.Add(strings.Repeat("日本語", 2000), "", "h\n\n### injected", 0)
	f.Fuzz(func(t *testing.T, command, summary, host string, alerts int) {
		m := notifiertest.Notification(notifier.StatusFiring)
		m.Alerts[0].Processes[0].Command, m.Alerts[0].Summary, m.Alerts[0].Host = command, summary, host
		for range min(max(alerts, 0), 50) {
			m.Alerts = append(m.Alerts, m.Alerts[0])
		}
		for _, fc := range formatCases() {
			if fc.format == FormatTemplate || fc.format == FormatPagerDuty {
				continue
			}
			n := newNotifier(t, fc.config("http://h"))
			_, body, err := n.encode(m)
			checkEncoded(t, fc.format, body, err)
		}
	})
}
