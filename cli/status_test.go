package cli_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/cli"
)

func TestStatusSim(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gpuwatch.yaml")
	writeFile(t, path, "host: test-host\nsource:\n  type: sim\n  sim: {scenario: all, seed: 1, speed: 60}\n")
	before := time.Now().UTC().Truncate(time.Second)
	got := gpuwatch(t, "status", "--config", path)
	if got.code != cli.ExitOK {
		t.Fatalf("status: got exit %d, want %d\nstderr:\n%s", got.code, cli.ExitOK, got.stderr)
	}
	// A simulation that no daemon runs is sampled now.
	head := regexp.MustCompile(`^test-host · (\S+ \S+) UTC · 6 GPUs\n`).FindStringSubmatch(got.stdout)
	if head == nil {
		t.Fatalf("status: got first line %q, want test-host · TIME UTC · 6 GPUs", firstLine(got.stdout))
	}
	if at, err := time.Parse(time.DateTime, head[1]); err != nil || at.Before(before) || at.After(time.Now()) {
		t.Errorf("status: got time %s, want now (%v)", head[1], before)
	}
	sections := strings.Split(got.stdout, "\n\n")[1:]
	if len(sections) != 6 {
		t.Fatalf("status: got %d GPU sections, want 6:\n%s", len(sections), got.stdout)
	}
	memory := regexp.MustCompile(`(?m)^  memory  \[[█░]{24}\] \d+(\.\d+)? [KMG]?i?B / 79\.6 GiB \(\d+%\)$`)
	readings := regexp.MustCompile(`(?m)^  util \d+%  mem util \d+%  temp \d+ C  power \d+ W / 700 W$`)
	process := regexp.MustCompile(`(?m)^  pid \d+ +[a-z]+ +\d+(\.\d+)? [KMG]iB  \S.*$`)
	for i, s := range sections {
		if want := fmt.Sprintf("GPU %d  NVIDIA H100 80GB HBM3  GPU-", i); !strings.HasPrefix(s, want) {
			t.Errorf("status: section %d starts %q, want %q", i, firstLine(s), want)
		}
		for what, re := range map[string]*regexp.Regexp{"memory bar": memory, "readings": readings, "process": process} {
			if !re.MatchString(s) {
				t.Errorf("status: GPU %d: got\n%s\nwant a %s line matching %s", i, s, what, re)
			}
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func TestStatusBrokenConfig(t *testing.T) {
	got := gpuwatch(t, "status", "--config", "testdata/broken.yaml")
	if got.code != cli.ExitUser {
		t.Errorf("status with a broken config: got exit %d, want %d", got.code, cli.ExitUser)
	}
	if !strings.Contains(got.stderr, "testdata/broken.yaml:4:3: ") {
		t.Errorf("status with a broken config: got stderr\n%s\nwant the problems as FILE:LINE:COL", got.stderr)
	}
}

// TestStatusMIG: a GPU split into MIG instances shows the card's
// readings, and its instances under it, each with its memory and
// processes.
func TestStatusMIG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gpuwatch.yaml")
	writeFile(t, path, "host: test-host\nsource:\n  type: sim\n  sim: {scenario: mig-mixed, seed: 1, speed: 60}\n")
	got := gpuwatch(t, "status", "--config", path)
	if got.code != cli.ExitOK {
		t.Fatalf("status: got exit %d, want %d\nstderr:\n%s", got.code, cli.ExitOK, got.stderr)
	}
	want := regexp.MustCompile(`^test-host · \S+ \S+ UTC · 1 GPU · 2 MIG instances

GPU 0  NVIDIA H100 80GB HBM3  GPU-\S+
  MIG mode: memory and processes are its instances'
  temp \d+ C  power \d+ W / 700 W
  GPU 0 · MIG 1 \(4g\.40gb\)  MIG-\S+
    memory  \[[█░]{20}\] 20(\.\d+)? GiB / 39\.4 GiB \(\d+%\)
    util \d+%  mem util \d+%
    pid \d+ +bob +20(\.\d+)? GiB  jupyter-lab .*
  GPU 0 · MIG 2 \(3g\.40gb\)  MIG-\S+
    memory  \[[█░]{20}\] \d+(\.\d+)? GiB / 39\.4 GiB \(\d+%\)
    util \d+%  mem util \d+%
    pid \d+ .*
`)
	if !want.MatchString(got.stdout) {
		t.Errorf("status: got\n%s\nwant it to match\n%s", got.stdout, want)
	}
}
