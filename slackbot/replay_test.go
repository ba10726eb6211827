package slackbot

import (
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReplayedRequestActsOnce: a signed request captured and sent again
// within its five minutes (three identical `silence all 1h`) acts once;
// the replays get an empty 200 and the log says so. A new request with
// the same text is not a replay.
func TestReplayedRequestActsOnce(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	body := commandBody("silence all 1h", "U0ADMIN", "admin", "https://hooks.slack.com/commands/T1/1/x")
	var answers []string
	for range 3 {
		w := httptest.NewRecorder()
		ta.Handler().ServeHTTP(w, signed("/slack/commands", body))
		if w.Code != http.StatusOK {
			t.Fatalf("got HTTP %d %q, want 200", w.Code, w.Body)
		}
		answers = append(answers, w.Body.String())
	}
	if len(ta.b.added) != 1 {
		t.Errorf("three identical signed requests: got %d silences, want 1", len(ta.b.added))
	}
	if !strings.Contains(answers[0], "silenced") || answers[1] != "" || answers[2] != "" {
		t.Errorf("answers: got %q, want the first to say silenced and the replays empty", answers)
	}
	if got := strings.Count(ta.log.String(), "slack request replayed"); got != 2 {
		t.Errorf("log: got %d replays logged, want 2:\n%s", got, ta.log)
	}
	ta.run(t, "silence all 1h", "U0ADMIN", "admin")
	if len(ta.b.added) != 2 {
		t.Errorf("a new request with the same text: got %d silences in all, want 2", len(ta.b.added))
	}
}

// TestReplaysForgetExpired: a signature is remembered until Verify would
// refuse it as stale, then forgotten, so memory stays bounded.
func TestReplaysForgetExpired(t *testing.T) {
	st := newMemReplays()
	r := replays{st: st}
	now := testNow
	for i := range pruneEvery {
		if fresh, err := r.first([]byte(strconv.Itoa(i)), now.Add(MaxClockSkew), now); !fresh || err != nil {
			t.Fatalf("signature %d: got a replay (%v), want new", i, err)
		}
	}
	if fresh, _ := r.first([]byte("0"), now.Add(MaxClockSkew), now.Add(time.Minute)); fresh {
		t.Errorf("signature 0 a minute later: got new, want a replay")
	}
	later := now.Add(MaxClockSkew + time.Second)
	for i := range pruneEvery {
		r.first([]byte("later"+strconv.Itoa(i)), later.Add(MaxClockSkew), later)
	}
	if len(r.seen) != pruneEvery {
		t.Errorf("after the first signatures expired: %d remembered, want %d", len(r.seen), pruneEvery)
	}
	if len(st.kv) != pruneEvery {
		t.Errorf("after the first signatures expired: %d kept in the store, want %d", len(st.kv), pruneEvery)
	}
}

// memReplays is a ReplayStore in memory; fail makes Update fail.
type memReplays struct {
	mu   sync.Mutex
	kv   map[string][]byte
	fail error
}

func newMemReplays() *memReplays { return &memReplays{kv: map[string][]byte{}} }

func (m *memReplays) All() (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.kv), nil
}

func (m *memReplays) Update(put map[string][]byte, del []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	maps.Copy(m.kv, put)
	for _, k := range del {
		delete(m.kv, k)
	}
	return nil
}

func (m *memReplays) SetAside(key string, _ error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.kv, key)
}

// TestReplayInUpperCaseActsOnce: the same signature written in upper-case
// hex is the same signature: the replay acts not.
func TestReplayInUpperCaseActsOnce(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	body := commandBody("silence all 1h", "U0ADMIN", "admin", "https://hooks.slack.com/commands/T1/1/x")
	first := signed("/slack/commands", body)
	again := signed("/slack/commands", body)
	again.Header.Set("X-Slack-Signature", "v0="+strings.ToUpper(strings.TrimPrefix(first.Header.Get("X-Slack-Signature"), "v0=")))
	for _, r := range []*http.Request{first, again} {
		w := httptest.NewRecorder()
		ta.Handler().ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("got HTTP %d %q, want 200", w.Code, w.Body)
		}
	}
	if len(ta.b.added) != 1 {
		t.Errorf("a signed request and its replay in upper-case hex: got %d silences, want 1", len(ta.b.added))
	}
}

// TestReplayAfterRestartActsOnce: a request sent again after a restart,
// within its five minutes, acts not: the signatures are kept in the
// store. When the store does not take a signature, the request is
// refused (503) rather than acted on unprotected.
func TestReplayAfterRestartActsOnce(t *testing.T) {
	st := newMemReplays()
	keep := func(c *Config) { c.Replays = st }
	body := commandBody("silence all 1h", "U0ADMIN", "admin", "https://hooks.slack.com/commands/T1/1/x")
	before := newTestApp(t, 4, keep)
	w := httptest.NewRecorder()
	before.Handler().ServeHTTP(w, signed("/slack/commands", body))
	if w.Code != http.StatusOK || len(before.b.added) != 1 {
		t.Fatalf("the first request: HTTP %d, %d silences; want 200 and one", w.Code, len(before.b.added))
	}

	after := newTestApp(t, 4, keep) // restarted: a new app on the same store
	w = httptest.NewRecorder()
	after.Handler().ServeHTTP(w, signed("/slack/commands", body))
	if w.Code != http.StatusOK || len(after.b.added) != 0 {
		t.Errorf("the request replayed after a restart: HTTP %d, %d silences; want 200 and none", w.Code, len(after.b.added))
	}

	st.fail = errors.New("no space left on device")
	w = httptest.NewRecorder()
	after.Handler().ServeHTTP(w, signed("/slack/commands", commandBody("silence all 1h", "U0ADMIN", "admin", "https://hooks.slack.com/commands/T1/1/x")))
	if w.Code != http.StatusServiceUnavailable || len(after.b.added) != 0 {
		t.Errorf("a request whose signature the store refuses: HTTP %d, %d silences; want 503 and none", w.Code, len(after.b.added))
	}
}

// TestReplaysLoad: at start, the signatures still valid are taken back,
// expired ones deleted, and one that cannot be read set aside.
func TestReplaysLoad(t *testing.T) {
	st := newMemReplays()
	valid, _ := testNow.Add(time.Minute).MarshalText()
	old, _ := testNow.Add(-time.Minute).MarshalText()
	st.kv["aa"], st.kv["bb"], st.kv["cc"] = valid, old, []byte("garbage")
	r := replays{st: st}
	if err := r.load(testNow); err != nil {
		t.Fatal(err)
	}
	if len(r.seen) != 1 || r.seen["aa"].IsZero() {
		t.Errorf("loaded %v, want aa alone", r.seen)
	}
	if len(st.kv) != 1 {
		t.Errorf("left in the store: %v, want aa alone (bb expired, cc set aside)", st.kv)
	}
}
