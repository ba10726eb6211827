package chart

import (
	"bytes"
	"flag"
	"image/color"
	"image/png"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/imagetest"
)

var update = flag.Bool("update", false, "rewrite the golden pictures in testdata")

// kinds are one figure of each kind of chart, from the fixtures.
func kinds() map[string]*Figure {
	return map[string]*Figure{
		"memory": leakAlert().Figure(paris), "memory-resolved": resolvedLeak().Figure(paris),
		"temperature": hotAlert().Figure(paris), "idle": idleAlert().Figure(paris), "lost": lostAlert().Figure(paris),
		"history": fourGPUs().Figure(paris), "day": busyDay().Figure(paris),
	}
}

// TestGolden draws each kind of chart and compares it with its golden
// picture, tolerant to anti-aliasing.
func TestGolden(t *testing.T) {
	for name, f := range kinds() {
		t.Run(name, func(t *testing.T) {
			png, err := f.PNG()
			if err != nil {
				t.Fatal(err)
			}
			imagetest.Golden(t, filepath.Join("testdata", name+".png"), png, *update)
		})
	}
}

// TestReadable decodes each chart: a phone-readable width, not blank.
func TestReadable(t *testing.T) {
	for name, f := range kinds() {
		png, err := f.PNG()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		imagetest.Readable(t, name, png, Width)
	}
}

// TestEmptySeries: an alert whose GPU left no history still draws.
func TestEmptySeries(t *testing.T) {
	a := &Alert{Kind: KindMemory, Alert: "GPUMemoryNearFull", Status: "firing", Host: "h", At: fixedStart, FiredAt: fixedStart}
	if _, err := a.PNG(time.UTC); err != nil {
		t.Fatalf("an alert without history: %v", err)
	}
}

// TestFullAt: the projection meets the ceiling at the growth's pace.
func TestFullAt(t *testing.T) {
	a := leakAlert()
	last, used, _ := a.Memory.Last()
	full, ok := a.FullAt()
	if !ok {
		t.Fatal("a growing leak has no time to full")
	}
	want := last.Add(time.Duration((a.Ceiling - used) / a.Growth * float64(time.Second)))
	if d := full.Sub(want); d < -time.Second || d > time.Second {
		t.Errorf("full at %v, want %v", full, want)
	}
	a.Growth = 0
	if _, ok := a.FullAt(); ok {
		t.Error("memory that does not grow has a time to full")
	}
}

// TestZoneNamed: the picture says which zone its times are in.
func TestZoneNamed(t *testing.T) {
	if got := zoneName(fixedStart, paris); got != "Europe/Paris (CET)" {
		t.Errorf("zone name: got %q", got)
	}
	if got := zoneName(fixedStart, time.UTC); got != "UTC" {
		t.Errorf("zone name: got %q", got)
	}
}

// BenchmarkAlertChart draws one memory alert's chart, data to PNG. It
// reports the CPU time a chart takes (cpu-ms/op, user and system, of the
// whole process), which a busy machine does not inflate as it does the
// wall time of ns/op. Targets: ≤ 30 cpu-ms/op, ≤ 10 MiB B/op.
func BenchmarkAlertChart(b *testing.B) {
	a := leakAlert()
	benchmarkPNG(b, func() ([]byte, error) { return a.PNG(paris) })
}

// BenchmarkHistoryChart draws what /gpu history answers for a host of
// four GPUs over 6 h: three panels, a point a minute.
func BenchmarkHistoryChart(b *testing.B) {
	h := fourGPUs()
	benchmarkPNG(b, func() ([]byte, error) { return h.PNG(paris) })
}

// benchmarkPNG runs draw b.N times and reports its CPU time.
func benchmarkPNG(b *testing.B, draw func() ([]byte, error)) {
	b.ReportAllocs()
	before := cpuTime()
	for b.Loop() {
		if _, err := draw(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-before)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestEncodePNGLossless: the encoder's PNG decodes to the very pixels
// drawn, for every kind of chart.
func TestEncodePNGLossless(t *testing.T) {
	for name, f := range kinds() {
		img, err := f.Image()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var buf bytes.Buffer
		if err := encodePNG(&buf, img); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := png.Decode(&buf)
		if err != nil {
			t.Fatalf("%s: the PNG does not decode: %v", name, err)
		}
		if got.Bounds() != img.Bounds() {
			t.Fatalf("%s: decoded %v, drew %v", name, got.Bounds(), img.Bounds())
		}
		for y := img.Rect.Min.Y; y < img.Rect.Max.Y; y++ {
			for x := img.Rect.Min.X; x < img.Rect.Max.X; x++ {
				if w, g := img.RGBAAt(x, y), color.RGBAModel.Convert(got.At(x, y)).(color.RGBA); w != g {
					t.Fatalf("%s: pixel (%d, %d) decodes as %v, was drawn %v", name, x, y, g, w)
				}
			}
		}
	}
}
