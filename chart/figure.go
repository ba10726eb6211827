package chart

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"time"

	"github.com/go-analyze/charts/chartdraw"
)

// Figure is one picture: a title, lines of context under it, and blocks
// (time panels, a heatmap, bars) stacked under each other, all Width
// wide. Times are shown in Location, whose name the picture says.
type Figure struct {
	Title    string
	Subtitle []string
	// From and To bound the time panels.
	From, To time.Time
	// Location is the zone of the times shown; nil means UTC.
	Location *time.Location
	Blocks   []Block
}

// Block is a part of a figure, drawn Width wide.
type Block interface {
	draw(from, to time.Time, loc *time.Location) (*image.RGBA, error)
}

func (p *Panel) draw(from, to time.Time, loc *time.Location) (*image.RGBA, error) {
	return p.render(from, to, loc)
}

// maxSubtitle is how many lines of context a figure shows.
const maxSubtitle = 4

// PNG renders the figure.
func (f *Figure) PNG() ([]byte, error) {
	img, err := f.Image()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encode chart: %w", err)
	}
	return buf.Bytes(), nil
}

// Image renders the figure as an image.
func (f *Figure) Image() (*image.RGBA, error) {
	if len(f.Blocks) == 0 {
		return nil, errors.New("chart: a figure needs at least one block")
	}
	loc := f.Location
	if loc == nil {
		loc = time.UTC
	}
	parts := make([]*image.RGBA, 0, len(f.Blocks)+2)
	head, err := f.header(loc)
	if err != nil {
		return nil, err
	}
	parts = append(parts, head)
	for _, b := range f.Blocks {
		img, err := b.draw(f.From, f.To, loc)
		if err != nil {
			return nil, err
		}
		parts = append(parts, img)
	}
	foot, err := f.footer(loc)
	if err != nil {
		return nil, err
	}
	parts = append(parts, foot)
	height := 0
	for _, p := range parts {
		height += p.Bounds().Dy()
	}
	out := image.NewRGBA(image.Rect(0, 0, Width, height))
	y := 0
	for _, p := range parts {
		r := image.Rect(0, y, Width, y+p.Bounds().Dy())
		draw.Draw(out, r, p, p.Bounds().Min, draw.Src)
		y += p.Bounds().Dy()
	}
	return out, nil
}

// header draws the title and the lines of context.
func (f *Figure) header(*time.Location) (*image.RGBA, error) {
	lines := f.Subtitle
	if len(lines) > maxSubtitle {
		lines = lines[:maxSubtitle]
	}
	height := margin + 40 + 32*len(lines) + 4
	return canvas(height, func(r chartdraw.Renderer) {
		text(r, clip(f.Title, 70), margin, margin+30, titleSize, colorText)
		for i, l := range lines {
			text(r, clip(l, 100), margin, margin+40+32*(i+1)-6, subtitleSize, colorMuted)
		}
	})
}

// footer says which zone the times are in.
func (f *Figure) footer(loc *time.Location) (*image.RGBA, error) {
	return canvas(48, func(r chartdraw.Renderer) {
		text(r, "Times in "+zoneName(f.To, loc)+" · gpuwatch", margin, 32, labelSize, colorMuted)
	})
}

// zoneName names loc as people read it: "Europe/Paris (CET)", "UTC".
func zoneName(at time.Time, loc *time.Location) string {
	abbr, _ := at.In(loc).Zone()
	name := loc.String()
	if name == "" || name == "Local" || name == abbr {
		return abbr
	}
	return name + " (" + abbr + ")"
}

// canvas draws on a new strip of the figure, Width by height, on the
// ground colour.
func canvas(height int, paint func(r chartdraw.Renderer)) (*image.RGBA, error) {
	r := groundedPNG(Width, height)
	r.SetDPI(dpi)
	paint(r)
	var out rgbaCollector
	if err := r.Save(&out); err != nil {
		return nil, fmt.Errorf("draw chart: %w", err)
	}
	return out.img, nil
}

// clip shortens s to n runes, with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// groundedPNG is chartdraw's raster renderer on an image already filled
// with the ground colour, a plain copy of it, much cheaper than a fill
// through the rasterizer.
func groundedPNG(width, height int) chartdraw.Renderer {
	r := chartdraw.PNG(width, height)
	var img rgbaCollector
	if r.Save(&img) == nil && img.img != nil {
		draw.Draw(img.img, img.img.Bounds(), image.NewUniform(colorGround), image.Point{}, draw.Src)
	}
	return r
}
