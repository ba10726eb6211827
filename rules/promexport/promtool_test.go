package promexport_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/fleettest"
)

// promtool runs the real promtool with args in dir and returns what it
// printed and whether it succeeded.
func promtool(t *testing.T, dir string, args ...string) (string, bool) {
	t.Helper()
	bin := fleettest.Binary(t, "promtool")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("promtool %s: %v", strings.Join(args, " "), ctx.Err())
	}
	return string(out), err == nil
}

// writeFile writes a file of the test's folder.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// failedCheck is one check promtool test rules reports failed.
type failedCheck struct {
	alert, at, detail string
}

var (
	failedExprRE = regexp.MustCompile(`expr: "ALERTS\{(?:alertname=\\"([^\\]+)\\", )?alertstate=\\"firing\\"\}", time: (\S+),`)
	ruleErrorRE  = regexp.MustCompile(`(?m)^\s*rule: .*err: .*$`)
)

// failedChecks reads the failed checks out of promtool's report of
// ALERTS tests; a rule that could not be evaluated fails the test.
func failedChecks(t *testing.T, out string) []failedCheck {
	t.Helper()
	if m := ruleErrorRE.FindString(out); m != "" {
		t.Fatalf("promtool could not evaluate the exported rules: %s", strings.TrimSpace(m))
	}
	var fails []failedCheck
	blocks := failedExprRE.FindAllStringSubmatchIndex(out, -1)
	for i, b := range blocks {
		end := len(out)
		if i+1 < len(blocks) {
			end = blocks[i+1][0]
		}
		f := failedCheck{at: out[b[4]:b[5]], detail: strings.TrimSpace(out[b[0]:end])}
		if b[2] >= 0 {
			f.alert = out[b[2]:b[3]]
		}
		fails = append(fails, f)
	}
	return fails
}
