package slackbot

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkStatus16GPUs is /gpu status end to end on a 16-GPU host: a
// signed request through ServeHTTP, verification, the backend and the
// Block Kit answer. It reports the p99 of the handler's time per request.
func BenchmarkStatus16GPUs(b *testing.B) {
	ta := newTestApp(b, 16, nil)
	h := ta.Handler()
	body := commandBody("status", "U1", "alice", "https://hooks.slack.com/commands/T1/1/x")
	ts := strconv.FormatInt(testNow.Unix(), 10)
	sig := Sign(testSecret, testNow, []byte(body))
	durations := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/slack/commands", strings.NewReader(body))
		r.Header.Set("X-Slack-Request-Timestamp", ts)
		r.Header.Set("X-Slack-Signature", sig)
		w := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(w, r)
		durations = append(durations, time.Since(start))
		if w.Code != http.StatusOK {
			b.Fatalf("got HTTP %d, want 200", w.Code)
		}
	}
	b.StopTimer()
	slices.Sort(durations)
	p99 := durations[min(len(durations)-1, len(durations)*99/100)]
	b.ReportMetric(float64(p99)/float64(time.Millisecond), "p99-ms")
}
