package daemon_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// podsOfSharedNode puts the shared-node scenario's first two jobs in pods
// labelled with their owners, as an agent reading the Kubernetes API
// server names them: alice's training job is erin's pod, bob's notebook
// bob's.
var podsOfSharedNode = map[string]gpu.Process{
	"alice": {Container: "k8s:ml-team/train-llama-0", PodLabels: "owner=erin,team=nlp"},
	"bob":   {Container: "k8s:notebooks/jupyter-bob-0", PodLabels: "owner=bob"},
}

// TestOwnersByPodLabel: a process's pod label names its owner, before its
// Unix user: the leak of erin's pod (run as alice) reaches erin by direct
// message and @mention; bob's idle notebook reaches bob, whom the label's
// email pattern names; no email reaches the log.
func TestOwnersByPodLabel(t *testing.T) {
	users := map[string]notifiertest.SlackUser{
		"U0ALICE": workspace["U0ALICE"],
		"U0BOB":   workspace["U0BOB"],
		"U0ERIN":  {Name: "erin", Email: "erin@example.org", TZ: "Europe/Paris"},
	}
	fake := notifiertest.NewSlack(t, notifiertest.SlackOptions{Scopes: "chat:write,files:write,im:write,users:read,users:read.email", Users: users})
	env := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1111-2222-pods", "SLACK_SIGNING_SECRET": signingSecret}
	cfg := parseConfig(t, t.TempDir(), simSlackConfig(fake.URL, `
people:
  users:
    alice: U0ALICE
  pod_labels:
    owner: {erin: U0ERIN}
  pod_label_email: "{owner}@example.org"
route:
  receiver: team
  group_wait: 0s
  owners: {tell: both}
`), env)
	r, run := startSim(t, cfg, sim.ScenarioSharedNode, 1)
	for run.at.Before(base.Add(62 * time.Minute)) {
		snap, err := run.src.Next(context.Background())
		if err != nil {
			t.Fatalf("sim: %v", err)
		}
		for i := range snap.Devices {
			for j := range snap.Devices[i].Processes {
				p := &snap.Devices[i].Processes[j]
				if pod, ok := podsOfSharedNode[p.User]; ok {
					p.Container, p.PodLabels = pod.Container, pod.PodLabels
				}
			}
		}
		run.at = snap.Time
		run.clk.Set(snap.Time)
		r.D.Step(snap)
	}
	r.Drain()

	posts := slackPosts(fake)
	if n := count(posts, "DU0ERIN", "GPUMemoryLeak", false); n != 1 {
		t.Errorf("the leak in erin's pod: got %d direct messages to erin, want 1", n)
	}
	if n := count(posts, "#gpu", "<@U0ERIN>", false); n != 1 {
		t.Errorf("the leak in erin's pod: got %d channel messages @mentioning erin, want 1", n)
	}
	if n := count(posts, "DU0ALICE", "", false) + count(posts, "#gpu", "<@U0ALICE>", false); n != 0 {
		t.Errorf("alice runs erin's pod: got %d messages to her, want none: the pod's label names its owner", n)
	}
	if n := count(posts, "DU0BOB", "GPUIdleButHeld", false); n != 1 {
		t.Errorf("bob's idle notebook: got %d direct messages to bob, want 1", n)
	}
	notifiertest.AssertNoSecrets(t, "the log", r.Logs.String(), env["SLACK_BOT_TOKEN"], "bob@example.org", "erin@example.org")
}
