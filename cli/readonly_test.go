package cli_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// TestReadOnlyCommandsMakeNoState runs every command that only reads
// (check, status, replay, test, digest, silence, outbox, version) and the
// demo against a config whose store does not exist yet, and checks that
// none of them made it, nor its folder: only `gpuwatch run` makes state.
// It does so for a store the config names and for the default one, which
// for a normal user lies under $XDG_STATE_HOME.
func TestReadOnlyCommandsMakeNoState(t *testing.T) {
	dir := t.TempDir()
	xdg := filepath.Join(dir, "xdg-state")
	env := map[string]string{"XDG_STATE_HOME": xdg, "HOME": filepath.Join(dir, "home")}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	trace, err := filepath.Abs("testdata/traces/memory-leak.csv")
	if err != nil {
		t.Fatal(err)
	}
	named := filepath.Join(dir, "state", "gpuwatch.db")
	for _, store := range []struct{ name, path, yaml string }{
		{"storage.path", named, "storage: {path: " + named + "}\n"},
		{"the default storage.path", config.DefaultStorage(lookup), ""},
	} {
		t.Run(store.name, func(t *testing.T) {
			missing := firstMissing(store.path)
			if missing == "" {
				t.Skipf("%s exists already on this machine: nothing to check", store.path)
			}
			cfg := filepath.Join(dir, strings.ReplaceAll(store.name, " ", "-")+".yaml")
			text := "source: {type: sim, interval: 5s, sim: {speed: 0}}\nserver: {listen: " + freeAddr(t) + "}\n" + store.yaml +
				"rules:\n  - alert: GPUHot\n    when: temperature > 85\n"
			if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"check", "--config", cfg},
				{"status", "--config", cfg},
				{"replay", "--config", cfg, "--trace", trace},
				{"replay", "--config", cfg, "--trace", trace, "--json"},
				{"test", "../examples/rules_test.yaml"},
				{"digest", "--trace", trace},
				{"digest", "--config", cfg},
				{"silence", "list", "--config", cfg},
				{"silence", "add", "alert=GPUHot", "--duration", "1h", "--config", cfg},
				{"silence", "expire", "3f2a9c1b7e4d0a11", "--config", cfg},
				{"outbox", "list", "--config", cfg},
				{"version"},
				{"demo", "--speed", "0", "--scenario", "thermal"},
			} {
				var stdout, stderr notifiertest.Buffer
				code := cli.Main(t.Context(), args, &cli.Env{Stdout: &stdout, Stderr: &stderr, LookupEnv: lookup})
				t.Logf("gpuwatch %s: exit %d %.80q", strings.Join(args, " "), code, stderr.String())
				if code == cli.ExitUsage {
					t.Errorf("gpuwatch %s: exit %d (usage)\n%s", strings.Join(args, " "), code, stderr.String())
				}
				if _, err := os.Lstat(missing); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("gpuwatch %s (exit %d) made %s; only gpuwatch run may make state", strings.Join(args, " "), code, missing)
				}
			}
		})
	}
}

// firstMissing returns the outermost folder (or file) of path that does
// not exist, "" when path exists.
func firstMissing(path string) string {
	missing := ""
	for p := path; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			missing = p
		} else {
			return missing
		}
		if filepath.Dir(p) == p {
			return missing
		}
	}
}
