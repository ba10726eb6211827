package cli_test

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"mime"
	"mime/multipart"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// chartSlack plays Slack's Web API and upload URL: auth.test says the
// token has scopes, chat.postMessage answers ts "N.0001" for its N-th
// request, and the upload flow answers file F<N>.
func chartSlack(t *testing.T, scopes string) *notifiertest.Server {
	var base string
	srv := notifiertest.NewServer(t, func(n int, r *notifiertest.Request) notifiertest.Response {
		form, _ := url.ParseQuery(string(r.Body))
		header := map[string]string{"Content-Type": "application/json"}
		body := `{"ok":false,"error":"unknown_method"}`
		switch method := strings.TrimPrefix(r.Path, "/api/"); {
		case strings.HasPrefix(r.Path, "/upload/"):
			return notifiertest.Response{Body: "OK"}
		case method == "auth.test":
			header["X-OAuth-Scopes"] = scopes
			body = `{"ok":true,"user_id":"U0BOT","team_id":"T1"}`
		case method == "chat.postMessage":
			body = fmt.Sprintf(`{"ok":true,"channel":"C1","ts":"%d.0001"}`, n+1)
		case method == "chat.update":
			body = fmt.Sprintf(`{"ok":true,"channel":"C1","ts":%q,"text":""}`, form.Get("ts"))
		case method == "files.getUploadURLExternal":
			body = fmt.Sprintf(`{"ok":true,"upload_url":"%s/upload/F%d","file_id":"F%d"}`, base, n, n)
		case method == "files.completeUploadExternal":
			body = `{"ok":true,"files":[{"id":"F1","title":"chart"}]}`
		}
		return notifiertest.Response{Body: body, Header: header}
	})
	base = srv.URL
	return srv
}

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
	fake := chartSlack(t, "chat:write,commands,files:write")
	got := gpuwatch(t, "run", "--config", leakRunConfig(t, fake.URL))
	if got.code != cli.ExitOK {
		t.Fatalf("run: exit %d\n%s", got.code, got.stderr)
	}
	alertTS := map[string]bool{} // ts of the alert's channel messages
	var uploads, completes []notifiertest.Request
	for i, r := range fake.Requests() {
		form, _ := url.ParseQuery(string(r.Body))
		switch {
		case r.Path == "/api/chat.postMessage" && form.Get("thread_ts") == "" && strings.Contains(form.Get("text"), "GPUMemoryLeak"):
			alertTS[fmt.Sprintf("%d.0001", i+1)] = true
		case strings.HasPrefix(r.Path, "/upload/"):
			uploads = append(uploads, r)
		case r.Path == "/api/files.completeUploadExternal":
			completes = append(completes, r)
		}
	}
	if len(alertTS) != 1 {
		t.Fatalf("GPUMemoryLeak messages: got %d, want 1", len(alertTS))
	}
	// One chart when it fired, one when it resolved, each uploaded once.
	if len(uploads) != 2 || len(completes) != 2 {
		t.Fatalf("uploads: got %d to the upload URL and %d completions, want 2 and 2", len(uploads), len(completes))
	}
	for _, c := range completes {
		form, _ := url.ParseQuery(string(c.Body))
		if form.Get("channel_id") != "C1" || !alertTS[form.Get("thread_ts")] {
			t.Errorf("chart shared in channel %q thread %q, want C1 and the alert's message %v", form.Get("channel_id"), form.Get("thread_ts"), alertTS)
		}
	}
	for _, u := range uploads {
		img := uploadedPNG(t, u)
		if w := img.Bounds().Dx(); w < 1000 {
			t.Errorf("uploaded chart is %d px wide, want at least 1000", w)
		}
	}
}

// TestRunWithoutFilesScope: a token without files:write gets one warning
// at start, and alerts go as text, with no upload tried.
func TestRunWithoutFilesScope(t *testing.T) {
	fake := chartSlack(t, "chat:write,commands")
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

// uploadedPNG decodes the PNG of an upload to the upload URL.
func uploadedPNG(t *testing.T, r notifiertest.Request) image.Image {
	t.Helper()
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		t.Fatalf("upload content type %q: %v", r.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"])
	for {
		part, err := mr.NextPart()
		if err != nil {
			t.Fatalf("the upload holds no file: %v", err)
		}
		if part.FormName() != "file" {
			continue
		}
		img, err := png.Decode(part)
		if err != nil {
			t.Fatalf("the uploaded file is not a PNG: %v", err)
		}
		return img
	}
}
