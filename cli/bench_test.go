package cli_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"

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
