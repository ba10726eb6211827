// Package fleettest runs the real Prometheus, Alertmanager and
// VictoriaMetrics (the server, vmagent and vmalert) for gpuwatch's fleet
// tests: each on a free loopback port, with a temporary data directory,
// stopped when the test ends. The fleet tests are a suite of
// their own (see package suites): they run when GPUWATCH_FLEET_TESTS asks
// for them and -short is off. Where a binary is missing the test is
// skipped, saying how to install it — unless GPUWATCH_FLEET_TESTS is
// "require" (CI sets it), when a missing binary fails the test.
package fleettest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/suites"
)

// RequireEnv names the variable that asks for the fleet suite, and with
// "require" turns a missing binary from a skip into a failure.
const RequireEnv = suites.FleetEnv

// packages are the Debian (and Ubuntu) packages of the programs the fleet
// tests run.
var packages = map[string]string{
	"prometheus":              "prometheus",
	"promtool":                "prometheus",
	"prometheus-alertmanager": "prometheus-alertmanager",
	"victoria-metrics":        "victoria-metrics",
	"vmagent":                 "victoria-metrics",
	"vmalert":                 "victoria-metrics",
}

// Binary returns the path of the named program, skipping the test when the
// fleet suite is not asked for, and skipping (or failing, see RequireEnv)
// it when the program is not installed.
func Binary(t testing.TB, name string) string {
	t.Helper()
	suites.Fleet(t)
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	pkg := packages[name]
	if pkg == "" {
		pkg = name
	}
	msg := fmt.Sprintf("%s is not installed (apt-get install %s to run the fleet tests)", name, pkg)
	if suites.Required(RequireEnv) {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// FreeAddr returns a loopback address nobody listens on right now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Server is a running Prometheus or Alertmanager.
type Server struct {
	URL  string // http://127.0.0.1:PORT
	Addr string // 127.0.0.1:PORT
	Dir  string // its data directory; its log is Dir/log

	stop      func()
	terminate func()
	restart   func() *Server
}

// Stop ends the server now, before the test ends: what a crash or an
// outage looks like to those who talk to it.
func (s *Server) Stop() { s.stop() }

// Terminate ends the server as an operator's stop does (systemctl stop):
// it is asked to exit (SIGTERM), and does once it has put away what it
// holds in memory; it is killed if it has not within stopTimeout.
// VictoriaMetrics, killed, loses the seconds of data it had not yet
// written to disk; terminated, it keeps them.
func (s *Server) Terminate() { s.terminate() }

// stopTimeout is how long a terminated server has to exit before it is
// killed.
const stopTimeout = 30 * time.Second

// Restart starts a stopped server again, on the same address, with the
// same data: what an operator's restart looks like.
func (s *Server) Restart() {
	s.stop()
	*s = *s.restart()
}

// PrometheusOptions change how Prometheus runs.
type PrometheusOptions struct {
	// Flags are more command-line flags, such as
	// --query.lookback-delta=10s.
	Flags []string
	// Data is the TSDB folder (one made by promtool, say); "" for a new
	// one.
	Data string
	// Files are written beside prometheus.yml, by name: rule files its
	// rule_files name.
	Files map[string]string
}

// Prometheus starts Prometheus with the given prometheus.yml and returns
// once it is ready.
func Prometheus(t testing.TB, config string) *Server {
	t.Helper()
	return PrometheusWith(t, config, PrometheusOptions{})
}

// PrometheusWith starts Prometheus with the given prometheus.yml and
// options, and returns once it is ready.
func PrometheusWith(t testing.TB, config string, o PrometheusOptions) *Server {
	t.Helper()
	bin := Binary(t, "prometheus")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, text := range o.Files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if o.Data == "" {
		o.Data = filepath.Join(dir, "data")
	}
	addr := FreeAddr(t)
	args := append([]string{
		"--config.file=" + cfg,
		"--storage.tsdb.path=" + o.Data,
		"--web.listen-address=" + addr,
		"--web.enable-lifecycle",
	}, o.Flags...)
	return start(t, dir, addr, bin, args...)
}

// Alertmanager starts Alertmanager with the given alertmanager.yml, without
// a cluster (peers, when given, are other Alertmanagers' cluster addresses
// to gossip with; see ClusterAddr), and returns once it is ready.
func Alertmanager(t testing.TB, config string, peers ...string) *Server {
	t.Helper()
	bin := Binary(t, "prometheus-alertmanager")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := FreeAddr(t)
	args := []string{
		"--config.file=" + cfg,
		"--storage.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
	}
	if len(peers) == 0 {
		args = append(args, "--cluster.listen-address=")
	} else {
		args = append(args, "--cluster.listen-address="+peers[0])
		for _, p := range peers[1:] {
			args = append(args, "--cluster.peer="+p)
		}
	}
	return start(t, dir, addr, bin, args...)
}

// start runs bin with args, logging to dir/log, and waits for /-/ready.
func start(t testing.TB, dir, addr, bin string, args ...string) *Server {
	t.Helper()
	logPath := filepath.Join(dir, "log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		logFile.Close()
		close(exited)
	}()
	stop := func() {
		cancel()
		<-exited
	}
	terminate := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopTimeout):
			stop()
		}
	}
	t.Cleanup(stop)
	s := &Server{URL: "http://" + addr, Addr: addr, Dir: dir, stop: stop, terminate: terminate,
		restart: func() *Server { return start(t, dir, addr, bin, args...) }}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("%s did not get ready at %s in 30s; its log:\n%s", filepath.Base(bin), addr, tail(string(log), 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Log returns what the server has logged.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "log"))
	return string(b)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// Eventually polls cond every 200ms until it holds or timeout passes, then
// fails the test with what the last try said.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v; last: %s", what, timeout, strings.TrimSpace(last))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Alert is an alert as Alertmanager's GET /api/v2/alerts shows it.
type Alert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
	Status       struct {
		State string `json:"state"` // active, suppressed, unprocessed
	} `json:"status"`
}

// Alerts returns the alerts an Alertmanager holds (resolved ones are not
// shown), or the error that kept it from answering.
func (s *Server) Alerts() ([]Alert, error) {
	resp, err := http.Get(s.URL + "/api/v2/alerts")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
	}
	var out []Alert
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("%v in %s", err, body)
	}
	return out, nil
}
