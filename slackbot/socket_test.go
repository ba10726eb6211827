package slackbot

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	goslack "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// fakeAcker records acknowledgements; it fails the first failFirst.
type fakeAcker struct {
	mu        sync.Mutex
	envelopes []string
	payloads  []any
	failFirst int
}

func (f *fakeAcker) Ack(req socketmode.Request, payload ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failFirst > 0 {
		f.failFirst--
		return errors.New("payload too large")
	}
	f.envelopes = append(f.envelopes, req.EnvelopeID)
	var p any
	if len(payload) > 0 {
		p = payload[0]
	}
	f.payloads = append(f.payloads, p)
	return nil
}

func slashEvent(text, userID, responseURL string) socketmode.Event {
	sc := goslack.SlashCommand{TeamID: "T1", ChannelID: "C0GPU", ChannelName: "gpu", UserID: userID, UserName: "someone",
		Command: "/gpu", Text: text, ResponseURL: responseURL}
	raw, _ := json.Marshal(sc)
	return socketmode.Event{Type: socketmode.EventTypeSlashCommand, Data: sc,
		Request: &socketmode.Request{Type: socketmode.RequestTypeSlashCommands, EnvelopeID: "env-1", Payload: raw, AcceptsResponsePayload: true}}
}

func TestSocketSlashCommand(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	ack := &fakeAcker{}
	ta.socketEvent(context.Background(), slashEvent("alerts public", "U1", ""), ack)
	if len(ack.envelopes) != 1 || ack.envelopes[0] != "env-1" {
		t.Fatalf("got acks %q, want env-1 once", ack.envelopes)
	}
	b, err := json.Marshal(ack.payloads[0])
	if err != nil {
		t.Fatal(err)
	}
	k := decodeKit(t, b)
	if k.ResponseType != inChannel {
		t.Errorf("ack payload: got response_type %q, want in_channel", k.ResponseType)
	}
	contains(t, "ack payload", k.all(), "1 firing, 1 pending", "GPUMemoryLeak")
}

func TestSocketSlashCommandSilenceByAdmin(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	ack := &fakeAcker{}
	ta.socketEvent(context.Background(), slashEvent("silence gpu 1 2h", "U0ADMIN", ""), ack)
	if len(ta.b.added) != 1 || ta.b.added[0].Matchers.String() != `{gpu="1"}` {
		t.Errorf("socket silence: got %+v, want one silence gpu=\"1\"", ta.b.added)
	}
}

func TestSocketOversizedAnswerGoesToResponseURL(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	slack := notifiertest.NewServer(t, nil)
	ack := &fakeAcker{failFirst: 1}
	ta.socketEvent(context.Background(), slashEvent("top", "U1", slack.URL+"/commands/x"), ack)
	ta.wait()
	if len(ack.payloads) != 1 || ack.payloads[0] != nil {
		t.Errorf("got ack payloads %v, want one empty acknowledgement", ack.payloads)
	}
	reqs := slack.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d posts to response_url, want 1", len(reqs))
	}
	contains(t, "posted answer", decodeKit(t, reqs[0].Body).all(), "carol")
}

func TestSocketButton(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	slack := notifiertest.NewServer(t, nil)
	raw := actionPayload(ActionAcknowledge, alertKey, "U0ADMIN", "admin", "C0GPU", slack.URL+"/actions/x")
	var cb goslack.InteractionCallback
	if err := json.Unmarshal([]byte(raw), &cb); err != nil {
		t.Fatal(err)
	}
	ack := &fakeAcker{}
	ev := socketmode.Event{Type: socketmode.EventTypeInteractive, Data: cb,
		Request: &socketmode.Request{Type: socketmode.RequestTypeInteractive, EnvelopeID: "env-2", Payload: json.RawMessage(raw)}}
	ta.socketEvent(context.Background(), ev, ack)
	ta.wait()
	if len(ack.envelopes) != 1 || ack.envelopes[0] != "env-2" || ack.payloads[0] != nil {
		t.Errorf("got acks %q %v, want env-2 once without payload", ack.envelopes, ack.payloads)
	}
	if len(ta.b.acks) != 1 || ta.b.acks[0][0] != alertKey {
		t.Errorf("got backend acks %q, want %s", ta.b.acks, alertKey)
	}
	checkUpdated(t, "socket acknowledge", slack.Requests(), "👀 Acknowledged by <@U0ADMIN>", "gpuwatch_silence_1h,gpuwatch_silence_24h,runbook")
}

func TestSocketOtherEvents(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	ack := &fakeAcker{}
	ta.socketEvent(context.Background(), socketmode.Event{Type: socketmode.EventTypeEventsAPI,
		Request: &socketmode.Request{Type: socketmode.RequestTypeEventsAPI, EnvelopeID: "env-3"}}, ack)
	ta.socketEvent(context.Background(), socketmode.Event{Type: socketmode.EventTypeConnected}, ack)
	ta.socketEvent(context.Background(), socketmode.Event{Type: socketmode.EventTypeSlashCommand}, ack) // no payload
	if len(ack.envelopes) != 1 || ack.envelopes[0] != "env-3" {
		t.Errorf("got acks %q, want only the events_api envelope", ack.envelopes)
	}
	if n := ta.b.callCount(); n != 0 {
		t.Errorf("got %d backend calls, want none", n)
	}
}

func TestRunSocketModeNeedsAppToken(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	err := ta.RunSocketMode(context.Background(), "xoxb-not-an-app-token", "xoxb-bot", "")
	if err == nil {
		t.Fatal("RunSocketMode with a bot token as app token: got nil, want an error")
	}
	notifiertest.AssertNoSecrets(t, "error", err.Error(), "xoxb-not-an-app-token", "xoxb-bot")
}

func TestRunSocketModeInvalidAuth(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	api := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
		return notifiertest.Response{Body: `{"ok":false,"error":"invalid_auth"}`}
	})
	err := ta.RunSocketMode(context.Background(), "xapp-1-secret-app-token", "xoxb-secret-bot", api.URL+"/api")
	if err == nil {
		t.Fatal("RunSocketMode refused by Slack: got nil, want an error")
	}
	notifiertest.AssertNoSecrets(t, "error", err.Error(), "xapp-1-secret-app-token", "xoxb-secret-bot")
	notifiertest.AssertNoSecrets(t, "log", ta.log.String(), "xapp-1-secret-app-token", "xoxb-secret-bot")
	reqs := api.Requests()
	if len(reqs) == 0 || reqs[0].Path != "/api/apps.connections.open" {
		t.Fatalf("got requests %+v, want apps.connections.open", reqs)
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer xapp-1-secret-app-token" {
		t.Errorf("apps.connections.open: got Authorization %q, want the app token", got)
	}
}

func TestRunSocketModeStopsWithContext(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	ctx, cancel := context.WithCancel(context.Background())
	api := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
		cancel() // the daemon shuts down while connecting
		return notifiertest.Response{Body: `{"ok":false,"error":"ratelimited"}`}
	})
	if err := ta.RunSocketMode(ctx, "xapp-1-x", "xoxb-y", api.URL+"/api/"); err != nil {
		t.Errorf("RunSocketMode after ctx ended: got %v, want nil", err)
	}
}
