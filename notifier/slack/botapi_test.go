package slack

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

const botToken = "xoxb-1111-2222-bottest"

// newTestBot is a Bot on a fake Slack, its log in a buffer, its clock
// at *now.
func newTestBot(t *testing.T, o notifiertest.SlackOptions, now *time.Time) (*Bot, *notifiertest.Server, *notifiertest.Buffer) {
	t.Helper()
	fake := notifiertest.NewSlack(t, o)
	logs := &notifiertest.Buffer{}
	b := NewBot(BotOptions{Token: botToken, APIURL: fake.URL + "/api/",
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:    func() time.Time { return *now }})
	return b, fake, logs
}

func callsTo(fake *notifiertest.Server, method string) int {
	n := 0
	for _, r := range fake.Requests() {
		if r.Path == "/api/"+method {
			n++
		}
	}
	return n
}

// TestBotScopes: auth.test's scopes decide what the Bot tries. Without
// files:write one warning, and no upload is tried; without users:read
// no zone is asked.
func TestBotScopes(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	b, fake, logs := newTestBot(t, notifiertest.SlackOptions{Scopes: "chat:write,commands", Zones: map[string]string{"U1": "Europe/Paris"}}, &now)
	b.CheckScopes(t.Context())
	if b.MayUpload() {
		t.Error("MayUpload without files:write: got true")
	}
	for range 2 {
		if _, err := b.Upload(t.Context(), File{Channel: "C1", Name: "a.png", PNG: []byte("x")}); !errors.Is(err, ErrNoFilesScope) {
			t.Errorf("Upload without files:write: got %v, want ErrNoFilesScope", err)
		}
	}
	if _, ok := b.UserZone(t.Context(), "U1"); ok {
		t.Error("UserZone without users:read: got a zone")
	}
	if n := callsTo(fake, "files.getUploadURLExternal") + callsTo(fake, "users.info"); n != 0 {
		t.Errorf("got %d upload or users.info calls without their scopes, want none", n)
	}
	if n := strings.Count(logs.String(), "files:write"); n != 1 {
		t.Errorf("warnings naming files:write: %d, want 1\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), "users:read") {
		t.Errorf("the log does not say that charts show the host's zone without users:read:\n%s", logs)
	}
}

// TestBotUploadRefused: an upload Slack refuses for want of files:write
// turns uploads off, with one warning.
func TestBotUploadRefused(t *testing.T) {
	now := time.Now()
	b, fake, logs := newTestBot(t, notifiertest.SlackOptions{Fail: map[string]string{"files.getUploadURLExternal": "missing_scope"}}, &now)
	for range 3 {
		if _, err := b.Upload(t.Context(), File{Channel: "C1", Name: "a.png", PNG: []byte("x")}); !errors.Is(err, ErrNoFilesScope) {
			t.Fatalf("Upload refused for its scope: got %v, want ErrNoFilesScope", err)
		}
	}
	if n := callsTo(fake, "files.getUploadURLExternal"); n != 1 || b.MayUpload() {
		t.Errorf("after missing_scope: %d calls and MayUpload %v, want 1 call and false", n, b.MayUpload())
	}
	if n := strings.Count(logs.String(), "files:write"); n != 1 {
		t.Errorf("warnings naming files:write: %d, want 1", n)
	}
}

// TestBotUserZone: a user's zone is asked once and kept for hours; a
// zone this host lacks is Slack's offset under its name; an unknown user
// has none, asked again later; nothing logged holds the token.
func TestBotUserZone(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	b, fake, logs := newTestBot(t, notifiertest.SlackOptions{Scopes: "files:write,users:read",
		Zones: map[string]string{"U1": "Asia/Tokyo", "U2": "Mars/Olympus_Mons"}}, &now)
	b.CheckScopes(t.Context())
	for range 3 {
		loc, ok := b.UserZone(t.Context(), "U1")
		if !ok || loc.String() != "Asia/Tokyo" {
			t.Fatalf("UserZone(U1): got %v, %v; want Asia/Tokyo", loc, ok)
		}
	}
	if n := callsTo(fake, "users.info"); n != 1 {
		t.Errorf("users.info: %d calls for three look-ups, want 1", n)
	}
	now = now.Add(zoneKept + time.Minute)
	b.UserZone(t.Context(), "U1")
	if n := callsTo(fake, "users.info"); n != 2 {
		t.Errorf("users.info after %v: %d calls, want 2 (looked up again)", zoneKept, n)
	}
	if loc, ok := b.UserZone(t.Context(), "U2"); !ok || loc.String() != "Mars/Olympus_Mons" {
		t.Errorf("UserZone(U2), a zone this host does not know: got %v, %v; want Slack's offset under its name", loc, ok)
	}
	for range 2 {
		if _, ok := b.UserZone(t.Context(), "U9"); ok {
			t.Error("UserZone(U9), unknown to Slack: got a zone")
		}
	}
	if n := callsTo(fake, "users.info"); n != 4 {
		t.Errorf("users.info: %d calls, want 4 (U1 twice, U2, U9 once within %v)", n, zoneUnknownTo)
	}
	notifiertest.AssertNoSecrets(t, "the log", logs.String(), botToken)
}
