package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/cli"
)

// sampleLogDir holds a log of every format gpuwatch reads (see its
// README.md); gpu/replay's tests check each reading of them.
const sampleLogDir = "../gpu/replay/testdata/logs"

// sampleLogs are the sample logs and what replay and digest --trace must
// say of them: snapshots, GPUs and host.
var sampleLogs = []struct {
	file  string
	args  []string // flags the log needs
	snaps int
	gpus  int
	host  string
	mod   time.Time // when the file was last written, for a log it dates
}{
	{"smi-one-gpu.csv", nil, 120, 1, "smi-one-gpu", time.Time{}},
	{"smi-nounits-reserved.csv", nil, 60, 2, "smi-nounits-reserved", time.Time{}},
	{"smi-noheader.csv", []string{"--columns", "timestamp,index,memory.used,memory.total,utilization.gpu"}, 30, 2, "smi-noheader", time.Time{}},
	{"smi-loop-date-crlf.log", nil, 20, 2, "smi-loop-date-crlf", time.Time{}},
	{"smi-powershell-utf16.csv", nil, 15, 1, "smi-powershell-utf16", time.Time{}},
	{"smi-iso-bom.csv", nil, 40, 1, "smi-iso-bom", time.Time{}},
	{"smi-mdy.csv", nil, 10, 1, "smi-mdy", time.Time{}},
	{"cron-30min.log", nil, 96, 4, "cron-30min", time.Time{}},
	{"smi-two-gpus-no-index.csv", nil, 20, 2, "smi-two-gpus-no-index", time.Time{}},
	{"pynvml-logger.csv", nil, 50, 2, "pynvml-logger", time.Time{}},
	{"gputil-logger.csv", nil, 40, 1, "gputil-logger", time.Time{}},
	{"script-units.csv", nil, 30, 2, "script-units", time.Time{}},
	{"nvitop-collector.csv", nil, 25, 2, "nvitop-collector", time.Time{}},
	{"gpustat-fields.csv", nil, 20, 2, "gpustat-fields", time.Time{}},
	{"mem-only.csv", nil, 20, 1, "mem-only", time.Time{}},
	{"table-418.log", nil, 30, 2, "table-418", time.Time{}},
	{"table-384-cron.log", nil, 24, 1, "table-384-cron", time.Time{}},
	{"table-470-mig.log", nil, 20, 2, "table-470-mig", time.Time{}},
	{"table-535-cron.log", nil, 48, 8, "table-535-cron", time.Time{}},
	{"table-550-watch.log", nil, 12, 1, "node7", time.Time{}},
	{"dmon-default.log", nil, 30, 2, "dmon-default", time.Date(2026, 11, 29, 9, 0, 29, 0, time.UTC)},
	{"dmon-dt.log", nil, 40, 2, "dmon-dt", time.Time{}},
	{"dmon-old-hourly.log", nil, 10, 1, "dmon-old-hourly", time.Time{}},
	{"gpustat.log", nil, 18, 2, "gpu-node3", time.Time{}},
	{"gpustat-nofan.log", nil, 10, 2, "dgx2", time.Time{}},
	{"script-lines.log", nil, 20, 2, "script-lines", time.Time{}},
	{"script-pipes.log", nil, 15, 1, "script-pipes", time.Time{}},
	{"script-blocks.log", nil, 12, 2, "script-blocks", time.Time{}},
	{"script-status.log", nil, 10, 2, "script-status", time.Time{}},
	{"script-logging.log", nil, 16, 2, "script-logging", time.Time{}},
	{"script-clock.log", nil, 10, 1, "script-clock", time.Date(2026, 11, 29, 0, 2, 30, 0, time.UTC)},
	{"smi-decorated-dates.log", nil, 10, 2, "smi-decorated-dates", time.Time{}},
	{"smi-clock-lines.log", nil, 10, 1, "smi-clock-lines", time.Date(2026, 11, 29, 9, 10, 0, 0, time.UTC)},
	{"table-then-csv.log", nil, 10, 1, "table-then-csv", time.Time{}},
	{"table-nohup.log", nil, 8, 1, "table-nohup", time.Time{}},
	{"watch-escapes.log", nil, 6, 1, "node9", time.Time{}},
	{"smi-untimed.csv", []string{"--step", "2s"}, 15, 2, "smi-untimed", time.Date(2026, 11, 29, 9, 10, 0, 0, time.UTC)},
	{"smi-twice.csv", nil, 10, 2, "smi-twice", time.Time{}},
	{"smi-two-widths.csv", []string{"--columns", "timestamp,index,memory.used,memory.total"}, 20, 2, "smi-two-widths", time.Time{}},
	{"gpuz-sensor.txt", nil, 30, 1, "gpuz-sensor", time.Time{}},
	{"afterburner.hml", nil, 20, 1, "afterburner", time.Time{}},
}

// digestJSON is what the tests read of `digest --format json`.
type digestJSON struct {
	Host          string  `json:"host"`
	CoveredHours  float64 `json:"covered_hours"`
	StepSeconds   float64 `json:"step_seconds"`
	MaxGapSeconds float64 `json:"max_gap_seconds"`
	GPUs          []struct {
		GPU           int     `json:"gpu"`
		CoveredHours  float64 `json:"covered_hours"`
		IdleHeldHours float64 `json:"idle_held_hours"`
		PeakTemp      float64 `json:"peak_temp_c"`
	} `json:"gpus"`
	IdleHolders []struct {
		User    string  `json:"user"`
		GPU     int     `json:"gpu"`
		Seconds float64 `json:"seconds"`
	} `json:"idle_holders"`
}

// TestSampleLogsReplayAndDigest replays and digests a log of every format
// with no flags but --columns for the log without its header.
func TestSampleLogsReplayAndDigest(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(sampleLogDir, "*.*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(sampleLogs)+1 { // and the README
		t.Errorf("got %d files in %s, want the %d sample logs and a README", len(files), sampleLogDir, len(sampleLogs))
	}
	for _, tt := range sampleLogs {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join(sampleLogDir, tt.file)
			if !tt.mod.IsZero() {
				// A log without times, or dates, is dated by its file's modification time.
				path = copyWithModTime(t, path, tt.mod)
			}
			got := gpuwatch(t, append([]string{"replay", "--trace", path}, tt.args...)...)
			if got.code != cli.ExitOK {
				t.Fatalf("replay: got exit %d, want 0\nstderr:\n%s", got.code, got.stderr)
			}
			if want := "replayed " + plural(tt.snaps, "snapshot") + " ("; !strings.Contains(got.stderr, want) {
				t.Errorf("replay: got stderr\n%s\nwant it to say %q", got.stderr, want)
			}
			if want := " of " + tt.host; !strings.Contains(got.stderr, want) {
				t.Errorf("replay: got stderr\n%s\nwant it to name the host: %q", got.stderr, want)
			}
			got = gpuwatch(t, append([]string{"digest", "--format", "json", "--trace", path}, tt.args...)...)
			if got.code != cli.ExitOK {
				t.Fatalf("digest: got exit %d, want 0\nstderr:\n%s", got.code, got.stderr)
			}
			var d digestJSON
			if err := json.Unmarshal([]byte(got.stdout), &d); err != nil {
				t.Fatalf("digest --format json: %v\n%s", err, got.stdout)
			}
			if d.Host != tt.host || len(d.GPUs) != tt.gpus {
				t.Errorf("digest: got host %q with %d GPUs, want %q with %d", d.Host, len(d.GPUs), tt.host, tt.gpus)
			}
			if d.CoveredHours <= 0 {
				t.Errorf("digest: got %v GPU-hours covered, want the log's time", d.CoveredHours)
			}
		})
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strings.Join([]string{itoa(n), noun + "s"}, " ")
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// copyWithModTime copies a file into a temporary folder, last written at
// mod.
func copyWithModTime(t *testing.T, path string, mod time.Time) string {
	t.Helper()
	cp := filepath.Join(t.TempDir(), filepath.Base(path))
	data, err := os.ReadFile(path)
	if err == nil {
		err = os.WriteFile(cp, data, 0o644)
	}
	if err == nil {
		err = os.Chtimes(cp, mod, mod)
	}
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// TestDigestSparseLog: a log sampled every 30 minutes by cron covers its
// two days, finds the GPU held full and idle for 30 hours, says how it
// counted, and names the rules whose windows the log cannot fill.
func TestDigestSparseLog(t *testing.T) {
	path := filepath.Join(sampleLogDir, "cron-30min.log")
	got := gpuwatch(t, "digest", "--trace", path)
	if got.code != cli.ExitOK {
		t.Fatalf("digest: got exit %d\nstderr:\n%s", got.code, got.stderr)
	}
	for _, want := range []string{
		"4 GPUs, 190 GPU-hours covered",
		"Sampled every 30m: each sample stands for the time since the one before, up to 1h30m",
		"GPU 2 was held idle for 1d6h",
	} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("digest: got\n%s\nwant it to say %q", got.stdout, want)
		}
	}
	if want := "warning: GPUMemoryNearFull's 1m30s window (min), GPUMemoryNearFull's 5m window (min), GPUMemoryNearFull's 30m window (max), GPUMemoryFillingFast's 1m window (slope), GPUMemoryFillingFast's 5m window (time_to_full), GPUIdleButHeld's 5m window (max), GPUIdleButHeld's 5m window (avg), GPUHot's 2m window (max), GPUHardwareSlowdown's 5m window (active), GPUNVLinkErrors's 5m window (rate) are shorter than this log's 30m step"; !strings.Contains(got.stderr, want) {
		t.Errorf("digest: got stderr\n%s\nwant %q", got.stderr, want)
	}

	got = gpuwatch(t, "digest", "--format", "json", "--trace", filepath.Join(sampleLogDir, "table-535-cron.log"))
	var d digestJSON
	if err := json.Unmarshal([]byte(got.stdout), &d); err != nil {
		t.Fatalf("digest --format json: %v\n%s", err, got.stdout)
	}
	if d.StepSeconds != 1800 || d.MaxGapSeconds != 5400 {
		t.Errorf("digest of a 30m log: got step %vs, max gap %vs, want 1800 and 5400", d.StepSeconds, d.MaxGapSeconds)
	}
	if len(d.IdleHolders) != 1 || d.IdleHolders[0].GPU != 5 || d.IdleHolders[0].Seconds != 18*3600 {
		t.Errorf("digest of the 8-GPU table: got idle holders %+v, want GPU 5 held idle for 18h", d.IdleHolders)
	}
	if d.GPUs[0].CoveredHours != 23.5 {
		t.Errorf("digest of the 8-GPU table: GPU 0 covers %vh, want 23.5 (48 samples 30m apart)", d.GPUs[0].CoveredHours)
	}
}

// TestDigestNotLogged: what a log does not record reads "not logged" in the
// digest, never 0 % or a peak of 0 B; a log sampled in bursts says so.
func TestDigestNotLogged(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var memOnly, utilOnly, bursts strings.Builder
	memOnly.WriteString("timestamp, index, memory.used [MiB], memory.total [MiB]\n")
	utilOnly.WriteString("timestamp, index, utilization.gpu [%]\n")
	bursts.WriteString("timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n")
	start := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for i := range 120 {
		at := start.Add(time.Duration(i) * time.Minute).Format("2006/01/02 15:04:05")
		fmt.Fprintf(&memOnly, "%s, 0, 4000 MiB, 16384 MiB\n", at)
		fmt.Fprintf(&utilOnly, "%s, 0, 60 %%\n", at)
		for range 5 { // five samples within each second, once a minute
			fmt.Fprintf(&bursts, "%s, 0, 60 %%, 4000 MiB, 16384 MiB\n", at)
		}
	}
	for _, tt := range []struct {
		name, log string
		want      []string
		not       []string
	}{
		{"no utilization", memOnly.String(), []string{"1 GPU, 2.0 GPU-hours covered: utilization not logged\n",
			"GPU 0 utilization not logged; memory peak 3.91 GiB of 16 GiB\n"}, []string{"avg 0%", "average utilization 0%", "busy 0", "held idle 0"}},
		{"no memory", utilOnly.String(), []string{"average utilization 60%, busy 100% of the time; memory not logged, so held idle is not known",
			"GPU 0 ", "avg 60%, peak 60%; memory not logged; busy 2.0h\n"}, []string{"peak 0 B", "held idle 0"}},
		{"bursts", bursts.String(), []string{"1 GPU, 2.0 GPU-hours covered: average utilization 60%",
			"Sampled in bursts of about 5 samples within a second, every 1m."}, []string{"not logged"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := gpuwatch(t, "digest", "--trace", write(strings.ReplaceAll(tt.name, " ", "-")+".csv", tt.log))
			if got.code != cli.ExitOK {
				t.Fatalf("digest: got exit %d\nstderr:\n%s", got.code, got.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(got.stdout, w) {
					t.Errorf("digest: got\n%s\nwant it to say %q", got.stdout, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got.stdout, n) {
					t.Errorf("digest: got\n%s\nwant no %q", got.stdout, n)
				}
			}
		})
	}
	got := gpuwatch(t, "replay", "--trace", write("bursts.csv", bursts.String()))
	if want := ", in bursts of about 5 samples within a second, every 1m): "; got.code != cli.ExitOK || !strings.Contains(got.stderr, want) {
		t.Errorf("replay of a log sampled in bursts: got exit %d, stderr\n%s\nwant %q", got.code, got.stderr, want)
	}
}

// TestDigestMissingTemperature: a log without temperatures says nothing of
// them, rather than a peak of 0 C.
func TestDigestMissingTemperature(t *testing.T) {
	got := gpuwatch(t, "digest", "--trace", filepath.Join(sampleLogDir, "mem-only.csv"))
	if got.code != cli.ExitOK {
		t.Fatalf("digest: got exit %d\nstderr:\n%s", got.code, got.stderr)
	}
	if strings.Contains(got.stdout, " C") || !strings.Contains(got.stdout, "memory peak 7.62 GiB") {
		t.Errorf("digest of a log without temperature or memory.total: got\n%s\nwant the memory peak and no temperature", got.stdout)
	}
	if want := "note: " + filepath.Join(sampleLogDir, "mem-only.csv") + ": memory.total is not in the log"; !strings.Contains(got.stderr, want) {
		t.Errorf("digest: got stderr\n%s\nwant %q", got.stderr, want)
	}
	got = gpuwatch(t, "digest", "--memory-total", "24GiB", "--trace", filepath.Join(sampleLogDir, "mem-only.csv"))
	if !strings.Contains(got.stdout, "memory peak 7.62 GiB of 24 GiB") || strings.Contains(got.stderr, "memory.total") {
		t.Errorf("digest --memory-total 24GiB: got\n%s%s\nwant the total and no note", got.stdout, got.stderr)
	}
}

func TestReplayLogErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noheader := filepath.Join(sampleLogDir, "smi-noheader.csv")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no header, no columns", []string{"replay", noheader}, cli.ExitUser,
			noheader + ":1:1: the first line is a data row, not a header: the log was written with --format=csv,noheader; say which columns it has, in order, as in --columns"},
		{"not a GPU log", []string{"replay", write("notes.txt", "shopping list\neggs\n")}, cli.ExitUser,
			`notes.txt:1:1: not a GPU log gpuwatch reads: "shopping list" is none of a CSV header naming GPU readings`},
		{"a table cut by garbage", []string{"replay", write("t.log", "Sun Nov 29 09:00:00 2026\n+---+\n| NVIDIA-SMI 535\nhello\n")}, cli.ExitUser,
			`t.log:4:1: "hello" is not part of nvidia-smi's table`},
		{"bad --memory-total", []string{"replay", "--memory-total", "lots", noheader}, cli.ExitUsage, `--memory-total "lots": want an amount`},
		{"columns no one reads", []string{"replay", "--columns", "foo,bar", noheader}, cli.ExitUsage, `--columns "foo,bar": none of these is a column gpuwatch reads`},
		{"no times, no --step", []string{"replay", filepath.Join(sampleLogDir, "smi-untimed.csv")}, cli.ExitUser,
			"smi-untimed.csv:2:1: no times in this log: give --step, how often it was sampled (as in --step 5s)"},
		{"a negative --step", []string{"digest", "--trace", filepath.Join(sampleLogDir, "smi-untimed.csv"), "--step", "-2s"}, cli.ExitUsage,
			"--step -2s is negative"},
		{"an allocator's log", []string{"replay", write("torch.log", "step 10: memory_allocated 1.2 GB, memory_reserved 2.0 GB\n")}, cli.ExitUser,
			"torch.log:1:1: this is a PyTorch allocator's log"},
		{"gpustat --json", []string{"digest", "--trace", write("gpustat.json", `{"hostname": "n1", "query_time": "2026-11-29T09:00:00", "gpus": []}`)}, cli.ExitUser,
			"gpustat.json:1:1: this is gpustat --json's output, which gpuwatch does not replay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := gpuwatch(t, tt.args...)
			if got.code != tt.code || !strings.Contains(got.stderr, tt.want) {
				t.Errorf("gpuwatch %v: got exit %d, stderr\n%s\nwant exit %d and %q", tt.args, got.code, got.stderr, tt.code, tt.want)
			}
		})
	}
}

// TestReplayHost: the host of a replayed log is --host, or the log's file
// name, never the machine's.
func TestReplayHost(t *testing.T) {
	path := filepath.Join(sampleLogDir, "smi-one-gpu.csv")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "smi-one-gpu"},
		{[]string{"--host", "gpu-box-4"}, "gpu-box-4"},
	} {
		got := gpuwatch(t, append([]string{"digest", "--format", "json", "--trace", path}, tt.args...)...)
		var d digestJSON
		if err := json.Unmarshal([]byte(got.stdout), &d); err != nil {
			t.Fatalf("digest %v: %v\n%s", tt.args, err, got.stderr)
		}
		if d.Host != tt.want {
			t.Errorf("digest %v: got host %q, want %q", tt.args, d.Host, tt.want)
		}
	}
}

// TestRuleTestWithLog: `gpuwatch test` feeds rules a GPU log, its checks at
// times since the log's first sample.
func TestRuleTestWithLog(t *testing.T) {
	dir := t.TempDir()
	log, err := filepath.Abs("testdata/traces/memory-leak.csv")
	if err != nil {
		t.Fatal(err)
	}
	example, err := filepath.Abs("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "leak_test.yaml")
	text := "rule_files: [" + example + "]\ntests:\n" +
		"  - name: the leak in the log is caught\n    log: " + log + "\n    expect:\n" +
		"      - at: 10m\n        alert: GPUMemoryLeak\n        firing: []\n" +
		"      - at: 1h\n        alert: GPUMemoryLeak\n        firing:\n          - {alert: GPUMemoryLeak, gpu: 0}\n" +
		"  - name: a check after the log's end fails\n    log: " + log + "\n    expect:\n" +
		"      - at: 3h\n        firing: []\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got := gpuwatch(t, "test", file)
	for _, want := range []string{
		"PASS " + file + ": the leak in the log is caught",
		"FAIL " + file + ": a check after the log's end fails\n    at 3h0m0s: the log ends 1h59m55s after its first sample, before this check",
		"1 passed, 1 failed",
	} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("gpuwatch test: got\n%s\nwant %q", got.stdout, want)
		}
	}
	if got.code != cli.ExitUser {
		t.Errorf("gpuwatch test: got exit %d, want %d", got.code, cli.ExitUser)
	}
}

// TestReplayWithoutMemoryTotal: rules on memory percentages are named in a
// warning that says how to give the total, and --memory-total gives it.
func TestReplayWithoutMemoryTotal(t *testing.T) {
	path := filepath.Join(sampleLogDir, "dmon-dt.log")
	got := gpuwatch(t, "replay", path)
	if want := "warning: rule GPUMemoryNearFull uses memory.used_percent, which " + path +
		" does not provide without memory.total; give the GPUs' memory with --memory-total"; got.code != cli.ExitOK || !strings.Contains(got.stderr, want) {
		t.Errorf("replay: got exit %d, stderr\n%s\nwant %q", got.code, got.stderr, want)
	}
	got = gpuwatch(t, "replay", "--memory-total", "80GiB", path)
	if got.code != cli.ExitOK || strings.Contains(got.stderr, "memory.used_percent") || strings.Contains(got.stderr, "memory.total is not in the log") {
		t.Errorf("replay --memory-total 80GiB: got exit %d, stderr\n%s\nwant no word of the total", got.code, got.stderr)
	}
}
