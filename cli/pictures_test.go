package cli_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/gpu/replay"
	"github.com/gpuwatch/gpuwatch/internal/imagetest"
)

var updatePictures = flag.Bool("update-pictures", false, "redraw the README's pictures in docs/images")

// TestREADMEPictures draws the README's pictures from the leak log with
// the commands the README shows, and compares them with the committed
// ones (tolerant to anti-aliasing); -update-pictures redraws them.
func TestREADMEPictures(t *testing.T) {
	dir := t.TempDir()
	for name, args := range map[string][]string{
		"replay.png": {"replay", "--trace", "testdata/traces/memory-leak.csv", "--plot", filepath.Join(dir, "replay.png")},
		"day.png":    {"digest", "--trace", "testdata/traces/memory-leak.csv", "--format", "png", "--out", filepath.Join(dir, "day.png")},
	} {
		if got := gpuwatch(t, args...); got.code != cli.ExitOK {
			t.Fatalf("gpuwatch %v: exit %d\n%s", args, got.code, got.stderr)
		}
		png, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		imagetest.Readable(t, name, png, chart.Width)
		imagetest.Golden(t, filepath.Join("..", "docs", "images", name), png, *updatePictures)
	}
	// The leak's chart, as the alert's thread shows it: drawn from the
	// log's history at the time GPUMemoryLeak fired (see TestRunLeakUploadsChart
	// for the way there through run).
	png := leakChart(t)
	imagetest.Readable(t, "leak.png", png, chart.Width)
	imagetest.Golden(t, filepath.Join("..", "docs", "images", "leak.png"), png, *updatePictures)
}

// leakChart is the chart of the leak log's GPUMemoryLeak as it fired:
// the last hour of GPU 0, the growth the alert reported.
func leakChart(t *testing.T) []byte {
	t.Helper()
	r, err := replay.Open("testdata/traces/memory-leak.csv", replay.Options{Host: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fired := time.Date(2026, 11, 29, 9, 33, 45, 0, time.UTC)
	a := &chart.Alert{Kind: chart.KindMemory, Alert: "GPUMemoryLeak", Status: "firing", Host: "node1", GPU: 0,
		At: fired, FiredAt: fired, Growth: 3690966.4287632643, Holder: "pid 4242 · alice · python train.py",
		Memory: chart.Series{Start: fired.Add(-time.Hour).Truncate(time.Minute), Step: time.Minute}}
	sums := make([]float64, 61)
	counts := make([]int, 61)
	for {
		s, err := r.Next(t.Context())
		if err != nil || s.Time.After(fired) {
			break
		}
		i := int(s.Time.Sub(a.Memory.Start) / time.Minute)
		if i < 0 || i >= len(sums) || len(s.Devices) == 0 {
			continue
		}
		d := s.Devices[0]
		a.Ceiling = float64(d.MemAllocatable())
		sums[i] += float64(d.MemUsed)
		counts[i]++
	}
	for i := range sums {
		v := 0.0
		if counts[i] > 0 {
			v = sums[i] / float64(counts[i])
		} else {
			v = nan()
		}
		a.Memory.Values = append(a.Memory.Values, v)
	}
	png, err := a.PNG(time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return png
}

func nan() float64 { var zero float64; return zero / zero }
