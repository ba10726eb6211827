package cli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	root "github.com/gpuwatch/gpuwatch"
	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/replay"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
	"github.com/gpuwatch/gpuwatch/rules"
)

// BenchmarkReplayEvaluate is the hot path of `gpuwatch replay`: parse the
// memory-leak log into snapshots and evaluate the rules of
// config.example.yaml on each. It reports CSV data rows (one per GPU per
// sample) per second.
func BenchmarkReplayEvaluate(b *testing.B) {
	const trace = "testdata/traces/memory-leak.csv"
	data, err := os.ReadFile(trace)
	if err != nil {
		b.Fatal(err)
	}
	rows := bytes.Count(data, []byte{'\n'}) - 1 // less the header
	cfg, err := config.Parse("config.example.yaml", root.ExampleConfig, noEnv)
	if err != nil {
		b.Fatal(err)
	}
	total, transitions := 0, 0
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		n, ts := replayLog(b, data, cfg.Rules)
		total, transitions = total+n, transitions+ts
	}
	if total != rows*b.N {
		b.Fatalf("got %d rows, want %d", total, rows*b.N)
	}
	if transitions == 0 {
		b.Fatal("got no transitions from the memory leak, want the leak alerts")
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "rows/s")
}

// replayLog evaluates rs over the nvidia-smi log in data, as gpuwatch
// replay does, and returns the rows it read and the transitions.
func replayLog(b *testing.B, data []byte, rs []*rules.Rule) (rows, transitions int) {
	r, err := replay.NewReader(bytes.NewReader(data), "bench.csv", replay.Options{Host: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	engine := rules.NewEngine(rs, rules.Options{})
	for {
		s, err := r.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return rows, transitions
		}
		if err != nil {
			b.Fatal(err)
		}
		rows += len(s.Devices)
		transitions += len(engine.Eval(s))
	}
}

// dayOf8GPUs writes a day of an 8-GPU node sampled every second as
// nvidia-smi logs it: 691,200 rows. GPU 3 leaks until it is full and its job
// restarts; GPU 5 is held idle; the others train with allocator noise.
func dayOf8GPUs() []byte {
	var b bytes.Buffer
	b.WriteString("timestamp, index, name, uuid, temperature.gpu, utilization.gpu [%], utilization.memory [%], memory.used [MiB], memory.total [MiB], power.draw [W]\n")
	start := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	const total = 81559
	for s := range 24 * 3600 {
		at := start.Add(time.Duration(s) * time.Second)
		for g := range 8 {
			mem, util := 40000+float64((s*7+g*13)%97), 90+float64((s+g)%7)
			switch g {
			case 3:
				mem = 20000 + float64(s%20000)*3 // a leak that fills the GPU, then restarts
			case 5:
				mem, util = 20480, 0
			}
			fmt.Fprintf(&b, "%s, %d, NVIDIA H100 80GB HBM3, GPU-%08d-0000-0000-0000-000000000000, %d, %d %%, %d %%, %d MiB, %d MiB, %.2f W\n",
				at.Add(time.Duration(g)*3*time.Millisecond).Format("2006/01/02 15:04:05.000"), g, g,
				40+int(util)/4, int(util), int(util)/2, int(min(mem, total)), total, 100+util*5)
		}
	}
	return b.Bytes()
}

// BenchmarkReplayDay8GPUs1s replays a day of an 8-GPU node at 1 s (691,200
// rows) with the rules of config.example.yaml, as `gpuwatch replay` does.
// Target: under 2 s per day.
func BenchmarkReplayDay8GPUs1s(b *testing.B) {
	data := dayOf8GPUs()
	cfg, err := config.Parse("config.example.yaml", root.ExampleConfig, noEnv)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	rows, transitions := 0, 0
	for b.Loop() {
		n, ts := replayLog(b, data, cfg.Rules)
		rows, transitions = rows+n, transitions+ts
	}
	if rows != 691200*b.N || transitions == 0 {
		b.Fatalf("got %d rows and %d transitions, want %d rows and the leak's alerts", rows, transitions, 691200*b.N)
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/day")
}

// BenchmarkRunDay8GPUs measures the resident memory of `gpuwatch run`
// itself, the process a GPU server keeps: the built binary replays a day
// of 8 GPUs sampled every 5 s (four two-GPU scenarios side by side, as
// fast as it goes) through the rules, routes, store and rollups of the
// example config, while the benchmark reads its /proc/PID/status.
// RSS-MiB is the largest VmRSS read, peak-RSS-MiB the largest of the
// kernel's high-water mark (VmHWM), anon-MiB the largest RssAnon (VmRSS
// less the pages of files: the binary, libc, the store).
//
// VmRSS counts the binary's pages the process has mapped, and the kernel
// maps with each page touched its neighbours that are in the page cache:
// a binary wholly in the cache (just installed or built) counts 4–5 MiB
// more than one started at boot. Each run is therefore made twice: with
// the binary read whole into the page cache first (RSS-MiB and the
// others), and with it dropped from the cache first, as at boot
// (boot-RSS-MiB, its largest VmRSS). Target: ≤ 30 MiB.
//
// "console" runs the example config as it is; "charts" sends every alert
// to a bot-mode Slack receiver (a fake Slack in the benchmark's process,
// with files:write), so the agent also keeps each alert's chart data and
// draws and uploads every chart; "charts" says how many it uploaded.
func BenchmarkRunDay8GPUs(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("no /proc to read the memory of a process from")
	}
	dir := b.TempDir()
	bin := buildGpuwatch(b, dir)
	trace := filepath.Join(dir, "day.csv")
	writeDayCSV(b, trace, 24*time.Hour/(5*time.Second))
	store := filepath.Join(dir, "state.db")
	agent := strings.NewReplacer("  type: nvml", "  type: replay\n  replay: {file: "+trace+"}",
		"\nstorage:\n", "\nstorage:\n  path: "+store+"\n",
		"listen: 127.0.0.1:9477", "listen: 127.0.0.1:0").Replace(string(root.ExampleConfig))
	if c, err := config.Parse("gpuwatch.yaml", []byte(agent), noEnv); err != nil || c.Storage.Path != store || c.Source.Type != "replay" {
		b.Fatalf("the agent's config (config.example.yaml edited) does not replay the day into a store of its own: %v", err)
	}
	b.Run("console", func(b *testing.B) { runDay(b, bin, writeConfig(b, dir, agent), store) })
	b.Run("charts", func(b *testing.B) {
		fake := notifiertest.NewSlack(b, notifiertest.SlackOptions{Scopes: "chat:write,commands,files:write"})
		withSlack := strings.NewReplacer(
			"  - name: console         # prints alerts on standard output\n    console: {}",
			"  - name: console\n    console: {}\n  - name: team-slack\n    slack: {channel: \"#gpu-alerts\"}",
			"  receiver: console       # where alerts go", "  receiver: team-slack    # where alerts go",
		).Replace(agent) + "\nslack:\n  bot_token: xoxb-1111-2222-benchmark\n  api_url: " + fake.URL + "/api/\n"
		if !strings.Contains(withSlack, "slack: {channel:") || !strings.Contains(withSlack, "receiver: team-slack") {
			b.Fatal("config.example.yaml changed: the benchmark cannot route its alerts to Slack")
		}
		runDay(b, bin, writeConfig(b, dir, withSlack), store)
		charts := len(notifiertest.SlackUploads(b, fake))
		if charts == 0 {
			b.Fatal("the agent uploaded no chart: the day's alerts must each draw one")
		}
		b.ReportMetric(float64(charts)/float64(2*b.N), "charts") // runDay runs each day twice
	})
}

// writeConfig writes a config file in dir and returns its path.
func writeConfig(b *testing.B, dir, text string) string {
	b.Helper()
	path := filepath.Join(dir, "gpuwatch.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// runDay runs `gpuwatch run` on config b.N times, each on a fresh store,
// until it has replayed its log and delivered what it queued, once with
// the binary in the page cache and once without, and reports the largest
// VmRSS, VmHWM and RssAnon read of the first and the largest VmRSS of the
// second.
func runDay(b *testing.B, bin, config, store string) {
	b.Helper()
	var hot, boot memory
	for b.Loop() {
		cacheBinary(b, bin, true)
		m := runOnce(b, bin, config, store)
		hot.RSS, hot.HWM, hot.Anon = max(hot.RSS, m.RSS), max(hot.HWM, m.HWM), max(hot.Anon, m.Anon)
		cacheBinary(b, bin, false)
		boot.RSS = max(boot.RSS, runOnce(b, bin, config, store).RSS)
	}
	b.ReportMetric(hot.RSS, "RSS-MiB")
	b.ReportMetric(hot.HWM, "peak-RSS-MiB")
	b.ReportMetric(hot.Anon, "anon-MiB")
	b.ReportMetric(boot.RSS, "boot-RSS-MiB")
}

// runOnce runs `gpuwatch run` on config once, on a fresh store, and
// returns the largest VmRSS, VmHWM and RssAnon read while it ran.
func runOnce(b *testing.B, bin, config, store string) memory {
	b.Helper()
	var peak memory
	os.Remove(store)
	cmd := exec.Command(bin, "run", "--config", config)
	cmd.Stdout = io.Discard
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				b.Fatalf("gpuwatch run: %v\n%s", err, stderr.String())
			}
			return peak
		case <-tick.C:
			if m, ok := processMemory(status); ok {
				peak.RSS, peak.HWM, peak.Anon = max(peak.RSS, m.RSS), max(peak.HWM, m.HWM), max(peak.Anon, m.Anon)
			}
		}
	}
}

// buildGpuwatch builds the gpuwatch binary into dir and returns its path.
func buildGpuwatch(b *testing.B, dir string, tags ...string) string {
	b.Helper()
	bin := filepath.Join(dir, "gpuwatch")
	if out, err := exec.Command("go", "build", "-tags", strings.Join(tags, ","), "-o", bin, "../cmd/gpuwatch").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startBuilt starts bin run --config path, with env added to its
// environment; its log is in the buffer, and it is stopped (interrupted,
// and waited for) when the benchmark ends.
func startBuilt(b *testing.B, bin, path string, env ...string) (*exec.Cmd, *notifiertest.Buffer) {
	b.Helper()
	ctx, cancel := context.WithCancel(b.Context())
	cmd := exec.CommandContext(ctx, bin, "run", "--config", path)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout = io.Discard
	stderr := &notifiertest.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		cancel()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		cancel()
	})
	return cmd, stderr
}

// memory is what /proc/PID/status says of a process's memory, in MiB:
// VmRSS, VmHWM (the kernel's high-water mark of VmRSS) and RssAnon, the
// part of VmRSS that is not the binary's and libraries' pages (which
// count as resident when mapped, however many processes share them).
type memory struct{ RSS, HWM, Anon float64 }

// processMemory reads a /proc/PID/status; false when the process is gone.
func processMemory(status string) (m memory, ok bool) {
	b, err := os.ReadFile(status)
	if err != nil {
		return m, false
	}
	mib := func(line string) float64 {
		kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(line), " kB"), 64)
		return kb / 1024
	}
	for line := range strings.Lines(string(b)) {
		for prefix, v := range map[string]*float64{"VmRSS:": &m.RSS, "VmHWM:": &m.HWM, "RssAnon:": &m.Anon} {
			if rest, found := strings.CutPrefix(line, prefix); found {
				*v = mib(rest)
			}
		}
	}
	return m, m.RSS > 0
}

// writeDayCSV writes an nvidia-smi log of n samples of 8 GPUs: four
// two-GPU scenarios side by side, looping.
func writeDayCSV(tb testing.TB, path string, n time.Duration) {
	tb.Helper()
	var srcs []*sim.Source
	for k, name := range []string{sim.ScenarioMemoryLeak, sim.ScenarioIdleHog, sim.ScenarioThermal, sim.ScenarioNormalTraining} {
		s, err := sim.New(sim.Config{Scenario: name, Seed: uint64(k + 1), Host: "bench", Loop: true})
		if err != nil {
			tb.Fatal(err)
		}
		srcs = append(srcs, s)
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := sim.WriteCSV(f, &sideBySide{srcs: srcs, left: int(n)}); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// sideBySide is one host of the GPUs of several simulations, for left
// snapshots.
type sideBySide struct {
	srcs []*sim.Source
	left int
}

func (s *sideBySide) Next(ctx context.Context) (*gpu.Snapshot, error) {
	if s.left == 0 {
		return nil, io.EOF
	}
	s.left--
	merged := &gpu.Snapshot{}
	for k, src := range s.srcs {
		snap, err := src.Next(ctx)
		if err != nil {
			return nil, err
		}
		merged.Time, merged.Host = snap.Time, snap.Host
		for _, d := range snap.Devices {
			d.Index += 2 * k
			d.UUID += strconv.Itoa(k)
			merged.Devices = append(merged.Devices, d)
		}
	}
	return merged, nil
}

func (s *sideBySide) Close() error { return nil }
