package cli_test

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/internal/suites"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/store"
)

// What the kill -9 loop does: that many kills, each after the daemon ran
// between killMin and killMax.
const (
	kills   = 12
	killMin = 400 * time.Millisecond
	killMax = 1600 * time.Millisecond
	// repeatWindow is how long before a crash a notification a receiver
	// took may be sent again (docs/notifications.md): the outbox records
	// deliveries at least once a second; the rest is the record's fsync
	// on a busy machine.
	repeatWindow = 1500 * time.Millisecond
)

// flaky makes a receiver refuse a share of the requests (before acting
// on them) while it is set.
type flaky struct {
	mu     sync.Mutex
	on     bool
	random *rand.Rand
}

func (f *flaky) refuse(share float64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.on && f.random.Float64() < share
}

func (f *flaky) set(on bool) {
	f.mu.Lock()
	f.on = on
	f.mu.Unlock()
}

// delivery is one webhook request the hook took.
type delivery struct {
	at  time.Time
	key string // its Idempotency-Key
	msg struct {
		Status string `json:"status"`
		Alerts []struct {
			Key    string `json:"key"`
			Status string `json:"status"`
		} `json:"alerts"`
	}
}

// killHook is a webhook that refuses a fifth of the requests while flaky.
type killHook struct {
	*httptest.Server
	flaky *flaky
	mu    sync.Mutex
	got   []delivery
}

func newKillHook(t *testing.T, f *flaky) *killHook {
	h := &killHook{flaky: f}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.flaky.refuse(0.2) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var d delivery
		if err := json.NewDecoder(r.Body).Decode(&d.msg); err != nil {
			t.Errorf("the hook got a body that is not JSON: %v", err)
		}
		d.at, d.key = time.Now(), r.Header.Get(notifier.IdempotencyHeader)
		h.mu.Lock()
		h.got = append(h.got, d)
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

// slackPost is one chat.postMessage the fake Slack took.
type slackPost struct {
	at       time.Time
	ts       string
	threadTS string
	blocks   string
	resolved []string // a resolved reply's metadata: the alerts and resolves it tells
}

// killSlack plays Slack's Web API as gpuwatch's bot uses it to post and
// update alerts and read threads: it refuses a tenth of the posts while
// flaky.
type killSlack struct {
	*httptest.Server
	flaky *flaky
	mu    sync.Mutex
	posts []slackPost
	next  int
}

func newKillSlack(t *testing.T, f *flaky) *killSlack {
	s := &killSlack{flaky: f}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		switch strings.TrimPrefix(r.URL.Path, "/api/") {
		case "auth.test":
			w.Header().Set("X-OAuth-Scopes", "chat:write,channels:history")
			fmt.Fprint(w, `{"ok":true,"user_id":"U0BOT","team_id":"T1"}`)
		case "chat.postMessage":
			if s.flaky.refuse(0.1) {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			p := slackPost{at: time.Now(), threadTS: r.Form.Get("thread_ts"), blocks: r.Form.Get("blocks")}
			var meta struct {
				Payload struct {
					Resolved []string `json:"resolved"`
				} `json:"event_payload"`
			}
			if json.Unmarshal([]byte(r.Form.Get("metadata")), &meta) == nil {
				p.resolved = meta.Payload.Resolved
			}
			s.mu.Lock()
			s.next++
			p.ts = fmt.Sprintf("1764400000.%06d", s.next)
			s.posts = append(s.posts, p)
			s.mu.Unlock()
			fmt.Fprintf(w, `{"ok":true,"channel":"C1","ts":%q}`, p.ts)
		case "chat.update":
			fmt.Fprintf(w, `{"ok":true,"channel":"C1","ts":%q,"text":""}`, r.Form.Get("ts"))
		case "conversations.replies":
			var msgs []map[string]any
			s.mu.Lock()
			for _, p := range s.posts {
				if p.threadTS == r.Form.Get("ts") {
					msgs = append(msgs, map[string]any{"type": "message", "ts": p.ts, "thread_ts": p.threadTS,
						"metadata": map[string]any{"event_type": "gpuwatch_resolved", "event_payload": map[string]any{"resolved": p.resolved}}})
				}
			}
			s.mu.Unlock()
			json.NewEncoder(w).Encode(map[string]any{"ok": true, "has_more": false, "messages": msgs})
		default:
			fmt.Fprint(w, `{"ok":false,"error":"unknown_method"}`)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// killLoopConfig is a daemon on simulated GPUs, sampled ten times a
// second on the wall clock (so that time goes on across restarts), with
// rules on readings that hover around their thresholds, so alerts fire
// and resolve all the time, sending every alert to the hook and to Slack.
// Without rules, the firing alerts resolve at the first evaluation.
func killLoopConfig(dir, listen, hook, slack string, withRules bool) string {
	ruleList := `
  - alert: GPUBusy
    when: utilization.gpu > 95
  - alert: GPUWarm
    when: temperature > 66
  - alert: GPUMemoryHalf
    when: memory.used_percent > 49.75`
	if !withRules {
		ruleList = " []"
	}
	return fmt.Sprintf(`storage: {path: %s}
server: {listen: %s}
source:
  type: sim
  interval: 100ms
  sim: {scenario: all, seed: 7, speed: 1}
slack:
  bot_token: xoxb-1111-2222-killloop
  api_url: %s/api/
receivers:
  - name: hook
    webhook: {url: %s, format: generic}
  - name: slack
    slack: {channel: "#gpu-alerts"}
route:
  receiver: hook
  group_wait: 0s
  repeat_interval: 0s
  routes:
    - matchers: ['alert=~".+"']
      receiver: hook
      continue: true
    - matchers: ['alert=~".+"']
      receiver: slack
rules:%s
`, filepath.Join(dir, "state.db"), listen, slack, hook, ruleList)
}

// TestKillLoopDeliveries runs gpuwatch on simulated GPUs that keep alerts
// firing and resolving, sends every alert to a webhook and to Slack that
// both refuse a share of the requests, and kills it with SIGKILL a dozen
// times in the middle of its work, restarting it on the same store each
// time; a last run with the receivers well delivers what waits. Then it
// checks what docs/notifications.md promises:
//
//   - nothing is lost: each alert's notifications, told apart by their
//     Idempotency-Key, alternate firing and resolved, and each alert's
//     last one (or the one still in the outbox) says what the store's
//     alert state says;
//   - what repeats is what a receiver took in the second before a
//     crash, with the key it had: the webhook's repeats all have a crash
//     within that of their first delivery, and so do Slack's messages
//     posted twice, at most one a crash; no resolved reply is posted
//     twice (the app may read its threads).
func TestKillLoopDeliveries(t *testing.T) {
	suites.Long(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "gpuwatch")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/gpuwatch").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed) // the kills' times and the receivers' refusals
	f := &flaky{on: true, random: rand.New(rand.NewPCG(seed, 2))}
	hook, slack := newKillHook(t, f), newKillSlack(t, f)
	listen := freeAddr(t)
	write := func(withRules bool) string {
		path := filepath.Join(dir, "gpuwatch.yaml")
		if err := os.WriteFile(path, []byte(killLoopConfig(dir, listen, hook.URL, slack.URL, withRules)), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	config := write(true)
	var (
		logs    notifiertest.Buffer // both of a process's outputs, as they come
		crashes []time.Time
	)
	run := func() *exec.Cmd {
		// A simulation starts at the second it is started in: not before
		// the last run's last sample.
		if len(crashes) > 0 {
			time.Sleep(time.Until(crashes[len(crashes)-1].Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
		}
		cmd := exec.Command(bin, "run", "--config", config)
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	random := rand.New(rand.NewPCG(seed, 4))
	for range kills {
		cmd := run()
		time.Sleep(killMin + time.Duration(random.Int64N(int64(killMax-killMin))))
		crashes = append(crashes, time.Now())
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}

	// The last run: the receivers well, and no rules: the alerts still
	// firing resolve, and no new ones come; until the outbox is empty,
	// then a clean stop.
	f.set(false)
	config = write(false)
	cmd := run()
	emptyOutbox(t, "http://"+listen, &logs)
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the last run: %v\n%s", err, logs.String())
	}

	db, err := store.Open(filepath.Join(dir, "state.db"), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	firing := firingInStore(t, db)
	waiting, err := db.Pending("hook", 10_000)
	if err != nil {
		t.Fatal(err)
	}

	hook.mu.Lock()
	got := slices.Clone(hook.got)
	hook.mu.Unlock()
	seen := map[string]time.Time{}
	last := map[string]string{} // by alert key: the status it was last told
	repeats, transitions := 0, 0
	for _, d := range got {
		if first, ok := seen[d.key]; ok {
			repeats++
			if !crashAfter(crashes, first, repeatWindow) {
				t.Errorf("the hook got notification %s again, first taken at %s with no crash in the %v after it", d.key, first.Format(time.StampMilli), repeatWindow)
			}
			continue
		}
		seen[d.key] = d.at
		for _, a := range d.msg.Alerts {
			transitions++
			if last[a.Key] == a.Status {
				t.Errorf("alert %s was told %s twice in a row: a notification between them was lost", a.Key, a.Status)
			}
			last[a.Key] = a.Status
		}
	}
	for _, e := range waiting {
		var n notifier.Notification
		if err := json.Unmarshal(e.Payload, &n); err != nil {
			t.Fatal(err)
		}
		for _, a := range n.Alerts {
			last[a.Key] = string(a.Status)
		}
	}
	told := map[string]string{} // by rule/uuid, as the store keys alerts
	for key, status := range last {
		_, ruleUUID, _ := strings.Cut(key, "/")
		told[ruleUUID] = status
		if want := firing[ruleUUID]; (status == "firing") != want {
			t.Errorf("alert %s was last told %s, but the store has it firing=%v", key, status, want)
		}
	}
	for key := range firing {
		if told[key] != "firing" {
			t.Errorf("alert %s is firing in the store, but the hook was never told", key)
		}
	}
	if transitions < 50 {
		t.Fatalf("the hook got %d transitions over %d kills, want a busy run of 50 or more", transitions, kills)
	}

	slack.mu.Lock()
	posts := slices.Clone(slack.posts)
	slack.mu.Unlock()
	messages, replies := map[string]time.Time{}, map[string]bool{}
	slackRepeats := 0
	for _, p := range posts {
		if p.threadTS == "" {
			if first, ok := messages[p.blocks]; ok {
				slackRepeats++
				if !crashAfter(crashes, first, repeatWindow) {
					t.Errorf("Slack got a message again, first posted at %s with no crash in the %v after it", first.Format(time.StampMilli), repeatWindow)
				}
			}
			messages[p.blocks] = p.at
			continue
		}
		for _, token := range p.resolved {
			if replies[token] {
				var where []string
				for _, q := range posts {
					if slices.Contains(q.resolved, token) {
						where = append(where, fmt.Sprintf("%s in thread %s telling %q", q.at.Format(time.StampMilli), q.threadTS, q.resolved))
					}
				}
				var around []string
				for _, c := range crashes {
					around = append(around, c.Format(time.StampMilli))
				}
				t.Errorf("Slack got the resolved reply of %s twice: %s; crashes at %s", token, strings.Join(where, "; "), strings.Join(around, ", "))
			}
			replies[token] = true
		}
	}
	if slackRepeats > kills {
		t.Errorf("Slack got %d messages again over %d kills, want at most one a crash", slackRepeats, kills)
	}
	t.Logf("%d kills: the hook took %d notifications (%d transitions), %d of them again; Slack took %d posts, %d messages again; %d notifications wait in the outbox",
		kills, len(got), transitions, repeats, len(posts), slackRepeats, len(waiting))
}

// emptyOutbox waits until the daemon at base has no notification waiting.
func emptyOutbox(t *testing.T, base string, logs *notifiertest.Buffer) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the outbox did not empty within a minute\n%s", logs.String())
		}
		resp, err := http.Get(base + "/api/v1/outbox")
		if err != nil {
			continue
		}
		var out daemon.OutboxJSON
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err == nil && out.Pending["hook"] == 0 && out.Pending["slack"] == 0 {
			return
		}
	}
}

// firingInStore is the alerts the store has firing, by rule and UUID
// ("rule/uuid": what notifications key them by, after the host).
func firingInStore(t *testing.T, db *store.DB) map[string]bool {
	t.Helper()
	raw, err := db.All(daemon.BucketAlerts)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, b := range raw {
		var rec rules.AlertRecord
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&rec); err != nil {
			t.Fatal(err)
		}
		if rec.State == rules.StateFiring {
			out[rec.Rule+"/"+rec.UUID] = true
		}
	}
	return out
}

// crashAfter reports whether a crash came within window after at, or
// just before it: a request in flight when gpuwatch was killed reaches
// the receiver after the kill.
func crashAfter(crashes []time.Time, at time.Time, window time.Duration) bool {
	for _, c := range crashes {
		if d := c.Sub(at); d >= -inFlight && d <= window {
			return true
		}
	}
	return false
}

// inFlight is how long a request sent just before a kill may take to
// reach the receiver.
const inFlight = 200 * time.Millisecond
