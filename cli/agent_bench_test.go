package cli_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	root "github.com/gpuwatch/gpuwatch"
	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
	"github.com/gpuwatch/gpuwatch/metrics"
)

// userHZ is the unit of the CPU times in /proc/PID/stat: Linux reports
// them in USER_HZ, 100 a second on every architecture.
const userHZ = 100

// agentScrapeEvery is how often the benchmark scrapes the agent's
// /metrics, as a fleet's Prometheus does.
const agentScrapeEvery = 15

// BenchmarkAgentCost measures what `gpuwatch run` costs a GPU node as a
// fleet's agent: the built binary samples simulated GPUs every second in
// real time (the sim source at speed 1, scenario node8 when the simulator
// has it, else the largest it has; "gpus" says how many), evaluates the
// example config's rules, keeps its store, and serves /metrics, which the
// benchmark scrapes every 15 s. One op is one second of the agent's life.
// It reports the CPU the agent used (from /proc/PID/stat, in % of one
// core), its resident memory at the end and its peak (VmRSS, VmHWM, in
// MiB; anon-MiB is the part that is not the binary's pages), and the samples it evaluated per second (from its /metrics: 1
// when it keeps up). Targets: ≤ 1 %CPU and ≤ 30 MiB.
//
// The default run is a second or two; the measurement is ten
// minutes:
//
//	go test ./cli -run '^$' -bench BenchmarkAgentCost -benchtime 600x -timeout 20m
func BenchmarkAgentCost(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("no /proc to read a process's CPU time and memory from")
	}
	dir := b.TempDir()
	bin := buildGpuwatch(b, dir)
	scenario, gpus := agentScenario(b)
	addr := freeAddr(b)
	cfg := strings.NewReplacer("  type: nvml", "  type: sim", "  interval: 5s", "  interval: 1s",
		"scenario: all ", "scenario: "+scenario+" ",
		"\nstorage:\n", "\nstorage:\n  path: "+filepath.Join(dir, "state.db")+"\n",
		"listen: 127.0.0.1:9477", "listen: "+addr).Replace(string(root.ExampleConfig))
	path := filepath.Join(dir, "gpuwatch.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	if c, err := config.Load(path, noEnv); err != nil || c.Source.Type != "sim" || c.Source.Interval != time.Second ||
		c.Source.Sim.Scenario != scenario || c.Source.Sim.Speed != 1 || c.Storage.Path != filepath.Join(dir, "state.db") {
		b.Fatalf("the agent's config (config.example.yaml edited) is not the sim at 1 s, speed 1, scenario %s, with a store of its own: %v", scenario, err)
	}
	cmd, stderr := startBuilt(b, bin, path)
	metricsURL := "http://" + addr + "/metrics"
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(get(metricsURL), "gpuwatch_last_sample_timestamp_seconds") {
		if time.Now().After(deadline) {
			b.Fatalf("gpuwatch run sampled nothing within a minute:\n%s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	stat := fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	before, samples := cpuTicks(b, stat), sampleCount(b, get(metricsURL))
	b.ResetTimer()
	began := time.Now()
	for i := range b.N {
		time.Sleep(time.Until(began.Add(time.Duration(i+1) * time.Second)))
		if (i+1)%agentScrapeEvery == 0 {
			get(metricsURL)
		}
	}
	b.StopTimer()
	used := float64(cpuTicks(b, stat)-before) / userHZ
	samples = sampleCount(b, get(metricsURL)) - samples
	mem, ok := processMemory(status)
	if !ok {
		b.Fatalf("gpuwatch run exited during the benchmark:\n%s", stderr.String())
	}
	elapsed := time.Since(began).Seconds()
	b.ReportMetric(100*used/elapsed, "%CPU")
	b.ReportMetric(samples/elapsed, "samples/s")
	b.ReportMetric(mem.RSS, "RSS-MiB")
	b.ReportMetric(mem.HWM, "peak-RSS-MiB")
	b.ReportMetric(mem.Anon, "anon-MiB")
	b.ReportMetric(float64(gpus), "gpus")
}

// agentScenario is the simulation an 8-GPU node runs: node8 when the
// simulator has it, else the scenario with the most GPUs; and its GPUs.
func agentScenario(b *testing.B) (string, int) {
	b.Helper()
	best, most := "", 0
	for _, name := range sim.Scenarios() {
		s, err := sim.New(sim.Config{Scenario: name})
		if err != nil {
			b.Fatal(err)
		}
		snap, err := s.Next(b.Context())
		s.Close()
		if err != nil {
			b.Fatal(err)
		}
		if n := len(snap.Devices); n > most || name == "node8" {
			best, most = name, n
		}
		if name == "node8" {
			break
		}
	}
	return best, most
}

// get returns the body of a GET, "" on any failure.
func get(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// sampleCount is how many samples the agent has evaluated, from its
// /metrics text: the count of gpuwatch_sample_duration_seconds.
func sampleCount(b *testing.B, text string) float64 {
	b.Helper()
	for line := range strings.Lines(text) {
		if rest, ok := strings.CutPrefix(line, metrics.SampleDurationName+"_count "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return n
			}
		}
	}
	b.Fatalf("/metrics has no %s_count", metrics.SampleDurationName)
	return 0
}

// cpuTicks reads a process's user and system CPU time, in USER_HZ ticks.
func cpuTicks(b *testing.B, stat string) uint64 {
	b.Helper()
	raw, err := os.ReadFile(stat)
	if err != nil {
		b.Fatalf("read %s: %v", stat, err)
	}
	ticks, err := parseCPUTicks(string(raw))
	if err != nil {
		b.Fatalf("%s: %v", stat, err)
	}
	return ticks
}

// parseCPUTicks reads utime + stime from the text of /proc/PID/stat. The
// command (field 2) is in parentheses and may hold spaces and
// parentheses itself, so the fields are counted after its last ')'.
func parseCPUTicks(stat string) (uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no ')' after the command in %q", stat)
	}
	fields := strings.Fields(stat[i+1:])
	// Field 3 (state) is fields[0]: utime (14) and stime (15) follow.
	if len(fields) < 13 {
		return 0, fmt.Errorf("got %d fields after the command, want at least 13", len(fields))
	}
	var total uint64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time %q is not a number", f)
		}
		total += n
	}
	return total, nil
}

func TestParseCPUTicks(t *testing.T) {
	const stat = "4242 (gpu watch) (x)) S 1 4242 4242 0 -1 4194560 1803 0 0 0 131 27 0 0 20 0 9 0 1234 123456 4567 18446744073709551615"
	got, err := parseCPUTicks(stat)
	if err != nil || got != 131+27 {
		t.Errorf("parseCPUTicks: got %d, %v; want 158 (utime 131 + stime 27)", got, err)
	}
	for _, bad := range []string{"", "4242 (cmd S 1", "4242 (cmd) S 1 2 3", "4242 (cmd) S 1 4242 4242 0 -1 4194560 1803 0 0 0 x 27"} {
		if _, err := parseCPUTicks(bad); err == nil {
			t.Errorf("parseCPUTicks(%q): got nil error, want one", bad)
		}
	}
}
