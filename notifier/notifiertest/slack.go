package notifiertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"mime"
	"mime/multipart"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// SlackOptions say how NewSlack's fake answers.
type SlackOptions struct {
	// Scopes is the X-OAuth-Scopes auth.test answers ("chat:write,files:write").
	Scopes string
	// Zones are the users users.info knows, by ID, with their IANA zone.
	Zones map[string]string
	// Users are the members of the workspace, by ID: users.info and
	// users.lookupByEmail know them, conversations.open opens a direct
	// message "D" + ID with each.
	Users map[string]SlackUser
	// Fail makes methods ("files.completeUploadExternal") answer ok:false
	// with the error given ("not_in_channel").
	Fail map[string]string
	// Late, when set, says how long after doing it the fake answers the
	// n-th call (0-based) of a method: Slack did what the call asked,
	// and its answer may come after the client gave up.
	Late func(method string, n int) time.Duration
}

// SlackUser is a member of a NewSlack fake's workspace.
type SlackUser struct {
	Name, Email, TZ string
}

// NewSlack plays Slack's Web API under /api/ and its upload URLs under
// /upload/: auth.test tells the token's scopes, chat.postMessage answers
// channel C1 (or the direct message "D…" posted to) and ts "N.0001" for
// its N-th request (0-based, as the server counts every request),
// chat.update echoes the ts, the upload flow (files.getUploadURLExternal,
// the bytes, then files.completeUploadExternal) answers file F<N>,
// users.info the user's name and zone, users.lookupByEmail the user of an
// email, conversations.open the direct message "D" + the user's ID,
// conversations.replies the files shared in a thread, each as a message
// of its own. Anything else is unknown_method.
func NewSlack(t testing.TB, o SlackOptions) *Server {
	var (
		base   string
		mu     sync.Mutex
		calls  = map[string]int{}      // by method
		shared = map[string][]string{} // file IDs shared, by thread ts
	)
	srv := NewServer(t, func(n int, r *Request) Response {
		form, _ := url.ParseQuery(string(r.Body))
		header := map[string]string{"Content-Type": "application/json"}
		method := strings.TrimPrefix(r.Path, "/api/")
		body := `{"ok":false,"error":"unknown_method"}`
		mu.Lock()
		nth := calls[method]
		calls[method]++
		mu.Unlock()
		if o.Late != nil {
			if late := o.Late(method, nth); late > 0 {
				defer time.Sleep(late)
			}
		}
		switch {
		case strings.HasPrefix(r.Path, "/upload/"):
			return Response{Body: "OK"}
		case o.Fail[method] != "":
			body = fmt.Sprintf(`{"ok":false,"error":%q}`, o.Fail[method])
		case method == "auth.test":
			header["X-OAuth-Scopes"] = o.Scopes
			body = `{"ok":true,"user_id":"U0BOT","team_id":"T1"}`
		case method == "chat.postMessage":
			channel := "C1"
			if strings.HasPrefix(form.Get("channel"), "D") {
				channel = form.Get("channel")
			}
			body = fmt.Sprintf(`{"ok":true,"channel":%q,"ts":"%d.0001"}`, channel, n+1)
		case method == "chat.update":
			channel := "C1"
			if strings.HasPrefix(form.Get("channel"), "D") {
				channel = form.Get("channel")
			}
			body = fmt.Sprintf(`{"ok":true,"channel":%q,"ts":%q,"text":""}`, channel, form.Get("ts"))
		case method == "conversations.open":
			user := form.Get("users")
			if _, ok := o.Users[user]; !ok {
				body = `{"ok":false,"error":"user_not_found"}`
				break
			}
			body = fmt.Sprintf(`{"ok":true,"channel":{"id":"D%s"}}`, user)
		case method == "users.lookupByEmail":
			body = `{"ok":false,"error":"users_not_found"}`
			for id, u := range o.Users {
				if u.Email != "" && strings.EqualFold(u.Email, form.Get("email")) {
					body = slackUserJSON(id, u)
				}
			}
		case method == "files.getUploadURLExternal":
			body = fmt.Sprintf(`{"ok":true,"upload_url":"%s/upload/F%d","file_id":"F%d"}`, base, n, n)
		case method == "files.completeUploadExternal":
			var files []struct{ ID string }
			json.Unmarshal([]byte(form.Get("files")), &files)
			mu.Lock()
			for _, f := range files {
				shared[form.Get("thread_ts")] = append(shared[form.Get("thread_ts")], f.ID)
			}
			mu.Unlock()
			body = `{"ok":true,"files":[{"id":"F1","title":"chart"}]}`
		case method == "users.info" && o.Users[form.Get("user")] != (SlackUser{}):
			body = slackUserJSON(form.Get("user"), o.Users[form.Get("user")])
		case method == "conversations.replies":
			var msgs []string
			mu.Lock()
			for i, id := range shared[form.Get("ts")] {
				msgs = append(msgs, fmt.Sprintf(`{"type":"message","ts":"%s.%04d","thread_ts":%q,"files":[{"id":%q}]}`, form.Get("ts"), i+2, form.Get("ts"), id))
			}
			mu.Unlock()
			body = `{"ok":true,"has_more":false,"messages":[` + strings.Join(msgs, ",") + `]}`
		case method == "users.info":
			user := form.Get("user")
			tz, ok := o.Zones[user]
			if !ok {
				body = `{"ok":false,"error":"user_not_found"}`
				break
			}
			body = fmt.Sprintf(`{"ok":true,"user":{"id":%q,"tz":%q,"tz_offset":0}}`, user, tz)
		}
		return Response{Body: body, Header: header}
	})
	base = srv.URL
	return srv
}

// slackUserJSON is Slack's answer about a user (no email: gpuwatch never
// needs it back).
func slackUserJSON(id string, u SlackUser) string {
	b, _ := json.Marshal(map[string]any{"ok": true, "user": map[string]any{
		"id": id, "name": u.Name, "real_name": u.Name, "tz": u.TZ, "tz_offset": 0, "profile": map[string]any{"display_name": u.Name}}})
	return string(b)
}

// SlackUpload is a file a NewSlack fake received and shared.
type SlackUpload struct {
	Channel, ThreadTS, Comment string
	PNG                        []byte // the bytes sent to the upload URL
}

// SlackUploads lists the files shared with files.completeUploadExternal,
// in order, each with the bytes uploaded for it.
func SlackUploads(t testing.TB, s *Server) []SlackUpload {
	t.Helper()
	sent := map[string][]byte{} // by file ID
	var out []SlackUpload
	for _, r := range s.Requests() {
		switch {
		case strings.HasPrefix(r.Path, "/upload/"):
			sent[strings.TrimPrefix(r.Path, "/upload/")] = uploadedFile(t, r)
		case r.Path == "/api/files.completeUploadExternal":
			form, _ := url.ParseQuery(string(r.Body))
			var files []struct{ ID string }
			if err := json.Unmarshal([]byte(form.Get("files")), &files); err != nil || len(files) != 1 {
				t.Fatalf("files.completeUploadExternal: files %q, want one file: %v", form.Get("files"), err)
			}
			out = append(out, SlackUpload{Channel: form.Get("channel_id"), ThreadTS: form.Get("thread_ts"),
				Comment: form.Get("initial_comment"), PNG: sent[files[0].ID]})
		}
	}
	return out
}

// uploadedFile is the file of a multipart upload to an upload URL.
func uploadedFile(t testing.TB, r Request) []byte {
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
		if part.FormName() == "file" {
			var b bytes.Buffer
			b.ReadFrom(part)
			return b.Bytes()
		}
	}
}

// DecodePNG decodes an uploaded picture, failing the test when it is not
// a PNG.
func DecodePNG(t testing.TB, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the uploaded file is not a PNG: %v", err)
	}
	return img
}
