package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/internal/fleettest"
	"github.com/gpuwatch/gpuwatch/internal/imagetest"
)

// The docs are executable: TestDocsCommands runs every command that
// README.md and the pages of docs/ show, in a fenced sh block or as inline
// code, against the binary the README's own build command makes, with the
// fixtures the commands need, and checks the output the pages claim next to
// them. A command a page gains without an entry in readmeCommands (or, for
// curl, a claimed answer) fails the test, and so does an entry whose
// command no page shows any more.

// readmeRun is what the commands of the docs share while they run: the
// folder they run in (holding config.example.yaml, examples/, gpu.csv and
// the files the commands make), the binary, and the daemon the silence,
// outbox, digest and curl commands talk to.
type readmeRun struct {
	readme    *readme
	repo, dir string
	bin       string
	daemon    *daemonProcess    // gpuwatch run on config.yaml
	addr      string            // where it listens
	network   *networkAPI       // gpuwatch run with TLS and a token
	silence   string            // the ID silence add printed
	ids       map[string]string // IDs the docs show (a silence's) → those the daemon gave
	cleanups  []func()          // what stops the daemons
}

// lockedLines collects lines that one goroutine writes and another reads.
type lockedLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *lockedLines) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
}

// has reports whether a line holds s.
func (l *lockedLines) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.lines, func(line string) bool { return strings.Contains(line, s) })
}

func (l *lockedLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// output is what one run of a command left.
type output struct {
	code           int
	stdout, stderr string
}

func (o output) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
}

// gpuwatch runs the built binary in the work folder with a minute's limit.
func (r *readmeRun) gpuwatch(t *testing.T, args ...string) output {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.bin, args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "TZ=UTC", "SLACK_WEBHOOK_URL=", "SLACK_BOT_TOKEN=")
	return run(t, cmd)
}

// run runs cmd and returns its exit code and output.
func run(t *testing.T, cmd *exec.Cmd) output {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := output{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		out.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	return out
}

// shell runs a command line with sh in folder dir.
func (r *readmeRun) shell(t *testing.T, dir, line string) output {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir = dir
	return run(t, cmd)
}

// words splits a command line as sh would, for the quoting the README
// uses: '…' and "…", no expansions.
func words(line string) []string {
	var out []string
	var cur strings.Builder
	quote, in := rune(0), false
	for _, c := range line {
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// args are a gpuwatch command's arguments: the words after the program.
func args(cmd string) []string { return words(cmd)[1:] }

func want(t *testing.T, what string, got output, code int, stdout ...string) {
	t.Helper()
	if got.code != code {
		t.Errorf("%s: got %v\nwant exit %d", what, got, code)
		return
	}
	for _, s := range stdout {
		if !strings.Contains(got.stdout, s) {
			t.Errorf("%s: got stdout\n%s\nwant it to contain %q", what, got.stdout, s)
		}
	}
}

// readmeCommand is how the test runs one of the README's commands. Exactly
// one of skip, same and run is set.
type readmeCommand struct {
	// skip says why the command is not run here.
	skip string
	// same names a README command that does what this one names (a
	// synopsis, or a command named in prose); the test checks it is shown.
	same string
	// run runs the command and checks what the README says of it.
	run func(t *testing.T, r *readmeRun, cmd string)
}

// readmeCommands are the README's commands, by their text.
func readmeCommands() map[string]readmeCommand {
	const (
		build   = "go build -o gpuwatch ./cmd/gpuwatch"
		check   = "./gpuwatch check --config config.yaml"
		daemon  = "./gpuwatch run --config config.yaml"
		add     = `gpuwatch silence add alert=GPUHot gpu=3 --duration 4h --reason "fan replaced tomorrow"`
		outbox  = "gpuwatch outbox list"
		digestC = "gpuwatch digest --config config.yaml --window 24h"
		demo    = "go run ./cmd/gpuwatch demo"
	)
	help := func(t *testing.T, r *readmeRun, cmd string) {
		name := strings.Fields(cmd)[1]
		want(t, cmd+" --help", r.gpuwatch(t, name, "--help"), cli.ExitOK, "Usage: gpuwatch "+name)
	}
	return map[string]readmeCommand{
		demo: {run: func(t *testing.T, r *readmeRun, cmd string) {
			// The demo paced at 120x takes a minute; unpaced it prints the
			// same alerts at the same simulated times.
			got := r.gpuwatch(t, "demo", "--speed", "0")
			want(t, cmd, got, cli.ExitOK, "\ndemo finished: ")
			// The demo's alerts are of today: the README's date stands for it.
			today := regexp.MustCompile(`\b\d{4}-\d\d-\d\d\b`)
			out := today.ReplaceAllString(got.stdout, "DATE")
			claim := r.readme.block(t, "as it fires and resolves:")
			for _, part := range strings.Split(today.ReplaceAllString(strings.Join(claim.lines, "\n"), "DATE"), "\n...\n") {
				if !strings.Contains(out, part+"\n") {
					t.Errorf("demo: the README shows\n%s\nwhich the demo does not print; it prints\n%s", part, got.stdout)
				}
			}
			// How long before the GPU is full the README says the leak is
			// warned about: the time to full of the demo's first leak alert.
			lead := regexp.MustCompile(`warned about (\d+) minutes before the GPU is full`).FindStringSubmatch(r.readme.pages[0].text)
			full := regexp.MustCompile(`FIRING +GPUMemoryLeak .*\n.*: full in (\S+)\n`).FindStringSubmatch(got.stdout)
			if lead == nil || full == nil {
				t.Fatalf("demo: the README says the leak is warned about %q before the GPU is full; the demo's leak alert says %q", lead, full)
			}
			if d, err := time.ParseDuration(full[1]); err != nil || fmt.Sprint(int(d.Minutes())) != lead[1] {
				t.Errorf("demo: the README says the leak is warned about %s minutes before the GPU is full; the demo says full in %s", lead[1], full[1])
			}
		}},
		"gpuwatch demo --scenario mig-slice-leak --speed 0": {run: func(t *testing.T, r *readmeRun, cmd string) {
			got := r.gpuwatch(t, args(cmd)...)
			want(t, cmd, got, cli.ExitOK, "\ndemo finished: ")
			claimDemo(t, r, cmd, got.stdout, "say nothing of the other six slices or the card:")
			for _, line := range consoleLine.FindAllString(got.stdout, -1) {
				if !strings.Contains(got.stdout, line+" · MIG 7 (1g.10gb)") {
					t.Errorf("%s: %q is not about the leaking slice, GPU 0 · MIG 7 (1g.10gb)", cmd, line)
				}
			}
		}},
		"gpuwatch demo --scenario timeslice-leak --speed 0": {run: func(t *testing.T, r *readmeRun, cmd string) {
			got := r.gpuwatch(t, args(cmd)...)
			want(t, cmd, got, cli.ExitOK, "\ndemo finished: 1 alert fired, 1 resolved.")
			claimDemo(t, r, cmd, got.stdout, "owner, not the GPU, and resolves when it stops growing or exits:")
		}},
		"go test ./...":                    {skip: "the test suite, which runs this test"},
		"go test -race ./...":              {skip: "the test suite with the race detector, which runs this test"},
		"go test -run '^$' -bench . ./...": {skip: "the benchmarks: minutes of measuring, not a check"},
		".ci/run":                          {skip: "CI, which runs this test"},
		`CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" go run ./cmd/gpuwatch demo`: {run: firstBuildWithoutWarnings},
		`go env -w CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"`:                  {skip: "changes the Go settings of whoever runs the tests"},
		"go install …@v1.2.3": {skip: "installs a release from the module proxy; TestBuildInfo reads the version it stamps"},
		// What installs gpuwatch on a server: the module deploy/ tests it
		// (.ci/run runs them, on a release it builds first).
		"sudo apt install ./gpuwatch_*_amd64.deb":  {skip: "installs on this machine; deploy's TestReleaseDeb unpacks the .deb with dpkg-deb and runs what it installs (version, demo, check of /etc/gpuwatch/config.yaml, the unit)"},
		"sudo dnf install ./gpuwatch-*.x86_64.rpm": {skip: "installs on this machine; deploy's TestReleaseRPM reads the .rpm's files, scripts and dependencies with rpm"},
		"sudo systemctl enable --now gpuwatch":     {skip: "needs systemd as PID 1; deploy's TestSystemdUnitVerifies runs systemd-analyze verify on the unit and the packaged one"},
		"SLACK_BOT_TOKEN=xoxb-… SLACK_SIGNING_SECRET=… deploy/kubernetes/install": {
			skip: "needs a cluster; deploy's TestKubernetesManifests runs it with a kubectl that records its arguments, and renders what it applies with kustomize"},
		"docker build -t gpuwatch .": {skip: "no Docker engine here; deploy's TestDockerfile, TestDockerfileLint and TestDockerBuildContext (gpuwatch built from the files the build context holds) check it"},
		"docker run -d --name gpuwatch --gpus all --pid=host --network=host -v gpuwatch-state:/var/lib/gpuwatch gpuwatch": {
			skip: "no Docker engine nor GPU here; the image's entry point and config are checked by deploy's TestDockerfile"},
		"crane push dist/gpuwatch_1.2.3_linux_amd64.image.tar registry.example.net/gpuwatch:v1.2.3": {
			skip: "needs a registry; deploy's TestReleaseImage loads the release's image tarballs as crane does, without a daemon, and checks their config, entrypoint and files"},
		"cd deploy/kubernetes && kustomize edit set image gpuwatch=registry.example.net/gpuwatch:v1.2.3": {
			skip: "edits the checkout's kustomization; deploy's TestKubernetesManifests renders the images: entry it edits"},
		"scripts/release --version v1.2.3": {skip: "builds the release for both architectures, minutes; .ci/run runs it and the deploy tests check what it makes"},
		build: {run: func(t *testing.T, r *readmeRun, cmd string) {
			if _, err := os.Stat(r.bin); err != nil {
				t.Errorf("%s: %v", cmd, err) // run before every other command, by setup
			}
		}},
		"cp config.example.yaml config.yaml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			want(t, cmd, r.shell(t, r.dir, cmd), 0)
			// "adapt the rules, then": the test keeps its state in its folder.
			r.edit(t, "config.yaml", "# path: /var/lib/gpuwatch/gpuwatch.db", "path: "+filepath.Join(r.dir, "state", "gpuwatch.db"))
			r.edit(t, "config.yaml", "listen: 127.0.0.1:9477", "listen: "+r.addr)
		}},
		check: {run: func(t *testing.T, r *readmeRun, cmd string) {
			got := r.gpuwatch(t, args(cmd)...)
			want(t, cmd, got, cli.ExitOK)
			claim := r.readme.spanAfter(t, "For the example config `check` prints")
			if strings.TrimSpace(got.stdout) != claim {
				t.Errorf("%s: got %q, the README says %q", cmd, got.stdout, claim)
			}
		}},
		"./gpuwatch status": {run: func(t *testing.T, r *readmeRun, cmd string) {
			got := r.gpuwatch(t, args(cmd)...)
			if got.code == cli.ExitOK && strings.Contains(got.stdout, "GPU 0") {
				return // a machine with a GPU
			}
			claim := r.readme.block(t, "Without the NVIDIA driver, `status` and `run` say so").lines[0]
			if got.code != cli.ExitRuntime || strings.TrimSpace(got.stderr) != claim {
				t.Errorf("%s without NVML: got %v\nthe README says exit 3 and %q", cmd, got, claim)
			}
		}},
		daemon: {run: func(t *testing.T, r *readmeRun, cmd string) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			c := exec.CommandContext(ctx, r.bin, args(cmd)...)
			c.Dir = r.dir
			var stderr bytes.Buffer
			c.Stderr = &stderr
			err := c.Run()
			var exit *exec.ExitError
			switch {
			case ctx.Err() != nil && strings.Contains(stderr.String(), "gpuwatch started"):
				return // a machine with a GPU: it ran until stopped
			case !errors.As(err, &exit) || exit.ExitCode() != cli.ExitRuntime || !strings.Contains(stderr.String(), "NVML library not found"):
				t.Errorf("%s without NVML: got %v\n%s\nwant exit 3 saying the NVML library is not found", cmd, err, stderr.String())
			}
			if _, err := os.Stat(filepath.Join(r.dir, "state")); err == nil {
				t.Errorf("%s without NVML made its state folder; want nothing made before it can run", cmd)
			}
		}},
		"./gpuwatch status --config config.yaml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			r.startDaemon(t)
			want(t, cmd, r.gpuwatch(t, args(cmd)...), cli.ExitOK, "(the last sample of gpuwatch run at "+r.addr+")")
		}},
		"nvidia-smi -r -i N":   {skip: "resets a GPU: needs one, and root; docs/health.md shows it as what an operator does"},
		"nvidia-smi nvlink -e": {skip: "reads a GPU's NVLink error counters: needs one; gpu/nvml's tests read the same counters through go-nvml's mock"},
		"nvidia-smi --query-gpu=timestamp,index,name,uuid,temperature.gpu,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw --format=csv -l 5 > gpu.csv": {
			run: func(t *testing.T, r *readmeRun, cmd string) {
				// No GPU here: gpu.csv, written before the commands run,
				// is a log this command made of a leak.
				log, err := os.ReadFile(gpuCSV)
				if err != nil {
					t.Fatal(err)
				}
				header, _, _ := strings.Cut(string(log), "\n")
				var columns []string
				for _, c := range strings.Split(header, ",") {
					name, _, _ := strings.Cut(strings.TrimSpace(c), " [")
					columns = append(columns, name)
				}
				query := strings.TrimPrefix(words(cmd)[1], "--query-gpu=")
				if got := strings.Join(columns, ","); got != query {
					t.Errorf("the fixture's columns %s are not the README's --query-gpu=%s", got, query)
				}
			}},
		"gpuwatch replay --trace gpu.csv": {run: func(t *testing.T, r *readmeRun, cmd string) {
			got := r.gpuwatch(t, args(cmd)...)
			want(t, cmd, got, cli.ExitOK, "FIRING   GPUMemoryLeak [", "RESOLVED GPUMemoryLeak [")
			if !strings.HasPrefix(got.stderr, "replayed 1440 snapshots (1h59m55s of data") {
				t.Errorf("%s: got stderr %q, want the replay's summary alone", cmd, got.stderr)
			}
		}},
		"gpuwatch replay --config config.yaml --trace gpu.csv --json": {run: func(t *testing.T, r *readmeRun, cmd string) {
			got := r.gpuwatch(t, args(cmd)...)
			want(t, cmd, got, cli.ExitOK)
			claim := r.readme.block(t, "`--json` prints").lines[0]
			if !slices.Contains(strings.Split(got.stdout, "\n"), claim) {
				t.Errorf("%s: the README shows the line\n%s\nwhich is not in\n%s", cmd, claim, got.stdout)
			}
		}},
		"gpuwatch replay --trace gpu.csv --plot replay.png": {run: func(t *testing.T, r *readmeRun, cmd string) {
			want(t, cmd, r.gpuwatch(t, args(cmd)...), cli.ExitOK, "FIRING   GPUMemoryLeak [")
			readablePNG(t, cmd, filepath.Join(r.dir, "replay.png"))
		}},
		"gpuwatch digest --trace gpu.csv --format png --out day.png": {run: func(t *testing.T, r *readmeRun, cmd string) {
			want(t, cmd, r.gpuwatch(t, args(cmd)...), cli.ExitOK)
			readablePNG(t, cmd, filepath.Join(r.dir, "day.png"))
		}},
		"gpuwatch check config.yaml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			byFlag := r.gpuwatch(t, "check", "--config", "config.yaml")
			want(t, cmd, r.gpuwatch(t, args(cmd)...), cli.ExitOK, byFlag.stdout)
		}},
		"gpuwatch replay gpu.csv": {run: func(t *testing.T, r *readmeRun, cmd string) {
			byFlag := r.gpuwatch(t, "replay", "--trace", "gpu.csv")
			want(t, cmd, r.gpuwatch(t, args(cmd)...), cli.ExitOK, byFlag.stdout)
		}},
		"gpuwatch demo --scenario slurm-node --speed 0":    {run: demoPrints("prints, among its alerts:")},
		"gpuwatch demo --scenario ecc-row-remap --speed 0": {run: demoPrints("prints, among its alerts, the two that say to reset the GPU:")},
		"gpuwatch demo --scenario xid-storm --speed 0":     {run: demoPrints("prints the application's XIDs and the hardware's apart:")},
		"GPUWATCH_STORE=/tmp/owners.db SLACK_BOT_TOKEN=xoxb-… SLACK_SIGNING_SECRET=… gpuwatch run --config examples/owners.yaml": {
			skip: "needs a Slack workspace; TestOwnersExample runs examples/owners.yaml as it is against a Slack fake"},
		"gpuwatch check":                         {same: check},
		"gpuwatch status":                        {same: "./gpuwatch status"},
		"gpuwatch silence add":                   {same: add},
		"gpuwatch digest --config":               {same: digestC},
		"promtool check rules":                   {same: "promtool check rules gpuwatch.rules.yml"},
		"go test -short ./...":                   {skip: "the test suite without the tests that build gpuwatch, which runs this test's package"},
		"GPUWATCH_FLEET_TESTS=1 go test ./...":   {skip: "the fleet suite, which .ci/run runs"},
		"GPUWATCH_LONG_TESTS=1 go test ./...":    {skip: "the long suite, which .ci/run runs"},
		"GPUWATCH_BROWSER_TESTS=1 go test ./cli": {skip: "the browser suite, which .ci/run runs"},
		"gpuwatch run":                           {same: daemon},
		"gpuwatch test":                          {same: "gpuwatch test leak_test.yaml"},
		"gpuwatch silence":                       {same: add},
		"GPUWATCH_QUALITY_SEEDS=100 go test -v -run TestAlertQualitySweep ./cli": {skip: "a measure of the rules on many seeds: minutes, asked for when the rules change"},
		"gpuwatch test examples/rules_test.yaml examples/leaks_test.yaml examples/health_test.yaml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			want(t, cmd, r.gpuwatch(t, args(cmd)...), cli.ExitOK, "PASS examples/rules_test.yaml: ", "PASS examples/leaks_test.yaml: ",
				"PASS examples/health_test.yaml: ", " passed, 0 failed\n")
		}},
		"gpuwatch test examples/health_test.yaml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			want(t, cmd, r.gpuwatch(t, args(cmd)...), cli.ExitOK, "PASS examples/health_test.yaml: ", "9 passed, 0 failed\n")
		}},
		"gpuwatch test examples/leaks_test.yaml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			want(t, cmd, r.gpuwatch(t, args(cmd)...), cli.ExitOK, "PASS examples/leaks_test.yaml: ", " passed, 0 failed\n")
		}},
		"gpuwatch test leak_test.yaml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			test := r.leakTest(t)
			got := r.gpuwatch(t, args(cmd)...)
			claim := r.readme.spanAfter(t, "`gpuwatch test leak_test.yaml` prints")
			want(t, cmd, got, cli.ExitOK, claim)
			// The failure the README shows, with the leak expected at 30m.
			r.write(t, "leak_test.yaml", strings.Replace(test, "- at: 40m", "- at: 30m", 1))
			got = r.gpuwatch(t, args(cmd)...)
			failure := strings.Join(r.readme.block(t, "Expecting the leak at `30m`").lines, "\n") + "\n"
			if got.code != cli.ExitUser || got.stdout != failure {
				t.Errorf("%s expecting the leak at 30m: got %v\nthe README says exit 1 and\n%s", cmd, got, failure)
			}
			r.write(t, "leak_test.yaml", test)
		}},
		add: {run: func(t *testing.T, r *readmeRun, cmd string) {
			r.startDaemon(t)
			got := r.gpuwatch(t, append(args(cmd), "--server", r.addr)...)
			want(t, cmd, got, cli.ExitOK, `alert="GPUHot" gpu="3" until`)
			if got.stderr != "" {
				t.Errorf("%s: got stderr %q, want no warning: the example config has GPUHot", cmd, got.stderr)
			}
			if f := strings.Fields(got.stdout); len(f) > 1 {
				r.silence = strings.TrimSuffix(f[1], ":")
			}
		}},
		"gpuwatch silence list": {run: func(t *testing.T, r *readmeRun, cmd string) {
			if r.silence == "" { // a page mentions the list before one adds
				readmeCommands()[add].run(t, r, add)
			}
			want(t, cmd, r.gpuwatch(t, append(args(cmd), "--server", r.addr)...), cli.ExitOK, r.silence, "active", "fan replaced tomorrow")
		}},
		"gpuwatch silence expire 3f2a9c1b7e4d0a11": {run: func(t *testing.T, r *readmeRun, cmd string) {
			if r.silence == "" {
				readmeCommands()[add].run(t, r, add)
			}
			// The README's ID is an example: expire the one silence add made.
			got := r.gpuwatch(t, "silence", "expire", r.silence, "--server", r.addr)
			want(t, cmd, got, cli.ExitOK, "silence "+r.silence+" expired")
		}},
		outbox: {run: func(t *testing.T, r *readmeRun, cmd string) {
			want(t, cmd, r.gpuwatch(t, append(args(cmd), "--server", r.addr)...), cli.ExitOK, "RECEIVER", "console", "no dead letters")
		}},
		digestC: {run: func(t *testing.T, r *readmeRun, cmd string) {
			r.startDaemon(t) // while it runs, from its API
			want(t, cmd, r.waitDigest(t, cmd), cli.ExitOK, "GPU usage on", "GPU 0")
		}},
		"gpuwatch replay --trace noheader.csv --columns timestamp,index,memory.used,memory.total,utilization.gpu": {run: func(t *testing.T, r *readmeRun, cmd string) {
			r.sampleLog(t, "smi-noheader.csv", "noheader.csv")
			got := r.gpuwatch(t, args(cmd)...)
			want(t, cmd, got, cli.ExitOK)
			if !strings.Contains(got.stderr, "replayed 30 snapshots (") {
				t.Errorf("%s: got stderr %q, want the 30 samples of the log read", cmd, got.stderr)
			}
		}},
		"gpuwatch replay --trace loop.csv --step 2s": {run: func(t *testing.T, r *readmeRun, cmd string) {
			r.sampleLog(t, "smi-untimed.csv", "loop.csv")
			got := r.gpuwatch(t, args(cmd)...)
			want(t, cmd, got, cli.ExitOK)
			for _, w := range []string{"no times in this log: taking its 15 samples 2s apart (--step), the last at the file's modification time",
				"replayed 15 snapshots (28s of data", "nvidia-smi CSV of loop (named after the log's file", "a sample every 2s"} {
				if !strings.Contains(got.stderr, w) {
					t.Errorf("%s: got stderr %q, want %q", cmd, got.stderr, w)
				}
			}
		}},
		"gpuwatch digest --trace cron.log": {run: func(t *testing.T, r *readmeRun, cmd string) {
			r.sampleLog(t, "cron-30min.log", "cron.log")
			got := r.gpuwatch(t, args(cmd)...)
			want(t, cmd, got, cli.ExitOK, "GPU 2 was held idle for 1d6h")
			if claim := strings.Join(r.readme.block(t, "The digest of the cron log starts:").lines, "\n") + "\n"; !strings.HasPrefix(got.stdout, claim) {
				t.Errorf("%s: got\n%s\nthe docs say it starts with\n%s", cmd, got.stdout, claim)
			}
			if warning := r.readme.block(t, "cron log's warning, on standard error").lines[0]; strings.TrimSpace(got.stderr) != warning {
				t.Errorf("%s: got stderr %q, the docs say %q", cmd, got.stderr, warning)
			}
		}},
		"gpuwatch digest --trace gpu.csv": {run: func(t *testing.T, r *readmeRun, cmd string) {
			want(t, cmd, r.gpuwatch(t, args(cmd)...), cli.ExitOK, "GPU usage on", "GPU 0", "Alerts (")
		}},
		"gpuwatch run --config FILE":   {same: daemon},
		"gpuwatch demo":                {same: demo},
		"gpuwatch check --config FILE": {same: check},
		"gpuwatch test FILE...": {run: func(t *testing.T, r *readmeRun, cmd string) {
			r.leakTest(t)
			want(t, cmd, r.gpuwatch(t, "test", "examples/rules_test.yaml", "leak_test.yaml"), cli.ExitOK, "PASS leak_test.yaml: ", " passed, 0 failed\n")
		}},
		"gpuwatch rules export --schema gpuwatch > gpuwatch.rules.yml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			command, file, _ := strings.Cut(cmd, " > ")
			got := r.gpuwatch(t, args(command)...)
			want(t, cmd, got, cli.ExitOK, "groups:\n  - name: gpuwatch\n", "- alert: GPUHardwareXID\n")
			if !strings.Contains(got.stderr, "GPUMemoryLeak: approximate: when: time_to_full(memory.used, 40m, 6h)") {
				t.Errorf("%s: stderr %q does not say what is approximate", cmd, got.stderr)
			}
			r.write(t, file, got.stdout)
		}},
		"promtool check rules gpuwatch.rules.yml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			r.promtool(t, cmd, "SUCCESS: ")
		}},
		"gpuwatch rules export --schema dcgm --config config.yaml --interval 20s --tests examples/rules_test.yaml --out prom": {run: func(t *testing.T, r *readmeRun, cmd string) {
			got := r.gpuwatch(t, args(cmd)...)
			if got.code != cli.ExitOK || !strings.Contains(got.stderr, "wrote prom/gpuwatch.rules.yml: 15 alerts (3 rules left out); and 1 promtool test file\n") {
				t.Errorf("%s: got %v", cmd, got)
			}
		}},
		"gpuwatch rules export --schema gpuwatch --target vmalert > gpuwatch.vmalert.rules.yml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			command, file, _ := strings.Cut(cmd, " > ")
			got := r.gpuwatch(t, args(command)...)
			want(t, cmd, got, cli.ExitOK, "    params: {nocache: [\"1\"]}\n", "- alert: GPUHardwareXID\n")
			r.write(t, file, got.stdout)
		}},
		"gpuwatch rules export --schema gpuwatch --target vmalert": {same: "gpuwatch rules export --schema gpuwatch --target vmalert > gpuwatch.vmalert.rules.yml"},
		"gpuwatch rules export --schema gpuwatch":                  {same: "gpuwatch rules export --schema gpuwatch > gpuwatch.rules.yml"},
		"vmalert -dryRun -rule=gpuwatch.vmalert.rules.yml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			r.tool(t, cmd, "")
		}},
		"promtool test rules": {same: "promtool test rules prom/rules_test.yaml"},
		"gpuwatch replay":     {same: "gpuwatch replay --trace gpu.csv"},
		"promtool test rules prom/rules_test.yaml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			r.promtool(t, cmd, "SUCCESS")
		}},
		"gpuwatch rules export --schema gpuwatch\\|dcgm [--config FILE] [--tests FILE...] [--out DIR]": {same: "gpuwatch rules export --schema gpuwatch > gpuwatch.rules.yml"},
		"gpuwatch status [--config FILE] [--server ADDR]":                                              {same: "./gpuwatch status --config config.yaml"},
		`gpuwatch silence add\|list\|expire`:                                                           {same: add},
		`gpuwatch digest --config FILE \| --trace LOG`:                                                 {same: digestC},
		`kill -HUP "$(pidof gpuwatch)"`: {run: func(t *testing.T, r *readmeRun, cmd string) {
			// pidof finds every gpuwatch of this machine: the test signals
			// its own daemon.
			r.startDaemon(t)
			if err := r.daemon.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			r.waitLog(t, `msg="config reloaded"`)
		}},
		"mv /var/lib/gpuwatch/gpuwatch.db /var/lib/gpuwatch/gpuwatch.db.damaged": {run: damagedStore},
		"gpuwatch help": {run: func(t *testing.T, r *readmeRun, cmd string) {
			usage := r.gpuwatch(t, args(cmd)...)
			want(t, cmd, usage, cli.ExitOK, "Usage: gpuwatch <command> [flags]")
			// commands.md has a section for every command.
			reference := r.readme.page(t, "docs/commands.md")
			for _, m := range regexp.MustCompile(`(?m)^  ([a-z-]+) `).FindAllStringSubmatch(usage.stdout, -1) {
				if !regexp.MustCompile(`(?m)^## ` + m[1] + `( |$)`).MatchString(reference.text) {
					t.Errorf("docs/commands.md has no section for gpuwatch %s", m[1])
				}
			}
		}},
		"gpuwatch hash-password alice": {run: func(t *testing.T, r *readmeRun, cmd string) {
			c := exec.CommandContext(t.Context(), r.bin, args(cmd)...)
			c.Dir, c.Stdin = r.dir, strings.NewReader("correct horse\n") // a script's way: the password on standard input
			got := run(t, c)
			if got.code != cli.ExitOK || !regexp.MustCompile(`^alice: \$2a\$10\$\S{53}\n$`).MatchString(got.stdout) {
				t.Errorf("%s: got %v, want the line alice: $2a$10$…", cmd, got)
			}
		}},
		"gpuwatch version": {run: func(t *testing.T, r *readmeRun, cmd string) {
			got := r.gpuwatch(t, args(cmd)...)
			if got.code != cli.ExitOK || !regexp.MustCompile(`^gpuwatch \S+`).MatchString(got.stdout) {
				t.Errorf("%s: got %v, want gpuwatch and the version", cmd, got)
			}
		}},
		"gpuwatch <command> --help": {run: func(t *testing.T, r *readmeRun, cmd string) {
			usage := r.gpuwatch(t, "help").stdout
			for _, m := range regexp.MustCompile(`(?m)^  ([a-z-]+) `).FindAllStringSubmatch(usage, -1) {
				help(t, r, "gpuwatch "+m[1])
			}
		}},
		`go build -ldflags "-X github.com/gpuwatch/gpuwatch/cli.Version=v1.2.3 -X github.com/gpuwatch/gpuwatch/cli.Commit=$(git rev-parse HEAD) -X github.com/gpuwatch/gpuwatch/cli.Date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" -o gpuwatch ./cmd/gpuwatch`: {
			run: func(t *testing.T, r *readmeRun, cmd string) {
				if _, err := exec.LookPath("git"); err != nil {
					t.Skip("no git to ask for the commit")
				}
				if r.shell(t, r.repo, "git rev-parse HEAD").code != 0 {
					t.Skip("not a git checkout")
				}
				release := filepath.Join(r.dir, "gpuwatch-release")
				want(t, cmd, r.shell(t, r.repo, strings.Replace(cmd, "-o gpuwatch", "-o "+release, 1)), 0)
				got, err := exec.CommandContext(t.Context(), release, "version").Output()
				if re := regexp.MustCompile(`^gpuwatch v1\.2\.3 \(commit [0-9a-f]{12}, \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)\n$`); err != nil || !re.Match(got) {
					t.Errorf("the release build's version: got %q (%v), want %s", got, err, re)
				}
			}},
	}
}

// promtool runs a promtool command of the README in the work folder, with
// the real promtool (a skip where it is not installed), and checks that
// its output holds claim.
func (r *readmeRun) promtool(t *testing.T, cmd, claim string) { r.tool(t, cmd, claim) }

// tool runs a command of the docs of the fleet suite's programs (promtool,
// vmalert) in the work folder, with the real program (a skip where it is
// not installed), and checks that it succeeds and its output holds claim.
func (r *readmeRun) tool(t *testing.T, cmd, claim string) {
	t.Helper()
	bin := fleettest.Binary(t, words(cmd)[0])
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, bin, args(cmd)...)
	c.Dir = r.dir
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), claim) {
		t.Errorf("%s: %v\n%s", cmd, err, out)
	}
}

// sampleLog copies one of gpu/replay's sample logs into the work folder
// under the name the docs give it.
func (r *readmeRun) sampleLog(t *testing.T, sample, name string) {
	t.Helper()
	log, err := os.ReadFile(filepath.Join("..", "gpu", "replay", "testdata", "logs", sample))
	if err != nil {
		t.Fatal(err)
	}
	r.write(t, name, string(log))
}

// leakTest writes the README's example test file to leak_test.yaml and
// returns its text.
func (r *readmeRun) leakTest(t *testing.T) string {
	t.Helper()
	test := strings.Join(r.readme.block(t, "A test file looks like this:").lines, "\n") + "\n"
	r.write(t, "leak_test.yaml", test)
	return test
}

func (r *readmeRun) write(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// edit replaces old by new in a file of the work folder, failing when the
// file does not hold old: the README's files changed under the test.
func (r *readmeRun) edit(t *testing.T, name, old, new string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s does not hold %q", name, old)
	}
	r.write(t, name, strings.Replace(string(b), old, new, 1))
}

// startDaemon starts, once, `gpuwatch run` on config.yaml with the
// simulated GPUs the README suggests without a GPU, and waits until its API
// answers.
func (r *readmeRun) startDaemon(t *testing.T) {
	t.Helper()
	if r.daemon != nil {
		return
	}
	r.edit(t, "config.yaml", "  type: nvml", "  type: sim")
	r.daemon = r.startRun(t, "config.yaml")
}

// daemonProcess is a gpuwatch run the test started.
type daemonProcess struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	log    lockedLines // its standard error
}

// startRun starts `gpuwatch run` on a config of the work folder, waits
// until its API listens, and stops it when the test ends.
func (r *readmeRun) startRun(t *testing.T, config string) *daemonProcess {
	t.Helper()
	d := &daemonProcess{cmd: exec.Command(r.bin, "run", "--config", config)}
	d.cmd.Dir = r.dir
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	d.cmd.Stdout, d.cmd.Stderr = &d.stdout, pw
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	r.cleanups = append(r.cleanups, d.stop)
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		found := false
		for sc.Scan() {
			d.log.add(sc.Text())
			if strings.Contains(sc.Text(), "HTTP API listening") && !found {
				found = true
				listening <- true
			}
		}
		if !found {
			listening <- false
		}
	}()
	select {
	case ok := <-listening:
		if !ok {
			t.Fatalf("gpuwatch run --config %s ended before its API listened:\n%s", config, &d.log)
		}
	case <-time.After(time.Minute):
		t.Fatalf("gpuwatch run --config %s: its API did not listen within a minute", config)
	}
	return d
}

// stop interrupts the daemon and waits for it to end.
func (d *daemonProcess) stop() {
	if d.cmd.Process == nil {
		return
	}
	d.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		<-done
	}
}

// waitLog waits until the daemon logs a line holding s.
func (r *readmeRun) waitLog(t *testing.T, s string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !r.daemon.log.has(s); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not log %q within a minute; it logged\n%s", s, &r.daemon.log)
		}
	}
}

// waitDigest runs a digest of the running daemon until it has a sample of
// the GPUs (the simulation samples every 5 seconds).
func (r *readmeRun) waitDigest(t *testing.T, cmd string) output {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := r.gpuwatch(t, args(cmd)...)
		if strings.Contains(got.stdout, "GPU 0") || time.Now().After(deadline) {
			return got
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stop stops what the commands left running, the last started first.
func (r *readmeRun) stop() {
	for _, stop := range slices.Backward(r.cleanups) {
		stop()
	}
}

// gpuCSV is the nvidia-smi log the commands find as gpu.csv: a leak.
const gpuCSV = "testdata/traces/memory-leak.csv"

// TestDocsCommands runs every command of the README and of docs/.
func TestDocsCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gpuwatch and runs the commands of the README and docs/ with it")
	}
	rd := readREADME(t)
	table := readmeCommands()
	for _, cmd := range rd.commands {
		if _, ok := table[cmd]; !ok && generic(cmd) == nil {
			t.Errorf("the docs show %q, which this test does not run: add it to readmeCommands", cmd)
		}
	}
	for cmd, c := range table {
		if !slices.Contains(rd.commands, cmd) && !slices.Contains(rd.spans, cmd) {
			t.Errorf("readmeCommands has %q, which the docs no longer show: remove it", cmd)
		}
		if c.same != "" && !slices.Contains(rd.commands, c.same) {
			t.Errorf("%q: it is run as %q, which the docs do not show", cmd, c.same)
		}
	}

	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	r := &readmeRun{readme: rd, repo: repo, dir: t.TempDir(), addr: freeAddr(t), ids: map[string]string{}}
	r.bin = filepath.Join(r.dir, "gpuwatch")
	t.Cleanup(r.stop)
	// The README's build command, its binary put in the work folder.
	build := "go build -o gpuwatch ./cmd/gpuwatch"
	if !slices.Contains(rd.commands, build) {
		t.Fatalf("the README no longer shows %q, which the test builds gpuwatch with", build)
	}
	if got := r.shell(t, repo, strings.Replace(build, "-o gpuwatch", "-o "+r.bin, 1)); got.code != 0 {
		t.Fatalf("%s: %v", build, got)
	}
	for _, name := range []string{"config.example.yaml", "examples/rules_test.yaml", "examples/leaks_test.yaml", "examples/health_test.yaml"} {
		b, err := os.ReadFile(filepath.Join(repo, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(r.dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		r.write(t, name, string(b))
	}
	log, err := os.ReadFile(gpuCSV)
	if err != nil {
		t.Fatal(err)
	}
	r.write(t, "gpu.csv", string(log))
	for _, cmd := range rd.commands {
		run := table[cmd].run
		if _, listed := table[cmd]; !listed {
			run = generic(cmd)
		}
		if run == nil {
			continue
		}
		t.Run(strings.Join(strings.Fields(cmd)[:min(3, len(strings.Fields(cmd)))], " "), func(t *testing.T) {
			run(t, r, cmd)
		})
	}
}

// claimDemo checks that a demo printed the lines the docs show after
// prose, its date standing for today's.
func claimDemo(t *testing.T, r *readmeRun, cmd, stdout, prose string) {
	t.Helper()
	today := regexp.MustCompile(`\b\d{4}-\d\d-\d\d\b`)
	claim := today.ReplaceAllString(strings.Join(r.readme.block(t, prose).lines, "\n"), "DATE")
	if !strings.Contains(today.ReplaceAllString(stdout, "DATE"), claim+"\n") {
		t.Errorf("%s: the docs show\n%s\nwhich the demo does not print; it prints\n%s", cmd, claim, stdout)
	}
}

// generic returns how the test runs a command the table does not list:
// curl asks the running daemon's API and checks the answer its page shows,
// a synopsis (`gpuwatch digest --config FILE`) is checked against the
// command's --help; nil for any other command.
func generic(cmd string) func(*testing.T, *readmeRun, string) {
	switch {
	case strings.HasPrefix(cmd, "curl "):
		return runCurl
	case synopsisRE.MatchString(cmd) && strings.HasPrefix(cmd, "gpuwatch "):
		return checkSynopsis
	}
	return nil
}

// synopsisRE matches a command line that shows a command's form rather
// than a command to run: placeholders (FILE, LOG.csv, ID...), choices (a|b),
// optional parts ([…]), <command>.
var synopsisRE = regexp.MustCompile(`\b[A-Z][A-Z]+\b|\.\.\.|\||\[|<`)

// checkSynopsis checks that a synopsis names a command gpuwatch has, and
// only flags that command takes.
func checkSynopsis(t *testing.T, r *readmeRun, cmd string) {
	f := strings.Fields(cmd)[1:]
	helpArgs := []string{f[0], "--help"}
	if len(f) > 1 && regexp.MustCompile(`^[a-z]+$`).MatchString(f[1]) {
		helpArgs = []string{f[0], f[1], "--help"}
	}
	help := r.gpuwatch(t, helpArgs...)
	want(t, cmd+": gpuwatch "+strings.Join(helpArgs, " "), help, cli.ExitOK, "Usage: gpuwatch "+strings.Join(helpArgs[:len(helpArgs)-1], " "))
	for _, flag := range regexp.MustCompile(`--([a-z][a-z-]*)`).FindAllStringSubmatch(cmd, -1) {
		if !regexp.MustCompile(`(?m)^  -` + flag[1] + `\b`).MatchString(help.stdout) {
			t.Errorf("%s: gpuwatch %s takes no --%s", cmd, strings.Join(helpArgs[:len(helpArgs)-1], " "), flag[1])
		}
	}
}

// readablePNG checks a command of the docs wrote a chart a phone reads.
func readablePNG(t *testing.T, cmd, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	imagetest.Readable(t, cmd, b, chart.Width)
}

// demoPrints runs a demo command and checks that it prints each part
// (parts apart by "...") of the block after marker in the docs.
func demoPrints(marker string) func(t *testing.T, r *readmeRun, cmd string) {
	return func(t *testing.T, r *readmeRun, cmd string) {
		got := r.gpuwatch(t, args(cmd)...)
		want(t, cmd, got, cli.ExitOK, "\ndemo finished: ")
		claim := r.readme.block(t, marker)
		for _, part := range strings.Split(strings.Join(claim.lines, "\n"), "\n...\n") {
			if !strings.Contains(got.stdout, part+"\n") {
				t.Errorf("%s: the docs show\n%s\nwhich the demo does not print; it prints\n%s", cmd, part, got.stdout)
			}
		}
	}
}
