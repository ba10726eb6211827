package slackbot

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	slacknotifier "github.com/gpuwatch/gpuwatch/notifier/slack"
)

// fakeOwners plays the daemon's people desk: U0BOB owns the alert with
// alertKey; the others own nothing.
type fakeOwners struct {
	mu      sync.Mutex
	answers []notifier.Answer
	muted   map[string]time.Duration
	digests map[string]string
}

func (f *fakeOwners) Answer(_ context.Context, key string, kind notifier.AnswerKind, userID, userName, click string) (notifier.Answer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if key != alertKey || userID != "U0BOB" {
		return notifier.Answer{}, &NotOwnerError{Owners: []string{"U0BOB"}}
	}
	ans := notifier.Answer{Kind: kind, By: userName + " (" + userID + ")", ByID: userID, Click: click, At: testNow}
	if kind == notifier.AnswerStillUsing {
		ans.Until = testNow.Add(2 * time.Hour)
	}
	f.answers = append(f.answers, ans)
	return ans, nil
}

func (f *fakeOwners) Mine(_ context.Context, userID string) ([]Job, error) {
	if userID != "U0BOB" {
		return nil, nil
	}
	return []Job{
		{Host: "node1", GPU: 1, Who: "job 4250 (bob)", Command: "jupyter-lab <!channel>", MemUsed: 20 << 30, Use: "idle-held",
			HeldSince: testNow.Add(-3 * time.Hour), Alerts: []string{"GPUIdleButHeld"}},
		{Host: "node2", GPU: 0, Who: "bob", Command: "python train.py", MemUsed: 60 << 30, Use: "busy"},
	}, nil
}

func (f *fakeOwners) MuteMe(userID string, d time.Duration) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.muted == nil {
		f.muted = map[string]time.Duration{}
	}
	f.muted[userID] = d
	return testNow.Add(d), nil
}

func (f *fakeOwners) SetDigest(userID, choice string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.digests == nil {
		f.digests = map[string]string{}
	}
	f.digests[userID] = choice
	return nil
}

// TestPersonalCommands: /gpu mine, mute-me and digest weekly|daily|off
// answer the user alone, in a channel the app does not serve and in a
// direct message too; without a people: section they say so.
func TestPersonalCommands(t *testing.T) {
	owners := &fakeOwners{}
	ta := newTestApp(t, 2, func(c *Config) { c.Owners = owners; c.AllowedChannels = []string{"gpu-alerts"} })
	k := ta.runIn(t, "DBOB", "mine", "U0BOB", "bob")
	contains(t, "/gpu mine", k.all(), "Your jobs: 2 on the GPUs", "`node1 GPU 1` *20.0 GiB* job 4250 (bob)", "idle held", "🔥 GPUIdleButHeld",
		"`node2 GPU 0` *60.0 GiB* bob · `python train.py` · busy", "&lt;!channel&gt;")
	if k.ResponseType != ephemeral {
		t.Errorf("/gpu mine: response type %q, want ephemeral", k.ResponseType)
	}
	contains(t, "/gpu mine with nothing", ta.runIn(t, "C0OTHER", "mine", "U0ALICE", "alice").all(), "You hold no GPU now.")
	contains(t, "/gpu mute-me", ta.runIn(t, "DBOB", "mute-me 2h", "U0BOB", "bob").all(), "No alerts about your jobs reach you", "<!date^")
	contains(t, "/gpu mute-me off", ta.runIn(t, "DBOB", "mute-me off", "U0BOB", "bob").all(), "reach you again")
	if owners.muted["U0BOB"] != 0 {
		t.Errorf("after mute-me off: muted %v, want 0", owners.muted["U0BOB"])
	}
	contains(t, "/gpu digest daily", ta.runIn(t, "DBOB", "digest daily", "U0BOB", "bob").all(), "personal digest daily")
	contains(t, "/gpu digest off", ta.runIn(t, "DBOB", "digest off", "U0BOB", "bob").all(), "No more personal digests")
	if owners.digests["U0BOB"] != "off" {
		t.Errorf("digest choice: %q, want off", owners.digests["U0BOB"])
	}
	contains(t, "/gpu status in a channel not served", ta.runIn(t, "C0OTHER", "status", "U0BOB", "bob").all(), "does not answer in this channel")

	plain := newTestApp(t, 2, nil)
	for _, cmd := range []string{"mine", "mute-me", "digest off"} {
		contains(t, "/gpu "+cmd+" without people", plain.run(t, cmd, "U0BOB", "bob").all(), "no people: section")
	}
	contains(t, "/gpu help", plain.run(t, "help", "U0BOB", "bob").all(), "/gpu mine", "/gpu mute-me [duration]", "/gpu digest weekly|daily|off")
}

// TestOwnerButtons: an owner's press is recorded and answered privately;
// someone else's is refused, naming the owner; a press in a direct
// message is answered though the app serves one channel only.
func TestOwnerButtons(t *testing.T) {
	owners := &fakeOwners{}
	ta := newTestApp(t, 2, func(c *Config) { c.Owners = owners; c.AllowedChannels = []string{"gpu-alerts"} })
	reqs := ta.clickIn(t, slacknotifier.OwnerBlockPrefix+"0", slacknotifier.ActionStillUsing, alertKey, "U0BOB", "bob", "DBOB")
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "Noted: you still use it") || !strings.Contains(string(reqs[0].Body), `"response_type":"ephemeral"`) {
		t.Fatalf("bob's Still using it: response_url got %v, want a private note", reqs)
	}
	if len(owners.answers) != 1 || owners.answers[0].Kind != notifier.AnswerStillUsing || owners.answers[0].Click == "" {
		t.Errorf("answers %+v, want bob still using it, with the press's action_ts", owners.answers)
	}
	reqs = ta.clickIn(t, slacknotifier.OwnerBlockPrefix+"0", slacknotifier.ActionNotMine, alertKey, "U0ALICE", "alice", "C0GPU")
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "only the owner of the job can answer this: \\u003c@U0BOB\\u003e") {
		t.Errorf("alice presses Not mine on bob's alert: response_url got %s, want a refusal naming bob", reqs[0].Body)
	}
	for action, want := range map[string]string{
		slacknotifier.ActionDone:     "you are done",
		slacknotifier.ActionNotMine:  "not yours; the channel hears of it",
		slacknotifier.ActionWatching: "you are watching it",
	} {
		reqs := ta.clickIn(t, slacknotifier.OwnerBlockPrefix+"0", action, alertKey, "U0BOB", "bob", "DBOB")
		if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), want) {
			t.Errorf("%s: response_url got %v, want %q", action, reqs, want)
		}
	}
	plain := newTestApp(t, 2, nil)
	reqs = plain.clickIn(t, slacknotifier.OwnerBlockPrefix+"0", slacknotifier.ActionDone, alertKey, "U0BOB", "bob", "DBOB")
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "no people: section") {
		t.Errorf("a press without people: got %v", reqs)
	}
}
