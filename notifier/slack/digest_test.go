package slack

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// digestNotification is a daily digest with blocks of its own when blocks
// is set, else markdown only.
func digestNotification(blocks string) *notifier.Notification {
	return &notifier.Notification{ID: 7, Receiver: receiver, GroupKey: receiver + "/digest/daily", Status: notifier.StatusDigest,
		CreatedAt: notifiertest.Start, Digest: &notifier.Digest{
			Name:     "daily",
			Title:    "GPU usage on node1, Sun 29 Nov 09:00 – Mon 30 Nov 09:00",
			Text:     "GPU 0  avg 61%  peak 100%\nalice 20.5 GPU-hours",
			Markdown: "*GPU 0* avg 61% · peak 100%\n*alice* 20.5 GPU-hours",
			Blocks:   json.RawMessage(blocks),
			Data:     json.RawMessage(`{"gpus":[{"gpu":0}]}`),
		}}
}

const digestBlocksJSON = `[{"type":"header","text":{"type":"plain_text","text":"GPU usage on node1"}},` +
	`{"type":"section","text":{"type":"mrkdwn","text":"*GPU 0* avg 61%"}},{"type":"divider"}]`

func TestDigestBot(t *testing.T) {
	tests := []struct {
		name, blocks, golden string
	}{
		{"own blocks", digestBlocksJSON, "digest.blocks.json"},
		{"own blocks in an object", `{"blocks":` + digestBlocksJSON + `}`, "digest.blocks.json"},
		{"markdown only", "", "digest.markdown.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeSlack(t, nil)
			store := newMemStore()
			n := newBot(t, srv, store)
			notify(t, n, digestNotification(tt.blocks))
			notify(t, n, digestNotification(tt.blocks))
			got := calls(t, srv)
			if len(got) != 2 || got[0].Method != "chat.postMessage" || got[1].Method != "chat.postMessage" {
				t.Fatalf("got calls %+v, want two chat.postMessage (a digest is never updated)", got)
			}
			c := got[0]
			if ch, ts := c.Form.Get("channel"), c.Form.Get("thread_ts"); ch != "#gpu-alerts" || ts != "" {
				t.Errorf("got channel %q thread_ts %q, want #gpu-alerts and a channel message", ch, ts)
			}
			if text, want := c.Form.Get("text"), "GPU usage on node1, Sun 29 Nov 09:00 – Mon 30 Nov 09:00"; text != want {
				t.Errorf("got text %q, want the title %q", text, want)
			}
			if len(store.m) != 0 {
				t.Errorf("got %d message records, want none for a digest", len(store.m))
			}
			golden(t, tt.golden, c.Form.Get("blocks"))
		})
	}
}

func TestDigestWebhook(t *testing.T) {
	srv := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
		return notifiertest.Response{Body: "ok"}
	})
	n, err := New(receiver, Config{WebhookURL: srv.URL + "/services/T0/B0/X", Username: "gpuwatch"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	notify(t, n, digestNotification(""))
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	var msg struct {
		Username string           `json:"username"`
		Text     string           `json:"text"`
		Blocks   []map[string]any `json:"blocks"`
	}
	if err := json.Unmarshal(reqs[0].Body, &msg); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	if h := headerText(msg.Blocks); !strings.HasPrefix(h, "GPU usage on node1") {
		t.Errorf("got header %q, want the title", h)
	}
	if all := allText(msg.Blocks); !strings.Contains(all, "*alice* 20.5 GPU-hours") {
		t.Errorf("got blocks text %q, want the markdown", all)
	}
	if msg.Username != "gpuwatch" || !strings.HasPrefix(msg.Text, "GPU usage on node1") {
		t.Errorf("got username %q text %q, want gpuwatch and the title", msg.Username, msg.Text)
	}
}

func TestDigestBad(t *testing.T) {
	tests := []struct {
		name string
		m    *notifier.Notification
		want string
	}{
		{"blocks not JSON", digestNotification(`[{"type":`), "not Block Kit JSON"},
		{"empty digest", &notifier.Notification{Status: notifier.StatusDigest, Digest: &notifier.Digest{Name: "daily"}}, "empty"},
		{"no digest", &notifier.Notification{Status: notifier.StatusDigest}, "without its digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeSlack(t, nil)
			retry, err := newBot(t, srv, nil).Notify(context.Background(), tt.m)
			if err == nil || retry || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got retry=%v err %v, want a permanent error saying %q", retry, err, tt.want)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("got %d requests, want none", n)
			}
		})
	}
}

func TestSplitRunes(t *testing.T) {
	tests := []struct {
		s     string
		limit int
		want  []string
	}{
		{"", 5, nil},
		{"abc", 5, []string{"abc"}},
		{"ab\ncd\nef", 6, []string{"ab\ncd", "ef"}},
		{"abcdefgh", 3, []string{"abc", "def", "gh"}},
		{"äöüäöü", 4, []string{"äöüä", "öü"}},
	}
	for _, tt := range tests {
		got := splitRunes(tt.s, tt.limit)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("splitRunes(%q, %d): got %q, want %q", tt.s, tt.limit, got, tt.want)
		}
	}
}

// FuzzDigestBlocks checks that no blocks or markdown panic the digest's
// layout, and that what it accepts is at least one block with sections
// within Slack's limit.
func FuzzDigestBlocks(f *testing.F) {
	f.Add("title", "*md*", digestBlocksJSON)
	f.Add("", "", `{"blocks":[{"type":"nonsense"}]}`)
	f.Add("t", strings.Repeat("ü\n", 5000), `[{"type":`)
	f.Fuzz(func(t *testing.T, title, markdown, blocks string) {
		got, err := digestBlocks(&notifier.Digest{Title: title, Markdown: markdown, Blocks: json.RawMessage(blocks)})
		if err != nil {
			return
		}
		if len(got) == 0 {
			t.Fatalf("got no blocks and no error")
		}
		if strings.TrimSpace(blocks) == "" {
			for _, p := range splitRunes(markdown, maxSectionRunes) {
				if n := len([]rune(p)); n > maxSectionRunes {
					t.Fatalf("got a section of %d runes, want at most %d", n, maxSectionRunes)
				}
			}
		}
	})
}
