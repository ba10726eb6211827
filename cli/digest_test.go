package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/digest"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
)

const idleHog = "testdata/traces/idle-hog.csv"

func TestDigestTraceIdleHog(t *testing.T) {
	var truth struct {
		GPU   int     `json:"gpu"`
		FromS float64 `json:"from_s"`
		StepS float64 `json:"step_s"`
	}
	raw, err := os.ReadFile(strings.TrimSuffix(idleHog, ".csv") + ".truth.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &truth); err != nil {
		t.Fatalf("truth: %v", err)
	}
	got := gpuwatch(t, "digest", "--trace", idleHog, "--format", "json", "--price-per-kwh", "0.30", "--currency", "EUR")
	if got.code != cli.ExitOK {
		t.Fatalf("digest --trace: got exit %d, want %d\nstderr:\n%s", got.code, cli.ExitOK, got.stderr)
	}
	var r digest.Report
	if err := json.Unmarshal([]byte(got.stdout), &r); err != nil {
		t.Fatalf("digest --format json: %v\n%s", err, got.stdout)
	}
	if len(r.GPUs) != 2 {
		t.Fatalf("got %d GPUs, want 2", len(r.GPUs))
	}
	// The log is two hours; GPU 1 is held idle from from_s to its end.
	wantIdle := (r.To.Sub(r.From).Seconds() - truth.FromS) / 3600
	tolerance := 5.0 / 60 // the rule of "idle" and the log's noise blur the start by minutes
	g := r.GPUs[truth.GPU]
	if math.Abs(g.IdleHeldHours-wantIdle) > tolerance {
		t.Errorf("GPU %d: got %.2f hours held idle, want %.2f ± %.2f", truth.GPU, g.IdleHeldHours, wantIdle, tolerance)
	}
	if other := r.GPUs[1-truth.GPU]; other.IdleHeldHours > tolerance {
		t.Errorf("GPU %d: got %.2f hours held idle, want about 0 (it trains)", other.GPU, other.IdleHeldHours)
	}
	if r.EnergyKWh <= 0 || !r.Priced || math.Abs(r.Cost-0.30*r.EnergyKWh) > 1e-9 {
		t.Errorf("got %v kWh costing %v (priced %v), want energy > 0 at 0.30 per kWh", r.EnergyKWh, r.Cost, r.Priced)
	}
	if r.AlertsFired == 0 {
		t.Errorf("got no alerts in the digest, want the held-idle alert the example rules fire")
	}

	text := gpuwatch(t, "digest", "--trace", idleHog)
	if text.code != cli.ExitOK {
		t.Fatalf("digest (text): got exit %d, want 0\nstderr:\n%s", text.code, text.stderr)
	}
	for _, want := range []string{"GPU usage on", "held idle 1.7h", "Top users", "GPU 1 was held idle for 1h40m", "Alerts (1 fired, 1 still firing)",
		"GPUIdleButHeld fired 1 time, the longest for ", " (1 still firing)"} {
		if !strings.Contains(text.stdout, want) {
			t.Errorf("digest (text): want %q in\n%s", want, text.stdout)
		}
	}
}

func TestDigestFormats(t *testing.T) {
	tests := []struct {
		format string
		want   string // a prefix of stdout
	}{
		{"markdown", "## GPU usage on"},
		{"blocks", `[{"type":"header"`},
		{"text", "GPU usage on"},
	}
	for _, tt := range tests {
		got := gpuwatch(t, "digest", "--trace", idleHog, "--window", "1h", "--format", tt.format)
		if got.code != cli.ExitOK || !strings.HasPrefix(got.stdout, tt.want) {
			t.Errorf("--format %s: got exit %d and\n%s\nwant exit 0 and output starting %q", tt.format, got.code, got.stdout, tt.want)
		}
	}
}

func TestDigestBadFlags(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.csv")
	header, _, _ := strings.Cut(mustRead(t, idleHog), "\n")
	if err := os.WriteFile(empty, []byte(header+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		want       int
		wantStderr string
	}{
		{"no trace", nil, cli.ExitUsage, "--trace LOG.csv"},
		{"missing file", []string{"--trace", "testdata/nope.csv"}, cli.ExitRuntime, "nope.csv: no such file"},
		{"negative window", []string{"--trace", idleHog, "--window", "-1h"}, cli.ExitUsage, "negative"},
		{"window under an hour", []string{"--trace", idleHog, "--window", "30m"}, cli.ExitUsage, "shorter than an hour: usage is kept by the hour"},
		{"bad window", []string{"--trace", idleHog, "--window", "tomorrow"}, cli.ExitUsage, "--help"},
		{"no users", []string{"--trace", idleHog, "--top-users", "0"}, cli.ExitUsage, "at least 1"},
		{"negative price", []string{"--trace", idleHog, "--price-per-kwh", "-1"}, cli.ExitUsage, "negative"},
		{"currency alone", []string{"--trace", idleHog, "--currency", "EUR"}, cli.ExitUsage, "--price-per-kwh"},
		{"bad format", []string{"--trace", idleHog, "--format", "pdf"}, cli.ExitUsage, "text, markdown"},
		{"stray argument", []string{"--trace", idleHog, "now"}, cli.ExitUsage, `"now"`},
		{"bad row", []string{"--trace", "testdata/bad-row.csv"}, cli.ExitUser, "bad-row.csv"},
		{"no samples", []string{"--trace", empty}, cli.ExitUser, "no samples"},
	}
	for _, tt := range tests {
		got := gpuwatch(t, append([]string{"digest"}, tt.args...)...)
		if got.code != tt.want || !strings.Contains(got.stderr, tt.wantStderr) {
			t.Errorf("%s: got exit %d, stderr %q; want exit %d and %q in stderr", tt.name, got.code, got.stderr, tt.want, tt.wantStderr)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDigestFromStore runs the daemon over a log of the last hour, then
// digests what it recorded from its store, as after a stop.
func TestDigestFromStore(t *testing.T) {
	dir := t.TempDir()
	src, err := sim.New(sim.Config{Scenario: "idle-hog", Seed: 3, Start: time.Now().Add(-2 * time.Hour).Truncate(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	var csv bytes.Buffer
	if err := sim.WriteCSV(&csv, src); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "gpu.csv"), csv.String())
	path := filepath.Join(dir, "gpuwatch.yaml")
	writeFile(t, path, daemonSettings+"\nsource: {type: replay, replay: {file: gpu.csv}}\n"+
		"digests:\n  - {name: daily, schedule: '@daily', receivers: [console], price_per_kwh: 0.5, currency: CHF}\nrules:\n"+hotRule)
	if got := gpuwatch(t, "run", "--config", path); got.code != cli.ExitOK {
		t.Fatalf("run: exit %d\n%s", got.code, got.stderr)
	}
	storePath := filepath.Join(dir, "state.db")
	before, err := os.ReadFile(storePath)
	if err != nil {
		t.Fatalf("the store gpuwatch run made: %v", err)
	}
	got := gpuwatch(t, "digest", "--config", path, "--window", "3h")
	if got.code != cli.ExitOK {
		t.Fatalf("digest --config: exit %d\n%s", got.code, got.stderr)
	}
	if after, _ := os.ReadFile(storePath); !bytes.Equal(before, after) {
		t.Errorf("digest --config changed the store (its transaction id, at least): it must only read")
	}
	for _, want := range []string{"GPU 0", "GPU 1", "held idle", "CHF"} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("digest --config: want %q in\n%s", want, got.stdout)
		}
	}
	if got := gpuwatch(t, "digest", "--config", path, "--name", "weekly"); got.code != cli.ExitUser {
		t.Errorf("digest --name of a digest the config lacks: exit %d, want %d", got.code, cli.ExitUser)
	}
}

// TestDigestFreshStore checks that a digest of a config whose daemon never
// ran says so, creates no store, and fails: an empty digest with exit 0
// reads as "the GPUs were not used".
func TestDigestFreshStore(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "state", "gpuwatch.db")
	path := filepath.Join(dir, "gpuwatch.yaml")
	writeFile(t, path, "storage: {path: "+store+"}\nsource: {type: sim}\n")
	got := gpuwatch(t, "digest", "--config", path)
	if got.code != cli.ExitUser || !strings.Contains(got.stderr, "nothing has been recorded yet in "+store) {
		t.Errorf("digest of a fresh config: got exit %d, stderr %q; want %d and nothing recorded yet", got.code, got.stderr, cli.ExitUser)
	}
	if _, err := os.Stat(filepath.Dir(store)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("digest created %s (%v), want no state made by a read", filepath.Dir(store), err)
	}
}

// TestDigestFormatsWhileTheDaemonRuns: with gpuwatch run holding the store,
// digest --config asks it over its API, in every --format.
func TestDigestFormatsWhileTheDaemonRuns(t *testing.T) {
	addr := freeAddr(t)
	path := filepath.Join(t.TempDir(), "gpuwatch.yaml")
	writeFile(t, path, "host: live\nstorage: {path: @DIR@/state.db}\nserver: {listen: \""+addr+"\"}\n"+
		"source: {type: sim, interval: 5s, sim: {scenario: thermal, seed: 1, speed: 600}}\n")
	d := runInProcess(t, path)
	defer d.stop()
	waitFor(t, &d.stderr, "HTTP API listening")
	tests := []struct {
		format string
		ok     func(out string) bool
	}{
		{"text", func(out string) bool { return strings.HasPrefix(out, "GPU usage on live") }},
		{"markdown", func(out string) bool { return strings.HasPrefix(out, "## GPU usage on live") }},
		{"blocks", func(out string) bool {
			var blocks []map[string]any
			return json.Unmarshal([]byte(out), &blocks) == nil && len(blocks) > 0 && blocks[0]["type"] == "header"
		}},
		{"json", func(out string) bool {
			var r digest.Report
			return json.Unmarshal([]byte(out), &r) == nil && r.Host == "live"
		}},
	}
	for _, tt := range tests {
		got := gpuwatch(t, "digest", "--config", path, "--format", tt.format)
		if got.code != cli.ExitOK || !tt.ok(got.stdout) {
			t.Errorf("digest --config --format %s while gpuwatch run runs: got exit %d\n%s%s", tt.format, got.code, got.stdout, got.stderr)
		}
	}
}
