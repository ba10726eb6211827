package chart

import (
	"errors"
	"image"
	"time"

	"github.com/go-analyze/charts/chartdraw"
)

// A node of many GPUs is drawn as small multiples: a small chart a GPU,
// two a row, each with its memory, utilization and temperature on one
// scale, under one legend. Colours tell the readings apart, not the GPUs,
// which the charts' titles name: eight or sixteen GPUs read as well as
// five, and no colour has to stand for two GPUs.

// gridColumns is how many GPUs a row of the grid shows: at two, a phone
// still shows each chart about 170 points wide.
const gridColumns = 2

// gridGap is the room between the columns.
const gridGap = 28

// gridCellHeight is the height of a GPU's chart.
const gridCellHeight = 230

// gridCellWidth is the width of a GPU's chart.
const gridCellWidth = (Width - 2*margin - (gridColumns-1)*gridGap) / gridColumns

// The readings of a GPU's chart, and how each is drawn.
var (
	gridMemory      = legendEntry{name: "Memory used (%)", color: colorSky}
	gridUtilization = legendEntry{name: "Utilization (%)", color: colorOrange}
	gridTemperature = legendEntry{name: "Temperature (°C)", color: colorPurple, dashed: true}
)

// gridLegend names the readings once, above the grid.
func gridLegend() caption {
	entries := []legendEntry{gridMemory, gridUtilization, gridTemperature}
	return caption{rows: labelRow + 14, write: func(r chartdraw.Renderer) {
		for i := range entries {
			entries[i].width = legendSample + textWidth(entries[i].name, labelSize)
		}
		panelLegend{}.drawRow(r, entries, margin, labelRow)
	}}
}

// hostHeading names the host whose GPUs the rows under it show.
func hostHeading(host string) caption {
	return caption{rows: labelRow + 12, write: func(r chartdraw.Renderer) {
		text(r, fit(host, subtitleSize, Width-2*margin), margin, labelRow+2, subtitleSize, colorText)
	}}
}

// gridCell is the chart of one GPU of the grid, on a value axis from 0
// to top.
func gridCell(title string, g *GPUHistory, top float64, marks []Mark) *Panel {
	p := &Panel{Title: title, Max: top, Height: gridCellHeight, Marks: marks, width: gridCellWidth, compact: true}
	mem := SeriesLine("", &g.MemoryPercent, gridMemory.color)
	mem.Fill = true
	p.Lines = append(p.Lines, mem, SeriesLine("", &g.Utilization, gridUtilization.color))
	if g.Temperature.Known() {
		temp := SeriesLine("", &g.Temperature, gridTemperature.color)
		temp.Dashed = true
		p.Lines = append(p.Lines, temp)
	}
	p.labelRunes = p.widestLabel()
	return p
}

// gridRow is a row of the grid: up to gridColumns charts side by side.
type gridRow struct {
	cells []*Panel
}

// aligned gives the charts of the row the same band of labels above
// their plots, so that the plots line up.
func (g gridRow) aligned() gridRow {
	band := 0
	for _, c := range g.cells {
		band = max(band, c.labelBand())
	}
	for _, c := range g.cells {
		c.band = band
	}
	return g
}

// height is the tallest chart's: one with a band for its alerts' names.
func (g gridRow) height() int {
	h := 0
	for _, c := range g.cells {
		h = max(h, c.height())
	}
	return h
}

// paint draws each chart in its own column of the strip, so that no
// line or label of one reaches into the next.
func (g gridRow) paint(r chartdraw.Renderer, from, to time.Time, loc *time.Location) error {
	sr, ok := r.(*stripRenderer)
	if !ok {
		return errors.New("chart: a grid draws on a figure's strip")
	}
	var errs []error
	for i, cell := range g.cells {
		x := margin + i*(gridCellWidth+gridGap)
		cr := newStripRenderer(column(sr.img, x, gridCellWidth), sr.glyphs)
		if err := cell.paint(cr, from, to, loc); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, cr.Save(nil))
	}
	return errors.Join(errs...)
}

// column is the part of img from column x, w wide, as an image of its
// own whose origin is its top left, sharing img's pixels.
func column(img *image.RGBA, x, w int) *image.RGBA {
	return &image.RGBA{
		Pix:    img.Pix[x*4:],
		Stride: img.Stride,
		Rect:   image.Rect(0, 0, w, img.Rect.Dy()),
	}
}
