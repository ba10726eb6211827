package cli_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/internal/suites"
)

// Commands of the docs that need more than running them: the first build
// (whose warnings the docs count) and the damaged store (which the test
// makes first).

// firstBuildWithoutWarnings checks what the docs say of the first build:
// go-nvml's C code, compiled afresh, prints as many gcc warnings as the
// README and docs/development.md say, and none with the flag the command
// gives gcc; then it runs the command's demo, unpaced. A -D flag no build
// has used makes Go compile the C code again instead of taking it from its
// cache.
func firstBuildWithoutWarnings(t *testing.T, r *readmeRun, cmd string) {
	suites.Long(t)
	claimRE := regexp.MustCompile(`with (\d+) gcc\s+.-Wdeprecated-declarations.\s+warnings`)
	var claim int
	for _, name := range []string{"README.md", "docs/development.md"} {
		m := claimRE.FindStringSubmatch(r.readme.page(t, name).text)
		if m == nil {
			t.Fatalf("%s no longer says how many warnings the first build prints", name)
		}
		n, _ := strconv.Atoi(m[1])
		if claim != 0 && n != claim {
			t.Errorf("the README and docs/development.md disagree on the first build's warnings: %d and %d", claim, n)
		}
		claim = n
	}
	nonce := fmt.Sprintf(" -DGPUWATCH_FIRST_BUILD=%d", time.Now().UnixNano())
	first := r.shell(t, r.repo, `CGO_CFLAGS="-O2 -g`+nonce+`" go build -o /dev/null ./cmd/gpuwatch`)
	if first.code != 0 {
		t.Fatalf("the first build: %v", first)
	}
	warnings := strings.Count(first.stderr, "warning:")
	deprecated := strings.Count(first.stderr, "[-Wdeprecated-declarations]")
	if warnings != claim || deprecated != claim {
		t.Errorf("the first build printed %d warnings, %d of them -Wdeprecated-declarations; the docs say %d:\n%s", warnings, deprecated, claim, first.stderr)
	}
	flagged := strings.Replace(cmd, `-Wno-deprecated-declarations"`, `-Wno-deprecated-declarations`+nonce+`"`, 1) + " --speed 0"
	got := r.shell(t, r.repo, flagged)
	if got.code != 0 || !strings.Contains(got.stdout, "\ndemo finished: ") {
		t.Errorf("%s: %v", flagged, got)
	}
	if strings.Contains(got.stderr, "warning:") {
		t.Errorf("%s: the build still warns:\n%s", flagged, got.stderr)
	}
}

// damagedStore runs the command that moves a damaged store aside, on a
// store the test damages: `gpuwatch run` refuses the damaged store, saying
// to move it aside, exits with the code of a runtime failure, and starts
// with a new store once the command has moved it.
func damagedStore(t *testing.T, r *readmeRun, cmd string) {
	r.startDaemon(t) // its store is the one the test damages a copy of
	good, err := os.ReadFile(filepath.Join(r.dir, "state", "gpuwatch.db"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(r.dir, "damaged")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "gpuwatch.db")
	if err := os.WriteFile(store, good[:min(len(good), 2*4096)], 0o600); err != nil { // cut short
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(r.dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(cfg), filepath.Join(r.dir, "state", "gpuwatch.db"), store, 1)
	text = strings.Replace(text, "listen: "+r.addr, "listen: "+freeAddr(t), 1)
	r.write(t, "damaged.yaml", text)

	got := r.gpuwatch(t, "run", "--config", "damaged.yaml")
	if got.code != cli.ExitRuntime || !strings.Contains(got.stderr, store+" is damaged (") || !strings.Contains(got.stderr, "mv "+store+" "+store+".damaged") {
		t.Fatalf("gpuwatch run on a damaged store: got %v\nwant exit 3, saying %s is damaged and to move it aside", got, store)
	}
	moved := r.shell(t, r.dir, strings.ReplaceAll(cmd, "/var/lib/gpuwatch/gpuwatch.db", store))
	want(t, cmd, moved, 0)
	if _, err := os.Stat(store + ".damaged"); err != nil {
		t.Errorf("%s: %v", cmd, err)
	}
	runsUntilListening(t, r, "run", "--config", "damaged.yaml")
}

// runsUntilListening starts gpuwatch with args, waits until its HTTP API
// listens, and stops it.
func runsUntilListening(t *testing.T, r *readmeRun, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, r.bin, args...)
	c.Dir = r.dir
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var log []string
	listened := false
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		log = append(log, sc.Text())
		if strings.Contains(sc.Text(), "HTTP API listening") && !listened {
			listened = true
			c.Process.Signal(os.Interrupt)
		}
	}
	c.Wait()
	if !listened {
		t.Errorf("gpuwatch %s ended before its API listened:\n%s", strings.Join(args, " "), strings.Join(log, "\n"))
	}
}
