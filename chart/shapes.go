package chart

import (
	"github.com/go-analyze/charts/chartdraw"
	"github.com/go-analyze/charts/chartdraw/drawing"
)

// fillRect fills the rectangle from (left, top) to (right, bottom).
func fillRect(r chartdraw.Renderer, left, top, right, bottom int, color drawing.Color) {
	r.SetFillColor(color)
	r.SetStrokeColor(drawing.ColorTransparent)
	r.SetStrokeWidth(0)
	r.MoveTo(left, top)
	r.LineTo(right, top)
	r.LineTo(right, bottom)
	r.LineTo(left, bottom)
	r.Close()
	r.Fill()
}
