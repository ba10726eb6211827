package cli_test

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// leakRunConfig replays the leak log through `gpuwatch run` to a bot-mode
// Slack receiver.
func leakRunConfig(t *testing.T, apiURL string) string {
	trace, err := filepath.Abs("testdata/traces/memory-leak.csv")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gpuwatch.yaml")
	writeFile(t, path, daemonSettings+`
source:
  type: replay
  replay: {file: `+trace+`, speed: 0}
slack:
  bot_token: xoxb-1111-2222-chartstest
  api_url: `+apiURL+`/api/
receivers:
  - name: team
    slack: {channel: "#gpu"}
route:
  receiver: team
  group_wait: 1ns
rules:
  - alert: GPUMemoryLeak
    when: trend(memory.used, 40m) > 10MiB/min
    clear_when: trend(memory.used, 40m) <= 0 or memory.used < 1GiB
    for: 2m
`)
	return path
}

// TestRunLeakUploadsChart replays a leak through `gpuwatch run`: the
// alert's message is posted, then its chart is uploaded with Slack's
// upload flow into the message's thread, once per transition, as a PNG
// a phone reads.
func TestRunLeakUploadsChart(t *testing.T) {
	fake := notifiertest.NewSlack(t, notifiertest.SlackOptions{Scopes: "chat:write,commands,files:write"})
	got := gpuwatch(t, "run", "--config", leakRunConfig(t, fake.URL))
	if got.code != cli.ExitOK {
		t.Fatalf("run: exit %d\n%s", got.code, got.stderr)
	}
	alertTS := map[string]bool{} // ts of the alert's channel messages
	uploadCalls := 0
	for i, r := range fake.Requests() {
		form, _ := url.ParseQuery(string(r.Body))
		switch {
		case r.Path == "/api/chat.postMessage" && form.Get("thread_ts") == "" && strings.Contains(form.Get("text"), "GPUMemoryLeak"):
			alertTS[fmt.Sprintf("%d.0001", i+1)] = true
		case strings.HasPrefix(r.Path, "/upload/"):
			uploadCalls++
		}
	}
	if len(alertTS) != 1 {
		t.Fatalf("GPUMemoryLeak messages: got %d, want 1", len(alertTS))
	}
	// One chart when it fired, one when it resolved, each uploaded once.
	shared := notifiertest.SlackUploads(t, fake)
	if uploadCalls != 2 || len(shared) != 2 {
		t.Fatalf("uploads: got %d to the upload URL and %d completions, want 2 and 2", uploadCalls, len(shared))
	}
	for _, u := range shared {
		if u.Channel != "C1" || !alertTS[u.ThreadTS] {
			t.Errorf("chart shared in channel %q thread %q, want C1 and the alert's message %v", u.Channel, u.ThreadTS, alertTS)
		}
		if w := notifiertest.DecodePNG(t, u.PNG).Bounds().Dx(); w < 1000 {
			t.Errorf("uploaded chart is %d px wide, want at least 1000", w)
		}
	}
}

// TestRunWithoutFilesScope: a token without files:write gets one warning
// at start, and alerts go as text, with no upload tried.
func TestRunWithoutFilesScope(t *testing.T) {
	fake := notifiertest.NewSlack(t, notifiertest.SlackOptions{Scopes: "chat:write,commands"})
	got := gpuwatch(t, "run", "--config", leakRunConfig(t, fake.URL))
	if got.code != cli.ExitOK {
		t.Fatalf("run: exit %d\n%s", got.code, got.stderr)
	}
	if n := strings.Count(got.stderr, "files:write"); n != 1 {
		t.Errorf("warnings naming files:write: got %d, want 1\n%s", n, got.stderr)
	}
	posted := 0
	for _, r := range fake.Requests() {
		switch {
		case strings.Contains(r.Path, "files.") || strings.HasPrefix(r.Path, "/upload/"):
			t.Errorf("an upload call without files:write: %s", r.Path)
		case r.Path == "/api/chat.postMessage":
			posted++
		}
	}
	if posted == 0 {
		t.Error("no message was posted: alerts must go as text without files:write")
	}
}
