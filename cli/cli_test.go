package cli_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"

	"github.com/gpuwatch/gpuwatch/cli"
)

// result is what one in-process run of gpuwatch left behind.
type result struct {
	code           int
	stdout, stderr string
}

// gpuwatch runs cli.Main with args and no environment variables, the way
// cmd/gpuwatch does, and returns the exit code and the output.
func gpuwatch(t testing.TB, args ...string) result {
	t.Helper()
	var stdout, stderr notifiertest.Buffer
	code := cli.Main(t.Context(), args, &cli.Env{Stdout: &stdout, Stderr: &stderr, LookupEnv: noEnv})
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func noEnv(string) (string, bool) { return "", false }

// waitFor polls w until it contains want, failing the test after a generous
// deadline: it waits on a daemon's progress, never asserts how fast it is.
func waitFor(t *testing.T, w *notifiertest.Buffer, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(w.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %q; got:\n%s", want, w.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		want       int
		wantStdout string // a substring of stdout
		wantStderr string // a substring of stderr
	}{
		{name: "no args", args: nil, want: cli.ExitUsage, wantStderr: "Usage: gpuwatch <command>"},
		{name: "help", args: []string{"help"}, want: cli.ExitOK, wantStdout: "Commands:"},
		{name: "--help", args: []string{"--help"}, want: cli.ExitOK, wantStdout: "Commands:"},
		{name: "-h", args: []string{"-h"}, want: cli.ExitOK, wantStdout: "Commands:"},
		{name: "version", args: []string{"version"}, want: cli.ExitOK, wantStdout: "gpuwatch "},
		{name: "version with an argument", args: []string{"version", "now"}, want: cli.ExitUsage, wantStderr: `unexpected argument "now"`},
		{name: "unknown command", args: []string{"frobnicate"}, want: cli.ExitUsage, wantStderr: `unknown command "frobnicate"`},
		{name: "unknown flag", args: []string{"check", "--nope"}, want: cli.ExitUsage, wantStderr: "see gpuwatch check --help"},
		{name: "unknown flag after the argument", args: []string{"check", "testdata/valid.yaml", "--nope"}, want: cli.ExitUsage, wantStderr: "see gpuwatch check --help"},
		{name: "check without config", args: []string{"check"}, want: cli.ExitUsage, wantStderr: "gpuwatch check --config FILE"},
		{name: "check two files", args: []string{"check", "testdata/valid.yaml", "testdata/broken.yaml"}, want: cli.ExitUsage, wantStderr: "one config file at a time"},
		{name: "check an extra argument", args: []string{"check", "--config", "testdata/valid.yaml", "extra"}, want: cli.ExitUsage, wantStderr: `unexpected argument "extra"`},
		{name: "check an extra argument first", args: []string{"check", "extra", "--config", "testdata/valid.yaml"}, want: cli.ExitUsage, wantStderr: `unexpected argument "extra"`},
		{name: "check the config after --", args: []string{"check", "--", "testdata/valid.yaml"}, want: cli.ExitOK, wantStdout: "valid.yaml: ok"},
		// A file that cannot be read is an I/O failure (exit 3), as the
		// README says, whichever command it is given to.
		{name: "check missing file", args: []string{"check", "--config", "testdata/no-such.yaml"}, want: cli.ExitRuntime, wantStderr: "no-such.yaml: no such file"},
		{name: "status missing config", args: []string{"status", "--config", "testdata/no-such.yaml"}, want: cli.ExitRuntime, wantStderr: "no-such.yaml: no such file"},
		{name: "silence missing config", args: []string{"silence", "list", "--config", "testdata/no-such.yaml"}, want: cli.ExitRuntime, wantStderr: "no-such.yaml: no such file"},
		{name: "silence missing token file", args: []string{"silence", "list", "--server", "127.0.0.1:1", "--token-file", "testdata/no-such-token"}, want: cli.ExitRuntime, wantStderr: "no-such-token: no such file"},
		{name: "test missing file", args: []string{"test", "testdata/no-such_test.yaml"}, want: cli.ExitRuntime, wantStderr: "no-such_test.yaml: no such file"},
		{name: "check broken config", args: []string{"check", "testdata/broken.yaml"}, want: cli.ExitUser, wantStderr: "4 problems"},
		{name: "run without config", args: []string{"run"}, want: cli.ExitUsage, wantStderr: "gpuwatch run --config FILE"},
		{name: "run an extra argument", args: []string{"run", "--config", "testdata/valid.yaml", "now"}, want: cli.ExitUsage, wantStderr: `unexpected argument "now"`},
		{name: "replay without trace", args: []string{"replay"}, want: cli.ExitUsage, wantStderr: "--trace LOG.csv"},
		{name: "replay an extra argument", args: []string{"replay", "--trace", "testdata/traces/thermal.csv", "testdata/traces/idle-hog.csv"}, want: cli.ExitUsage, wantStderr: `unexpected argument "testdata/traces/idle-hog.csv"`},
		{name: "replay the log as the argument", args: []string{"replay", "testdata/traces/thermal.csv", "--json"}, want: cli.ExitOK, wantStdout: `"alert":"GPUHot"`},
		{name: "replay two logs", args: []string{"replay", "testdata/traces/thermal.csv", "testdata/traces/idle-hog.csv"}, want: cli.ExitUsage, wantStderr: "one log to replay at a time"},
		{name: "run two configs", args: []string{"run", "testdata/valid.yaml", "testdata/broken.yaml"}, want: cli.ExitUsage, wantStderr: "one config file at a time"},
		{name: "replay missing trace", args: []string{"replay", "--trace", "testdata/traces/no-such.csv"}, want: cli.ExitRuntime, wantStderr: "no-such.csv: no such file"},
		{name: "replay bad log level", args: []string{"replay", "--trace", "testdata/traces/thermal.csv", "--log-level", "loud"}, want: cli.ExitUsage, wantStderr: "--log-level"},
		{name: "test without files", args: []string{"test"}, want: cli.ExitUsage, wantStderr: "name at least one test file"},
		{name: "test with a flag after the file", args: []string{"test", "testdata/failing_test.yaml", "--nope"}, want: cli.ExitUsage, wantStderr: "see gpuwatch test --help"},
		{name: "a failing rule test", args: []string{"test", "testdata/failing_test.yaml"}, want: cli.ExitUser, wantStderr: "1 of 2 tests failed"},
		{name: "status an extra argument", args: []string{"status", "--config", "testdata/valid.yaml", "gpu0"}, want: cli.ExitUsage, wantStderr: `unexpected argument "gpu0"`},
		{name: "demo negative speed", args: []string{"demo", "--speed", "-1"}, want: cli.ExitUsage, wantStderr: "--speed"},
		{name: "demo unknown scenario", args: []string{"demo", "--scenario", "nope"}, want: cli.ExitUsage, wantStderr: "unknown scenario"},
		{name: "demo an extra argument", args: []string{"demo", "fast"}, want: cli.ExitUsage, wantStderr: `unexpected argument "fast"`},
		{name: "silence without an action", args: []string{"silence"}, want: cli.ExitUsage, wantStderr: "add|list|expire"},
		{name: "silence add without matchers", args: []string{"silence", "add", "--duration", "1h"}, want: cli.ExitUsage, wantStderr: "name what to silence"},
		{name: "silence list an extra argument", args: []string{"silence", "list", "all"}, want: cli.ExitUsage, wantStderr: `unexpected argument "all"`},
		{name: "outbox without list", args: []string{"outbox"}, want: cli.ExitUsage, wantStderr: "gpuwatch outbox list"},
		{name: "outbox list an extra argument", args: []string{"outbox", "list", "now"}, want: cli.ExitUsage, wantStderr: `unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := gpuwatch(t, tt.args...)
			if got.code != tt.want {
				t.Errorf("gpuwatch %v: got exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tt.args, got.code, tt.want, got.stdout, got.stderr)
			}
			if !strings.Contains(got.stdout, tt.wantStdout) {
				t.Errorf("gpuwatch %v: got stdout\n%s\nwant it to contain %q", tt.args, got.stdout, tt.wantStdout)
			}
			if !strings.Contains(got.stderr, tt.wantStderr) {
				t.Errorf("gpuwatch %v: got stderr\n%s\nwant it to contain %q", tt.args, got.stderr, tt.wantStderr)
			}
		})
	}
}

func TestUsageListsEveryCommand(t *testing.T) {
	got := gpuwatch(t, "help").stdout
	for _, name := range []string{"run", "demo", "check", "replay", "test", "status", "version"} {
		if !regexp.MustCompile(`(?m)^  ` + name + ` +\S`).MatchString(got) {
			t.Errorf("usage: got\n%s\nwant a line for command %q", got, name)
		}
	}
}

func TestCommandHelp(t *testing.T) {
	tests := []struct {
		command string
		flags   []string
	}{
		{"run", []string{"-config", "-log-level"}},
		{"demo", []string{"-speed", "-scenario", "-seed", "-forever", "-log-level"}},
		{"check", []string{"-config"}},
		{"replay", []string{"-config", "-trace", "-json", "-skip-bad", "-log-level"}},
		{"test", nil},
		{"status", []string{"-config"}},
	}
	for _, tt := range tests {
		for _, help := range []string{"--help", "-h"} {
			t.Run(tt.command+help, func(t *testing.T) {
				got := gpuwatch(t, tt.command, help)
				if got.code != cli.ExitOK {
					t.Errorf("gpuwatch %s %s: got exit %d, want %d", tt.command, help, got.code, cli.ExitOK)
				}
				out := got.stdout + got.stderr
				if want := "Usage: gpuwatch " + tt.command; !strings.Contains(out, want) {
					t.Errorf("gpuwatch %s %s: got\n%s\nwant it to contain %q", tt.command, help, out, want)
				}
				for _, f := range tt.flags {
					if !strings.Contains(out, f) {
						t.Errorf("gpuwatch %s %s: got\n%s\nwant it to mention flag %s", tt.command, help, out, f)
					}
				}
			})
		}
	}
}

func TestCancelledContextExitsZero(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var stdout, stderr notifiertest.Buffer
	code := cli.Main(ctx, []string{"demo", "--speed", "0"}, &cli.Env{Stdout: &stdout, Stderr: &stderr, LookupEnv: noEnv})
	if code != cli.ExitOK {
		t.Errorf("demo with a cancelled context: got exit %d, want %d\nstderr:\n%s", code, cli.ExitOK, stderr.String())
	}
}
