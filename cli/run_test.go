package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"

	"github.com/gpuwatch/gpuwatch/cli"
)

// simSource is a daemon config's head: a simulated source, as fast as
// possible.
const simSource = `
host: test-host
` + daemonSettings + `
source:
  type: sim
  interval: 5s
  sim: {scenario: batch-spike, seed: 1, speed: 0}
rules:
`

const (
	nearFullRule = `
  - alert: GPUMemoryNearFull
    when: memory.used_percent > 95
    for: 1m
    severity: critical
`
	hotRule = `
  - alert: GPUHot
    when: temperature > 85
    for: 1m
`
	// simConfig is the config the daemon starts with.
	simConfig = simSource + nearFullRule + hotRule
	// changedConfig keeps one rule of simConfig and drops the other.
	changedConfig = simSource + nearFullRule
)

// daemonSettings keep each test's daemon to itself: its own state file
// (writeFile puts it next to the config) and a free port.
const daemonSettings = `storage: {path: @DIR@/state.db}
server: {listen: "127.0.0.1:0"}`

// brokenConfig has a bad unit in a condition.
const brokenConfig = `
source:
  type: sim
rules:
  - alert: GPUMemoryNearFull
    when: memory.used_percent > 95C
`

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	text = strings.ReplaceAll(text, "@DIR@", filepath.Dir(path))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// reload asks the daemon to reload, failing if it does not take the request.
func reload(t *testing.T, ch chan<- struct{}, done <-chan int) {
	t.Helper()
	select {
	case ch <- struct{}{}:
	case code := <-done:
		t.Fatalf("run ended with exit %d before the reload", code)
	case <-time.After(30 * time.Second):
		t.Fatal("run did not take a reload request in 30s")
	}
}

// TestRunReload runs the daemon in-process on a simulated source, reloads it
// with a broken and then a valid config, and stops it.
func TestRunReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gpuwatch.yaml")
	writeFile(t, path, simConfig)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr notifiertest.Buffer
	reloads := make(chan struct{})
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"run", "--config", path}, &cli.Env{
			Stdout: &stdout, Stderr: &stderr, Reload: reloads, LookupEnv: noEnv})
	}()

	waitFor(t, &stderr, "gpuwatch started")
	waitFor(t, &stdout, "FIRING   GPUMemoryNearFull [critical] test-host GPU 0")

	writeFile(t, path, brokenConfig)
	reload(t, reloads, done)
	waitFor(t, &stderr, "reload refused")
	if want := path + ":6:35: "; !strings.Contains(stderr.String(), want) {
		t.Errorf("refused reload: got stderr\n%s\nwant the problem at %s", stderr.String(), want)
	}
	// Still running: the daemon keeps printing and takes the next reload.
	before := len(stdout.String())
	writeFile(t, path, changedConfig)
	reload(t, reloads, done)
	waitFor(t, &stderr, "config reloaded")
	if !strings.Contains(stderr.String(), "rules=1") {
		t.Errorf("reload: got stderr\n%s\nwant the new rule count rules=1", stderr.String())
	}
	waitForGrowth(t, &stdout, before)

	cancel()
	select {
	case code := <-done:
		if code != cli.ExitOK {
			t.Errorf("run after cancel: got exit %d, want %d\nstderr:\n%s", code, cli.ExitOK, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop within 30s of its context ending")
	}
	if !strings.Contains(stderr.String(), "gpuwatch stopped") {
		t.Errorf("run after cancel: got stderr\n%s\nwant a line saying it stopped", stderr.String())
	}
}

// TestRunReloadRefusesHostileConfigs: a reload with the config gone says
// why it was refused, and one whose aliases stand for millions of routes
// is refused at its line and column without being expanded; the daemon
// keeps running on the previous config and takes the next good one.
func TestRunReloadRefusesHostileConfigs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gpuwatch.yaml")
	writeFile(t, path, simConfig)
	run := startRun(t, path)
	waitFor(t, &run.stderr, "gpuwatch started")

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	reload(t, run.reloads, run.done)
	waitFor(t, &run.stderr, "reload refused")
	if want := "no such file or directory"; !strings.Contains(run.stderr.String(), want) {
		t.Errorf("reload of a missing config: got stderr\n%s\nwant the read error (%s)", run.stderr.String(), want)
	}

	bomb, err := os.ReadFile("../config/testdata/bad/alias_bomb.bad.yaml")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(bomb))
	reload(t, run.reloads, run.done)
	waitFor(t, &run.stderr, path+":14:34: the aliases of this file make its 115 nodes stand for 19505554")

	writeFile(t, path, changedConfig)
	reload(t, run.reloads, run.done)
	waitFor(t, &run.stderr, "config reloaded")
	if code := run.stop(t); code != cli.ExitOK {
		t.Errorf("run after cancel: got exit %d, want %d\nstderr:\n%s", code, cli.ExitOK, run.stderr.String())
	}
}

// runningCommand is `gpuwatch run --config PATH` started in-process.
type runningCommand struct {
	stdout, stderr notifiertest.Buffer
	reloads        chan struct{}
	done           chan int
	cancel         context.CancelFunc
}

// startRun starts `gpuwatch run --config path`; the test ends it with stop
// (or it ends with the test).
func startRun(t *testing.T, path string) *runningCommand {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	r := &runningCommand{reloads: make(chan struct{}), done: make(chan int, 1), cancel: cancel}
	go func() {
		r.done <- cli.Main(ctx, []string{"run", "--config", path}, &cli.Env{
			Stdout: &r.stdout, Stderr: &r.stderr, Reload: r.reloads, LookupEnv: noEnv})
	}()
	t.Cleanup(cancel)
	return r
}

// stop cancels the run and returns its exit code.
func (r *runningCommand) stop(t *testing.T) int {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.done:
		return code
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop within 30s of its context ending")
		return -1
	}
}

// waitForGrowth waits until w holds more than n bytes.
func waitForGrowth(t *testing.T, w *notifiertest.Buffer, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(w.String()) <= n {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for more output after %d bytes", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRunReplaySource runs the daemon on a replay source: it ends with the
// log, exit 0, having printed the log's alerts.
func TestRunReplaySource(t *testing.T) {
	trace, err := filepath.Abs("testdata/traces/thermal.csv")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gpuwatch.yaml")
	writeFile(t, path, daemonSettings+"\nsource:\n  type: replay\n  replay: {file: "+trace+", speed: 0}\nrules:\n"+
		"  - alert: GPUHot\n    when: temperature > 85\n    clear_when: temperature < 80\n    for: 1m\n")
	got := gpuwatch(t, "run", "--config", path)
	if got.code != cli.ExitOK {
		t.Fatalf("run on a replay source: got exit %d, want %d\nstderr:\n%s", got.code, cli.ExitOK, got.stderr)
	}
	if fired, _ := transitionCounts(got.stdout); fired["GPUHot"] != 1 || len(fired) != 1 {
		t.Errorf("run on the thermal log: got firings %v, want GPUHot once", fired)
	}
}

func TestRunBrokenConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gpuwatch.yaml")
	writeFile(t, path, brokenConfig)
	got := gpuwatch(t, "run", "--config", path)
	if got.code != cli.ExitUser {
		t.Errorf("run with a broken config: got exit %d, want %d", got.code, cli.ExitUser)
	}
	if want := path + ":6:35: "; !strings.Contains(got.stderr, want) {
		t.Errorf("run with a broken config: got stderr\n%s\nwant the problem at %s", got.stderr, want)
	}
}

// TestRunSimLivesInRealTime runs the daemon on a simulation, paced: its
// snapshots start now and the daemon's clock runs with them, so a silence
// made now mutes the simulated alerts, and status shows the daemon's view.
func TestRunSimLivesInRealTime(t *testing.T) {
	addr := freeAddr(t)
	path := filepath.Join(t.TempDir(), "gpuwatch.yaml")
	writeFile(t, path, "host: live\nstorage: {path: @DIR@/state.db}\nserver: {listen: \""+addr+"\"}\n"+
		"source: {type: sim, interval: 5s, sim: {scenario: thermal, seed: 1, speed: 600}}\nrules:\n"+hotRule)
	started := time.Now()
	d := runInProcess(t, path)
	waitFor(t, &d.stderr, "HTTP API listening")
	if got := gpuwatch(t, "silence", "add", "alert=GPUHot", "--duration", "4h", "--server", addr, "--by", "alice", "--reason", "fan repair"); got.code != cli.ExitOK {
		t.Fatalf("silence add: exit %d\n%s", got.code, got.stderr)
	}
	// The fan fails about 13 simulated minutes in; GPUHot fires soon after.
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := gpuwatch(t, "status", "--config", path)
		if strings.Contains(got.stdout, "FIRING   GPUHot") {
			t.Fatalf("status --config: got\n%s\nwant GPUHot shown silenced, not plain firing", got.stdout)
		}
		if strings.Contains(got.stdout, "SILENCED GPUHot") {
			if !strings.Contains(got.stdout, "(the last sample of gpuwatch run at "+addr+")") {
				t.Errorf("status --config: got\n%s\nwant the running daemon's view", got.stdout)
			}
			if !regexp.MustCompile(`silenced until \S+ \S+ UTC by alice \(silence \w+\): fan repair`).MatchString(got.stdout) {
				t.Errorf("status --config: got\n%s\nwant until when, by whom and why GPUHot is silenced", got.stdout)
			}
			first := firstLine(got.stdout)
			at, err := time.ParseInLocation("2006-01-02 15:04:05 MST", strings.Split(first, " · ")[1], time.UTC)
			if err != nil || at.Before(started.Add(-time.Minute)) {
				t.Errorf("status --config: got %q (%v), want a time after the start, %v", first, err, started)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for GPUHot to fire; status:\n%s", got.stdout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Past the route's group_wait (10s, a few ms here), the firing would
	// be on the console by now, were it not muted.
	time.Sleep(500 * time.Millisecond)
	if strings.Contains(d.stdout.String(), "FIRING   GPUHot") {
		t.Errorf("the silence did not mute GPUHot: the console got\n%s", d.stdout.String())
	}
	d.stop()
}

// inProcess is `gpuwatch run` started in-process by a test.
type inProcess struct {
	stdout, stderr notifiertest.Buffer
	cancel         context.CancelFunc
	done           chan int
}

// runInProcess starts `gpuwatch run --config path`; the test stops it.
func runInProcess(t *testing.T, path string) *inProcess {
	ctx, cancel := context.WithCancel(t.Context())
	d := &inProcess{cancel: cancel, done: make(chan int, 1)}
	go func() {
		d.done <- cli.Main(ctx, []string{"run", "--config", path}, &cli.Env{Stdout: &d.stdout, Stderr: &d.stderr, LookupEnv: noEnv})
	}()
	t.Cleanup(cancel)
	return d
}

// stop ends the daemon and returns its exit code.
func (d *inProcess) stop() int {
	d.cancel()
	return <-d.done
}

// TestRunReplaySourceWithoutHeader runs the daemon on a log written with
// --format=csv,noheader: the config names its columns, as replay's
// --columns does; without them the start says how.
func TestRunReplaySourceWithoutHeader(t *testing.T) {
	log, err := filepath.Abs(filepath.Join(sampleLogDir, "smi-noheader.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rule := "rules:\n  - alert: BigJob\n    when: memory.used > 3GiB\n"
	path := filepath.Join(t.TempDir(), "gpuwatch.yaml")
	writeFile(t, path, daemonSettings+"\nsource:\n  type: replay\n  replay: {file: "+log+
		", columns: \"timestamp,index,memory.used,memory.total,utilization.gpu\"}\n"+rule)
	got := gpuwatch(t, "run", "--config", path)
	if got.code != cli.ExitOK {
		t.Fatalf("run on a headerless log with source.replay.columns: got exit %d, want %d\nstderr:\n%s", got.code, cli.ExitOK, got.stderr)
	}
	if fired, _ := transitionCounts(got.stdout); fired["BigJob"] != 1 || len(fired) != 1 {
		t.Errorf("run on the headerless log: got firings %v, want BigJob once", fired)
	}

	writeFile(t, path, daemonSettings+"\nsource:\n  type: replay\n  replay: {file: "+log+"}\n"+rule)
	got = gpuwatch(t, "run", "--config", path)
	if got.code != cli.ExitUser || !strings.Contains(got.stderr, "--columns") {
		t.Errorf("run on a headerless log without columns: got exit %d, stderr:\n%s\nwant exit %d and how to name the columns", got.code, got.stderr, cli.ExitUser)
	}
}
