package slack

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// fakeSlack plays the Web API: chat.postMessage answers a new ts for every
// message, chat.update echoes the ts it updated. fail, when set, may answer
// instead (return ok=false to let the fake answer).
func fakeSlack(t testing.TB, fail func(n int, method string, form url.Values) (notifiertest.Response, bool)) *notifiertest.Server {
	return notifiertest.NewServer(t, func(n int, r *notifiertest.Request) notifiertest.Response {
		form, _ := url.ParseQuery(string(r.Body))
		method := strings.TrimPrefix(r.Path, "/api/")
		if fail != nil {
			if resp, ok := fail(n, method, form); ok {
				return resp
			}
		}
		switch method {
		case "chat.postMessage":
			return okJSON(fmt.Sprintf(`{"ok":true,"channel":"C123","ts":"1764409265.%06d"}`, n+1))
		case "chat.update":
			return okJSON(fmt.Sprintf(`{"ok":true,"channel":%q,"ts":%q,"text":""}`, form.Get("channel"), form.Get("ts")))
		}
		return okJSON(`{"ok":false,"error":"unknown_method"}`)
	})
}

func okJSON(body string) notifiertest.Response {
	return notifiertest.Response{Body: body, Header: map[string]string{"Content-Type": "application/json"}}
}

// call is one Web API call the fake received, decoded.
type call struct {
	Method string
	Form   url.Values
	Blocks []map[string]any
}

func calls(t testing.TB, srv *notifiertest.Server) []call {
	t.Helper()
	var out []call
	for _, r := range srv.Requests() {
		form, err := url.ParseQuery(string(r.Body))
		if err != nil {
			t.Fatalf("request to %s: body is not a form: %v", r.Path, err)
		}
		c := call{Method: strings.TrimPrefix(r.Path, "/api/"), Form: form}
		if b := form.Get("blocks"); b != "" {
			if err := json.Unmarshal([]byte(b), &c.Blocks); err != nil {
				t.Fatalf("request to %s: blocks are not JSON: %v", r.Path, err)
			}
		}
		out = append(out, c)
	}
	return out
}

// memStore is a MessageStore in memory; failPut makes Put fail.
type memStore struct {
	mu      sync.Mutex
	m       map[string][]byte
	failPut error
	aside   map[string]error // records set aside, and why
}

func newMemStore() *memStore { return &memStore{m: map[string][]byte{}} }

func (s *memStore) Get(key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[key]
	return b, ok, nil
}

func (s *memStore) Put(key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failPut != nil {
		return s.failPut
	}
	s.m[key] = append([]byte(nil), value...)
	return nil
}

func (s *memStore) Delete(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}

func (s *memStore) SetAside(key string, why error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aside == nil {
		s.aside = map[string]error{}
	}
	s.aside[key] = why
	delete(s.m, key)
}

func (s *memStore) record(t testing.TB, key string) *record {
	t.Helper()
	b, ok, _ := s.Get(key)
	if !ok {
		return nil
	}
	r, err := decodeRecord(b)
	if err != nil {
		t.Fatalf("record %s: %v", key, err)
	}
	return r
}

// Helpers that read a message as data.

// headerText is the text of the message's header block.
func headerText(blocks []map[string]any) string {
	for _, b := range blocks {
		if b["type"] == "header" {
			return textOf(b["text"])
		}
	}
	return ""
}

func textOf(v any) string {
	if m, ok := v.(map[string]any); ok {
		s, _ := m["text"].(string)
		return s
	}
	return ""
}

// gpuSection returns the text and fields ("Value" → "1.5 GiB/min") of the
// section about GPU gpu.
func gpuSection(blocks []map[string]any, gpu int) (string, map[string]string) {
	prefix := fmt.Sprintf("*GPU %d ·", gpu)
	for _, b := range blocks {
		text := textOf(b["text"])
		if b["type"] != "section" || !strings.HasPrefix(text, prefix) {
			continue
		}
		fields := map[string]string{}
		list, _ := b["fields"].([]any)
		for _, f := range list {
			label, value, _ := strings.Cut(textOf(f), "\n")
			fields[strings.Trim(label, "*")] = value
		}
		return text, fields
	}
	return "", nil
}

// allText joins every text in the blocks, for "does the message say X".
func allText(blocks []map[string]any) string {
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if s, ok := v["text"].(string); ok {
				b.WriteString(s + "\n")
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, blk := range blocks {
		walk(blk)
	}
	return b.String()
}

// twoGPUs is a notification about one rule on GPUs 0 and 1.
func twoGPUs(status notifier.Status) *notifier.Notification {
	m := notifiertest.Notification(status)
	b := m.Alerts[0]
	b.Key = "node1/GPUMemoryLeak/GPU-1111"
	b.GPU, b.UUID = 1, "GPU-1111"
	b.Processes = b.Processes[1:]
	m.Alerts = append(m.Alerts, b)
	return m
}
