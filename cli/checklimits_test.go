package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/cli"
)

// TestCheckLongInterval: check takes a config that samples every few
// minutes (or every quarter hour), as run does: its trial of the rules
// stops where the simulation it samples ends.
func TestCheckLongInterval(t *testing.T) {
	for _, interval := range []string{"2m", "10m", "15m", "1h"} {
		t.Run(interval, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "gpuwatch.yaml")
			config := "source:\n  type: nvml\n  interval: " + interval + "\nrules:\n  - alert: GPUHot\n    when: avg(temperature, 10m) > 85\n"
			if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
				t.Fatal(err)
			}
			got := gpuwatch(t, "check", file)
			if got.code != cli.ExitOK || !strings.Contains(got.stdout, "ok: 1 rule") {
				t.Errorf("check with source.interval %s: exit %d, stdout %q, stderr %q; want exit 0 and ok", interval, got.code, got.stdout, got.stderr)
			}
		})
	}
}

// TestCheckShortRepeatInterval: a repeat_interval under a minute is
// refused by check, at its place in the file, with exit 1.
func TestCheckShortRepeatInterval(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gpuwatch.yaml")
	config := "receivers:\n  - name: console\n    console: {}\nroute:\n  receiver: console\n  repeat_interval: 1ns\n"
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	got := gpuwatch(t, "check", file)
	want := file + ":6:20: route.repeat_interval: 1ns is shorter than 1m0s"
	if got.code != cli.ExitUser || !strings.HasPrefix(got.stderr, want) {
		t.Errorf("check: exit %d, stderr %q; want exit %d and %q…", got.code, got.stderr, cli.ExitUser, want)
	}
}
