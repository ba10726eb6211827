package slack

import (
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// buttonsOf returns the gpuwatch action IDs of the blocks' buttons.
func buttonsOf(blocks []map[string]any) []string {
	var ids []string
	for _, b := range blocks {
		if b["type"] != "actions" {
			continue
		}
		els, _ := b["elements"].([]any)
		for _, e := range els {
			if m, ok := e.(map[string]any); ok {
				id, _ := m["action_id"].(string)
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// TestAcknowledgementSurvivesRedraw is the acknowledgement that vanished:
// GPU 0's alert is acknowledged in Slack, then GPU 1's alert of the same
// message resolves and chat.update redraws the message. It must still say
// who acknowledged GPU 0, without its Acknowledge button but with its
// silence buttons, and so after GPU 0 resolves.
func TestAcknowledgementSurvivesRedraw(t *testing.T) {
	srv := fakeSlack(t, nil)
	acks := map[string]string{}
	n, err := New(receiver, Config{Channel: "#gpu-alerts"}, Options{
		BotToken: "xoxb-test", APIURL: srv.URL + "/api/", HTTPClient: srv.Client(), Messages: newMemStore(),
		Acknowledged: func(key string) (string, bool) { by, ok := acks[key]; return by, ok },
	})
	if err != nil {
		t.Fatal(err)
	}
	firing := twoGPUs(notifier.StatusFiring)
	notify(t, n, firing)
	if got := buttonsOf(calls(t, srv)[0].Blocks); len(got) != 6 {
		t.Fatalf("got buttons %v, want three under each alert", got)
	}
	acks[firing.Alerts[0].Key] = "admin (U0ADMIN)" // the click on GPU 0's Acknowledge

	res := twoGPUs(notifier.StatusResolved)
	res.Alerts = res.Alerts[1:]
	notify(t, n, res)
	update := calls(t, srv)[1]
	if update.Method != "chat.update" {
		t.Fatalf("got %s, want chat.update", update.Method)
	}
	if got := buttonsOf(update.Blocks); strings.Join(got, ",") != ActionSilence1h+","+ActionSilence24h {
		t.Errorf("after GPU 1 resolved: got buttons %v, want GPU 0's silence buttons only (GPU 0 acknowledged, GPU 1 resolved)", got)
	}
	if all := allText(update.Blocks); strings.Count(all, "👀 Acknowledged by <@U0ADMIN>") != 1 {
		t.Errorf("after GPU 1 resolved: got\n%s\nwant GPU 0 acknowledged by <@U0ADMIN>", all)
	}

	// GPU 0 resolves: the dispatcher forgets the ack, the resolve says it.
	delete(acks, firing.Alerts[0].Key)
	res = twoGPUs(notifier.StatusResolved)
	res.Alerts = res.Alerts[:1]
	res.Alerts[0].AcknowledgedBy = "admin (U0ADMIN)"
	notify(t, n, res)
	update = calls(t, srv)[3]
	if all := allText(update.Blocks); update.Method != "chat.update" || !strings.Contains(all, "👀 Acknowledged by <@U0ADMIN>") {
		t.Errorf("after GPU 0 resolved: got %s\n%s\nwant the acknowledgement kept", update.Method, all)
	}
}

func TestMention(t *testing.T) {
	for by, want := range map[string]string{
		"admin (U0ADMIN)": "<@U0ADMIN>", "W0123": "<@W0123>", "alice": "alice",
		"<!channel> (x)": "&lt;!channel&gt; (x)", "root (u123)": "root (u123)",
	} {
		if got := mention(by); got != want {
			t.Errorf("mention(%q): got %q, want %q", by, got, want)
		}
	}
}
