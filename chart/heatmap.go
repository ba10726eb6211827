package chart

import (
	"time"

	"github.com/go-analyze/charts/chartdraw"
)

// Heatmap is a grid of utilization: a row per GPU, a column per hour,
// coloured on the viridis scale, which reads in grey and to every common
// colour blindness; an hour without data is left blank.
type Heatmap struct {
	Title string
	Rows  []HeatmapRow
	// Start is the first column's hour; each column is an hour.
	Start time.Time
}

// HeatmapRow is one GPU's hours.
type HeatmapRow struct {
	Label  string    // "GPU 0"
	Values []float64 // percent per hour; NaN where unknown
}

const (
	heatRowHeight = 40
	heatLabelSize = 110
)

// heatTop is where the grid starts, under the title.
const heatTop = 64

func (h *Heatmap) height() int { return heatTop + heatRowHeight*len(h.Rows) + 44 + 56 }

func (h *Heatmap) paint(r chartdraw.Renderer, _, _ time.Time, loc *time.Location) error {
	cols := 0
	for _, row := range h.Rows {
		cols = max(cols, len(row.Values))
	}
	cols = max(cols, 1)
	top := heatTop
	left, right := margin+heatLabelSize, Width-margin
	cell := float64(right-left) / float64(cols)
	text(r, h.Title, margin+32, top-24, subtitleSize, colorText)
	for i, row := range h.Rows {
		y := top + i*heatRowHeight
		text(r, row.Label, margin, y+heatRowHeight-12, labelSize, colorMuted)
		for j, v := range row.Values {
			x0, x1 := left+int(float64(j)*cell), left+int(float64(j+1)*cell)
			if !finite(v) {
				fillRect(r, x0, y+1, x1-1, y+heatRowHeight-1, colorCanvas)
				continue
			}
			fillRect(r, x0, y+1, x1-1, y+heatRowHeight-1, chartdraw.Viridis(v, 0, 100))
		}
	}
	axis := top + heatRowHeight*len(h.Rows) + 30
	every := 1
	for cols/every > 12 {
		every++
	}
	for j := 0; j < cols; j += every {
		at := h.Start.Add(time.Duration(j) * time.Hour).In(loc)
		text(r, at.Format("15h"), left+int(float64(j)*cell)+2, axis, labelSize, colorMuted)
	}
	// The scale, under the grid.
	scaleY := axis + 18
	text(r, "0%", left, scaleY+28, labelSize, colorMuted)
	for k := 0; k < 100; k++ {
		x := left + 50 + k*4
		fillRect(r, x, scaleY+8, x+4, scaleY+32, chartdraw.Viridis(float64(k), 0, 100))
	}
	text(r, "100% utilization", left+50+400+10, scaleY+28, labelSize, colorMuted)
	return nil
}
