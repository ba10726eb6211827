package storedamage_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/storedamage"
	"github.com/gpuwatch/gpuwatch/store"
)

// The fault-injection run: scripts/store-damage builds gpuwatch and sets
// GPUWATCH_STORE_DAMAGE to the binary; the run makes a store the way a
// user's does (gpuwatch run over a real log), damages copies of it in
// each of the 37 ways storedamage knows, and starts gpuwatch run on each.
// Each must be refused with the clear error (the file left as it was) or
// opened with what was lost said, within maxTime and maxRSS.
const (
	maxTime = 5 * time.Second
	maxRSS  = 100 << 20
)

// result is what one gpuwatch run on a damaged store did.
type result struct {
	code   int
	stderr string
	took   time.Duration
	rss    int64 // the most resident memory it had, in bytes
}

// runGpuwatch starts gpuwatch run on cfg and waits for it, up to a
// minute (a hang fails, it does not stall the run).
func runGpuwatch(t *testing.T, bin, cfg string) result {
	t.Helper()
	cmd := exec.Command(bin, "run", "--config", cfg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("gpuwatch run did not end within a minute:\n%s", stderr.String())
	}
	r := result{code: cmd.ProcessState.ExitCode(), stderr: stderr.String(), took: time.Since(began)}
	if u, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.rss = u.Maxrss << 10 // kilobytes on Linux
	}
	return r
}

// writeConfig writes a config that replays log into the store at path.
func writeConfig(t *testing.T, dir, log, path string) string {
	t.Helper()
	cfg := filepath.Join(dir, "gpuwatch.yaml")
	text := fmt.Sprintf(`source: {type: replay, replay: {file: %s, speed: 0}}
storage: {path: %s}
server: {listen: "127.0.0.1:0"}
receivers: [{name: console, console: {}}]
route: {receiver: console}
rules:
  - alert: GPUHot
    when: temperature > 80
  - alert: GPUMemoryNearFull
    when: memory.used_percent > 90
`, log, path)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// shortLog is an nvidia-smi log of two samples: the runs on damaged
// stores spend their time on the store, not on the log.
const shortLog = `timestamp, index, name, uuid, temperature.gpu, utilization.gpu [%], utilization.memory [%], memory.used [MiB], memory.total [MiB], power.draw [W]
2026/11/29 09:00:00.000, 0, NVIDIA H100 80GB HBM3, GPU-4617cb13-7515-55a3-2fe0-3364cba684b8, 36, 0 %, 0 %, 500 MiB, 81559 MiB, 60.81 W
2026/11/29 09:00:05.000, 0, NVIDIA H100 80GB HBM3, GPU-4617cb13-7515-55a3-2fe0-3364cba684b8, 36, 0 %, 0 %, 500 MiB, 81559 MiB, 60.81 W
`

func TestStoreDamage(t *testing.T) {
	bin := os.Getenv("GPUWATCH_STORE_DAMAGE")
	if bin == "" {
		t.Skip("the fault-injection run: scripts/store-damage runs it with GPUWATCH_STORE_DAMAGE=path/to/gpuwatch")
	}
	dir := t.TempDir()
	// A store gpuwatch run made, over a day of a server that lost a GPU.
	sound := filepath.Join(dir, "sound.db")
	log, err := filepath.Abs("../../cli/testdata/traces/v2/gpu-lost.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	if r := runGpuwatch(t, bin, writeConfig(t, dir, log, sound)); r.code != 0 {
		t.Fatalf("gpuwatch run making the store: exit %d\n%s", r.code, r.stderr)
	}
	s, err := storedamage.Load(sound)
	if err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.csv")
	if err := os.WriteFile(short, []byte(shortLog), 0o600); err != nil {
		t.Fatal(err)
	}
	kinds := storedamage.Kinds()
	if len(kinds) != 37 {
		t.Errorf("%d kinds of damage, want 37", len(kinds))
	}
	var worstTime, worstRSS result
	var worstTimeKind, worstRSSKind string
	for i, k := range kinds {
		t.Run(k.Group+": "+k.Name, func(t *testing.T) {
			data, err := k.Damage(s)
			if err != nil {
				t.Fatal(err)
			}
			kdir := filepath.Join(dir, fmt.Sprint(i))
			if err := os.Mkdir(kdir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(kdir, "state.db")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			r := runGpuwatch(t, bin, writeConfig(t, kdir, short, path))
			switch k.Want {
			case storedamage.Refused:
				damaged := strings.Contains(r.stderr, path+" is damaged") && strings.Contains(r.stderr, "mv "+path+" "+path+".damaged")
				notStore := strings.Contains(r.stderr, "not a bbolt database") && strings.Contains(r.stderr, "set storage.path to another file")
				if r.code != 3 || !damaged && !notStore {
					t.Errorf("exit %d, want 3 and the damaged store refused, saying what to do:\n%s", r.code, r.stderr)
				}
				if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
					t.Errorf("the refused run changed the damaged file")
				}
			case storedamage.Recovered:
				if r.code != 0 || !strings.Contains(r.stderr, "the store was damaged: gpuwatch started with what it could keep") ||
					!strings.Contains(r.stderr, "lost") {
					t.Errorf("exit %d, want 0 and what the damage cost said:\n%s", r.code, r.stderr)
				}
			}
			if r.took > maxTime {
				t.Errorf("gpuwatch took %v to decide, want at most %v", r.took.Round(time.Millisecond), maxTime)
			}
			if r.rss > maxRSS {
				t.Errorf("gpuwatch took %d MiB of memory, want at most %d", r.rss>>20, maxRSS>>20)
			}
			t.Logf("%-14s %-45s %-30s exit %d  %5d ms  %3d MiB", k.Group, k.Name, k.Want, r.code, r.took.Milliseconds(), r.rss>>20)
			if r.took > worstTime.took {
				worstTime, worstTimeKind = r, k.Group+": "+k.Name
			}
			if r.rss > worstRSS.rss {
				worstRSS, worstRSSKind = r, k.Group+": "+k.Name
			}
		})
	}
	t.Logf("worst time: %d ms (%s); worst memory: %d MiB (%s)", worstTime.took.Milliseconds(), worstTimeKind, worstRSS.rss>>20, worstRSSKind)

	// And one record gpuwatch cannot read, in a sound store: set aside,
	// said, and gpuwatch runs.
	t.Run("record: a silence garbled", func(t *testing.T) {
		kdir := filepath.Join(dir, "record")
		if err := os.Mkdir(kdir, 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(kdir, "state.db")
		if err := os.WriteFile(path, s.Data, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := store.Open(path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Put("silences", "3f2a9c1b7e4d0a11", []byte(`{"id":"3f2a9c1b7e4d0a11","matchers":["alert=\"GPUHot\""],"ends_at":"2026-13`+"\xff")); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		r := runGpuwatch(t, bin, writeConfig(t, kdir, short, path))
		if r.code != 0 || !strings.Contains(r.stderr, "set aside a record gpuwatch cannot read") || !strings.Contains(r.stderr, "key=3f2a9c1b7e4d0a11") {
			t.Errorf("exit %d, want 0 and the silence set aside, said:\n%s", r.code, r.stderr)
		}
		t.Logf("%-14s %-45s %-30s exit %d  %5d ms  %3d MiB", "record", "a silence garbled", "set aside, said", r.code, r.took.Milliseconds(), r.rss>>20)
	})
}
