package slackbot

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/history"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// testSecret signs the tests' requests.
const testSecret = "8f742231b10e8888abcd99yyyzzz85a5"

// testNow is the fake clock of every test.
var testNow = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// fakeBackend is a Backend with n GPUs on host node1 (and the hosts of
// others, a fleet); it records every change and counts every call.
type fakeBackend struct {
	mu     sync.Mutex
	snap   *gpu.Snapshot
	others []*gpu.Snapshot
	// histories are the hosts History was asked for.
	histories []string
	alerts    []ActiveAlert
	silences  []notifier.Silence
	added     []notifier.Silence
	expired   []string
	acks      [][2]string
	calls     int
	// windows are the windows Digest was asked for; digest, when set,
	// answers instead of the default digest.
	windows []time.Duration
	digest  func(window time.Duration) (string, []byte, error)
	// block, when set, is waited on by Snapshot (a slow backend).
	block chan struct{}
	// writes, when set, is waited on by AddSilence and Acknowledge (a slow
	// store).
	writes chan struct{}
}

func newFakeBackend(n int) *fakeBackend {
	snap := &gpu.Snapshot{Time: testNow.Add(-5 * time.Second), Host: "node1"}
	for i := range n {
		d := gpu.Device{
			Index: i, UUID: fmt.Sprintf("GPU-%04d", i), Name: "NVIDIA H100 80GB HBM3",
			MemUsed: uint64(10*(i+1)) << 30, MemTotal: 80 << 30,
			UtilGPU: float64(20 * i), UtilMem: 10, TempC: float64(40 + 10*i), PowerW: 100 + 50*float64(i), PowerLimitW: 700,
		}
		if i == 0 {
			d.Processes = []gpu.Process{
				{PID: 4242, User: "alice", Command: "python train.py --model llama-7b", Container: "docker:3f2a9c1b7e4d", MemUsed: 9 << 30},
				{PID: 5151, User: "bob", Command: "jupyter-lab", MemUsed: 1 << 30},
			}
		}
		if i == 2 {
			d.Processes = []gpu.Process{{PID: 777, User: "carol", Command: "<!channel> ./evil", MemUsed: 30 << 30}}
		}
		if i == 3 {
			d.UtilGPU, d.TempC = math.NaN(), math.NaN()
		}
		snap.Devices = append(snap.Devices, d)
	}
	return &fakeBackend{
		snap: snap,
		alerts: []ActiveAlert{
			{Key: "node1/GPUMemoryLeak/GPU-0000", Host: "node1", Name: "GPUMemoryLeak", Severity: "critical", State: "firing", GPU: 0, UUID: "GPU-0000",
				Since: testNow.Add(-12 * time.Minute), ValueText: "1.5 GiB/min", Summary: "GPU 0 memory keeps growing", Acknowledged: "dave (U0DAVE)"},
			{Key: "node1/GPUHot/GPU-0002", Host: "node1", Name: "GPUHot", Severity: "warning", State: "pending", GPU: 2, UUID: "GPU-0002",
				Since: testNow.Add(-30 * time.Second), ValueText: "88 C", Summary: "GPU 2 is hot"},
		},
		silences: []notifier.Silence{
			{ID: "s-active", Matchers: mustMatchers("alert=\"GPUHot\""), StartsAt: testNow.Add(-time.Hour), EndsAt: testNow.Add(time.Hour), CreatedBy: "erin (U0ERIN)", Comment: "fan repair"},
			{ID: "s-old", Matchers: mustMatchers("gpu=\"1\""), StartsAt: testNow.Add(-3 * time.Hour), EndsAt: testNow.Add(-2 * time.Hour)},
		},
	}
}

func mustMatchers(s string) notifier.Matchers {
	ms, err := notifier.ParseMatchers(s)
	if err != nil {
		panic(err)
	}
	return ms
}

func (f *fakeBackend) touch() {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
}

func (f *fakeBackend) Snapshots() []*gpu.Snapshot {
	f.touch()
	if f.block != nil {
		<-f.block
	}
	var out []*gpu.Snapshot
	if f.snap != nil {
		out = append(out, f.snap)
	}
	out = append(out, f.others...)
	slices.SortFunc(out, func(a, b *gpu.Snapshot) int { return cmp.Compare(a.Host, b.Host) })
	return out
}

func (f *fakeBackend) Alerts() []ActiveAlert { f.touch(); return f.alerts }

// History answers every GPU of q's host that q asks for, a point a
// minute from q.From to q.To: memory rising from 0 to 100%, utilization
// 50% (unknown at first), temperature 60 °C.
func (f *fakeBackend) History(_ context.Context, q history.Query) ([]chart.GPUHistory, error) {
	f.touch()
	f.mu.Lock()
	f.histories = append(f.histories, q.Host)
	f.mu.Unlock()
	var out []chart.GPUHistory
	for _, s := range f.Snapshots() {
		if s.Host != q.Host {
			continue
		}
		for _, d := range s.Devices {
			if q.GPU != history.AllGPUs && d.Index != q.GPU {
				continue
			}
			n := int(q.To.Sub(q.From)/time.Minute) + 1
			g := chart.GPUHistory{Host: s.Host, Index: d.Index, Name: d.Name,
				MemoryPercent: chart.Series{Start: q.From, Step: time.Minute},
				Utilization:   chart.Series{Start: q.From, Step: time.Minute},
				Temperature:   chart.Series{Start: q.From, Step: time.Minute}}
			for i := range n {
				g.MemoryPercent.Values = append(g.MemoryPercent.Values, float64(i)*100/float64(n-1))
				g.Utilization.Values = append(g.Utilization.Values, 50)
				g.Temperature.Values = append(g.Temperature.Values, 60)
			}
			g.Utilization.Values[0] = math.NaN()
			out = append(out, g)
		}
	}
	return out, nil
}

func (f *fakeBackend) Silences() []notifier.Silence { f.touch(); return f.silences }

// Verdict judges a GPU from its readings and the XIDs of the backend's
// recent events, as the daemon does.
func (f *fakeBackend) Verdict(host string, d *gpu.Device) gpu.Verdict {
	f.touch()
	f.mu.Lock()
	defer f.mu.Unlock()
	var recent []gpu.Event
	for _, s := range append([]*gpu.Snapshot{f.snap}, f.others...) {
		if s == nil || s.Host != host {
			continue
		}
		for _, ev := range s.Events {
			if ev.Kind == gpu.EventXID && ev.GPU == d.Index {
				recent = append(recent, ev)
			}
		}
	}
	return gpu.Assess(d, recent)
}

func (f *fakeBackend) AddSilence(s notifier.Silence) (notifier.Silence, error) {
	if f.writes != nil {
		<-f.writes
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	s.ID = "sil" + strconv.Itoa(len(f.added)+1)
	f.added = append(f.added, s)
	return s, nil
}

func (f *fakeBackend) ExpireSilence(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	for _, s := range f.silences {
		if s.ID == id {
			f.expired = append(f.expired, id)
			return nil
		}
	}
	return fmt.Errorf("expire silence %q: %w", id, notifier.ErrSilenceNotFound)
}

func (f *fakeBackend) Acknowledge(key, by string) error {
	if f.writes != nil {
		<-f.writes
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.acks = append(f.acks, [2]string{key, by})
	return nil
}

// Digest answers a header and a section naming the window, or f.digest.
func (f *fakeBackend) Digest(window time.Duration) (string, []byte, error) {
	f.mu.Lock()
	f.calls++
	f.windows = append(f.windows, window)
	answer := f.digest
	f.mu.Unlock()
	if answer != nil {
		return answer(window)
	}
	title := fmt.Sprintf("GPU usage on node1, last %v", window)
	blocks := fmt.Sprintf(`[{"type":"header","text":{"type":"plain_text","text":%q}},`+
		`{"type":"section","text":{"type":"mrkdwn","text":"*GPU 0* avg 61%%\n*alice* 20.5 GPU-hours"}}]`, title)
	return title, []byte(blocks), nil
}

func (f *fakeBackend) Now() time.Time { return testNow }

func (f *fakeBackend) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// testApp is an app on a fake backend, with its log in a buffer.
type testApp struct {
	*App
	b   *fakeBackend
	log *notifiertest.Buffer
}

func newTestApp(t testing.TB, gpus int, mod func(*Config)) *testApp {
	t.Helper()
	logs := &notifiertest.Buffer{}
	c := Config{
		SigningSecret: testSecret,
		Admins:        []string{"U0ADMIN", "root"},
		Logger:        slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:           func() time.Time { return testNow },
	}
	if mod != nil {
		mod(&c)
	}
	b := newFakeBackend(gpus)
	a, err := New(b, c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &testApp{App: a, b: b, log: logs}
}

// signed builds a POST signed at testNow.
func signed(path, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(testNow.Unix(), 10))
	r.Header.Set("X-Slack-Signature", Sign(testSecret, testNow, []byte(body)))
	return r
}

// triggers numbers the commands tests send: each has its own trigger_id,
// as each of Slack's does, so none is a replay of another.
var triggers atomic.Int64

// commandBody is a slash command's form from user (ID and name) in
// channel C0GPU (#gpu).
func commandBody(text, userID, userName, responseURL string) string {
	return commandBodyIn("C0GPU", text, userID, userName, responseURL)
}

// commandBodyIn is a slash command's form from user in a conversation:
// a channel (C…, named gpu) or a direct message (D…).
func commandBodyIn(channel, text, userID, userName, responseURL string) string {
	name := "gpu"
	if strings.HasPrefix(channel, "D") {
		name = "directmessage"
	}
	return url.Values{
		"token": {"ignored"}, "team_id": {"T1"}, "channel_id": {channel}, "channel_name": {name},
		"user_id": {userID}, "user_name": {userName}, "command": {"/gpu"}, "text": {text},
		"response_url": {responseURL}, "trigger_id": {fmt.Sprintf("1.2.%d", triggers.Add(1))},
	}.Encode()
}

// kit is a Block Kit message decoded as data.
type kit struct {
	ResponseType    string `json:"response_type"`
	ReplaceOriginal bool   `json:"replace_original"`
	Text            string `json:"text"`
	Blocks          []struct {
		Type string `json:"type"`
		Text *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"text"`
		Elements []struct {
			Type     string `json:"type"`
			Text     any    `json:"text"`
			ActionID string `json:"action_id"`
		} `json:"elements"`
	} `json:"blocks"`
}

func decodeKit(t testing.TB, b []byte) kit {
	t.Helper()
	var k kit
	if err := json.Unmarshal(b, &k); err != nil {
		t.Fatalf("answer is not a Block Kit message: %v\n%s", err, b)
	}
	if len(k.Blocks) == 0 || len(k.Blocks) > maxBlocks {
		t.Fatalf("got %d blocks, want 1 to %d:\n%s", len(k.Blocks), maxBlocks, b)
	}
	return k
}

// texts are the texts of the blocks of a type ("" for all), in order.
func (k kit) texts(typ string) []string {
	var out []string
	for _, b := range k.Blocks {
		if typ != "" && b.Type != typ {
			continue
		}
		if b.Text != nil {
			out = append(out, b.Text.Text)
		}
		for _, e := range b.Elements {
			if s, ok := e.Text.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func (k kit) all() string { return strings.Join(k.texts(""), "\n") }

// run sends a signed command in #gpu and decodes the answer.
func (ta *testApp) run(t *testing.T, text, userID, userName string) kit {
	t.Helper()
	return ta.runIn(t, "C0GPU", text, userID, userName)
}

// runIn sends a signed command in a conversation and decodes the answer.
func (ta *testApp) runIn(t *testing.T, channel, text, userID, userName string) kit {
	t.Helper()
	w := httptest.NewRecorder()
	ta.Handler().ServeHTTP(w, signed("/slack/commands", commandBodyIn(channel, text, userID, userName, "https://hooks.slack.com/commands/T1/1/x")))
	if w.Code != http.StatusOK {
		t.Fatalf("/gpu %s: got HTTP %d %q, want 200", text, w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("/gpu %s: got Content-Type %q, want application/json", text, ct)
	}
	assertNoSecret(t, "/gpu "+text+" answer", w.Body.String())
	k := decodeKit(t, w.Body.Bytes())
	assertSafeMrkdwn(t, "/gpu "+text, k.all())
	return k
}

// slackToken is what may follow "<" in our answers: a user mention or a date.
var slackToken = regexp.MustCompile(`^<(@[UW][A-Z0-9]+|!date\^\d+\^[^|>]*\|[^>]*)>`)

// assertSafeMrkdwn fails on a "<" that does not start a mention or a date:
// user data must be escaped, or "<!channel>" in a command line pings
// everyone.
func assertSafeMrkdwn(t *testing.T, what, text string) {
	t.Helper()
	for i := strings.IndexByte(text, '<'); i >= 0; i = strings.IndexByte(text, '<') {
		text = text[i:]
		m := slackToken.FindString(text)
		if m == "" {
			t.Errorf("%s: got an unescaped %q", what, blockkit.Clip(text, 30))
			return
		}
		text = text[len(m):]
	}
}
