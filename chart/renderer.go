package chart

import (
	"errors"
	"image"
	"io"
	"math"

	"github.com/go-analyze/charts/chartdraw"
	"github.com/go-analyze/charts/chartdraw/drawing"
	"github.com/golang/freetype/truetype"
)

// stripRenderer is chartdraw's Renderer drawing straight into a strip of a
// figure's one image: no image of its own to allocate, clear and copy.
// Shapes go through chartdraw's rasterizer, except those that would
// paint nothing (a transparent fill, a stroke without width), which are
// dropped before it; text is drawn from glyphs rasterized once per figure
// (see glyphs) instead of filling each character's outline every time.
type stripRenderer struct {
	img    *image.RGBA
	gc     *drawing.RasterGraphicContext
	glyphs *glyphs
	style  chartdraw.Style
	// rotate is the text's rotation in radians, nil when upright.
	rotate *float64
	errs   []error
}

// strip is the part of img from row y, h rows high, as an image of its
// own whose origin is its top left, sharing img's pixels.
func strip(img *image.RGBA, y, h int) *image.RGBA {
	return &image.RGBA{
		Pix:    img.Pix[y*img.Stride : (y+h)*img.Stride],
		Stride: img.Stride,
		Rect:   image.Rect(0, 0, img.Rect.Dx(), h),
	}
}

// newStripRenderer returns a renderer drawing on img with the figure's glyphs.
func newStripRenderer(img *image.RGBA, g *glyphs) *stripRenderer {
	gc := drawing.NewRasterGraphicContext(img)
	gc.SetDPI(g.dpi)
	return &stripRenderer{img: img, gc: gc, glyphs: g}
}

// ResetStyle forgets everything but the font, as chartdraw expects.
func (r *stripRenderer) ResetStyle() {
	r.style = chartdraw.Style{FontStyle: chartdraw.FontStyle{Font: r.style.Font}}
	r.rotate = nil
}

func (r *stripRenderer) GetDPI() float64 { return r.gc.GetDPI() }

// SetDPI keeps the figure's: glyphs are rasterized at it.
func (r *stripRenderer) SetDPI(float64) {}

func (r *stripRenderer) SetClassName(string)                 {}
func (r *stripRenderer) SetStrokeColor(c drawing.Color)      { r.style.StrokeColor = c }
func (r *stripRenderer) SetFillColor(c drawing.Color)        { r.style.FillColor = c }
func (r *stripRenderer) SetStrokeWidth(w float64)            { r.style.StrokeWidth = w }
func (r *stripRenderer) SetStrokeDashArray(dashes []float64) { r.style.StrokeDashArray = dashes }
func (r *stripRenderer) MoveTo(x, y int)                     { r.gc.MoveTo(float64(x), float64(y)) }
func (r *stripRenderer) LineTo(x, y int)                     { r.gc.LineTo(float64(x), float64(y)) }
func (r *stripRenderer) Close()                              { r.gc.Close() }
func (r *stripRenderer) SetFont(f *truetype.Font)            { r.style.Font = f }
func (r *stripRenderer) SetFontColor(c drawing.Color)        { r.style.FontColor = c }
func (r *stripRenderer) SetFontSize(size float64)            { r.style.FontSize = size }
func (r *stripRenderer) SetTextRotation(radians float64)     { r.rotate = &radians }
func (r *stripRenderer) ClearTextRotation()                  { r.rotate = nil }
func (r *stripRenderer) QuadCurveTo(cx, cy, x, y int) {
	r.gc.QuadCurveTo(float64(cx), float64(cy), float64(x), float64(y))
}
func (r *stripRenderer) ArcTo(cx, cy int, rx, ry, a, d float64) {
	r.gc.ArcTo(float64(cx), float64(cy), rx, ry, a, d)
}

// strokes reports whether a stroke would paint.
func (r *stripRenderer) strokes() bool { return r.style.StrokeWidth > 0 && r.style.StrokeColor.A > 0 }

// fills reports whether a fill would paint.
func (r *stripRenderer) fills() bool { return r.style.FillColor.A > 0 }

func (r *stripRenderer) setPen() {
	r.gc.SetStrokeColor(r.style.StrokeColor)
	r.gc.SetLineWidth(r.style.StrokeWidth)
	r.gc.SetLineDash(r.style.StrokeDashArray, 0)
}

// Stroke draws the path's outline.
func (r *stripRenderer) Stroke() {
	if !r.strokes() {
		r.gc.BeginPath()
		return
	}
	r.setPen()
	r.gc.Stroke()
}

// Fill fills the path.
func (r *stripRenderer) Fill() {
	if !r.fills() {
		r.gc.BeginPath()
		return
	}
	r.gc.SetFillColor(r.style.FillColor)
	r.gc.Fill()
}

// FillStroke fills the path, then draws its outline.
func (r *stripRenderer) FillStroke() {
	switch fill, stroke := r.fills(), r.strokes(); {
	case fill && stroke:
		r.gc.SetFillColor(r.style.FillColor)
		r.setPen()
		r.gc.FillStroke()
	case fill:
		r.Fill()
	default:
		r.Stroke()
	}
}

// Circle adds a circle to the path.
func (r *stripRenderer) Circle(radius float64, x, y int) {
	xf, yf := float64(x), float64(y)
	if !(radius > 0) || math.IsInf(radius, 0) {
		r.gc.MoveTo(xf, yf)
		return
	}
	r.gc.MoveTo(xf+radius, yf)
	r.gc.ArcTo(xf, yf, radius, radius, 0, 2*math.Pi)
}

// font is the font text is drawn in: the style's, else chartdraw's.
func (r *stripRenderer) font() *truetype.Font {
	if r.style.Font != nil {
		return r.style.Font
	}
	return chartdraw.GetDefaultFont()
}

// Text writes body with its baseline at y, from x.
func (r *stripRenderer) Text(body string, x, y int) {
	if body == "" {
		return
	}
	f := r.font()
	if f == nil {
		r.errs = append(r.errs, errors.New("chart: no font to write text in"))
		return
	}
	if r.rotate == nil {
		r.glyphs.draw(r.img, body, x, y, f, r.style.FontSize, r.style.FontColor)
		return
	}
	// Turned text (chartdraw's for rotated labels) is filled as outlines.
	r.gc.SetFont(f)
	r.gc.SetFontSize(r.style.FontSize)
	r.gc.SetFillColor(r.style.FontColor)
	tr := r.gc.GetMatrixTransform()
	defer r.gc.SetMatrixTransform(tr)
	r.gc.Translate(float64(x), float64(y))
	r.gc.Rotate(*r.rotate)
	if _, err := r.gc.CreateStringPath(body, 0, 0); err != nil {
		r.errs = append(r.errs, err)
	}
	r.gc.Fill()
}

// MeasureText is the box body takes: its advance wide, an em high.
func (r *stripRenderer) MeasureText(body string) chartdraw.Box {
	f := r.font()
	if f == nil {
		return chartdraw.Box{}
	}
	box := chartdraw.Box{
		Right:  r.glyphs.width(body, f, r.style.FontSize),
		Bottom: r.glyphs.emHeight(r.style.FontSize),
		IsSet:  true,
	}
	if r.rotate == nil {
		return box
	}
	return box.Corners().Rotate(chartdraw.RadiansToDegrees(*r.rotate)).Box()
}

// Save reports what failed while drawing; the pixels are already in
// the figure.
func (r *stripRenderer) Save(io.Writer) error { return errors.Join(r.errs...) }
