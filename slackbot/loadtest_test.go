package slackbot

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestWrkScript runs scripts/loadtest/slash.lua under wrk for two seconds
// against the handler and checks that wrk's requests are signed right:
// every answer is a 200. It needs wrk and GPUWATCH_WRK=1; it asserts no
// latency (the README says how to read those).
func TestWrkScript(t *testing.T) {
	if os.Getenv("GPUWATCH_WRK") == "" {
		t.Skip("set GPUWATCH_WRK=1 to run the wrk script (needs wrk on PATH)")
	}
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		t.Skip("wrk is not installed")
	}
	ta := newTestApp(t, 16, func(c *Config) { c.Now = time.Now })
	srv := httptest.NewServer(ta.Handler())
	defer srv.Close()
	cmd := exec.Command(wrk, "-t1", "-c2", "-d2s", "--latency", "-s", "../scripts/loadtest/slash.lua", srv.URL, "--", "200", "2")
	cmd.Env = append(os.Environ(), "SLACK_SIGNING_SECRET="+testSecret)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("wrk: %v\n%s", err, out)
	}
	t.Logf("wrk:\n%s", out)
	m := regexp.MustCompile(`slash.lua: (\d+) requests, (\d+) not 200`).FindSubmatch(out)
	if m == nil || string(m[1]) == "0" || string(m[2]) != "0" || strings.Contains(string(out), "Non-2xx") {
		t.Errorf("wrk: got %q, want requests and none refused", m)
	}
}
