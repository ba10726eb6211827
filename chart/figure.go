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

// maxSubtitle is how many lines of context a figure shows; a line too
// long for the figure's width goes on to a second, within
// maxSubtitleRows in all.
const (
	maxSubtitle     = 4
	maxSubtitleRows = 5
)

// PNG renders the figure, a strip at a time: only the tallest block's
// pixels are held, each strip encoded as soon as it is drawn.
func (f *Figure) PNG() ([]byte, error) {
	parts, err := f.parts()
	if err != nil {
		return nil, err
	}
	height, tallest := 0, 0
	for _, p := range parts {
		height += p.height()
		tallest = max(tallest, p.height())
	}
	enc, err := newPNGWriter(Width, height)
	if err != nil {
		return nil, fmt.Errorf("encode chart: %w", err)
	}
	buf := image.NewRGBA(image.Rect(0, 0, Width, tallest))
	err = f.draw(parts, func(_, h int) *image.RGBA { return strip(buf, 0, h) }, enc.writeRows)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := enc.finish(&out); err != nil {
		return nil, fmt.Errorf("encode chart: %w", err)
	}
	return out.Bytes(), nil
}

// Image renders the figure as one image.
func (f *Figure) Image() (*image.RGBA, error) {
	parts, err := f.parts()
	if err != nil {
		return nil, err
	}
	height := 0
	for _, p := range parts {
		height += p.height()
	}
	img := image.NewRGBA(image.Rect(0, 0, Width, height))
	if err := f.draw(parts, func(y, h int) *image.RGBA { return strip(img, y, h) }, nil); err != nil {
		return nil, err
	}
	return img, nil
}

// parts are the figure's blocks from the top: its header, its blocks,
// its footer.
func (f *Figure) parts() ([]Block, error) {
	if len(f.Blocks) == 0 {
		return nil, errors.New("chart: a figure needs at least one block")
	}
	widest := 0
	for _, b := range f.Blocks {
		if p, ok := b.(*Panel); ok {
			widest = max(widest, p.widestLabel())
		}
	}
	parts := make([]Block, 0, len(f.Blocks)+2)
	parts = append(parts, f.header())
	for _, b := range f.Blocks {
		if p, ok := b.(*Panel); ok {
			aligned := *p // the caller's panel stays as it is
			aligned.labelRunes = widest
			b = &aligned
		}
		parts = append(parts, b)
	}
	return append(parts, f.footer(f.location())), nil
}

func (f *Figure) location() *time.Location {
	if f.Location == nil {
		return time.UTC
	}
	return f.Location
}

// draw paints each part on the ground colour, straight into the strip
// at(y, h) gives it (y its top in the figure), and hands each strip
// painted to done, when not nil.
func (f *Figure) draw(parts []Block, at func(y, h int) *image.RGBA, done func(*image.RGBA) error) error {
	g := newGlyphs(dpi)
	y := 0
	for _, p := range parts {
		h := p.height()
		img := at(y, h)
		draw.Draw(img, img.Rect, image.NewUniform(colorGround), image.Point{}, draw.Src)
		r := newStripRenderer(img, g)
		if err := p.paint(r, f.From, f.To, f.location()); err != nil {
			return err
		}
		if err := r.Save(nil); err != nil {
			return fmt.Errorf("draw chart: %w", err)
		}
		if done != nil {
			if err := done(img); err != nil {
				return fmt.Errorf("encode chart: %w", err)
			}
		}
		y += h
	}
	return nil
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

// header is the title and the lines of context, each cut with an
// ellipsis where it would run off the picture.
func (f *Figure) header() caption {
	room := Width - 2*margin
	var lines []string
	for i, l := range f.Subtitle {
		if i == maxSubtitle {
			break
		}
		if len(lines) == maxSubtitleRows {
			break
		}
		lines = append(lines, wrap(l, subtitleSize, room, min(2, maxSubtitleRows-len(lines)))...)
	}
	return caption{rows: margin + 40 + 32*len(lines) + 4, write: func(r chartdraw.Renderer) {
		text(r, fit(f.Title, titleSize, room), margin, margin+30, titleSize, colorText)
		for i, l := range lines {
			text(r, l, margin, margin+40+32*(i+1)-6, subtitleSize, colorMuted)
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
