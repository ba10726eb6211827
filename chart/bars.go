package chart

import (
	"fmt"
	"time"

	"github.com/go-analyze/charts/chartdraw"
	"github.com/go-analyze/charts/chartdraw/drawing"
)

// Bars is a horizontal bar chart: a row per item (a GPU, a user), one or
// more bars per row, each set in its own colour.
type Bars struct {
	Title string
	Unit  string // "h", "GPU-h"
	Sets  []BarSet
	Rows  []string // the rows' labels
}

// BarSet is one kind of bar, a value per row.
type BarSet struct {
	Name   string
	Color  drawing.Color
	Values []float64
}

const (
	barHeight     = 26
	barLabelWidth = 190
	maxBarRows    = 12
)

// barsTop is where the rows start, under the title and legend.
const barsTop = 72

// rows are the rows drawn.
func (b *Bars) rows() []string {
	if len(b.Rows) > maxBarRows {
		return b.Rows[:maxBarRows]
	}
	return b.Rows
}

func (b *Bars) rowHeight() int { return barHeight*len(b.Sets) + 14 }

func (b *Bars) height() int { return barsTop + b.rowHeight()*max(len(b.rows()), 1) + 16 }

func (b *Bars) paint(r chartdraw.Renderer, _, _ time.Time, _ *time.Location) error {
	rows, rowHeight, top := b.rows(), b.rowHeight(), barsTop
	top_ := 0.0
	for _, s := range b.Sets {
		for _, v := range s.Values {
			if finite(v) {
				top_ = max(top_, v)
			}
		}
	}
	top_ = niceTop(top_)
	left, right := margin+barLabelWidth, Width-margin-130
	text(r, b.Title, margin+32, top-32, subtitleSize, colorText)
	if len(b.Sets) > 1 {
		x := Width - margin
		for i := len(b.Sets) - 1; i >= 0; i-- {
			s := b.Sets[i]
			setFont(r, labelSize, colorText)
			x -= r.MeasureText(s.Name).Width()
			r.Text(s.Name, x, top-32)
			x -= 34
			fillRect(r, x, top-50, x+24, top-30, s.Color)
			x -= 24
		}
	}
	if len(rows) == 0 {
		text(r, "nobody: the data names no processes", left, top+24, labelSize, colorMuted)
	}
	for i, name := range rows {
		y := top + i*rowHeight
		text(r, fit(name, labelSize, barLabelWidth-16), margin, y+barHeight-6, labelSize, colorMuted)
		for k, s := range b.Sets {
			v := 0.0
			if i < len(s.Values) && finite(s.Values[i]) {
				v = s.Values[i]
			}
			by := y + k*barHeight
			w := int(v / top_ * float64(right-left))
			fillRect(r, left, by+3, left+max(w, 2), by+barHeight-3, s.Color)
			text(r, fmt.Sprintf("%s %s", formatValue(round1(v)), b.Unit), left+max(w, 2)+10, by+barHeight-6, labelSize, colorText)
		}
	}
	return nil
}

// round1 keeps one decimal.
func round1(v float64) float64 {
	return float64(int64(v*10+0.5)) / 10
}
