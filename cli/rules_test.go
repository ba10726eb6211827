package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/internal/fleettest"
)

func TestRulesExportCommandLine(t *testing.T) {
	out := t.TempDir()
	for _, c := range []struct {
		name       string
		args       []string
		want       int
		wantStdout string
		wantStderr string
	}{
		{"no action", []string{"rules"}, cli.ExitUsage, "", "gpuwatch rules export"},
		{"unknown action", []string{"rules", "import"}, cli.ExitUsage, "", `unknown action "import"`},
		{"help", []string{"rules", "--help"}, cli.ExitOK, "Usage: gpuwatch rules export", ""},
		{"export help", []string{"rules", "export", "--help"}, cli.ExitOK, "Usage: gpuwatch rules export --schema gpuwatch|dcgm", ""},
		{"no schema", []string{"rules", "export"}, cli.ExitUsage, "", "--schema gpuwatch"},
		{"unknown schema", []string{"rules", "export", "--schema", "nvml"}, cli.ExitUsage, "", `schema "nvml" is not gpuwatch or dcgm`},
		{"unknown target", []string{"rules", "export", "--schema", "gpuwatch", "--target", "thanos"}, cli.ExitUsage, "", `target "thanos" is not prometheus or vmalert`},
		{"for vmalert, flags after", []string{"rules", "export", "--config", "testdata/valid.yaml", "--schema", "gpuwatch", "--target", "vmalert"}, cli.ExitOK, `params: {nocache: ["1"]}`, ""},
		{"interval too long", []string{"rules", "export", "--schema", "dcgm", "--interval", "10m"}, cli.ExitUsage, "", "up to 5m0s"},
		{"tests without a folder", []string{"rules", "export", "--schema", "gpuwatch", "--tests", "../examples/rules_test.yaml"}, cli.ExitUsage, "", "--out DIR"},
		{"an argument", []string{"rules", "export", "--schema", "gpuwatch", "rules.yml"}, cli.ExitUsage, "", `unexpected argument "rules.yml"`},
		{"an unknown flag after the flags", []string{"rules", "export", "--schema", "gpuwatch", "--nope"}, cli.ExitUsage, "", "see gpuwatch rules export --help"},
		{"the example rules", []string{"rules", "export", "--schema", "gpuwatch"}, cli.ExitOK, "- alert: GPUHardwareXID", "GPUMemoryLeak: approximate: when: time_to_full(memory.used, 40m, 6h)"},
		{"a config, flags after", []string{"rules", "export", "--config", "testdata/valid.yaml", "--schema", "dcgm", "--interval", "30s"}, cli.ExitOK, "interval: 30s", ""},
		{"a missing config", []string{"rules", "export", "--schema", "dcgm", "--config", "testdata/no-such.yaml"}, cli.ExitRuntime, "", "no-such.yaml: no such file"},
		{"tests of other rules", []string{"rules", "export", "--schema", "gpuwatch", "--config", "testdata/valid.yaml", "--tests", "../examples/rules_test.yaml", "--out", out},
			cli.ExitUser, "", "tests other rules than the ones exported"},
		{"a broken test file", []string{"rules", "export", "--schema", "gpuwatch", "--tests", "testdata/broken_test.yaml", "--out", out}, cli.ExitUser, "", "broken_test.yaml:6:9: input metric"},
		{"two tests of one name", []string{"rules", "export", "--schema", "gpuwatch", "--tests", "../examples/rules_test.yaml", "--tests", "../examples/rules_test.yaml", "--out", out},
			cli.ExitUsage, "", "would both be rules_test.yaml"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := gpuwatch(t, c.args...)
			if got.code != c.want || !strings.Contains(got.stdout, c.wantStdout) || !strings.Contains(got.stderr, c.wantStderr) {
				t.Errorf("gpuwatch %s: got exit %d\nstdout:\n%.2000s\nstderr:\n%s\nwant exit %d, stdout with %q, stderr with %q",
					strings.Join(c.args, " "), got.code, got.stdout, got.stderr, c.want, c.wantStdout, c.wantStderr)
			}
		})
	}
	if entries, _ := os.ReadDir(out); len(entries) > 0 {
		t.Errorf("failed exports wrote %v into the folder", entries)
	}
}

// TestRulesExportWritesRulesAndTests exports the example rules and their
// tests into a folder, and has promtool check the rule file.
func TestRulesExportWritesRulesAndTests(t *testing.T) {
	out := filepath.Join(t.TempDir(), "prom")
	got := gpuwatch(t, "rules", "export", "--schema", "dcgm", "--tests", "../examples/rules_test.yaml", "--out", out)
	if got.code != cli.ExitOK || got.stdout != "" || !strings.Contains(got.stderr, "wrote "+filepath.Join(out, "gpuwatch.rules.yml")+": 15 alerts (3 rules left out); and 1 promtool test file") {
		t.Fatalf("got %+v", got)
	}
	test, err := os.ReadFile(filepath.Join(out, "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(test), "rule_files: [gpuwatch.rules.yml]") || !strings.Contains(string(test), "DCGM_FI_DEV_FB_USED{") {
		t.Errorf("the promtool test:\n%.3000s", test)
	}
	bin := fleettest.Binary(t, "promtool")
	cmd := exec.Command(bin, "check", "rules", "gpuwatch.rules.yml")
	cmd.Dir = out
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, b)
	}
}

// TestRulesExportSaysEachReasonOnce: the notes name every rule's part
// that is approximate, and say each reason once, however many rules share
// it.
func TestRulesExportSaysEachReasonOnce(t *testing.T) {
	got := gpuwatch(t, "rules", "export", "--schema", "gpuwatch")
	if got.code != cli.ExitOK {
		t.Fatalf("rules export: exit %d\n%s", got.code, got.stderr)
	}
	for _, rule := range []string{"GPUMemoryLeak: approximate: when: time_to_full(memory.used, 40m, 6h)", "GPUOutOfMemorySoon: approximate: when: time_to_full(memory.used, 40m, 6h)"} {
		if !strings.Contains(got.stderr, rule) {
			t.Errorf("the notes do not name %q:\n%s", rule, got.stderr)
		}
	}
	if n := strings.Count(got.stderr, "it is the time until the current reading reaches memory.total"); n != 1 {
		t.Errorf("the notes say why time_to_full is approximate %d times, want once:\n%s", n, got.stderr)
	}
}
