package chart

import (
	"image"
	"image/color"
	"image/draw"
	"math"

	"github.com/go-analyze/charts/chartdraw/drawing"
	"github.com/golang/freetype/raster"
	"github.com/golang/freetype/truetype"
	"golang.org/x/image/font"
	"golang.org/x/image/math/fixed"
)

// glyphs draws a figure's text. A chart repeats few characters (digits,
// units, a title) in few sizes: each glyph is rasterized once, at a
// quarter-pixel position, and kept as a small mask that later
// occurrences are blended from, where chartdraw fills every character's
// outline anew. Outlines are filled with the non-zero rule, as
// chartdraw's are (the glyphs of its fonts overlap their own strokes);
// characters the font lacks come from chartdraw's fallback fonts.
type glyphs struct {
	dpi   float64
	masks map[glyphKey]*glyphMask
	buf   truetype.GlyphBuf
	r     *raster.Rasterizer
}

type glyphKey struct {
	font  *truetype.Font
	scale fixed.Int26_6
	index truetype.Index
	// fx is where the glyph starts within its pixel, in 64ths, a
	// multiple of 64/subPixels.
	fx fixed.Int26_6
}

// glyphMask is a rasterized glyph: its coverage, placed at off from its
// dot's pixel.
type glyphMask struct {
	mask *image.Alpha
	off  image.Point
}

// subPixels is how many places within a pixel a glyph is rasterized at:
// letters sit within an eighth of a pixel of where they belong.
const subPixels = 4

func newGlyphs(dpi float64) *glyphs {
	return &glyphs{dpi: dpi, masks: map[glyphKey]*glyphMask{}, r: raster.NewRasterizer(0, 0)}
}

// scale is size in 26.6 pixels an em, rounded as chartdraw rounds it.
func (g *glyphs) scale(size float64) fixed.Int26_6 {
	return fixed.Int26_6(math.Round(drawing.PointsToPixels(g.dpi, size) * 64))
}

// emHeight is the height chartdraw gives a line of text at size.
func (g *glyphs) emHeight(size float64) int {
	return int(math.Ceil(drawing.PointsToPixels(g.dpi, size)))
}

// glyphOf is the font that has r, f or the first fallback font with it,
// and r's glyph in it.
func glyphOf(f *truetype.Font, r rune) (*truetype.Font, truetype.Index) {
	if i := f.Index(r); i != 0 {
		return f, i
	}
	for _, name := range drawing.FallbackFonts {
		if fb := drawing.GetFont(name); fb != nil {
			if i := fb.Index(r); i != 0 {
				return fb, i
			}
		}
	}
	return f, 0
}

// layout calls each (when not nil) for every character of s written in f
// at size from the dot x (26.6 pixels): the glyph and where it starts. It
// returns where the text ends.
func (g *glyphs) layout(s string, x fixed.Int26_6, f *truetype.Font, size float64, each func(k glyphKey, x fixed.Int26_6)) fixed.Int26_6 {
	scale := g.scale(size)
	var prev glyphKey
	for i, r := range s {
		font, index := glyphOf(f, r)
		k := glyphKey{font: font, scale: scale, index: index}
		if i > 0 && prev.font == font {
			x += font.Kern(scale, prev.index, index)
		}
		if each != nil {
			each(k, x)
		}
		x += font.HMetric(scale, index).AdvanceWidth
		prev = k
	}
	return x
}

// width is how far s advances, in whole pixels.
func (g *glyphs) width(s string, f *truetype.Font, size float64) int {
	return g.layout(s, 0, f, size, nil).Ceil()
}

// draw writes s in colour c with its baseline at y, from x.
func (g *glyphs) draw(dst *image.RGBA, s string, x, y int, f *truetype.Font, size float64, c color.Color) {
	src := image.NewUniform(c)
	g.layout(s, fixed.I(x), f, size, func(k glyphKey, at fixed.Int26_6) {
		at = (at + 64/subPixels/2) &^ (64/subPixels - 1) // the nearest place a glyph is rasterized at
		k.fx = at & 63
		m := g.mask(k)
		if m == nil {
			return
		}
		p := m.off.Add(image.Pt(at.Floor(), y))
		draw.DrawMask(dst, m.mask.Rect.Add(p), src, image.Point{}, m.mask, image.Point{}, draw.Over)
	})
}

// mask is k's glyph, rasterized on first use; nil for one without ink
// (a space) or that does not load.
func (g *glyphs) mask(k glyphKey) *glyphMask {
	if m, ok := g.masks[k]; ok {
		return m
	}
	m := g.rasterize(k)
	g.masks[k] = m
	return m
}

func (g *glyphs) rasterize(k glyphKey) *glyphMask {
	if err := g.buf.Load(k.font, k.scale, k.index, font.HintingNone); err != nil {
		return nil
	}
	b := g.buf.Bounds
	xmin, ymin := int(k.fx+b.Min.X)>>6, int(-b.Max.Y)>>6
	xmax, ymax := int(k.fx+b.Max.X+63)>>6, int(-b.Min.Y+63)>>6
	if xmin >= xmax || ymin >= ymax {
		return nil
	}
	w, h := xmax-xmin, ymax-ymin
	g.r.SetBounds(w, h)
	g.r.UseNonZeroWinding = true
	g.r.Clear()
	out := outline{r: g.r}
	dx, dy := float64(k.fx)/64-float64(xmin), -float64(ymin)
	e0 := 0
	for _, e1 := range g.buf.Ends {
		drawing.DrawContour(out, g.buf.Points[e0:e1], dx, dy)
		e0 = e1
	}
	mask := image.NewAlpha(image.Rect(0, 0, w, h))
	g.r.Rasterize(raster.NewAlphaSrcPainter(mask))
	return &glyphMask{mask: mask, off: image.Pt(xmin, ymin)}
}

// outline hands a glyph's contours, in pixels, to freetype's rasterizer.
type outline struct{ r *raster.Rasterizer }

func p26(x, y float64) fixed.Point26_6 {
	return fixed.Point26_6{X: fixed.Int26_6(math.Round(x * 64)), Y: fixed.Int26_6(math.Round(y * 64))}
}

func (o outline) MoveTo(x, y float64)              { o.r.Start(p26(x, y)) }
func (o outline) LineTo(x, y float64)              { o.r.Add1(p26(x, y)) }
func (o outline) QuadCurveTo(cx, cy, x, y float64) { o.r.Add2(p26(cx, cy), p26(x, y)) }
func (o outline) CubicCurveTo(c1x, c1y, c2x, c2y, x, y float64) {
	o.r.Add3(p26(c1x, c1y), p26(c2x, c2y), p26(x, y))
}

// Glyph outlines are lines and quadratic curves only; a contour closes
// where the next starts.
func (outline) ArcTo(_, _, _, _, _, _ float64) {}
func (outline) Close()                         {}
func (outline) LastPoint() (float64, float64)  { return 0, 0 }
