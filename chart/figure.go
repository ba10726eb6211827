package chart

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/draw"
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
	// height is how many rows of pixels the block takes.
	height() int
	// paint draws the block on r, a strip of the figure Width by
	// height(), for the span from–to with times in loc.
	paint(r chartdraw.Renderer, from, to time.Time, loc *time.Location) error
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
	if err := encodePNG(&buf, img); err != nil {
		return nil, fmt.Errorf("encode chart: %w", err)
	}
	return buf.Bytes(), nil
}

// Image renders the figure as an image: one image on the ground colour,
// each block drawn straight into its strip.
func (f *Figure) Image() (*image.RGBA, error) {
	if len(f.Blocks) == 0 {
		return nil, errors.New("chart: a figure needs at least one block")
	}
	loc := f.Location
	if loc == nil {
		loc = time.UTC
	}
	parts := make([]Block, 0, len(f.Blocks)+2)
	parts = append(parts, f.header())
	parts = append(parts, f.Blocks...)
	parts = append(parts, f.footer(loc))
	height := 0
	for _, p := range parts {
		height += p.height()
	}
	img := image.NewRGBA(image.Rect(0, 0, Width, height))
	draw.Draw(img, img.Rect, image.NewUniform(colorGround), image.Point{}, draw.Src)
	g := newGlyphs(dpi)
	y := 0
	for _, p := range parts {
		h := p.height()
		r := newStripRenderer(strip(img, y, h), g)
		if err := p.paint(r, f.From, f.To, loc); err != nil {
			return nil, err
		}
		if err := r.Save(nil); err != nil {
			return nil, fmt.Errorf("draw chart: %w", err)
		}
		y += h
	}
	return img, nil
}

// caption is a block of text: a figure's header or footer.
type caption struct {
	rows  int
	write func(r chartdraw.Renderer)
}

func (c caption) height() int { return c.rows }

func (c caption) paint(r chartdraw.Renderer, _, _ time.Time, _ *time.Location) error {
	c.write(r)
	return nil
}

// header is the title and the lines of context.
func (f *Figure) header() caption {
	lines := f.Subtitle
	if len(lines) > maxSubtitle {
		lines = lines[:maxSubtitle]
	}
	return caption{rows: margin + 40 + 32*len(lines) + 4, write: func(r chartdraw.Renderer) {
		text(r, clip(f.Title, 70), margin, margin+30, titleSize, colorText)
		for i, l := range lines {
			text(r, clip(l, 100), margin, margin+40+32*(i+1)-6, subtitleSize, colorMuted)
		}
	}}
}

// footer says which zone the times are in.
func (f *Figure) footer(loc *time.Location) caption {
	return caption{rows: 48, write: func(r chartdraw.Renderer) {
		text(r, "Times in "+zoneName(f.To, loc)+" · gpuwatch", margin, 32, labelSize, colorMuted)
	}}
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

// clip shortens s to n runes, with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
