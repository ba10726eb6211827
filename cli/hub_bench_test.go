package cli_test

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	root "github.com/gpuwatch/gpuwatch"
)

// fleetGPUs is the fleet of the hub benchmark: 1,250 hosts of 8 GPUs.
const fleetGPUs = 10000

// fleetFamilies are the ten series a gpuwatch agent exports per GPU (its
// GPU's users' memory as one user), as a hub reads them, with a value at
// time t (seconds).
var fleetFamilies = []struct {
	name  string
	value func(g int, t float64) float64
}{
	{"gpuwatch_gpu_info", func(int, float64) float64 { return 1 }},
	{"gpuwatch_gpu_lost", func(int, float64) float64 { return 0 }},
	{"gpuwatch_gpu_memory_used_bytes", func(g int, t float64) float64 { return float64((g%40+20)<<30) + float64(int64(t)%3600)*1e5 }},
	{"gpuwatch_gpu_memory_total_bytes", func(int, float64) float64 { return 85520809984 }},
	{"gpuwatch_gpu_utilization_ratio", func(g int, _ float64) float64 { return float64(g%100) / 100 }},
	{"gpuwatch_gpu_memory_utilization_ratio", func(g int, _ float64) float64 { return float64(g%50) / 100 }},
	{"gpuwatch_gpu_temperature_celsius", func(g int, _ float64) float64 { return float64(40 + g%45) }},
	{"gpuwatch_gpu_power_watts", func(g int, _ float64) float64 { return 100 + float64(g%5000)/10 }},
	{"gpuwatch_gpu_power_limit_watts", func(int, float64) float64 { return 700 }},
	{"gpuwatch_gpu_user_memory_bytes", func(g int, t float64) float64 { return float64((g%40+20)<<30) + float64(int64(t)%3600)*1e5 }},
}

// fleetMetric writes the "metric" object of family f for GPU g as
// Prometheus 2 writes it: labels sorted, the agent's own (gpu, host,
// name, uuid, user) and its target's (instance, job).
func fleetMetric(w *bufio.Writer, f string, g int) {
	host := g / 8
	fmt.Fprintf(w, `{"__name__":%q,"gpu":"%d","host":"gpu-node-%04d","instance":"10.%d.%d.%d:9477","job":"gpuwatch-agents"`,
		f, g%8, host, 16+host/65536, host/256%256, host%256)
	if f == "gpuwatch_gpu_user_memory_bytes" {
		fmt.Fprintf(w, `,"user":"user%03d","uuid":"GPU-%08x-%04x-4%03x-8%03x-%012x"}`, g%37, g*2654435761%(1<<32), g%65536, g%4096, g%4096, g)
		return
	}
	fmt.Fprintf(w, `,"name":"NVIDIA H100 80GB HBM3","uuid":"GPU-%08x-%04x-4%03x-8%03x-%012x"}`, g*2654435761%(1<<32), g%65536, g%4096, g%4096, g)
}

// writeFleetVector writes Prometheus's answer to a hub's instant query at
// time at over the fleet: ten series a GPU and each host's up, some 26 MB.
func writeFleetVector(out io.Writer, at time.Time) {
	w := bufio.NewWriterSize(out, 64<<10)
	defer w.Flush()
	ts := strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)
	t := float64(at.Unix())
	w.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i, f := range fleetFamilies {
		for g := range fleetGPUs {
			if i+g > 0 {
				w.WriteByte(',')
			}
			w.WriteString(`{"metric":`)
			fleetMetric(w, f.name, g)
			w.WriteString(`,"value":[` + ts + `,"` + strconv.FormatFloat(f.value(g, t), 'g', -1, 64) + `"]}`)
		}
	}
	for h := range fleetGPUs / 8 {
		fmt.Fprintf(w, `,{"metric":{"__name__":"up","instance":"10.%d.%d.%d:9477","job":"gpuwatch-agents"},"value":[%s,"1"]}`,
			16+h/65536, h/256%256, h%256, ts)
	}
	w.WriteString(`]}}`)
}

// writeFleetMatrix writes the answer to a range query of one family over
// [start, end] every step.
func writeFleetMatrix(out io.Writer, family string, start, end time.Time, step time.Duration) {
	w := bufio.NewWriterSize(out, 64<<10)
	defer w.Flush()
	w.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for _, f := range fleetFamilies {
		if f.name != family {
			continue
		}
		for g := range fleetGPUs {
			if g > 0 {
				w.WriteByte(',')
			}
			w.WriteString(`{"metric":`)
			fleetMetric(w, f.name, g)
			w.WriteString(`,"values":[`)
			for at := start; !at.After(end); at = at.Add(step) {
				if at != start {
					w.WriteByte(',')
				}
				w.WriteString(`[` + strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64) + `,"` +
					strconv.FormatFloat(f.value(g, float64(at.Unix())), 'g', -1, 64) + `"]`)
			}
			w.WriteString(`]}`)
		}
	}
	w.WriteString(`]}}`)
}

// fleetPrometheus serves the fleet's answers as Prometheus's query API,
// counting the instant queries (evaluations). Like Prometheus and
// VictoriaMetrics it compresses an answer with gzip when the request
// accepts it, as a hub's does (Go's transport asks, and decompresses).
// The instant answer is written and compressed once beforehand (a busy
// machine would take seconds to write each); range answers, a
// backfill's rounds of a few minutes, as asked.
type fleetPrometheus struct {
	*httptest.Server
	evaluations atomic.Int64
	// vector is the instant answer, gzipped its compressed form.
	vector, gzipped []byte
	// firstEvaluation is when the first instant query came, in Unix
	// nanoseconds; serving is the time spent writing range answers.
	firstEvaluation, serving atomic.Int64
}

// newFleetPrometheus serves the fleet at time at, and its past.
func newFleetPrometheus(tb testing.TB, at time.Time) *fleetPrometheus {
	p := &fleetPrometheus{}
	var b, z bytes.Buffer
	writeFleetVector(&b, at)
	p.vector = b.Bytes()
	zw := gzip.NewWriter(&z)
	zw.Write(p.vector)
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	p.gzipped = z.Bytes()
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		seconds := func(k string) time.Time {
			f, _ := strconv.ParseFloat(r.Form.Get(k), 64)
			return time.UnixMilli(int64(f * 1000))
		}
		compress := strings.Contains(r.Header.Get("Accept-Encoding"), "gzip")
		w.Header().Set("Content-Type", "application/json")
		if compress {
			w.Header().Set("Content-Encoding", "gzip")
		}
		switch r.URL.Path {
		case "/api/v1/query":
			p.firstEvaluation.CompareAndSwap(0, time.Now().UnixNano())
			if compress {
				w.Write(p.gzipped)
			} else {
				w.Write(p.vector)
			}
			p.evaluations.Add(1)
		case "/api/v1/query_range":
			began := time.Now()
			family := strings.TrimSuffix(strings.TrimPrefix(r.Form.Get("query"), `{__name__=~"`), `"}`)
			step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
			var out io.Writer = w
			var zw *gzip.Writer
			if compress {
				zw = gzip.NewWriter(w)
				out = zw
			}
			writeFleetMatrix(out, family, seconds("start"), seconds("end"), time.Duration(step*float64(time.Second)))
			if zw != nil {
				zw.Close()
			}
			p.serving.Add(int64(time.Since(began)))
		default:
			http.NotFound(w, r)
		}
	}))
	tb.Cleanup(p.Close)
	return p
}

// BenchmarkHubCost10000GPUs measures what `gpuwatch run` costs as the hub
// of a fleet of 10,000 GPUs (1,250 hosts of 8): the built binary reads
// them from a Prometheus that answers each evaluation's one query with
// ten series a GPU and each host's up, as Prometheus 2 writes it (some 26
// MB, gzipped to 1 MB as Prometheus sends it to a client that accepts
// gzip, as the hub's does; served without Prometheus: the query is
// Prometheus's time, not the hub's), backfills the example rules' windows at start from range
// queries, and evaluates the example config's rules, one op an
// evaluation. It reports the CPU an evaluation takes (from /proc/PID/stat,
// garbage collection included; target ≤ 150 ms), the hub's resident
// memory at the end and its peak over its life, backfill included
// (VmRSS, VmHWM; target ≤ 500 MiB), the answer's size and its size
// gzipped, and the hub's
// start: the time from its start to its first evaluation, the backfill's
// range queries answered (start-s; target ≤ 60 s), the hub's CPU in it
// (start-cpu-s), and the time the fake Prometheus took to write the range
// answers, on the same cores (serve-s).
//
//	go test ./cli -run '^$' -bench BenchmarkHubCost10000GPUs -benchtime 20x -timeout 20m
//
// GPUWATCH_HUB_COMPRESSION=none has the hub ask for its answers
// uncompressed (source.prometheus.compression), as a hub beside
// Prometheus may.
//
// With GPUWATCH_HUB_PROFILE=DIR it builds the hub with the profile tag
// and writes its CPU profile over the start (start-cpu.pb.gz) and over
// the measured evaluations (cpu.pb.gz), and its heap after the backfill
// and at the end (heap-start.pb.gz, heap.pb.gz) to DIR, for go tool
// pprof.
func BenchmarkHubCost10000GPUs(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("no /proc to read a process's CPU time and memory from")
	}
	dir := b.TempDir()
	profiles, profiling := os.LookupEnv("GPUWATCH_HUB_PROFILE")
	var bin string
	var env []string
	if profiling {
		bin = buildGpuwatch(b, dir, "profile")
		env = append(env, "GPUWATCH_PROFILE_ADDR="+freeAddr(b))
	} else {
		bin = buildGpuwatch(b, dir)
	}
	prom := newFleetPrometheus(b, time.Now())
	// The example config's rules and routes, on the prometheus source: an
	// evaluation every 10 s (the default is 30 s: the CPU an evaluation
	// takes is the same, the benchmark is shorter).
	compression := cmp.Or(os.Getenv("GPUWATCH_HUB_COMPRESSION"), "gzip")
	cfg := strings.NewReplacer("  type: nvml", "  type: prometheus\n  prometheus: {url: "+prom.URL+", schema: gpuwatch, timeout: 10s, compression: "+compression+"}",
		"  interval: 5s", "  interval: 10s",
		"\nstorage:\n", "\nstorage:\n  path: "+filepath.Join(dir, "state.db")+"\n",
		"listen: 127.0.0.1:9477", "listen: "+freeAddr(b)).Replace(string(root.ExampleConfig))
	path := filepath.Join(dir, "hub.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	started := time.Now()
	cmd, stderr := startBuilt(b, bin, path, env...)
	stat := fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	var startProfile func() error
	if profiling {
		startProfile = profileStart(env[0], &prom.evaluations, profiles)
	}
	wait := func(n int64) {
		deadline := time.Now().Add(15 * time.Minute)
		for prom.evaluations.Load() < n {
			if time.Now().After(deadline) || cmd.ProcessState != nil {
				b.Fatalf("the hub made %d evaluations, not %d, within 15 minutes:\n%s", prom.evaluations.Load(), n, stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	wait(1)
	startCPU := float64(cpuTicks(b, stat)) / userHZ
	startWall := time.Unix(0, prom.firstEvaluation.Load()).Sub(started)
	wait(2) // the backfill and the first evaluation are behind
	before, first := cpuTicks(b, stat), prom.evaluations.Load()
	var cpuProfile func() error
	if profiling {
		if err := startProfile(); err != nil {
			b.Fatal(err)
		}
		if err := saveProfile(env[0], "heap?gc=1", filepath.Join(profiles, "heap-start.pb.gz")); err != nil {
			b.Fatal(err)
		}
		cpuProfile = profileCPU(env[0], time.Duration(b.N)*10*time.Second, filepath.Join(profiles, "cpu.pb.gz"))
	}
	b.ResetTimer()
	wait(first + int64(b.N))
	b.StopTimer()
	if profiling {
		if err := cpuProfile(); err != nil {
			b.Fatal(err)
		}
		if err := saveProfile(env[0], "heap?gc=1", filepath.Join(profiles, "heap.pb.gz")); err != nil {
			b.Fatal(err)
		}
	}
	used := float64(cpuTicks(b, stat)-before) / userHZ
	evaluations := prom.evaluations.Load() - first
	mem, ok := processMemory(status)
	if !ok {
		b.Fatalf("gpuwatch run exited during the benchmark:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "cannot read the past") || strings.Contains(stderr.String(), "does not answer") ||
		!strings.Contains(stderr.String(), "storage="+filepath.Join(dir, "state.db")) {
		b.Fatalf("the hub could not read the fleet:\n%s", stderr.String())
	}
	b.ReportMetric(used/float64(evaluations)*1000, "cpu-ms/op")
	b.ReportMetric(mem.RSS, "RSS-MiB")
	b.ReportMetric(mem.HWM, "peak-RSS-MiB")
	b.ReportMetric(float64(len(prom.vector))/1e6, "answer-MB")
	b.ReportMetric(float64(len(prom.gzipped))/1e6, "gzipped-MB")
	b.ReportMetric(startWall.Seconds(), "start-s")
	b.ReportMetric(startCPU, "start-cpu-s")
	b.ReportMetric(time.Duration(prom.serving.Load()).Seconds(), "serve-s")
}

// profileStart takes the running hub's CPU profile from its start until
// its first evaluation, in profiles of 10 s each (DIR/start-cpu-NN.pb.gz;
// go tool pprof reads them together), written when the function it
// returns has waited for them.
func profileStart(env string, evaluations *atomic.Int64, dir string) func() error {
	done := make(chan error, 1)
	go func() {
		addr := strings.TrimPrefix(env, "GPUWATCH_PROFILE_ADDR=")
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if resp, err := http.Get("http://" + addr + "/debug/pprof/"); err == nil {
				resp.Body.Close()
				break
			} else if time.Now().After(deadline) {
				done <- err
				return
			}
		}
		for i := 0; evaluations.Load() == 0; i++ {
			if err := saveProfile(env, "profile?seconds=10", filepath.Join(dir, fmt.Sprintf("start-cpu-%02d.pb.gz", i))); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return func() error { return <-done }
}

// saveProfile writes the running hub's profile name (net/http/pprof,
// served at the address of env, GPUWATCH_PROFILE_ADDR=…) to path.
func saveProfile(env, name, path string) error {
	addr := strings.TrimPrefix(env, "GPUWATCH_PROFILE_ADDR=")
	resp, err := http.Get("http://" + addr + "/debug/pprof/" + name)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile %s: %s", name, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profileCPU starts the running hub's CPU profile over d, written to path
// when the function it returns has waited for it.
func profileCPU(env string, d time.Duration, path string) func() error {
	done := make(chan error, 1)
	go func() { done <- saveProfile(env, fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), path) }()
	return func() error { return <-done }
}
