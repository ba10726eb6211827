package slackbot

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
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
	var r replays
	now := testNow
	for i := range pruneEvery {
		if !r.first(strconv.Itoa(i), now.Add(MaxClockSkew), now) {
			t.Fatalf("signature %d: got a replay, want new", i)
		}
	}
	if r.first("0", now.Add(MaxClockSkew), now.Add(time.Minute)) {
		t.Errorf("signature 0 a minute later: got new, want a replay")
	}
	later := now.Add(MaxClockSkew + time.Second)
	for i := range pruneEvery {
		r.first("later"+strconv.Itoa(i), later.Add(MaxClockSkew), later)
	}
	if len(r.seen) != pruneEvery {
		t.Errorf("after the first signatures expired: %d remembered, want %d", len(r.seen), pruneEvery)
	}
}
