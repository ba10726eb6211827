package slack

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// button is one button of a message, as Slack receives it.
type button struct{ block, action, value string }

// buttons lists a message's buttons in order.
func buttons(blocks []map[string]any) []button {
	var out []button
	for _, b := range blocks {
		if b["type"] != "actions" {
			continue
		}
		id, _ := b["block_id"].(string)
		elems, _ := b["elements"].([]any)
		for _, e := range elems {
			el, _ := e.(map[string]any)
			action, _ := el["action_id"].(string)
			value, _ := el["value"].(string)
			out = append(out, button{id, action, value})
		}
	}
	return out
}

// alertButtons are the three buttons of the alert key in block block.
func alertButtons(block, key string) []button {
	return []button{{block, ActionSilence1h, key}, {block, ActionSilence24h, key}, {block, ActionAcknowledge, key}}
}

func TestButtons(t *testing.T) {
	gpu0, gpu1 := twoGPUs(notifier.StatusFiring).Alerts[0].Key, twoGPUs(notifier.StatusFiring).Alerts[1].Key
	resolved1 := twoGPUs(notifier.StatusResolved)
	resolved1.Alerts = resolved1.Alerts[1:]

	srv := fakeSlack(t, nil)
	n := newBot(t, srv, newMemStore())
	notify(t, n, twoGPUs(notifier.StatusFiring))
	notify(t, n, resolved1)
	got := calls(t, srv) // post, update (GPU 1 resolved), reply

	hook := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
		return notifiertest.Response{Body: "ok"}
	})
	wh, err := New(receiver, Config{WebhookURL: hook.URL + "/services/T0/B0/X"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	notify(t, wh, notifiertest.Notification(notifier.StatusFiring))
	notify(t, wh, notifiertest.Notification(notifier.StatusResolved))
	webhookBlocks := func(i int) []map[string]any {
		var msg struct {
			Blocks []map[string]any `json:"blocks"`
		}
		if err := json.Unmarshal(hook.Requests()[i].Body, &msg); err != nil {
			t.Fatalf("webhook request %d: %v", i, err)
		}
		return msg.Blocks
	}

	tests := []struct {
		name   string
		blocks []map[string]any
		want   []button
	}{
		{"bot, two GPUs firing", got[0].Blocks, append(alertButtons("gpuwatch_actions_0", gpu0), alertButtons("gpuwatch_actions_1", gpu1)...)},
		{"bot, GPU 1 resolved", got[1].Blocks, alertButtons("gpuwatch_actions_0", gpu0)},
		{"webhook, firing", webhookBlocks(0), alertButtons("gpuwatch_actions_0", gpu0)},
		{"webhook, resolved", webhookBlocks(1), nil},
	}
	for _, tt := range tests {
		if got := buttons(tt.blocks); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got buttons %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
