package cli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	root "github.com/gpuwatch/gpuwatch"
	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu/replay"
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
	ctx := context.Background()
	total, transitions := 0, 0
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r, err := replay.NewReader(bytes.NewReader(data), trace, replay.Options{Host: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		engine := rules.NewEngine(cfg.Rules, rules.Options{})
		for {
			s, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			total += len(s.Devices)
			transitions += len(engine.Eval(s))
		}
	}
	if total != rows*b.N {
		b.Fatalf("got %d rows, want %d", total, rows*b.N)
	}
	if transitions == 0 {
		b.Fatal("got no transitions from the memory leak, want the leak alerts")
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "rows/s")
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
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	rows, transitions := 0, 0
	for b.Loop() {
		r, err := replay.NewReader(bytes.NewReader(data), "day.csv", replay.Options{Host: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		engine := rules.NewEngine(cfg.Rules, rules.Options{})
		for {
			s, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			rows += len(s.Devices)
			transitions += len(engine.Eval(s))
		}
	}
	if rows != 691200*b.N || transitions == 0 {
		b.Fatalf("got %d rows and %d transitions, want %d rows and the leak's alerts", rows, transitions, 691200*b.N)
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/day")
}
