package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/slackbot"
	"github.com/gpuwatch/gpuwatch/web"
)

// TestFastSimulationKeepsTheWallClock runs the daemon on simulated GPUs
// far ahead of the wall clock and asks it what the world outside times by
// its own clock: a /gpu status that Slack signed now, and a browser
// session started before the simulation ran past the session's lifetime.
// Both are taken: the samples' time is for the rules alone.
func TestFastSimulationKeepsTheWallClock(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon until its simulation is hours ahead")
	}
	const secret, password = "wallclock-test-signing-secret", "correct horse"
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		speed int
		// lead is how far ahead of the wall clock the simulation must be:
		// past a signature's 5 minutes, past a session's 12 hours.
		lead time.Duration
	}{
		{60, slackbot.MaxClockSkew + time.Minute},
		{7200, web.SessionLifetime + time.Hour},
	} {
		t.Run(fmt.Sprintf("%d×", c.speed), func(t *testing.T) {
			dir := t.TempDir()
			addr := freeAddr(t)
			path := filepath.Join(dir, "gpuwatch.yaml")
			writeFile(t, path, fmt.Sprintf(`host: lab1
storage: {path: %s}
server: {listen: %q, basic_auth_users: {alice: %q}}
source: {type: sim, sim: {scenario: all, seed: 1, speed: %d}}
slack: {signing_secret: %s}
receivers: [{name: console, console: {}}]
route: {receiver: console}
`, filepath.Join(dir, "state.db"), addr, hash, c.speed, secret))
			d := runInProcess(t, path)
			waitFor(t, &d.stderr, "HTTP API listening")
			base := "http://" + addr
			client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

			// A browser logs in as the simulation starts.
			resp, err := client.PostForm(base+"/login", url.Values{"user": {"alice"}, "password": {password}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			var cookie *http.Cookie
			for _, ck := range resp.Cookies() {
				if ck.Name == web.SessionCookie {
					cookie = ck
				}
			}
			if resp.StatusCode != http.StatusSeeOther || cookie == nil {
				t.Fatalf("POST /login: got HTTP %d and cookies %v, want 303 and a session", resp.StatusCode, resp.Cookies())
			}

			// The simulation runs ahead of the wall clock.
			wallStart := time.Now()
			for {
				var st daemon.StatusJSON
				req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/status", nil)
				req.SetBasicAuth("alice", password)
				if resp, err := client.Do(req); err == nil {
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					json.Unmarshal(body, &st)
				}
				if st.Time != nil && st.Time.Sub(time.Now()) > c.lead {
					break
				}
				if time.Since(wallStart) > time.Minute {
					t.Fatalf("the simulation at %d× is not %v ahead of the wall clock after a minute (last sample %v)", c.speed, c.lead, st.Time)
				}
				time.Sleep(100 * time.Millisecond)
			}

			// Slack signs a /gpu status now, by its clock.
			body := url.Values{"command": {"/gpu"}, "text": {"status"}, "user_id": {"U1"}, "user_name": {"alice"},
				"channel_id": {"C1"}, "response_url": {"http://127.0.0.1:1/commands/1"}}.Encode()
			req, _ := http.NewRequest(http.MethodPost, base+"/slack/commands", strings.NewReader(body))
			now := time.Now()
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(now.Unix(), 10))
			req.Header.Set("X-Slack-Signature", slackbot.Sign(secret, now, []byte(body)))
			resp, err = client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), "GPU 0") {
				t.Errorf("/gpu status signed now, the simulation %v ahead: got HTTP %d %s, want the GPUs", c.lead, resp.StatusCode, answer)
			}

			// The browser's session lives on the wall clock's 12 hours.
			req, _ = http.NewRequest(http.MethodGet, base+"/web/session", nil)
			req.AddCookie(&http.Cookie{Name: cookie.Name, Value: cookie.Value})
			req.Header.Set(web.PageHeader, "1")
			resp, err = client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			session, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(session), `"user":"alice"`) {
				t.Errorf("the page's session, started %v ago on the wall clock and %v ago in the simulation: got HTTP %d %s, want it alive",
					time.Since(wallStart).Round(time.Second), c.lead, resp.StatusCode, session)
			}
			if code := d.stop(); code != cli.ExitOK {
				t.Errorf("gpuwatch run: exit %d\n%s", code, &d.stderr)
			}
		})
	}
}
