package slack

import (
	"encoding/json"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// threadSlack plays Slack's Web API with threads: conversations.replies
// answers the replies posted in a thread, with their metadata. fail, when
// set, may answer a call instead. It returns the replies Slack took.
func threadSlack(t *testing.T, fail func(method string, form url.Values) (notifiertest.Response, bool)) (*notifiertest.Server, func() []url.Values) {
	var (
		mu      sync.Mutex
		replies []url.Values // chat.postMessage calls in a thread that Slack took
	)
	srv := fakeSlack(t, func(_ int, method string, form url.Values) (notifiertest.Response, bool) {
		if fail != nil {
			if resp, ok := fail(method, form); ok {
				return resp, true
			}
		}
		mu.Lock()
		defer mu.Unlock()
		switch method {
		case "chat.postMessage":
			if form.Get("thread_ts") != "" {
				replies = append(replies, form)
			}
			return notifiertest.Response{}, false
		case "conversations.replies":
		default:
			return notifiertest.Response{}, false
		}
		var msgs []map[string]any
		for _, r := range replies {
			if r.Get("thread_ts") != form.Get("ts") {
				continue
			}
			m := map[string]any{"type": "message", "text": r.Get("text"), "thread_ts": r.Get("thread_ts")}
			if meta := r.Get("metadata"); meta != "" && form.Get("include_all_metadata") == "1" {
				var v any
				json.Unmarshal([]byte(meta), &v)
				m["metadata"] = v
			}
			msgs = append(msgs, m)
		}
		b, _ := json.Marshal(map[string]any{"ok": true, "messages": msgs, "has_more": false})
		return okJSON(string(b)), true
	})
	return srv, func() []url.Values {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(replies)
	}
}

// resolvedReplies counts the resolved replies Slack took: "✅ … resolved".
func resolvedReplies(replies func() []url.Values) int {
	n := 0
	for _, r := range replies() {
		if strings.HasPrefix(r.Get("text"), "✅ ") && strings.Contains(r.Get("text"), " resolved") {
			n++
		}
	}
	return n
}

// crashingStore is a MessageStore of a process that dies when crash is
// set: what it writes after that never reaches the disk.
type crashingStore struct {
	*memStore
	crash atomic.Bool
}

func (s *crashingStore) Put(key string, value []byte) error {
	if s.crash.Load() {
		return nil
	}
	return s.memStore.Put(key, value)
}

func resolvedNotification() *notifier.Notification {
	m := notifiertest.Notification(notifier.StatusResolved)
	m.Alerts[0].EndsAt = notifiertest.Start.Add(18 * time.Minute)
	m.Alerts[0].At = m.Alerts[0].EndsAt
	return m
}

// TestResolvedReplyOnceAcrossACrash: gpuwatch dies right after the
// resolved reply went out, before it wrote that it did; the restarted
// gpuwatch delivers the notification again (it was never acked) and
// finds the reply in the thread instead of posting it twice.
func TestResolvedReplyOnceAcrossACrash(t *testing.T) {
	st := &crashingStore{memStore: newMemStore()}
	var dies atomic.Bool // gpuwatch dies as its next reply goes out
	srv, replies := threadSlack(t, func(method string, form url.Values) (notifiertest.Response, bool) {
		if method == "chat.postMessage" && form.Get("thread_ts") != "" && dies.Load() {
			st.crash.Store(true)
		}
		return notifiertest.Response{}, false
	})
	notify(t, newBot(t, srv, st), notifiertest.Notification(notifier.StatusFiring))
	dies.Store(true)
	notify(t, newBot(t, srv, st), resolvedNotification())
	if got := resolvedReplies(replies); got != 1 {
		t.Fatalf("before the crash: %d resolved replies, want 1", got)
	}
	dies.Store(false)
	st.crash.Store(false)
	notify(t, newBot(t, srv, st), resolvedNotification()) // restarted
	if got := resolvedReplies(replies); got != 1 {
		t.Errorf("after the crash and the retry: %d resolved replies, want 1", got)
	}
	if rec := st.record(t, receiver+"/"+resolvedNotification().Alerts[0].Key); rec == nil || len(rec.ReplyPending) != 0 {
		t.Errorf("the record after the retry: %+v, want no reply pending", rec)
	}
	notify(t, newBot(t, srv, st), resolvedNotification()) // and once more: nothing left to do
	if got := len(calls(t, srv)); got != 4 {
		t.Errorf("%d calls in all, want 4: post, update, reply, one look at the thread, and nothing more", got)
	}
}

// TestResolvedReplyPostedWhenTheCrashCameFirst: the reply failed (or
// gpuwatch died before it went out): the retry finds no reply in the
// thread and posts it, once.
func TestResolvedReplyPostedWhenTheCrashCameFirst(t *testing.T) {
	down := true
	srv, replies := threadSlack(t, func(method string, form url.Values) (notifiertest.Response, bool) {
		if down && method == "chat.postMessage" && form.Get("thread_ts") != "" {
			return notifiertest.Response{Status: 500}, true
		}
		return notifiertest.Response{}, false
	})
	st := newMemStore()
	notify(t, newBot(t, srv, st), notifiertest.Notification(notifier.StatusFiring))
	if _, err := newBot(t, srv, st).Notify(t.Context(), resolvedNotification()); err == nil {
		t.Fatal("the resolve with its reply refused: got no error, want a retry")
	}
	down = false
	notify(t, newBot(t, srv, st), resolvedNotification())
	if got := resolvedReplies(replies); got != 1 {
		t.Errorf("after the retry: %d resolved replies, want 1", got)
	}
}

// TestResolvedReplyWithoutHistoryScope: without the scope to read the
// thread, the retry posts the reply (it may show twice) and says why.
func TestResolvedReplyWithoutHistoryScope(t *testing.T) {
	st := &crashingStore{memStore: newMemStore()}
	var dies atomic.Bool
	srv, replies := threadSlack(t, func(method string, form url.Values) (notifiertest.Response, bool) {
		switch {
		case method == "conversations.replies":
			return okJSON(`{"ok":false,"error":"missing_scope","needed":"channels:history"}`), true
		case method == "chat.postMessage" && form.Get("thread_ts") != "" && dies.Load():
			st.crash.Store(true)
		}
		return notifiertest.Response{}, false
	})
	notify(t, newBot(t, srv, st), notifiertest.Notification(notifier.StatusFiring))
	dies.Store(true)
	notify(t, newBot(t, srv, st), resolvedNotification())
	dies.Store(false)
	st.crash.Store(false)
	var logs notifiertest.Buffer
	n := newBot(t, srv, st)
	n.log = slog.New(slog.NewTextHandler(&logs, nil))
	notify(t, n, resolvedNotification())
	if got := resolvedReplies(replies); got != 2 {
		t.Errorf("without channels:history: %d resolved replies, want 2 (posted again)", got)
	}
	if !strings.Contains(logs.String(), "channels:history") {
		t.Errorf("the log does not say which scope would keep the reply from showing twice:\n%s", logs.String())
	}
}
