package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
	slacknotifier "github.com/gpuwatch/gpuwatch/notifier/slack"
)

// The Slack workspace of the people tests: alice is mapped by her user
// ID, bob by the email pattern, dave by the namespace his notebook's pod
// runs in; carol's email (the pattern's) is no one's in Slack.
var workspace = map[string]notifiertest.SlackUser{
	"U0ALICE": {Name: "alice", Email: "alice@example.org", TZ: "Europe/Berlin"},
	"U0BOB":   {Name: "bob", Email: "bob@example.org", TZ: "America/New_York"},
	"U0DAVE":  {Name: "dave", Email: "dave.smith@example.org", TZ: "Asia/Tokyo"},
}

// peopleConfig runs the shared-node scenario's rules to the Slack fake:
// owners are told by direct message and @mention; an idle GPU's alert is
// held back from the channel for its owner, and escalates to the channel
// after 30 minutes without an answer.
func peopleConfig(apiURL string) string {
	return simSlackConfig(apiURL, `
people:
  email: "{user}@example.org"
  users:
    alice: U0ALICE
  namespaces:
    vision: dave.smith@example.org
route:
  receiver: team
  group_wait: 0s
  owners: {tell: both}
  routes:
    - matchers: ['alert="GPUIdleButHeld"']
      owners: {tell: dm, only: true, escalate_after: 30m}
`)
}

// simSlackConfig is a simulated node's config with the example's memory
// and idle rules and one Slack receiver, team, on #gpu; middle gives the
// people: section and the route.
func simSlackConfig(apiURL, middle string) string {
	return fmt.Sprintf(`
host: node1
source:
  type: sim
slack:
  bot_token: ${SLACK_BOT_TOKEN}
  signing_secret: ${SLACK_SIGNING_SECRET}
  api_url: %s/api/
receivers:
  - name: team
    slack: {channel: "#gpu"}
%s
rules:
  - alert: GPUMemoryNearFull
    when: min(memory.used_percent, 90s) > 95 and held_for > 10m and min(memory.used_percent, 5m) < 90
    clear_when: max(memory.used_percent, 30m) < 90 or memory.used < 1GiB
    severity: critical
  - alert: GPUMemoryLeak
    when: time_to_full(memory.used, 40m, 6h) < 24h
    clear_when: time_to_full(memory.used, 40m, 6h) > 7d or memory.used < 1GiB
    for: 2m
    severity: warning
  - alert: GPUIdleButHeld
    when: memory.used > 1GiB and avg(utilization.gpu, 5m) < 5
    clear_when: memory.used < 1GiB or avg(utilization.gpu, 5m) > 20
    for: 45m
    keep_firing_for: 1m
    severity: warning
`, apiURL, middle)
}

// slackPost is a chat.postMessage or chat.update the fake received.
type slackPost struct {
	Method, Channel, ThreadTS, TS, Text, Blocks string
}

func slackPosts(fake *notifiertest.Server) []slackPost {
	var out []slackPost
	for i, r := range fake.Requests() {
		method := strings.TrimPrefix(r.Path, "/api/")
		if method != "chat.postMessage" && method != "chat.update" {
			continue
		}
		form, _ := url.ParseQuery(string(r.Body))
		blocks := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(form.Get("blocks"))
		p := slackPost{Method: method, Channel: form.Get("channel"), ThreadTS: form.Get("thread_ts"), Text: form.Get("text"), Blocks: blocks}
		p.TS = form.Get("ts")
		if method == "chat.postMessage" {
			p.TS = fmt.Sprintf("%d.0001", i+1)
		}
		out = append(out, p)
	}
	return out
}

// count counts the posts (not updates) to channel that hold text, in a
// thread (thread true) or not. A reply in the thread of a message to
// "#gpu" goes to C1, the channel's ID as the fake answers it.
func count(posts []slackPost, channel, text string, thread bool) int {
	n := 0
	for _, p := range posts {
		to := p.Channel
		if to == "C1" {
			to = "#gpu"
		}
		if p.Method == "chat.postMessage" && to == channel && (p.ThreadTS != "") == thread && strings.Contains(p.Text+p.Blocks, text) {
			n++
		}
	}
	return n
}

// simRun steps a daemon through a scenario's snapshots, the wall clock
// keeping pace.
type simRun struct {
	src *sim.Source
	clk *clock
	at  time.Time
}

// startSim starts a daemon on cfg, its wall clock at base, and the
// scenario's simulation (of seed, on host node1) that steps it.
func startSim(t *testing.T, cfg *config.Config, scenario string, seed uint64) (*running, *simRun) {
	t.Helper()
	src, err := sim.New(sim.Config{Scenario: scenario, Seed: seed, Start: base, Host: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	run := &simRun{src: src, clk: newClock(base), at: base}
	return start(t, cfg, run.clk.Now), run
}

func (s *simRun) until(t *testing.T, r *running, end time.Time) {
	t.Helper()
	defer func() {
		if t.Failed() {
			t.Logf("log:\n%s", r.Logs)
		}
	}()
	for s.at.Before(end) {
		snap, err := s.src.Next(context.Background())
		if err != nil {
			t.Fatalf("sim: %v", err)
		}
		s.at = snap.Time
		s.clk.Set(snap.Time)
		r.D.Step(snap)
	}
	r.Drain()
}

// press sends the app a signed press of an owner's button by user on the
// alert with key; the click's own timestamp, click, is what a retry of it
// keeps. It returns what the app posted to response_url.
func press(t *testing.T, r *running, responses *notifiertest.Server, at time.Time, action, key, user, click string) string {
	t.Helper()
	before := len(responses.Requests())
	payload, err := json.Marshal(map[string]any{
		"type": "block_actions", "user": map[string]string{"id": user, "name": strings.ToLower(strings.TrimPrefix(user, "U0"))},
		"channel": map[string]string{"id": "D" + user}, "response_url": responses.URL + "/actions",
		"message": map[string]any{"text": "GPUIdleButHeld", "blocks": []any{}},
		"actions": []map[string]string{{"type": "button", "block_id": slacknotifier.OwnerBlockPrefix + "0",
			"action_id": action, "value": key, "action_ts": click}},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	r.D.SlackHandler().ServeHTTP(w, slackRequest("/slack/actions", url.Values{"payload": {string(payload)}}.Encode(), signingSecret, at))
	if w.Code != http.StatusOK {
		t.Fatalf("press %s: got HTTP %d %s", action, w.Code, w.Body)
	}
	waitFor(t, "the answer at response_url", func() bool { return len(responses.Requests()) > before })
	return string(responses.Requests()[before].Body)
}

// TestOwnersThroughDaemon: four jobs on a shared node, their owners
// mapped three ways. alice's leak reaches her by direct message and an
// @mention in the channel; bob's idle notebook reaches bob alone, his
// "Still using it" snoozes it for 2 hours and he is asked again; carol is
// no one Slack knows, so her alert is the channel's alone; dave does not
// answer, and after 30 minutes his alert goes to the channel. A press
// sent again acts once; a restart loses no pending escalation and sends
// no direct message twice.
func TestOwnersThroughDaemon(t *testing.T) {
	fake := notifiertest.NewSlack(t, notifiertest.SlackOptions{Scopes: "chat:write,files:write,im:write,users:read,users:read.email", Users: workspace})
	responses := notifiertest.NewServer(t, nil)
	dir := t.TempDir()
	env := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1111-2222-owners", "SLACK_SIGNING_SECRET": signingSecret}
	cfg := parseConfig(t, dir, peopleConfig(fake.URL), env)
	r, run := startSim(t, cfg, sim.ScenarioSharedNode, 1)

	run.until(t, r, base.Add(40*time.Minute))
	posts := slackPosts(fake)
	if n := count(posts, "#gpu", "GPUMemoryNearFull", false); n != 1 {
		t.Errorf("carol's GPU near full: got %d channel messages, want 1", n)
	}
	if n := count(posts, "#gpu", "GPUMemoryLeak", false); n != 1 || count(posts, "#gpu", "<@U0ALICE>", false) != 1 {
		t.Errorf("alice's leak: got %d channel messages (%d @mentioning her), want 1 @mentioning her", n, count(posts, "#gpu", "<@U0ALICE>", false))
	}
	if n := count(posts, "DU0ALICE", "GPUMemoryLeak", false); n != 1 {
		t.Errorf("alice's leak: got %d direct messages to her, want 1", n)
	}
	for _, p := range posts {
		if p.Channel != "#gpu" && p.Channel != "DU0ALICE" {
			t.Errorf("by 40 minutes: a post to %s (%q), want only the channel and alice", p.Channel, p.Text)
		}
	}

	run.until(t, r, base.Add(62*time.Minute))
	posts = slackPosts(fake)
	for _, who := range []string{"DU0BOB", "DU0DAVE"} {
		if n := count(posts, who, "GPUIdleButHeld", false); n != 1 || count(posts, who, slacknotifier.ActionStillUsing, false) != 1 {
			t.Errorf("an idle notebook: got %d direct messages to %s, want 1 with the Still using it button", n, who)
		}
	}
	if n := count(posts, "#gpu", "GPUIdleButHeld", false); n != 0 {
		t.Errorf("idle notebooks: got %d channel messages, want none while their owners may answer", n)
	}
	bobKey := keyOf(t, r, "GPUIdleButHeld", 1)

	if got := press(t, r, responses, run.at, slacknotifier.ActionStillUsing, bobKey, "U0ALICE", "1764409000.1"); !strings.Contains(got, "only the owner") {
		t.Errorf("alice presses Still using it on bob's alert: got %s, want a refusal naming the owner", got)
	}
	got := press(t, r, responses, run.at, slacknotifier.ActionStillUsing, bobKey, "U0BOB", "1764409001.1")
	if !strings.Contains(got, "Noted: you still use it") {
		t.Errorf("bob presses Still using it: got %s, want it noted", got)
	}
	r.Drain()
	again := press(t, r, responses, run.at.Add(time.Second), slacknotifier.ActionStillUsing, bobKey, "U0BOB", "1764409001.1")
	if !strings.Contains(again, "Noted") {
		t.Errorf("the same press sent again: got %s, want the same answer", again)
	}
	r.Drain()
	posts = slackPosts(fake)
	if n := count(posts, "DU0BOB", "is still using it", true); n != 1 {
		t.Errorf("bob's answer: got %d replies in his direct message's thread, want 1 (a press sent again acts once)", n)
	}
	if a := alertOf(r, bobKey); a == nil || !strings.Contains(a.Answer, "still using it") {
		t.Errorf("/gpu alerts and the page: bob's alert says %+v, want his answer", a)
	}

	// gpuwatch restarts while dave's escalation waits.
	run.until(t, r, base.Add(70*time.Minute))
	dms := map[string]int{}
	for _, who := range []string{"DU0ALICE", "DU0BOB", "DU0DAVE"} {
		dms[who] = count(slackPosts(fake), who, "", false)
	}
	secrets := []string{env["SLACK_BOT_TOKEN"], signingSecret, "bob@example.org", "dave.smith@example.org", "carol@example.org"}
	notifiertest.AssertNoSecrets(t, "the log before the restart", r.Logs.String(), secrets...)
	r.Stop()
	r = start(t, cfg, run.clk.Now)

	run.until(t, r, base.Add(95*time.Minute))
	posts = slackPosts(fake)
	if n := count(posts, "#gpu", "GPU 3", false); n != 1 {
		t.Errorf("dave did not answer in 30 minutes: got %d channel messages about GPU 3, want 1", n)
	}
	if n := count(posts, "#gpu", "Escalated: no answer within 30m", true); n != 1 {
		t.Errorf("dave's escalation: got %d thread replies saying why, want 1", n)

	}
	if n := count(posts, "#gpu", "GPU 1 ", false); n != 0 {
		t.Errorf("bob answered: got %d channel messages about his GPU, want none", n)
	}
	for who, before := range dms {
		if n := count(posts, who, "", false); n != before {
			t.Errorf("after the restart: %d direct messages to %s, want %d (none twice)", n, who, before)
		}
	}

	run.until(t, r, base.Add(3*time.Hour+5*time.Minute))
	posts = slackPosts(fake)
	if n := count(posts, "DU0BOB", "Still using GPU 1", true); n != 1 {
		t.Errorf("bob's snooze is over: got %d questions in his thread, want 1", n)
	}
	notifiertest.AssertNoSecrets(t, "the log after the restart", r.Logs.String(), secrets...)
}

// keyOf is the key of the active alert of rule on GPU gpu.
func keyOf(t *testing.T, r *running, rule string, gpu int) string {
	t.Helper()
	for _, a := range r.D.Alerts() {
		if a.Name == rule && a.GPU == gpu {
			return a.Key
		}
	}
	t.Fatalf("no %s alert on GPU %d", rule, gpu)
	return ""
}

// alertOf is the active alert with key, as /gpu alerts and the page see
// it; nil when there is none.
func alertOf(r *running, key string) *struct{ Answer string } {
	for _, a := range r.D.Alerts() {
		if a.Key == key {
			return &struct{ Answer string }{a.Answer}
		}
	}
	return nil
}

// TestPersonalDigest: after a morning on the shared node, the weekly
// personal digest is one direct message to each person who used a GPU
// and whom Slack knows (not carol), none to bob who turned it off with
// /gpu digest off; each within Slack's limits, with the picture of their
// week in its thread. The vision team's lead gets the team's digest.
func TestPersonalDigest(t *testing.T) {
	fake := notifiertest.NewSlack(t, notifiertest.SlackOptions{Scopes: "chat:write,files:write,im:write,users:read,users:read.email", Users: workspace})
	responses := notifiertest.NewServer(t, nil)
	dir := t.TempDir()
	env := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1111-2222-digests", "SLACK_SIGNING_SECRET": signingSecret}
	// The alerts go to the console: the digests are what is looked at.
	cfg := parseConfig(t, dir, strings.Replace(simSlackConfig(fake.URL, `
people:
  email: "{user}@example.org"
  users:
    alice: U0ALICE
  namespaces:
    vision: dave.smith@example.org
  digest: {receiver: team}
  groups:
    - name: vision
      leads: [alice@example.org]
      members: [bob, namespace:vision]
route: {receiver: quiet}
`), "receivers:\n", "receivers:\n  - {name: quiet, console: {}}\n", 1), env)
	r, run := startSim(t, cfg, sim.ScenarioSharedNode, 2)
	run.until(t, r, base.Add(2*time.Hour))

	form := url.Values{"command": {"/gpu"}, "text": {"digest off"}, "user_id": {"U0BOB"}, "channel_id": {"DU0BOB"}, "response_url": {responses.URL + "/commands"}}
	w := httptest.NewRecorder()
	r.D.SlackHandler().ServeHTTP(w, slackRequest("/slack/commands", form.Encode(), signingSecret, run.at))
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "No more personal digests") {
		t.Fatalf("/gpu digest off: got HTTP %d %s", w.Code, w.Body)
	}

	before := len(slackPosts(fake))
	monday := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	run.clk.Set(monday)
	r.D.SendDigests(monday)
	r.Drain()
	posts := slackPosts(fake)[before:]
	digests := map[string]int{}
	digestTS := map[string]string{} // the personal digest's message, by direct message
	for _, p := range posts {
		if p.Method != "chat.postMessage" || p.ThreadTS != "" {
			continue
		}
		if strings.Contains(p.Text, "Your GPUs") {
			digests[p.Channel]++
			digestTS[p.Channel] = p.TS
			var blocks goslack.Blocks
			if err := json.Unmarshal([]byte(p.Blocks), &blocks); err != nil {
				t.Fatalf("the digest to %s: blocks %v", p.Channel, err)
			}
			if err := blockkit.ValidateMessage(p.Text, blocks.BlockSet); err != nil {
				t.Errorf("the digest to %s breaks Slack's limits: %v", p.Channel, err)
			}
			for _, want := range []string{"GPU-hours", "utilization while held", "Held idle", "Peak memory", "Rank"} {
				if !strings.Contains(p.Blocks, want) {
					t.Errorf("the digest to %s does not say %q: %s", p.Channel, want, p.Blocks)
				}
			}
		}
		if strings.Contains(p.Text, "Team vision") && p.Channel != "DU0ALICE" {
			t.Errorf("the team digest went to %s, want its lead alice", p.Channel)
		}
	}
	if want := map[string]int{"DU0ALICE": 1, "DU0DAVE": 1}; !maps.Equal(digests, want) {
		t.Errorf("personal digests by direct message: got %v, want %v (carol unknown, bob turned his off)", digests, want)
	}
	if n := count(posts, "DU0ALICE", "Team vision", false); n != 1 {
		t.Errorf("the vision team's digest: got %d to its lead, want 1", n)
	}
	if n := count(posts, "DU0DAVE", ", idle 1h", false); n != 1 {
		t.Errorf("dave's digest: got %d lines saying his notebook's GPU sat idle for hours, want 1", n)
	}
	uploads := map[string]int{}
	for _, u := range notifiertest.SlackUploads(t, fake) {
		if u.ThreadTS != "" && u.ThreadTS == digestTS[u.Channel] {
			notifiertest.DecodePNG(t, u.PNG)
			uploads[u.Channel]++
		}
	}
	for _, who := range []string{"DU0ALICE", "DU0DAVE"} {
		if uploads[who] == 0 {
			t.Errorf("no picture in the thread of %s's digest: uploads %v", who, uploads)
		}
	}
}

// TestSlurmJobsNamed: on a Slurm node (the slurm-node scenario) the
// alerts, /gpu top and the digest name each job with its user, "job 4242
// (alice)".
func TestSlurmJobsNamed(t *testing.T) {
	fake := notifiertest.NewSlack(t, notifiertest.SlackOptions{Scopes: "chat:write"})
	dir := t.TempDir()
	env := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1111-2222-slurm", "SLACK_SIGNING_SECRET": signingSecret}
	cfg := parseConfig(t, dir, simSlackConfig(fake.URL, "route: {receiver: team, group_wait: 0s}"), env)
	r, run := startSim(t, cfg, sim.ScenarioSlurmNode, 1)
	run.until(t, r, base.Add(70*time.Minute))

	jobOf := func(gpu int) string {
		for _, p := range r.D.Snapshot().Devices[gpu].Processes {
			if id, ok := strings.CutPrefix(p.Job, "slurm:"); ok {
				return "job " + id + " (" + p.User + ")"
			}
		}
		t.Fatalf("GPU %d runs no Slurm job", gpu)
		return ""
	}
	alice, bob := jobOf(0), jobOf(1)
	if n := count(slackPosts(fake), "#gpu", "*"+alice+"*", false); n == 0 {
		t.Errorf("the leak's channel message does not name %q", alice)
	}
	if n := count(slackPosts(fake), "#gpu", "*"+bob+"*", false); n == 0 {
		t.Errorf("the idle GPU's channel message does not name %q", bob)
	}
	form := url.Values{"command": {"/gpu"}, "text": {"top"}, "user_id": {"U0BOB"}, "channel_id": {"C1"}, "response_url": {fake.URL + "/commands"}}
	w := httptest.NewRecorder()
	r.D.SlackHandler().ServeHTTP(w, slackRequest("/slack/commands", form.Encode(), signingSecret, run.at))
	for _, job := range []string{alice, bob} {
		if !strings.Contains(w.Body.String(), job) {
			t.Errorf("/gpu top does not name %q: %s", job, w.Body)
		}
	}
	report, err := r.D.UsageReport("", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if text := report.Text(); !strings.Contains(text, bob+" held 20 GiB on GPU 1 idle for") || !strings.Contains(text, "alice (job ") {
		t.Errorf("the digest does not name the jobs (%s, %s):\n%s", bob, alice, text)
	}
}
