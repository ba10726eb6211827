package chart

import (
	"image"

	"github.com/go-analyze/charts/chartdraw"
	"github.com/go-analyze/charts/chartdraw/drawing"
)

type alignment int

const (
	alignLeft alignment = iota
	alignRight
	alignCenter
)

// setFont sets the renderer's font for text of size in colour.
func setFont(r chartdraw.Renderer, size float64, color drawing.Color) {
	r.SetFont(chartdraw.GetDefaultFont())
	r.SetFontSize(size)
	r.SetFontColor(color)
}

// text writes s with its baseline at y.
func text(r chartdraw.Renderer, s string, x, y int, size float64, color drawing.Color) {
	setFont(r, size, color)
	r.Text(s, x, y)
}

// label writes s on a dark backing, so it reads over lines and grid,
// with its baseline at y, starting at x, ending at x or centred on it.
func label(r chartdraw.Renderer, s string, x, y int, color drawing.Color, align alignment) {
	if s == "" {
		return
	}
	labelIn(r, s, labelBox(s, x, y, align), color)
}

// labelIn writes s on a dark backing that fills box, as labelBox gives
// it.
func labelIn(r chartdraw.Renderer, s string, box image.Rectangle, color drawing.Color) {
	r.SetFillColor(colorCanvas.WithAlpha(220))
	r.SetStrokeWidth(0)
	r.SetStrokeColor(drawing.ColorTransparent)
	r.MoveTo(box.Min.X, box.Min.Y)
	r.LineTo(box.Max.X, box.Min.Y)
	r.LineTo(box.Max.X, box.Max.Y)
	r.LineTo(box.Min.X, box.Max.Y)
	r.Close()
	r.Fill()
	setFont(r, labelSize, color)
	r.Text(s, box.Min.X+6, box.Max.Y-8)
}

// stroke sets the renderer's pen.
func stroke(r chartdraw.Renderer, color drawing.Color, width float64, dashed bool) {
	r.SetStrokeColor(color)
	r.SetStrokeWidth(width)
	if dashed {
		r.SetStrokeDashArray([]float64{12, 9})
	} else {
		r.SetStrokeDashArray(nil)
	}
}
