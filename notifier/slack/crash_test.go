package slack

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// TestChartShareInDoubt: when Slack shares a chart but its answer to
// files.completeUploadExternal comes after the client gave up (or the
// process died waiting), the retry finds the file in the thread and does
// not post it again. A share Slack never made is made by the retry. A
// thread it cannot read (no channels:history) makes it share again, and
// say that the chart may show twice.
func TestChartShareInDoubt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		late   bool   // Slack shares, then answers too late
		noRead string // conversations.replies fails so
		shares int    // the shares Slack makes in all
	}{
		{name: "shared, answered too late", late: true, shares: 1},
		{name: "shared, the thread unreadable", late: true, noRead: "missing_scope", shares: 2},
		{name: "not shared", shares: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := notifiertest.SlackOptions{Scopes: "chat:write,files:write", Late: func(method string, n int) time.Duration {
				if tc.late && method == "files.completeUploadExternal" && n == 0 {
					return time.Second // the client gave up 400 ms earlier
				}
				return 0
			}}
			if tc.noRead != "" {
				opts.Fail = map[string]string{"conversations.replies": tc.noRead}
			}
			fake := notifiertest.NewSlack(t, opts)
			store := newMemStore()
			logs := &notifiertest.Buffer{}
			n, err := New(receiver, Config{Channel: "#gpu-alerts"}, Options{BotToken: botToken, APIURL: fake.URL + "/api/", Messages: store,
				Logger: slog.New(slog.NewTextHandler(logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			bot := NewBot(BotOptions{Token: botToken, APIURL: fake.URL + "/api/", Timeout: 200 * time.Millisecond}) // 600 ms an upload
			u := n.ChartUploader(pictures{}, bot)
			m := notifiertest.Notification(notifier.StatusFiring)
			m.Alerts[0].Chart = "c1"
			notify(t, n, m)
			if !tc.late {
				// The share never happens: the first try dies after the
				// bytes are up and the share recorded as in doubt.
				store.Put(receiver+"/chart-sharing/c1", []byte(`{"file":"F9","channel":"C1","ts":"1.0001"}`))
			} else if retry, err := u.Notify(context.Background(), m); !retry || err == nil {
				t.Fatalf("the first try, answered too late: retry=%v err %v, want a retry", retry, err)
			}
			if retry, err := u.Notify(context.Background(), m); retry || err != nil {
				t.Fatalf("the retry: retry=%v err %v, want done", retry, err)
			}
			if retry, err := u.Notify(context.Background(), m); retry || err != nil { // a third try finds it done
				t.Fatalf("another try: retry=%v err %v, want done", retry, err)
			}
			if got := callsTo(fake, "files.completeUploadExternal"); got != tc.shares {
				t.Errorf("Slack shared the chart %d times, want %d", got, tc.shares)
			}
			if tc.noRead != "" && !strings.Contains(logs.String(), "so it may show twice") {
				t.Errorf("the log does not say the chart may show twice:\n%s", logs)
			}
			if _, inDoubt, _ := store.Get(receiver + "/chart-sharing/c1"); inDoubt {
				t.Errorf("the share is still recorded as in doubt once done")
			}
		})
	}
}

// TestResolvedChartFollowsReposted: the "how it ended" chart of an alert
// whose message was deleted goes with the message its resolve posts
// anew, not into the deleted message's thread: it waits for the resolve
// to be delivered.
func TestResolvedChartFollowsReposted(t *testing.T) {
	fake := notifiertest.NewSlack(t, notifiertest.SlackOptions{Scopes: "chat:write,files:write", Fail: map[string]string{"chat.update": "message_not_found"}})
	store := newMemStore()
	n, err := New(receiver, Config{Channel: "#gpu-alerts"}, Options{BotToken: botToken, APIURL: fake.URL + "/api/", Messages: store})
	if err != nil {
		t.Fatal(err)
	}
	u := n.ChartUploader(pictures{}, NewBot(BotOptions{Token: botToken, APIURL: fake.URL + "/api/"}))
	notify(t, n, notifiertest.Notification(notifier.StatusFiring))
	firing := store.record(t, receiver+"/"+notifiertest.Notification(notifier.StatusFiring).Alerts[0].Key)

	resolved := notifiertest.Notification(notifier.StatusResolved)
	resolved.Alerts[0].Chart = "ended"
	if retry, err := u.Notify(context.Background(), resolved); !retry || !errors.Is(err, errMessageNotYet) {
		t.Fatalf("the resolve's chart before the resolve is delivered: retry=%v err %v, want it to wait", retry, err)
	}
	notify(t, n, resolved) // chat.update: message_not_found, so a new message
	reposted := store.record(t, receiver+"/"+resolved.Alerts[0].Key)
	if reposted.TS == firing.TS {
		t.Fatalf("the resolve did not post a new message for the deleted one")
	}
	if retry, err := u.Notify(context.Background(), resolved); retry || err != nil {
		t.Fatalf("the resolve's chart after the resolve: retry=%v err %v, want it uploaded", retry, err)
	}
	ups := notifiertest.SlackUploads(t, fake)
	if len(ups) != 1 || ups[0].ThreadTS != reposted.TS {
		t.Errorf("uploads %+v, want one, in the thread of the reposted message %s (not of the deleted %s)", ups, reposted.TS, firing.TS)
	}
}

// TestRedeliveredAfterItsResolve: a crash before the outbox recorded the
// delivery of a firing and of its resolve sends both again: the firing
// finds its message already telling the resolve and posts nothing, and
// the resolve finds its reply in the thread. Without that, the firing
// posted a second message and the resolve a second reply in its thread.
func TestRedeliveredAfterItsResolve(t *testing.T) {
	srv, replies := threadSlack(t, nil)
	st := newMemStore()
	for range 2 { // the first delivery, then the same two again after a crash
		notify(t, newBot(t, srv, st), twoGPUs(notifier.StatusFiring))
		resolved := twoGPUs(notifier.StatusResolved)
		notify(t, newBot(t, srv, st), resolved)
	}
	if posts := messages(t, srv); posts != 1 || resolvedReplies(replies) != 1 {
		t.Errorf("after the firing and the resolve were delivered twice: %d messages and %d resolved replies, want 1 and 1", messages(t, srv), resolvedReplies(replies))
	}
}

// TestRedeliveredAfterALaterFiring: a crash before the outbox recorded a
// run of deliveries sends them all again, in order: the firing, its
// resolve, and the alert firing again. The notifications about the
// firing before the record's are done already (their outbox IDs are
// lower than that of the record's last writer) and post nothing: no
// second message, no "Resolved" message of their own, no second reply.
func TestRedeliveredAfterALaterFiring(t *testing.T) {
	srv, replies := threadSlack(t, nil)
	st := newMemStore()
	fired := notifiertest.Notification(notifier.StatusFiring)
	resolved := resolvedNotification()
	again := notifiertest.Notification(notifier.StatusFiring)
	again.Alerts[0].StartsAt = resolved.Alerts[0].At.Add(time.Minute)
	again.Alerts[0].At = again.Alerts[0].StartsAt
	fired.ID, resolved.ID, again.ID = 1, 2, 3
	for range 2 { // delivered, then delivered again after a crash
		for _, m := range []*notifier.Notification{fired, resolved, again} {
			notify(t, newBot(t, srv, st), m)
		}
	}
	if posts := messages(t, srv); posts != 2 || resolvedReplies(replies) != 1 {
		t.Errorf("three notifications delivered twice: %d messages and %d resolved replies, want 2 (a message per firing) and 1", posts, resolvedReplies(replies))
	}
}

// messages counts the messages the fake took that are not in a thread.
func messages(t *testing.T, srv *notifiertest.Server) int {
	t.Helper()
	n := 0
	for _, c := range calls(t, srv) {
		if c.Method == "chat.postMessage" && c.Form.Get("thread_ts") == "" {
			n++
		}
	}
	return n
}
