package chart

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"maps"
	"math"
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
		"history-8": eightGPUs().Figure(paris), "history-16": sixteenGPUs().Figure(paris),
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

// BenchmarkHistoryChart16GPUs draws what /gpu history answers for a node
// of sixteen GPUs over 6 h, two alerts marked: a chart a GPU.
func BenchmarkHistoryChart16GPUs(b *testing.B) {
	h := sixteenGPUs()
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

// crowded are figures whose text is longer than a picture is wide: a
// holder's command line of many arguments, hosts with long names, a long
// title, alerts close in time.
func crowded() map[string]*Figure {
	leak := leakAlert()
	leak.Holder = "pid 4242 · alice · python -m torch.distributed.run --nproc_per_node=8 train.py --config configs/llama-70b-finetune.yaml --epochs 90 --lr 3e-4"
	leak.Host = "gpu-node-with-a-very-long-hostname-17.cluster.example.org"
	hosts := fourGPUs()
	hosts.Title = "gpu-node-with-a-very-long-hostname-17.cluster.example.org and three more hosts · last 6 h"
	for i := range hosts.GPUs {
		hosts.GPUs[i].Host = fmt.Sprintf("gpu-node-%d.cluster.example.org", i)
	}
	hosts.Alerts = []AlertSpan{
		{Alert: "GPUMemoryLeak", Host: "gpu-node-3.cluster.example.org", GPU: 3, FiredAt: fixedStart.Add(4 * time.Hour)},
		{Alert: "GPUOutOfMemorySoon", Host: "gpu-node-3.cluster.example.org", GPU: 3, FiredAt: fixedStart.Add(4*time.Hour + 5*time.Minute)},
		{Alert: "GPUMemoryNearFull", Host: "gpu-node-2.cluster.example.org", GPU: 2, FiredAt: fixedStart.Add(4*time.Hour + 8*time.Minute)},
	}
	many := sixteenGPUs()
	for i := range many.GPUs {
		many.GPUs[i].Host = fmt.Sprintf("gpu-node-with-a-long-name-%d", i/8)
	}
	for i := range many.Alerts {
		many.Alerts[i].Host = "gpu-node-with-a-long-name-" + fmt.Sprint(many.Alerts[i].GPU/8)
	}
	return map[string]*Figure{"long holder": leak.Figure(paris), "long hosts": hosts.Figure(paris), "many hosts": many.Figure(paris)}
}

// TestTextStaysInside: no text or line runs off a picture: the band at
// its right edge is bare ground on every chart, the crowded ones too.
func TestTextStaysInside(t *testing.T) {
	figures := kinds()
	maps.Copy(figures, crowded())
	for name, f := range figures {
		img, err := f.Image()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for y := img.Rect.Min.Y; y < img.Rect.Max.Y; y++ {
			for x := Width - margin/2; x < Width; x++ {
				if c := img.RGBAAt(x, y); c != (color.RGBA{colorGround.R, colorGround.G, colorGround.B, colorGround.A}) {
					t.Errorf("%s: pixel (%d, %d) at the picture's right edge is %v, not the ground: something runs off the picture", name, x, y, c)
					break
				}
			}
			if t.Failed() {
				break
			}
		}
	}
}

// TestMarkLabelsApart: the labels of marks close in time never cover one
// another, nor a rule's label, and stay within the plot.
func TestMarkLabelsApart(t *testing.T) {
	plot := image.Rect(40, 60, 900, 380)
	var l layout
	rule := labelBox("allocatable 79.1 GiB", plot.Min.X+10, 90, alignLeft)
	l.take(rule)
	var placed []image.Rectangle
	for i, name := range []string{"GPUMemoryLeak", "GPUOutOfMemorySoon", "GPUMemoryNearFull", "GPUHot", "GPUIdleButHeld"} {
		x := 120 + 9*i
		_, b, ok := l.placeMark([]string{name + " 18:3" + fmt.Sprint(i), name}, x, plot)
		if !ok {
			t.Fatalf("%s: no room for its label in a plot of %d rows", name, labelRows(plot))
		}
		if !b.In(plot) {
			t.Errorf("%s: label %v out of the plot", name, b)
		}
		for _, o := range append(placed, rule) {
			if b.Overlaps(o) {
				t.Errorf("%s: label %v covers %v", name, b, o)
			}
		}
		placed = append(placed, b)
	}
}

// TestGridForManyGPUs: a node of more than four GPUs is drawn as a chart
// a GPU, each alert on its own GPU's chart, at most 16 GPUs.
func TestGridForManyGPUs(t *testing.T) {
	f := sixteenGPUs().Figure(paris)
	var cells []*Panel
	for _, b := range f.Blocks {
		if row, ok := b.(gridRow); ok {
			cells = append(cells, row.cells...)
		}
	}
	if len(cells) != 16 {
		t.Fatalf("16 GPUs: got %d charts, want 16", len(cells))
	}
	for i, c := range cells {
		want := 0
		if i == 3 || i == 13 {
			want = 1
		}
		named := 0
		for _, m := range c.Marks {
			if m.Label != "" {
				named++
			}
		}
		if named != want {
			t.Errorf("GPU %d's chart names %d alerts, want %d", i, named, want)
		}
	}
	h := node(20)
	if got := h.Figure(paris).Subtitle[0]; got != "The first 16 of 20 GPUs; ask for one host or GPU to see the others" {
		t.Errorf("20 GPUs: subtitle %q", got)
	}
}

// TestDayJSON: a day's hours without data (NaN) survive the store, as
// JSON nulls: a digest's picture is kept as JSON until it is drawn.
func TestDayJSON(t *testing.T) {
	d := Day{Title: "GPU usage on node1", Start: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC),
		GPUs: []DayGPU{{Label: "GPU 0", Utilization: Values{math.NaN(), 50, math.NaN()}, HeldHours: 1}}}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatalf("a day with unknown hours does not encode: %v", err)
	}
	var back Day
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if u := back.GPUs[0].Utilization; len(u) != 3 || !math.IsNaN(u[0]) || u[1] != 50 || !math.IsNaN(u[2]) {
		t.Errorf("utilization after JSON: %v, want [NaN 50 NaN]", u)
	}
}
