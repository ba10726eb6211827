package replay

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// oneSample is a log of one sample of n GPUs.
func oneSample(n int) io.Reader {
	var b strings.Builder
	b.WriteString("timestamp, index, uuid, memory.used [MiB], memory.total [MiB]\n")
	for i := range n {
		fmt.Fprintf(&b, "2026/11/29 09:00:00.000, %d, GPU-%08d-0000-0000-0000-000000000000, 500 MiB, 81559 MiB\n", i, i)
	}
	return strings.NewReader(b.String())
}

// TestReplayRefusesTooManyGPUs: a sample of more GPUs than one host has
// (100,000 rows at one time) is refused at the first row past
// gpu.MaxDevices, with its line, before the rest is read; with SkipBad the
// rows past it are skipped and the sample keeps gpu.MaxDevices GPUs.
func TestReplayRefusesTooManyGPUs(t *testing.T) {
	r, err := NewReader(oneSample(100_000), "fleet.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Next(context.Background())
	want := fmt.Sprintf("fleet.csv:%d:1: a sample of more than %d GPUs, the most gpuwatch watches on one host", gpu.MaxDevices+2, gpu.MaxDevices)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Next: got %v, want %s…", err, want)
	}

	r, err = NewReader(oneSample(300), "fleet.csv", Options{SkipBad: true, Warnings: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Next(context.Background())
	if err != nil || len(s.Devices) != gpu.MaxDevices || r.Skipped() != 300-gpu.MaxDevices {
		t.Fatalf("Next with SkipBad: %v, %d GPUs, %d rows skipped; want %d GPUs and %d skipped", err, len(s.Devices), r.Skipped(), gpu.MaxDevices, 300-gpu.MaxDevices)
	}
}
