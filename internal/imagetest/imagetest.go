// Package imagetest compares rendered pictures with golden files in
// tests, tolerant to anti-aliasing: a few pixels off by a shade (a font
// rasterizer's rounding on another CPU) pass, a moved line or a missing
// label does not.
package imagetest

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// Tolerances: a pixel differs when a channel is off by more than
// channelSlack (of 255); a picture differs when more than maxDiffShare of
// its pixels do.
const (
	channelSlack = 48
	maxDiffShare = 0.003
)

// Golden compares the PNG got with the golden file path, or writes it
// there when update is set.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run the test with -update to make it", err)
	}
	if err := Same(got, want); err != nil {
		bad := filepath.Join(t.TempDir(), filepath.Base(path))
		os.WriteFile(bad, got, 0o644)
		t.Errorf("%s: %v; the picture drawn is at %s (-update takes it as the new golden file)", path, err, bad)
	}
}

// Same reports how two PNGs differ beyond anti-aliasing; nil when they
// do not.
func Same(got, want []byte) error {
	a, err := png.Decode(bytes.NewReader(got))
	if err != nil {
		return fmt.Errorf("the picture drawn is not a PNG: %w", err)
	}
	b, err := png.Decode(bytes.NewReader(want))
	if err != nil {
		return fmt.Errorf("the golden file is not a PNG: %w", err)
	}
	if a.Bounds().Size() != b.Bounds().Size() {
		return fmt.Errorf("size %v, want %v", a.Bounds().Size(), b.Bounds().Size())
	}
	diff, total := 0, a.Bounds().Dx()*a.Bounds().Dy()
	for y := a.Bounds().Min.Y; y < a.Bounds().Max.Y; y++ {
		for x := a.Bounds().Min.X; x < a.Bounds().Max.X; x++ {
			if !close(a, b, x, y) {
				diff++
			}
		}
	}
	if float64(diff) > maxDiffShare*float64(total) {
		return fmt.Errorf("%d of %d pixels differ (more than %.1f%%)", diff, total, 100*maxDiffShare)
	}
	return nil
}

func close(a, b image.Image, x, y int) bool {
	r1, g1, b1, a1 := a.At(x, y).RGBA()
	r2, g2, b2, a2 := b.At(x-a.Bounds().Min.X+b.Bounds().Min.X, y-a.Bounds().Min.Y+b.Bounds().Min.Y).RGBA()
	near := func(p, q uint32) bool {
		d := int(p>>8) - int(q>>8)
		return d <= channelSlack && d >= -channelSlack
	}
	return near(r1, r2) && near(g1, g2) && near(b1, b2) && near(a1, a2)
}

// Readable checks a PNG is a chart a phone reads: at least minWidth wide,
// and not blank (many colours, no single one covering nearly all of it).
func Readable(t testing.TB, name string, pic []byte, minWidth int) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(pic))
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", name, err)
	}
	size := img.Bounds().Size()
	if size.X < minWidth || size.Y < 300 {
		t.Errorf("%s: %v, want at least %d wide and 300 high", name, size, minWidth)
	}
	counts := map[[4]uint32]int{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y += 2 {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x += 2 {
			r, g, b, a := img.At(x, y).RGBA()
			counts[[4]uint32{r >> 10, g >> 10, b >> 10, a >> 10}]++
		}
	}
	most, total := 0, 0
	for _, n := range counts {
		most, total = max(most, n), total+n
	}
	if len(counts) < 16 || float64(most) > 0.97*float64(total) {
		t.Errorf("%s: looks blank: %d colours, the commonest covers %d of %d pixels", name, len(counts), most, total)
	}
	return img
}
