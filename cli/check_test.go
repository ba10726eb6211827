package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/cli"
)

func TestCheckValid(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // a substring of the one-line summary
	}{
		{"small config", []string{"check", "--config", "testdata/valid.yaml"}, "testdata/valid.yaml: ok: 2 rules"},
		{"config as argument", []string{"check", "testdata/valid.yaml"}, "testdata/valid.yaml: ok: 2 rules"},
		{"the example config", []string{"check", "--config", "../config.example.yaml"}, "config.example.yaml: ok: 18 rules"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := gpuwatch(t, tt.args...)
			if got.code != cli.ExitOK {
				t.Fatalf("gpuwatch %v: got exit %d, want %d\nstderr:\n%s", tt.args, got.code, cli.ExitOK, got.stderr)
			}
			if lines := strings.Count(got.stdout, "\n"); lines != 1 {
				t.Errorf("gpuwatch %v: got %d lines on stdout, want a one-line summary:\n%s", tt.args, lines, got.stdout)
			}
			if !strings.Contains(got.stdout, tt.want) {
				t.Errorf("gpuwatch %v: got %q, want it to contain %q", tt.args, got.stdout, tt.want)
			}
			if got.stderr != "" {
				t.Errorf("gpuwatch %v: got stderr %q, want none", tt.args, got.stderr)
			}
		})
	}
}

// TestCheckBroken checks that every problem of a broken config is printed,
// each as FILE:LINE:COL pointing at the mistake.
func TestCheckBroken(t *testing.T) {
	const file = "testdata/broken.yaml"
	got := gpuwatch(t, "check", "--config", file)
	if got.code != cli.ExitUser {
		t.Errorf("check %s: got exit %d, want %d", file, got.code, cli.ExitUser)
	}
	if got.stdout != "" {
		t.Errorf("check %s: got stdout %q, want nothing (problems go to stderr)", file, got.stdout)
	}
	want := []struct {
		pos  string
		word string // a word the message must hold
	}{
		{"4:3", "intervall"},
		{"7:26", `"C"`},
		{"10:15", "loud"},
		{"12:11", "tempreature"},
	}
	problem := regexp.MustCompile(`^` + regexp.QuoteMeta(file) + `:(\d+):(\d+): \S`)
	var problems []string
	for line := range strings.Lines(got.stderr) {
		if strings.HasPrefix(line, "gpuwatch: ") {
			continue // the closing summary
		}
		if !problem.MatchString(line) {
			t.Errorf("check %s: got stderr line %q, want FILE:LINE:COL: message", file, line)
		}
		problems = append(problems, line)
	}
	if len(problems) != len(want) {
		t.Fatalf("check %s: got %d problems, want %d:\n%s", file, len(problems), len(want), got.stderr)
	}
	for i, w := range want {
		prefix := file + ":" + w.pos + ": "
		if !strings.HasPrefix(problems[i], prefix) || !strings.Contains(problems[i], w.word) {
			t.Errorf("check %s: problem %d: got %q, want %s… mentioning %s", file, i+1, problems[i], prefix, w.word)
		}
	}
	if !strings.Contains(got.stderr, "4 problems") {
		t.Errorf("check %s: got stderr\n%s\nwant a closing line counting 4 problems", file, got.stderr)
	}
}

func TestCheckBrokenYAML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("source:\n  type: [sim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := gpuwatch(t, "check", "--config", path)
	if got.code != cli.ExitUser {
		t.Errorf("check on invalid YAML: got exit %d, want %d", got.code, cli.ExitUser)
	}
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(path) + `:\d+:\d+: `).MatchString(got.stderr) {
		t.Errorf("check on invalid YAML: got stderr\n%s\nwant FILE:LINE:COL: message", got.stderr)
	}
}

// manyRules is a config with n rules that all fire at the first sample,
// each with a summary to render, sampled every interval.
func manyRules(n int, interval string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "source:\n  type: sim\n  interval: %s\nrules:\n", interval)
	for i := range n {
		fmt.Fprintf(&b, "  - alert: Hot%d\n    when: temperature > %d\n    summary: \"GPU {{ .GPU }} at {{ .Value }} on {{ .Host }}\"\n", i, i%20)
	}
	return b.String()
}

// TestCheckRulesTooSlow: rules that cannot be evaluated within
// source.interval on an eight-GPU server are a problem at source.interval;
// the same rules with a long enough interval are fine.
func TestCheckRulesTooSlow(t *testing.T) {
	dir := t.TempDir()
	slow := filepath.Join(dir, "slow.yaml")
	if err := os.WriteFile(slow, []byte(manyRules(10000, "100ms")), 0o644); err != nil {
		t.Fatal(err)
	}
	got := gpuwatch(t, "check", "--config", slow)
	if got.code != cli.ExitUser {
		t.Errorf("check of 10000 rules every 100ms: got exit %d, want %d\nstderr:\n%s", got.code, cli.ExitUser, got.stderr)
	}
	want := regexp.MustCompile(`^` + regexp.QuoteMeta(slow) + `:3:13: evaluating the 10000 rules on 8 GPUs takes up to \S+ a sample, longer than source.interval 100ms: samples would fall behind`)
	if !want.MatchString(got.stderr) {
		t.Errorf("check of 10000 rules every 100ms: got stderr\n%s\nwant it to match %s", got.stderr, want)
	}

	fine := filepath.Join(dir, "fine.yaml")
	if err := os.WriteFile(fine, []byte(manyRules(50, "5s")), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := gpuwatch(t, "check", "--config", fine); got.code != cli.ExitOK || got.stderr != "" {
		t.Errorf("check of 50 rules every 5s: got exit %d, stderr %q; want 0 and nothing", got.code, got.stderr)
	}
}

// TestCheckRefusesOpenListener: a listener other machines reach, without
// authentication and TLS, is refused at server.listen.
func TestCheckRefusesOpenListener(t *testing.T) {
	const file = "../config/testdata/bad/server_open.bad.yaml"
	got := gpuwatch(t, "check", "--config", file)
	if got.code != cli.ExitUser {
		t.Errorf("check %s: got exit %d, want %d", file, got.code, cli.ExitUser)
	}
	for _, want := range []string{
		file + ":3:11: server.listen 0.0.0.0:9477 takes connections from the network, and the API has no authentication",
		file + ":3:11: server.listen 0.0.0.0:9477 takes connections from the network without TLS",
	} {
		if !strings.Contains(got.stderr, want) {
			t.Errorf("check %s: got stderr\n%s\nwant %s…", file, got.stderr, want)
		}
	}
}

// TestCheckWarnsAboutAFractionOfAPercent: memory.used_percent > 0.95 is a
// valid rule that never means what it says (0.95%); check warns at the
// number, and still passes.
func TestCheckWarnsAboutAFractionOfAPercent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, "rules:\n  - alert: NearFull\n    when: memory.used_percent > 0.95\n    for: 1m\n")
	got := gpuwatch(t, "check", path)
	want := path + ":3:33: when: memory.used_percent > 0.95 compares a percentage with 0.95, which is 0.95%: percentages run from 0 to 100; write 95 for 95%"
	if got.code != cli.ExitOK || !strings.Contains(got.stderr, "warning: "+want) {
		t.Errorf("check: exit %d, stderr\n%s\nwant exit 0 and the warning %q", got.code, got.stderr, want)
	}
}

// TestCheckCommentsOnlyConfig: every setting is optional, so a config of
// comments only is valid.
func TestCheckCommentsOnlyConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, "# gpuwatch with every default: NVML, the console, 127.0.0.1:9477\n")
	if got := gpuwatch(t, "check", path); got.code != cli.ExitOK || !strings.Contains(got.stdout, ": ok: 0 rules, 1 receiver") {
		t.Errorf("check of a config of comments only: exit %d\n%s%s", got.code, got.stdout, got.stderr)
	}
}
