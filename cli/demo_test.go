package cli_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// consoleLine matches the first line of a console notification.
var consoleLine = regexp.MustCompile(`(?m)^(\d{4}-\d\d-\d\d) \d\d:\d\d:\d\d UTC  (FIRING  |RESOLVED) (\w+) \[\w+\] \S+ GPU (\d+)\b`)

// transitionCounts counts the FIRING and RESOLVED console lines per alert.
func transitionCounts(out string) (fired, resolved map[string]int) {
	fired, resolved = map[string]int{}, map[string]int{}
	for _, m := range consoleLine.FindAllStringSubmatch(out, -1) {
		if m[2] == "RESOLVED" {
			resolved[m[3]]++
		} else {
			fired[m[3]]++
		}
	}
	return fired, resolved
}

// TestDemoShowsEveryAlert runs the demo as fast as possible and checks that
// each problem the demo simulates is seen to fire and to resolve.
func TestDemoShowsEveryAlert(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			got := gpuwatch(t, "demo", "--speed", "0", "--seed", fmt.Sprint(seed))
			if got.code != cli.ExitOK {
				t.Fatalf("demo: got exit %d, want %d\nstderr:\n%s", got.code, cli.ExitOK, got.stderr)
			}
			fired, resolved := transitionCounts(got.stdout)
			for _, alerts := range [][]string{
				{"GPUMemoryNearFull"}, {"GPUIdleButHeld"}, {"GPUHot"}, {"GPULost"},
				{"GPUMemoryLeak", "GPUOutOfMemorySoon"},
			} {
				var f, r int
				for _, a := range alerts {
					f, r = f+fired[a], r+resolved[a]
				}
				name := strings.Join(alerts, " or ")
				if f == 0 || r == 0 {
					t.Errorf("demo: %s: got %d FIRING and %d RESOLVED lines, want at least one of each", name, f, r)
				}
			}
			for a, n := range fired {
				if resolved[a] != n {
					t.Errorf("demo: %s: got %d FIRING and %d RESOLVED, want every alert resolved by the end", a, n, resolved[a])
				}
			}
			m := regexp.MustCompile(`demo finished: (\d+) alerts fired, (\d+) resolved`).FindStringSubmatch(got.stdout)
			if m == nil {
				t.Fatalf("demo: got stdout\n%s\nwant a closing line counting the alerts", got.stdout)
			}
			if n, _ := strconv.Atoi(m[1]); n != sum(fired) {
				t.Errorf("demo: closing line says %d fired, got %d FIRING lines", n, sum(fired))
			}
			if n, _ := strconv.Atoi(m[2]); n != sum(resolved) {
				t.Errorf("demo: closing line says %d resolved, got %d RESOLVED lines", n, sum(resolved))
			}
		})
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestDemoDatesAreToday: the demo's alerts are of today, so that Slack
// does not show them as of a day long past.
func TestDemoDatesAreToday(t *testing.T) {
	before := time.Now().UTC().Format(time.DateOnly)
	got := gpuwatch(t, "demo", "--speed", "0", "--scenario", "thermal")
	after := time.Now().UTC().Format(time.DateOnly)
	lines := consoleLine.FindAllStringSubmatch(got.stdout, -1)
	if got.code != cli.ExitOK || len(lines) == 0 {
		t.Fatalf("demo --scenario thermal: exit %d, want alerts\n%s%s", got.code, got.stdout, got.stderr)
	}
	if date := lines[0][1]; date != before && date != after {
		t.Errorf("demo: the first alert is of %s, want today, %s", date, after)
	}
}

func TestDemoScenario(t *testing.T) {
	got := gpuwatch(t, "demo", "--speed", "0", "--scenario", "normal-training")
	if got.code != cli.ExitOK {
		t.Fatalf("demo --scenario normal-training: got exit %d, want %d\nstderr:\n%s", got.code, cli.ExitOK, got.stderr)
	}
	if fired, _ := transitionCounts(got.stdout); len(fired) != 0 {
		t.Errorf("demo --scenario normal-training: got alerts %v, want none", fired)
	}
	if want := "demo finished: 0 alerts fired, 0 resolved."; !strings.Contains(got.stdout, want) {
		t.Errorf("demo --scenario normal-training: got\n%s\nwant it to contain %q", got.stdout, want)
	}
}

// TestDemoPostsToSlackWhenAsked points SLACK_WEBHOOK_URL at a recording
// server: every alert the demo prints is posted there too.
func TestDemoPostsToSlackWhenAsked(t *testing.T) {
	srv := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Body: "ok"} })
	hook := srv.URL + "/services/T000/B000/SECRETHOOK"
	var stdout, stderr bytes.Buffer
	env := &cli.Env{Stdout: &stdout, Stderr: &stderr, LookupEnv: func(name string) (string, bool) {
		if name == "SLACK_WEBHOOK_URL" {
			return hook, true
		}
		return "", false
	}}
	if code := cli.Main(t.Context(), []string{"demo", "--speed", "0"}, env); code != cli.ExitOK {
		t.Fatalf("demo with SLACK_WEBHOOK_URL: exit %d\n%s", code, stderr.String())
	}
	fired, resolved := transitionCounts(stdout.String())
	if got, want := len(srv.Requests()), sum(fired)+sum(resolved); got != want {
		t.Errorf("Slack got %d posts, want one per printed alert (%d)", got, want)
	}
	for _, r := range srv.Requests() {
		if r.Path != "/services/T000/B000/SECRETHOOK" || !strings.Contains(string(r.Body), "blocks") {
			t.Fatalf("a post to %s without blocks: %s", r.Path, r.Body)
		}
	}
	notifiertest.AssertNoSecrets(t, "demo output", stdout.String()+stderr.String(), "SECRETHOOK")
}
