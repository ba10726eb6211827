package cli_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// TestOwnersExample runs examples/owners.yaml as it is, unpaced, with its
// environment pointing at a Slack fake: alice's leak reaches her by direct
// message and an @mention in the channel; bob's and dave's idle notebooks
// reach them by direct message (bob by the email pattern, dave by his
// pod's namespace) and not the channel; carol, whose email is no one's in
// Slack, is the channel's. gpuwatch check says nothing is wrong.
func TestOwnersExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the example for a few simulated hours")
	}
	fake := notifiertest.NewSlack(t, notifiertest.SlackOptions{Scopes: "chat:write,files:write,im:write,users:read,users:read.email",
		Users: map[string]notifiertest.SlackUser{
			"U0ALICE": {Name: "alice", Email: "alice@example.org", TZ: "Europe/Berlin"},
			"U0BOB":   {Name: "bob", Email: "bob@example.org", TZ: "America/New_York"},
			"U0DAVE":  {Name: "dave", Email: "dave@example.org", TZ: "Asia/Tokyo"},
		}})
	text, err := os.ReadFile("../examples/owners.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(text), "speed: 60 ") != 1 {
		t.Fatal("examples/owners.yaml no longer runs at speed 60: update this test")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "owners.yaml")
	// Unpaced, and on a port of its own.
	writeFile(t, path, strings.Replace(string(text), "speed: 60 ", "speed: 0 ", 1)+"server: {listen: 127.0.0.1:0}\n")
	env := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1111-2222-owners", "SLACK_API_URL": fake.URL + "/api/", "GPUWATCH_STORE": filepath.Join(dir, "owners.db")}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }

	var stdout, stderr notifiertest.Buffer
	if code := cli.Main(t.Context(), []string{"check", "--config", path}, &cli.Env{Stdout: &stdout, Stderr: &stderr, LookupEnv: lookup}); code != cli.ExitOK || stderr.String() != "" {
		t.Errorf("check: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"run", "--config", path}, &cli.Env{Stdout: &stdout, Stderr: &stderr, LookupEnv: lookup})
	}()
	posted := func(channel, text string) bool {
		for _, r := range fake.Requests() {
			form, _ := url.ParseQuery(string(r.Body))
			if r.Path == "/api/chat.postMessage" && form.Get("channel") == channel && form.Get("thread_ts") == "" &&
				strings.Contains(form.Get("text")+strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(form.Get("blocks")), text) {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !(posted("DU0ALICE", "GPUMemoryLeak") && posted("#gpu-alerts", "<@U0ALICE>") && posted("DU0BOB", "GPUIdleButHeld") &&
		posted("DU0DAVE", "GPUIdleButHeld") && posted("#gpu-alerts", "GPUMemoryNearFull")) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 2 minutes for the owners' messages (alice %v %v, bob %v, dave %v, carol %v); the fake got %d requests",
				posted("DU0ALICE", "GPUMemoryLeak"), posted("#gpu-alerts", "<@U0ALICE>"), posted("DU0BOB", "GPUIdleButHeld"),
				posted("DU0DAVE", "GPUIdleButHeld"), posted("#gpu-alerts", "GPUMemoryNearFull"), len(fake.Requests()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != cli.ExitOK {
		t.Errorf("run: exit %d\n%s", code, stderr.String())
	}
	for _, r := range fake.Requests() {
		form, _ := url.ParseQuery(string(r.Body))
		if r.Path == "/api/chat.postMessage" && strings.HasPrefix(form.Get("channel"), "D") && !strings.Contains("DU0ALICE DU0BOB DU0DAVE", form.Get("channel")) {
			t.Errorf("a direct message to %s, who owns nothing here", form.Get("channel"))
		}
	}
	notifiertest.AssertNoSecrets(t, "the output", stdout.String()+stderr.String(), env["SLACK_BOT_TOKEN"], "bob@example.org", "dave@example.org", "carol@example.org")
}

// TestCheckPeopleUnknown: gpuwatch check asks Slack about each person the
// people: section names and warns about those it does not know, naming
// the setting and never the email.
func TestCheckPeopleUnknown(t *testing.T) {
	fake := notifiertest.NewSlack(t, notifiertest.SlackOptions{Users: map[string]notifiertest.SlackUser{
		"U0ALICE": {Name: "alice", Email: "alice@example.org"}}})
	path := filepath.Join(t.TempDir(), "gpuwatch.yaml")
	writeFile(t, path, daemonSettings+`
source: {type: sim}
slack:
  bot_token: xoxb-1111-2222-checkpeople
  api_url: `+fake.URL+`/api/
receivers:
  - name: team
    slack: {channel: "#gpu"}
people:
  users:
    alice: alice@example.org
    erin: erin.gone@example.org
    frank: U0NOBODY
route:
  receiver: team
  owners: {tell: dm}
`)
	got := gpuwatch(t, "check", "--config", path)
	if got.code != cli.ExitOK {
		t.Fatalf("check: exit %d\n%s", got.code, got.stderr)
	}
	for _, want := range []string{
		"people.users.erin names an email that Slack does not know",
		"people.users.frank names the user ID U0NOBODY that Slack does not know",
	} {
		if !strings.Contains(got.stderr, want) {
			t.Errorf("check's warnings lack %q:\n%s", want, got.stderr)
		}
	}
	if strings.Contains(got.stderr, "alice") || strings.Contains(got.stderr, "erin.gone@") {
		t.Errorf("check warns about alice, whom Slack knows, or quotes an email:\n%s", got.stderr)
	}
}
