package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/gpu"
)

// transition is one line of `gpuwatch replay --json`.
type transition struct {
	At       time.Time
	Alert    string
	GPU      int
	UUID     string
	State    string
	Severity string
	Repeat   bool
	Value    *float64
}

// replayJSON replays a trace with the built-in example rules and returns
// the transitions, checking that every line has exactly the documented keys
// and valid values.
func replayJSON(t testing.TB, trace string) []transition {
	t.Helper()
	got := gpuwatch(t, "replay", "--json", "--trace", trace)
	if got.code != cli.ExitOK {
		t.Fatalf("replay --json --trace %s: got exit %d, want %d\nstderr:\n%s", trace, got.code, cli.ExitOK, got.stderr)
	}
	return parseTransitions(t, got.stdout)
}

func parseTransitions(t testing.TB, out string) []transition {
	t.Helper()
	wantKeys := []string{"alert", "at", "gpu", "repeat", "severity", "state", "uuid", "value"}
	var ts []transition
	for line := range strings.Lines(out) {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &raw); err != nil {
			t.Fatalf("replay --json: line %q is not a JSON object: %v", line, err)
		}
		if keys := slices.Sorted(maps.Keys(raw)); !slices.Equal(keys, wantKeys) {
			t.Fatalf("replay --json: line %q: got keys %v, want exactly %v", line, keys, wantKeys)
		}
		var v struct {
			At       string   `json:"at"`
			Alert    string   `json:"alert"`
			GPU      int      `json:"gpu"`
			UUID     string   `json:"uuid"`
			State    string   `json:"state"`
			Severity string   `json:"severity"`
			Repeat   bool     `json:"repeat"`
			Value    *float64 `json:"value"`
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(line)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("replay --json: line %q: %v", line, err)
		}
		at, err := time.Parse(time.RFC3339, v.At)
		if err != nil {
			t.Errorf("replay --json: line %q: at %q is not RFC 3339: %v", line, v.At, err)
		}
		if v.State != "firing" && v.State != "resolved" {
			t.Errorf("replay --json: line %q: got state %q, want firing or resolved", line, v.State)
		}
		if v.Alert == "" || !strings.HasPrefix(v.UUID, "GPU-") {
			t.Errorf("replay --json: line %q: want an alert name and a GPU UUID", line)
		}
		if !slices.Contains([]string{"info", "warning", "critical"}, v.Severity) {
			t.Errorf("replay --json: line %q: got severity %q, want info, warning or critical", line, v.Severity)
		}
		ts = append(ts, transition{At: at, Alert: v.Alert, GPU: v.GPU, UUID: v.UUID, State: v.State,
			Severity: v.Severity, Repeat: v.Repeat, Value: v.Value})
	}
	return ts
}

func TestReplayJSON(t *testing.T) {
	ts := replayJSON(t, "testdata/traces/memory-leak.csv")
	if len(ts) == 0 {
		t.Fatal("replay --json of the memory leak: got no transitions, want some")
	}
	for i := 1; i < len(ts); i++ {
		if ts[i].At.Before(ts[i-1].At) {
			t.Errorf("replay --json: transition %d at %v comes before transition %d at %v; want time order", i, ts[i].At, i-1, ts[i-1].At)
		}
	}
	states := map[string]bool{}
	for _, tr := range ts {
		states[tr.State] = true
		// A resolve says the value now, null when it is unknown (the job
		// that leaked is gone, and with it the growth).
		if tr.Value == nil && tr.State == "firing" {
			t.Errorf("replay --json: %s %s on gpu %d: got value null, want the condition's value", tr.Alert, tr.State, tr.GPU)
		}
	}
	if !states["firing"] || !states["resolved"] {
		t.Errorf("replay --json of the memory leak: got states %v, want firing and resolved (the job dies of OOM)", states)
	}
}

func TestReplayText(t *testing.T) {
	got := gpuwatch(t, "replay", "--trace", "testdata/traces/memory-leak.csv")
	if got.code != cli.ExitOK {
		t.Fatalf("replay: got exit %d, want %d\nstderr:\n%s", got.code, cli.ExitOK, got.stderr)
	}
	line := regexp.MustCompile(`(?m)^2026-11-29 \d\d:\d\d:\d\d UTC  (FIRING  |RESOLVED) GPU\w+ \[\w+\] \S+ GPU 0 \(NVIDIA A100-SXM4-40GB\)$`)
	var firing, resolved int
	for _, m := range line.FindAllString(got.stdout, -1) {
		if strings.Contains(m, "FIRING") {
			firing++
		} else {
			resolved++
		}
	}
	if firing == 0 || resolved == 0 {
		t.Errorf("replay: got %d FIRING and %d RESOLVED lines, want both; stdout:\n%s", firing, resolved, got.stdout)
	}
	if want := "replayed 1440 snapshots"; !strings.Contains(got.stderr, want) {
		t.Errorf("replay: got stderr %q, want it to contain %q", got.stderr, want)
	}
}

func TestReplayBadRow(t *testing.T) {
	const trace = "testdata/bad-row.csv"
	tests := []struct {
		name       string
		args       []string
		want       int
		wantStderr *regexp.Regexp
	}{
		{
			name:       "stops at the bad row",
			args:       []string{"replay", "--trace", trace},
			want:       cli.ExitUser,
			wantStderr: regexp.MustCompile(regexp.QuoteMeta(trace) + `:42:\d+: memory.used: "lots MiB" is not a number`),
		},
		{
			name:       "skip-bad counts it",
			args:       []string{"replay", "--skip-bad", "--trace", trace},
			want:       cli.ExitOK,
			wantStderr: regexp.MustCompile(`(?s)^warning: ` + regexp.QuoteMeta(trace) + `:42:\d+: memory.used: "lots MiB" is not a number.*; row skipped\nreplayed 58 snapshots .*; 1 malformed row skipped\n$`),
		},
		{
			name:       "skip-bad with json",
			args:       []string{"replay", "--skip-bad", "--json", "--trace", trace},
			want:       cli.ExitOK,
			wantStderr: regexp.MustCompile(`; 1 malformed row skipped\n$`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := gpuwatch(t, tt.args...)
			if got.code != tt.want {
				t.Errorf("gpuwatch %v: got exit %d, want %d\nstderr:\n%s", tt.args, got.code, tt.want, got.stderr)
			}
			if !tt.wantStderr.MatchString(got.stderr) {
				t.Errorf("gpuwatch %v: got stderr\n%s\nwant it to match %s", tt.args, got.stderr, tt.wantStderr)
			}
		})
	}
}

func TestReplayWithConfig(t *testing.T) {
	// valid.yaml has only GPUMemoryNearFull and GPUHot: the leak trace
	// gives near-full and nothing of the built-in leak rules.
	got := gpuwatch(t, "replay", "--json", "--config", "testdata/valid.yaml", "--trace", "testdata/traces/memory-leak.csv")
	if got.code != cli.ExitOK {
		t.Fatalf("replay --config: got exit %d, want %d\nstderr:\n%s", got.code, cli.ExitOK, got.stderr)
	}
	ts := parseTransitions(t, got.stdout)
	if len(ts) == 0 {
		t.Fatal("replay --config testdata/valid.yaml: got no transitions, want GPUMemoryNearFull")
	}
	for _, tr := range ts {
		if tr.Alert != "GPUMemoryNearFull" {
			t.Errorf("replay --config testdata/valid.yaml: got alert %s, want only GPUMemoryNearFull", tr.Alert)
		}
	}
}

// TestReplayWarnings checks what replay warns about on stderr: not the
// example's XID rule that no log can feed (on every run of the example,
// built in or copied into the user's config), but a user's rule that
// cannot fire on the log.
func TestReplayWarnings(t *testing.T) {
	const trace = "testdata/traces/thermal.csv"
	for _, args := range [][]string{
		{"replay", "--trace", trace},
		{"replay", "--config", "../config.example.yaml", "--trace", trace},
	} {
		got := gpuwatch(t, args...)
		if got.code != cli.ExitOK || strings.Contains(got.stderr, "warning") {
			t.Errorf("%s: got exit %d, stderr\n%s\nwant exit 0 and no warning", strings.Join(args, " "), got.code, got.stderr)
		}
	}
	path := filepath.Join(t.TempDir(), "xid.yaml")
	writeFile(t, path, "rules:\n  - alert: GPUXid\n    when: xid in (79)\n")
	got := gpuwatch(t, "replay", "--config", path, "--trace", trace)
	if want := "warning: rule GPUXid uses xid, which nvidia-smi logs do not record; it cannot fire in a replay\n"; got.code != cli.ExitOK || !strings.HasPrefix(got.stderr, want) {
		t.Errorf("replay with an XID rule of the user's: got exit %d, stderr\n%s\nwant exit 0 and %q", got.code, got.stderr, want)
	}
}

// TestReplayLogWithout checks logs that lack something: a header without
// rows is an error, not a replay "from year 1"; a log without the name
// column prints no empty "()" after the GPU.
func TestReplayLogWithout(t *testing.T) {
	dir := t.TempDir()
	headerOnly := filepath.Join(dir, "header-only.csv")
	writeFile(t, headerOnly, "timestamp, index, name, uuid, temperature.gpu\n")
	for _, cmd := range []string{"replay", "digest"} {
		got := gpuwatch(t, cmd, "--trace", headerOnly)
		if want := "header-only.csv has no samples: it holds no rows below its header"; got.code != cli.ExitUser || !strings.Contains(got.stderr, want) || strings.Contains(got.stderr, "0001") {
			t.Errorf("%s of a header-only log: got exit %d, stderr %q; want exit %d and %q", cmd, got.code, got.stderr, cli.ExitUser, want)
		}
	}
	noName := filepath.Join(dir, "no-name.csv")
	var b strings.Builder
	b.WriteString("timestamp, index, uuid, temperature.gpu\n")
	for i := range 30 {
		fmt.Fprintf(&b, "2026/11/29 09:%02d:00.000, 0, GPU-0000, 95\n", i)
	}
	writeFile(t, noName, b.String())
	got := gpuwatch(t, "replay", "--trace", noName)
	if got.code != cli.ExitOK || !strings.Contains(got.stdout, "FIRING   GPUHot [critical] ") {
		t.Fatalf("replay of a hot GPU: got exit %d, stdout\n%s\nstderr\n%s\nwant GPUHot firing", got.code, got.stdout, got.stderr)
	}
	if line := firstLine(got.stdout); !strings.HasSuffix(line, " GPU 0") {
		t.Errorf("replay of a log without names: got %q, want it to end with the GPU, without \"()\"", line)
	}
}

func TestReplayBrokenConfig(t *testing.T) {
	got := gpuwatch(t, "replay", "--config", "testdata/broken.yaml", "--trace", "testdata/traces/thermal.csv")
	if got.code != cli.ExitUser {
		t.Errorf("replay with a broken config: got exit %d, want %d", got.code, cli.ExitUser)
	}
	// Its rules' problems, as FILE:LINE:COL; not its source's, which a
	// replay does not use.
	if !strings.Contains(got.stderr, "testdata/broken.yaml:7:26: ") || strings.Contains(got.stderr, "testdata/broken.yaml:4:3: ") {
		t.Errorf("replay with a broken config: got stderr\n%s\nwant the rules' problems as FILE:LINE:COL, and only theirs", got.stderr)
	}
}

// TestReplayKnowsObservedMetrics: held_for and missing_for are kept by
// gpuwatch from the samples, so a replay never warns that a log lacks them.
func TestReplayKnowsObservedMetrics(t *testing.T) {
	got := gpuwatch(t, "replay", "--trace", "testdata/traces/memory-leak.csv")
	for _, m := range []string{"held_for", "missing_for"} {
		if strings.Contains(got.stderr, m) {
			t.Errorf("replay warns about %s, which gpuwatch keeps itself:\n%s", m, got.stderr)
		}
	}
}

// TestReplayMIGTable replays nvidia-smi's table of a GPU in MIG mode: the
// alert is the instance's, as text ("GPU 0 · MIG 1") and in --json (its
// mig object, its uuid named after its GPU).
func TestReplayMIGTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gpuwatch.yaml")
	writeFile(t, path, "rules:\n  - alert: SliceFull\n    when: memory.used_percent > 25\n    gpus: [\"0/*\"]\n    summary: \"{{.Label}} at {{.Value | percent}}\"\n")
	trace := "../gpu/replay/testdata/mig/table-535-mig.log"
	got := gpuwatch(t, "replay", "--config", path, "--trace", trace)
	if got.code != cli.ExitOK || !strings.Contains(got.stdout, "FIRING   SliceFull [warning] table-535-mig GPU 0 · MIG 1 (NVIDIA A100-SXM4-80GB)\n    GPU 0 · MIG 1 at 2") {
		t.Fatalf("replay: exit %d\n%s%s\nwant SliceFull on GPU 0 · MIG 1", got.code, got.stdout, got.stderr)
	}
	got = gpuwatch(t, "replay", "--config", path, "--trace", trace, "--json")
	var line struct {
		Alert, UUID string
		GPU         int
		MIG         *gpu.MIG
	}
	if err := json.Unmarshal([]byte(firstLine(got.stdout)), &line); err != nil || line.MIG == nil || line.MIG.GPUInstance != 1 || line.UUID != "MIG-gpu0/1/0" {
		t.Errorf("replay --json: got %q (%v), want the instance's mig and uuid", firstLine(got.stdout), err)
	}
}

// TestReplayHostNamedAfterFile: a log that names no host is of the host
// its file is named after, and the summary says so and how to name it;
// --host names it.
func TestReplayHostNamedAfterFile(t *testing.T) {
	got := gpuwatch(t, "replay", "--trace", "testdata/traces/memory-leak.csv")
	if !strings.Contains(got.stderr, "nvidia-smi CSV of memory-leak (named after the log's file; --host NAME or the config's host: names it)") {
		t.Errorf("replay of a log without its host: stderr %q does not say where the host came from", got.stderr)
	}
	got = gpuwatch(t, "replay", "--host", "node1", "--trace", "testdata/traces/memory-leak.csv")
	if !strings.Contains(got.stderr, "nvidia-smi CSV of node1, a sample every") || !strings.Contains(got.stdout, " node1 GPU 0") {
		t.Errorf("replay --host node1: stderr %q, stdout starts %q; want node1 named as such", got.stderr, got.stdout[:min(200, len(got.stdout))])
	}
}
