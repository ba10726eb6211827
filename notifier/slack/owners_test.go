package slack

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// ownedAlert is a firing alert on GPU i of node1 whose holders' owners
// were told, with the processes of a Slurm job.
func ownedAlert(i int, idle bool) notifier.Alert {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	return notifier.Alert{
		Key: fmt.Sprintf("node1/GPUIdleButHeld/GPU-%d", i), Name: "GPUIdleButHeld", Status: notifier.StatusFiring, Severity: "warning",
		Host: "node1", GPU: i, UUID: fmt.Sprintf("GPU-%d", i), GPUName: "NVIDIA H100 80GB HBM3", Summary: strings.Repeat("held idle ", 50),
		ValueText: "20 GiB", StartsAt: at, At: at, Idle: idle,
		Processes: []gpu.Process{{PID: 5150, User: "bob", Command: "jupyter-lab", Job: "slurm:4250", MemUsed: 20 << 30}},
		Owners:    []string{"<@U0BOB>", "dave"}, AcknowledgedBy: "alice (U0ALICE)",
	}
}

func TestRenderOwners(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 5, 0, 0, time.UTC)
	a := ownedAlert(1, true)
	blocks, _ := render([]notifier.Alert{a}, now)
	raw, _ := json.Marshal(blocks)
	text := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(string(raw))
	for _, want := range []string{"*job 4250 (bob)*", "pid 5150", "👤 Owner: <@U0BOB>, dave", ActionStillUsing, ActionDone, ActionNotMine, ActionSilence1h} {
		if !strings.Contains(text, want) {
			t.Errorf("the channel message lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, ActionWatching) {
		t.Errorf("an idle GPU's message offers Watching it")
	}
	a.Answer = &notifier.Answer{Kind: notifier.AnswerStillUsing, By: "bob (U0BOB)", ByID: "U0BOB", Until: now.Add(2 * time.Hour)}
	blocks, _ = renderFor([]notifier.Alert{a}, now, true)
	raw, _ = json.Marshal(blocks)
	text = strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(string(raw))
	if !strings.Contains(text, "🙋 <@U0BOB> is still using it · asked again at <!date^") || strings.Contains(text, ActionStillUsing) || strings.Contains(text, ActionSilence1h) {
		t.Errorf("the owner's message once answered: want the answer in place of every button:\n%s", text)
	}
	leak := ownedAlert(2, false)
	blocks, _ = renderFor([]notifier.Alert{leak}, now, true)
	raw, _ = json.Marshal(blocks)
	if !strings.Contains(string(raw), ActionWatching) || strings.Contains(string(raw), ActionStillUsing) {
		t.Errorf("a leak's owner message: want Watching it and Not mine:\n%s", raw)
	}
}

// TestRenderOwnersFitsSlack: a message of many alerts, each with owners,
// buttons, an answer and an acknowledgement, stays within Slack's 50
// blocks, the rest summed up.
func TestRenderOwnersFitsSlack(t *testing.T) {
	var alerts []notifier.Alert
	for i := range 12 {
		a := ownedAlert(i, i%2 == 0)
		if i%3 == 0 {
			a.Answer = &notifier.Answer{Kind: notifier.AnswerWatching, By: "bob (U0BOB)", ByID: "U0BOB"}
		}
		alerts = append(alerts, a)
	}
	blocks, text := render(alerts, time.Now())
	if err := blockkit.ValidateMessage(text, blocks); err != nil {
		t.Fatalf("12 owned alerts: %v", err)
	}
	raw, _ := json.Marshal(blocks)
	if !strings.Contains(string(raw), "… and ") {
		t.Errorf("12 owned alerts: want the ones that do not fit summed up")
	}
}
