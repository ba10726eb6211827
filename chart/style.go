package chart

import (
	"github.com/go-analyze/charts/chartdraw/drawing"
)

// The look of every chart: a dark slate ground that is easy on the eye
// in Slack's dark mode and still reads in its light mode, and the
// Okabe–Ito colours, which people with any common colour blindness tell
// apart. The darkest of them (blue) is left out: it vanishes on the
// ground.
var (
	colorGround = drawing.Color{R: 0x22, G: 0x26, B: 0x2c, A: 255}
	colorCanvas = drawing.Color{R: 0x1a, G: 0x1d, B: 0x22, A: 255}
	colorText   = drawing.Color{R: 0xe6, G: 0xe9, B: 0xed, A: 255}
	colorMuted  = drawing.Color{R: 0xa0, G: 0xa8, B: 0xb3, A: 255}
	colorGrid   = drawing.Color{R: 0x3a, G: 0x40, B: 0x49, A: 255}
	colorAxis   = drawing.Color{R: 0x6b, G: 0x74, B: 0x80, A: 255}

	// Okabe–Ito.
	colorSky       = drawing.Color{R: 0x56, G: 0xb4, B: 0xe9, A: 255}
	colorOrange    = drawing.Color{R: 0xe6, G: 0x9f, B: 0x00, A: 255}
	colorGreen     = drawing.Color{R: 0x00, G: 0x9e, B: 0x73, A: 255}
	colorYellow    = drawing.Color{R: 0xf0, G: 0xe4, B: 0x42, A: 255}
	colorVermilion = drawing.Color{R: 0xd5, G: 0x5e, B: 0x00, A: 255}
	colorPurple    = drawing.Color{R: 0xcc, G: 0x79, B: 0xa7, A: 255}
)

// seriesColors are the colours lines take in turn (one per GPU).
var seriesColors = []drawing.Color{colorSky, colorOrange, colorGreen, colorYellow, colorPurple, colorVermilion}

// seriesColor is the colour of the i-th line.
func seriesColor(i int) drawing.Color { return seriesColors[i%len(seriesColors)] }

// Sizes, in pixels at the charts' DPI. A Slack phone client shows a
// 1,000-pixel picture about 360 points wide: labels must be large.
const (
	// Width is every chart's width.
	Width = 1000
	dpi   = 96.0

	titleSize    = 30.0
	subtitleSize = 21.0
	axisSize     = 19.0
	labelSize    = 18.0
	lineWidth    = 4.0
	markWidth    = 3.0
	panelHeight  = 400
	margin       = 28
)

// palette is chartdraw's view of the look.
type palette struct{}

// The ground is filled before chartdraw draws (see groundedPNG): its own
// fills, through the vector rasterizer, cost more than the rest of a
// chart. The zero colour tells it to fill nothing.
func (palette) BackgroundColor() drawing.Color       { return drawing.Color{} }
func (palette) BackgroundStrokeColor() drawing.Color { return drawing.Color{} }
func (palette) CanvasColor() drawing.Color           { return drawing.Color{} }
func (palette) CanvasStrokeColor() drawing.Color     { return drawing.Color{} }
func (palette) AxisStrokeColor() drawing.Color       { return colorAxis }
func (palette) TextColor() drawing.Color             { return colorText }
func (palette) GetSeriesColor(i int) drawing.Color   { return seriesColor(i) }
