package replay

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// twoGPUTraces are the real-shaped 2-GPU logs the benchmark replays.
var twoGPUTraces = []string{"idle-hog.csv", "memory-leak.csv", "normal-training.csv", "thermal.csv"}

// BenchmarkReplay parses the 2-GPU traces into snapshots, as `gpuwatch
// replay` does before evaluating rules, and reports data rows per second.
func BenchmarkReplay(b *testing.B) {
	var logs [][]byte
	rows := 0
	for _, name := range twoGPUTraces {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			b.Fatal(err)
		}
		logs = append(logs, data)
		rows += bytes.Count(data, []byte{'\n'}) - 1 // less the header
	}
	ctx := context.Background()
	total := 0
	cpu := cpuTime(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(bytes.Join(logs, nil))))
	for b.Loop() {
		for i, data := range logs {
			total += readDevices(b, ctx, data, twoGPUTraces[i], Options{})
		}
	}
	if total != rows*b.N {
		b.Fatalf("got %d rows, want %d", total, rows*b.N)
	}
	reportRates(b, total, cpu)
}

// readDevices reads the log in data to its end and returns how many GPU
// readings its snapshots hold.
func readDevices(b *testing.B, ctx context.Context, data []byte, name string, opts Options) int {
	r, err := NewReader(bytes.NewReader(data), name, opts)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for {
		s, err := r.Next(ctx)
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		n += len(s.Devices)
	}
}
