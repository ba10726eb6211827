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
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/internal/fleettest"
)

// The README is executable: TestREADMECommands runs every command it
// shows, in a fenced sh block or as inline code, against the binary its own
// build command makes, with the fixtures the commands need, and checks the
// output the README claims next to them. A command the README gains
// without an entry in readmeCommands fails the test, and so does an entry
// whose command the README no longer shows.

// readme is what the test reads of README.md.
type readme struct {
	text     string
	commands []string // every command, in the order the README shows them
	blocks   []fenced // every fenced block
	spans    []string // every inline code span, outside fenced blocks
	lines    []string // the README's lines
}

// fenced is a fenced block: its language and its lines.
type fenced struct {
	lang  string
	lines []string
	line  int // the line number of the opening fence, 1-based
}

var (
	commandRE = regexp.MustCompile(`^(\./)?gpuwatch |^go |^CGO_CFLAGS=|^nvidia-smi |^\.ci/run$|^cp |^promtool `)
	mentionRE = regexp.MustCompile(`^gpuwatch [a-z]+$`)
)

func readREADME(t *testing.T) *readme {
	t.Helper()
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	r := &readme{text: string(raw), lines: strings.Split(string(raw), "\n")}
	var prose strings.Builder
	var cur *fenced
	for i, line := range r.lines {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if cur == nil {
				cur = &fenced{lang: strings.TrimPrefix(trimmed, "```"), line: i + 1}
			} else {
				r.blocks = append(r.blocks, *cur)
				cur = nil
			}
			prose.WriteString("\n")
			continue
		}
		if cur != nil {
			cur.lines = append(cur.lines, line)
			prose.WriteString("\n")
			continue
		}
		prose.WriteString(line + "\n")
	}
	for _, b := range r.blocks {
		if b.lang != "sh" {
			continue
		}
		for _, line := range b.lines {
			if cmd := shellCommand(line); cmd != "" {
				r.commands = append(r.commands, cmd)
			}
		}
	}
	for _, span := range codeSpans(prose.String()) {
		r.spans = append(r.spans, span)
		if commandRE.MatchString(span) && !slices.Contains(r.commands, span) {
			r.commands = append(r.commands, span)
		}
	}
	return r
}

// codeSpans are the inline code spans of markdown text, as CommonMark
// reads them (a span opened by n backticks ends at the next n), with runs
// of white space as one space.
func codeSpans(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		if text[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(text) && text[i+n] == '`' {
			n++
		}
		fence := strings.Repeat("`", n)
		rest := text[i+n:]
		end := -1
		for j := 0; j+n <= len(rest); j++ {
			if rest[j:j+n] == fence && (j+n == len(rest) || rest[j+n] != '`') && (j == 0 || rest[j-1] != '`') {
				end = j
				break
			}
		}
		if end < 0 {
			i += n
			continue
		}
		out = append(out, strings.Join(strings.Fields(rest[:end]), " "))
		i += n + end + n
	}
	return out
}

// shellCommand is a line of an sh block without its comment; "" for a
// comment or an empty line.
func shellCommand(line string) string {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return ""
	}
	if i := strings.Index(line, "  #"); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// block returns the first fenced block after the README line holding
// marker.
func (r *readme) block(t *testing.T, marker string) fenced {
	t.Helper()
	at := slices.IndexFunc(r.lines, func(l string) bool { return strings.Contains(l, marker) })
	if at < 0 {
		t.Fatalf("README: no line with %q", marker)
	}
	for _, b := range r.blocks {
		if b.line > at {
			return b
		}
	}
	t.Fatalf("README: no fenced block after %q", marker)
	return fenced{}
}

// readmeRun is what the README's commands share while they run: the
// folder they run in (holding config.example.yaml, examples/ and the files
// the commands make), the binary, and the daemon the silence, outbox and
// digest commands talk to.
type readmeRun struct {
	readme    *readme
	repo, dir string
	bin       string
	daemon    *exec.Cmd
	daemonLog *bytes.Buffer
	addr      string
	silence   string // the ID silence add printed
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
			claim := r.readme.block(t, "as it fires and resolves:")
			for _, part := range strings.Split(strings.Join(claim.lines, "\n"), "\n...\n") {
				if !strings.Contains(got.stdout, part+"\n") {
					t.Errorf("demo: the README shows\n%s\nwhich the demo does not print; it prints\n%s", part, got.stdout)
				}
			}
		}},
		"go test ./...":                    {skip: "the test suite, which runs this test"},
		"go test -race ./...":              {skip: "the test suite with the race detector, which runs this test"},
		"go test -run '^$' -bench . ./...": {skip: "the benchmarks: minutes of measuring, not a check"},
		".ci/run":                          {skip: "CI, which runs this test"},
		`CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" go run ./cmd/gpuwatch demo`: {
			skip: "compiles go-nvml's C code again with other flags, two minutes; the demo it runs is the one above"},
		`go env -w CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"`: {skip: "changes the Go settings of whoever runs the tests"},
		"go install …@v1.2.3": {skip: "installs a release from the module proxy; TestBuildInfo reads the version it stamps"},
		// What installs gpuwatch on a server: the module deploy/ tests it
		// (.ci/run runs them, on a release it builds first).
		"sudo apt install ./gpuwatch_*_amd64.deb": {skip: "installs on this machine; deploy's TestReleaseDeb unpacks the .deb with dpkg-deb and runs what it installs (version, demo, check of /etc/gpuwatch/config.yaml, the unit), TestReleaseRPM reads the .rpm"},
		"sudo systemctl enable --now gpuwatch":    {skip: "needs systemd as PID 1; deploy's TestSystemdUnitVerifies runs systemd-analyze verify on the unit and the packaged one"},
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
		"nvidia-smi --query-gpu=timestamp,index,name,uuid,temperature.gpu,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw --format=csv -l 5 > gpu.csv": {
			run: func(t *testing.T, r *readmeRun, cmd string) {
				// No GPU here: gpu.csv is a log this command made of a leak.
				log, err := os.ReadFile("testdata/traces/memory-leak.csv")
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
				r.write(t, "gpu.csv", string(log))
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
		"gpuwatch check config.yaml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			byFlag := r.gpuwatch(t, "check", "--config", "config.yaml")
			want(t, cmd, r.gpuwatch(t, args(cmd)...), cli.ExitOK, byFlag.stdout)
		}},
		"gpuwatch replay gpu.csv": {run: func(t *testing.T, r *readmeRun, cmd string) {
			byFlag := r.gpuwatch(t, "replay", "--trace", "gpu.csv")
			want(t, cmd, r.gpuwatch(t, args(cmd)...), cli.ExitOK, byFlag.stdout)
		}},
		"gpuwatch check":   {same: check},
		"gpuwatch run":     {same: daemon},
		"gpuwatch test":    {same: "gpuwatch test leak_test.yaml"},
		"gpuwatch silence": {same: add},
		"gpuwatch test examples/rules_test.yaml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			want(t, cmd, r.gpuwatch(t, args(cmd)...), cli.ExitOK, "PASS examples/rules_test.yaml: ", " passed, 0 failed\n")
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
			want(t, cmd, r.gpuwatch(t, append(args(cmd), "--server", r.addr)...), cli.ExitOK, r.silence, "active", "fan replaced tomorrow")
		}},
		"gpuwatch silence expire 3f2a9c1b7e4d0a11": {run: func(t *testing.T, r *readmeRun, cmd string) {
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
		"gpuwatch digest --trace gpu.csv": {run: func(t *testing.T, r *readmeRun, cmd string) {
			want(t, cmd, r.gpuwatch(t, args(cmd)...), cli.ExitOK, "GPU usage on", "GPU 0", "Alerts (")
		}},
		"gpuwatch run --config FILE":   {same: daemon},
		"gpuwatch demo":                {same: demo},
		"gpuwatch check --config FILE": {same: check},
		"gpuwatch replay --trace LOG.csv [--config FILE] [--json] [--skip-bad]": {run: func(t *testing.T, r *readmeRun, cmd string) {
			want(t, cmd, r.gpuwatch(t, "replay", "--trace", "gpu.csv", "--config", "config.yaml", "--json", "--skip-bad"), cli.ExitOK, `"alert":"GPUMemoryLeak"`)
		}},
		"gpuwatch test FILE...": {run: func(t *testing.T, r *readmeRun, cmd string) {
			r.leakTest(t)
			want(t, cmd, r.gpuwatch(t, "test", "examples/rules_test.yaml", "leak_test.yaml"), cli.ExitOK, "PASS leak_test.yaml: ", " passed, 0 failed\n")
		}},
		"gpuwatch rules export --schema gpuwatch > gpuwatch.rules.yml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			command, file, _ := strings.Cut(cmd, " > ")
			got := r.gpuwatch(t, args(command)...)
			want(t, cmd, got, cli.ExitOK, "groups:\n  - name: gpuwatch\n", "- alert: GPUXidError\n")
			if !strings.Contains(got.stderr, "GPUMemoryLeak: approximate: when: trend(memory.used, 40m)") {
				t.Errorf("%s: stderr %q does not say what is approximate", cmd, got.stderr)
			}
			r.write(t, file, got.stdout)
		}},
		"promtool check rules gpuwatch.rules.yml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			r.promtool(t, cmd, "SUCCESS: ")
		}},
		"gpuwatch rules export --schema dcgm --config config.yaml --interval 20s --tests examples/rules_test.yaml --out prom": {run: func(t *testing.T, r *readmeRun, cmd string) {
			got := r.gpuwatch(t, args(cmd)...)
			if got.code != cli.ExitOK || !strings.Contains(got.stderr, "wrote prom/gpuwatch.rules.yml: 7 alerts; and 1 promtool test file\n") {
				t.Errorf("%s: got %v", cmd, got)
			}
		}},
		"promtool test rules": {same: "promtool test rules prom/rules_test.yaml"},
		"gpuwatch replay":     {same: "gpuwatch replay --trace gpu.csv"},
		"promtool test rules prom/rules_test.yaml": {run: func(t *testing.T, r *readmeRun, cmd string) {
			r.promtool(t, cmd, "SUCCESS")
		}},
		"gpuwatch rules export --schema gpuwatch\\|dcgm [--config FILE] [--tests FILE...] [--out DIR]": {same: "gpuwatch rules export --schema gpuwatch > gpuwatch.rules.yml"},
		"gpuwatch status [--config FILE]":                  {same: "./gpuwatch status --config config.yaml"},
		`gpuwatch silence add\|list\|expire`:               {same: add},
		`gpuwatch digest --config FILE \| --trace LOG.csv`: {same: digestC},
		"gpuwatch version": {run: func(t *testing.T, r *readmeRun, cmd string) {
			got := r.gpuwatch(t, args(cmd)...)
			if got.code != cli.ExitOK || !regexp.MustCompile(`^gpuwatch \S+`).MatchString(got.stdout) {
				t.Errorf("%s: got %v, want gpuwatch and the version", cmd, got)
			}
		}},
		"gpuwatch <command> --help": {run: func(t *testing.T, r *readmeRun, cmd string) {
			usage := r.gpuwatch(t, "help").stdout
			for _, m := range regexp.MustCompile(`(?m)^  ([a-z]+) `).FindAllStringSubmatch(usage, -1) {
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
func (r *readmeRun) promtool(t *testing.T, cmd, claim string) {
	t.Helper()
	bin := fleettest.Binary(t, "promtool")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, bin, args(cmd)...)
	c.Dir = r.dir
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), claim) {
		t.Errorf("%s: %v\n%s", cmd, err, out)
	}
}

// spanAfter is the first inline code span on or after the README line
// holding marker, past the marker, joined across lines.
func (r *readme) spanAfter(t *testing.T, marker string) string {
	t.Helper()
	i := strings.Index(r.text, marker)
	if i < 0 {
		t.Fatalf("README: no %q", marker)
	}
	spans := codeSpans(r.text[i+len(marker):])
	if len(spans) == 0 {
		t.Fatalf("README: no code after %q", marker)
	}
	return spans[0]
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
	r.daemon = exec.Command(r.bin, "run", "--config", "config.yaml")
	r.daemon.Dir = r.dir
	r.daemonLog = &bytes.Buffer{}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.daemon.Stdout, r.daemon.Stderr = r.daemonLog, pw
	if err := r.daemon.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		found := false
		for sc.Scan() {
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
			t.Fatalf("gpuwatch run on simulated GPUs ended before its API listened")
		}
	case <-time.After(time.Minute):
		t.Fatalf("gpuwatch run on simulated GPUs: its API did not listen within a minute")
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

func (r *readmeRun) stopDaemon() {
	if r.daemon == nil || r.daemon.Process == nil {
		return
	}
	r.daemon.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { r.daemon.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		r.daemon.Process.Kill()
		<-done
	}
}

// TestREADMECommands runs every command of the README.
func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gpuwatch and runs the README's commands with it")
	}
	rd := readREADME(t)
	table := readmeCommands()
	for _, cmd := range rd.commands {
		if _, ok := table[cmd]; !ok {
			t.Errorf("the README shows %q, which this test does not run: add it to readmeCommands", cmd)
		}
	}
	for cmd, c := range table {
		if !slices.Contains(rd.commands, cmd) && !slices.Contains(rd.spans, cmd) {
			t.Errorf("readmeCommands has %q, which the README no longer shows: remove it", cmd)
		}
		if c.same != "" && !slices.Contains(rd.commands, c.same) {
			t.Errorf("%q: it is run as %q, which the README does not show", cmd, c.same)
		}
	}

	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	r := &readmeRun{readme: rd, repo: repo, dir: t.TempDir(), addr: freeAddr(t)}
	r.bin = filepath.Join(r.dir, "gpuwatch")
	t.Cleanup(r.stopDaemon)
	// The README's build command, its binary put in the work folder.
	build := "go build -o gpuwatch ./cmd/gpuwatch"
	if !slices.Contains(rd.commands, build) {
		t.Fatalf("the README no longer shows %q, which the test builds gpuwatch with", build)
	}
	if got := r.shell(t, repo, strings.Replace(build, "-o gpuwatch", "-o "+r.bin, 1)); got.code != 0 {
		t.Fatalf("%s: %v", build, got)
	}
	for _, name := range []string{"config.example.yaml", "examples/rules_test.yaml"} {
		b, err := os.ReadFile(filepath.Join(repo, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(r.dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		r.write(t, name, string(b))
	}
	for _, cmd := range rd.commands {
		c := table[cmd]
		if c.run == nil {
			continue
		}
		t.Run(strings.Join(strings.Fields(cmd)[:min(3, len(strings.Fields(cmd)))], " "), func(t *testing.T) {
			c.run(t, r, cmd)
		})
	}
}

// TestREADMEConfigs parses every YAML example of the README that is a
// config or a part of one, as the config loader does: a key in the wrong
// place (a webhook_url under the top-level slack:) fails here, not for the
// user who copies it. Parts refer to receivers they do not define; those
// references are all that may be missing.
func TestREADMEConfigs(t *testing.T) {
	rd := readREADME(t)
	env := func(name string) (string, bool) {
		switch name {
		case "SLACK_WEBHOOK_URL":
			return "https://hooks.slack.com/services/T0/B0/x", true
		case "SLACK_BOT_TOKEN":
			return "xoxb-1", true
		case "SLACK_APP_TOKEN":
			return "xapp-1", true
		}
		return "x", true
	}
	// What a part of a config may lack: the rest of the config, the files
	// it names on a server (certificates, token files), a hash elided "…".
	partial := regexp.MustCompile(`is not a receiver|is not defined under receivers|sends to receiver|needs a bot token|matches no file|open /etc/gpuwatch/[^:]+: no such file|basic_auth_users\.alice is not a bcrypt hash`)
	n := 0
	for _, b := range rd.blocks {
		text := dedent(b.lines)
		if b.lang == "yaml" && strings.HasPrefix(text, "# prometheus.yml") {
			checkPrometheusConfig(t, b.line, text)
			continue
		}
		if b.lang != "yaml" || strings.Contains(text, "\ntests:") {
			continue // a rule test file, not a config
		}
		if strings.HasPrefix(text, "- ") { // rules, as a rule file lists them
			text = "rules:\n  " + strings.ReplaceAll(strings.TrimSuffix(text, "\n"), "\n", "\n  ") + "\n"
		}
		n++
		dir := t.TempDir()
		path := filepath.Join(dir, fmt.Sprintf("README-line-%d.yaml", b.line))
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(path, env)
		for _, e := range splitErrors(err) {
			if !partial.MatchString(e) {
				t.Errorf("the README's YAML at line %d: %s", b.line, e)
			}
		}
	}
	if n < 5 {
		t.Errorf("got %d config examples in the README, want the several it has", n)
	}
	// Inline examples that start with a key of the config file, such as
	// `slack: {bot_token: …}`, are parts of a config too.
	topLevel := regexp.MustCompile(`^(host|source|storage|server|metrics|slack|receivers|route|rule_files|rules|digests): \S`)
	for _, span := range rd.spans {
		if !topLevel.MatchString(span) {
			continue
		}
		path := filepath.Join(t.TempDir(), "README-inline.yaml")
		if err := os.WriteFile(path, []byte(span+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(path, env)
		for _, e := range splitErrors(err) {
			if !partial.MatchString(e) {
				t.Errorf("the README's inline YAML %q: %s", span, e)
			}
		}
	}
}

// checkPrometheusConfig checks a prometheus.yml the README shows with
// promtool, as Prometheus would load it; the files it names need not
// exist here.
func checkPrometheusConfig(t *testing.T, line int, text string) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil && os.Getenv(fleettest.RequireEnv) != "require" {
		t.Logf("the README's prometheus.yml at line %d is not checked: promtool is not installed", line)
		return
	}
	path := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), promtool, "check", "config", "--syntax-only", path).CombinedOutput()
	if err != nil {
		t.Errorf("the README's prometheus.yml at line %d: promtool check config: %v\n%s", line, err, out)
	}
}

func dedent(lines []string) string {
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " ")); indent < 0 || n < indent {
			indent = n
		}
	}
	var b strings.Builder
	for _, l := range lines {
		if len(l) >= indent && indent > 0 {
			l = l[indent:]
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

func splitErrors(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// TestREADMEConfigTable checks that the README's config table has a row
// for every setting the config file takes.
func TestREADMEConfigTable(t *testing.T) {
	rd := readREADME(t)
	for _, key := range []string{"host", "source.type", "source.interval", "source.sim.scenario", "source.sim.seed", "source.sim.speed",
		"source.replay.file", "source.replay.speed", "source.prometheus.url", "source.prometheus.selector", "storage.path", "storage.retention", "server.listen", "metrics.per_process",
		"slack.bot_token", "slack.signing_secret", "slack.app_token", "slack.api_url", "slack.allowed_channels", "slack.admins",
		"receivers", "route", "rule_files", "rules", "digests"} {
		if !strings.Contains(rd.text, "| `"+key+"` |") {
			t.Errorf("the README's config table has no row for %s", key)
		}
	}
	// Every field of the config's sections is one of those keys.
	for section, v := range map[string]any{"source": config.Source{}, "source.sim": config.SimSource{}, "source.replay": config.ReplaySource{},
		"source.prometheus": config.PrometheusSource{}, "storage": config.Storage{}, "server": config.Server{}, "metrics": config.Metrics{}, "slack": config.Slack{}} {
		for _, name := range yamlFields(v) {
			key := section + "." + name
			if name == "sim" || name == "replay" || name == "prometheus" {
				continue
			}
			if !strings.Contains(rd.text, "| `"+key+"` |") {
				t.Errorf("the README's config table has no row for %s", key)
			}
		}
	}
}

// yamlFields are the YAML names of a config struct's fields.
func yamlFields(v any) []string {
	var out []string
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("yaml"), ",")
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}
