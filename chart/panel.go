package chart

import (
	"fmt"
	"image"
	"io"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-analyze/charts/chartdraw"
	"github.com/go-analyze/charts/chartdraw/drawing"
)

// Panel is one time chart of a figure: lines against time, with
// horizontal rules (a ceiling, a threshold), vertical marks (when an
// alert fired) and labelled points (when memory will be full).
type Panel struct {
	Title string // "Memory used", shown with the unit
	Unit  string // "GiB", "%", "°C"
	// Scale divides every value (of lines, rules and points) for display:
	// 1<<30 shows bytes in GiB. 0 means 1.
	Scale float64
	// Max is the top of the axis in display units; 0 fits the data.
	Max    float64
	Lines  []Line
	Rules  []Rule
	Marks  []Mark
	Points []Point
	Height int // pixels; 0 means the default

	// labelRunes is how many characters the value axis's labels take at
	// least: a figure sets it to its widest panel's, so that every
	// panel's plot spans the same width and their times line up.
	labelRunes int
	// width is the panel's width in pixels, 0 for the figure's. A
	// compact panel (one GPU of a grid) is drawn from its left edge, with
	// fewer ticks and no legend.
	width   int
	compact bool
	// band is how many rows of labels a compact panel keeps above its
	// plot at least: a grid gives the charts of a row the same, so that
	// their plots line up.
	band int
}

// Line is a line of a panel. Times and Values pair up; a NaN value
// breaks the line.
type Line struct {
	Name   string
	Times  []time.Time
	Values []float64
	Color  drawing.Color
	Dashed bool
	Fill   bool // shade the area under the line
}

// SeriesLine is the line of a series.
func SeriesLine(name string, s *Series, color drawing.Color) Line {
	l := Line{Name: name, Times: make([]time.Time, len(s.Values)), Values: s.Values, Color: color}
	for i := range s.Values {
		l.Times[i] = s.At(i)
	}
	return l
}

// Rule is a horizontal line across a panel, labelled at its right end.
type Rule struct {
	Value  float64
	Label  string
	Color  drawing.Color
	Dashed bool
	// LabelBelow puts the label under the line, for a rule just under
	// another.
	LabelBelow bool
}

// Mark is a vertical line at a time, labelled at its top: with Label
// where it fits beside the line, else with Short (when set).
type Mark struct {
	At    time.Time
	Label string
	Short string
	Color drawing.Color
}

// Point is a dot with a label.
type Point struct {
	At    time.Time
	Value float64
	Label string
	Color drawing.Color
}

func (p *Panel) scale() float64 {
	if p.Scale == 0 {
		return 1
	}
	return p.Scale
}

// height is the panel's height in pixels.
func (p *Panel) height() int {
	h := panelHeight
	if p.Height > 0 {
		h = p.Height
	}
	// A legend of its own rows, and a band of labels, take none of the
	// plot's.
	return h + (p.legend().extraRows+p.labelBand())*labelRow
}

// labelBand is how many rows of labels a compact panel keeps above its
// plot for its marks' labels, so that they cover none of its lines: a
// row a label, at most maxNamedMarks.
func (p *Panel) labelBand() int {
	if !p.compact {
		return 0
	}
	n := 0
	for _, m := range p.Marks {
		if m.Label != "" {
			n++
		}
	}
	return max(p.band, min(n, maxNamedMarks))
}

// top is the top of the value axis: the panel's Max or a round number
// above every value shown.
func (p *Panel) top() float64 {
	if p.Max > 0 {
		return p.Max
	}
	hi := 0.0
	for _, l := range p.Lines {
		for _, v := range l.Values {
			if finite(v) {
				hi = max(hi, v)
			}
		}
	}
	for _, r := range p.Rules {
		hi = max(hi, r.Value)
	}
	for _, pt := range p.Points {
		hi = max(hi, pt.Value)
	}
	return niceTop(hi / p.scale() * 1.05)
}

// pixelWidth is how wide the panel is drawn.
func (p *Panel) pixelWidth() int {
	if p.width > 0 {
		return p.width
	}
	return Width
}

// values are the value axis's ticks from 0 to top: about five, three
// on a compact panel.
func (p *Panel) values(top float64) []float64 {
	if p.compact {
		return valueTicksN(0, top, 2)
	}
	return valueTicks(0, top)
}

// padding is the room around the plot: the title and legend above, the
// axes' labels beside and below (chartdraw adds those).
func (p *Panel) padding() chartdraw.Box {
	if p.compact {
		return chartdraw.Box{Top: 40, Left: 0, Right: 12, Bottom: 4}
	}
	return chartdraw.Box{Top: 64, Left: margin, Right: margin + 12, Bottom: 8}
}

// widestLabel is how many characters the panel's longest value label has.
func (p *Panel) widestLabel() int {
	widest := 0
	for _, v := range p.values(p.top()) {
		widest = max(widest, utf8.RuneCountInString(formatValue(v)))
	}
	return widest
}

// padLabel pads a value label to n characters with figure spaces, blank
// and as wide as a digit.
func padLabel(s string, n int) string {
	if pad := n - utf8.RuneCountInString(s); pad > 0 {
		return s + strings.Repeat("\u2007", pad)
	}
	return s
}

// frame is where a panel's times and values land in pixels.
type frame struct {
	box      chartdraw.Box
	from, to time.Time
	top      float64
	scale    float64
}

func (f *frame) x(t time.Time) int {
	span := f.to.Sub(f.from)
	return f.box.Left + int(math.Round(float64(t.Sub(f.from))/float64(span)*float64(f.box.Width())))
}

func (f *frame) y(v float64) int {
	return f.box.Bottom - int(math.Round(v/f.scale/f.top*float64(f.box.Height())))
}

func (f *frame) inside(t time.Time) bool { return !t.Before(f.from) && !t.After(f.to) }

// paint draws the panel on r, for the span from to to with times in loc.
func (p *Panel) paint(r chartdraw.Renderer, from, to time.Time, loc *time.Location) error {
	top := p.top()
	pad := p.padding()
	legend := p.legend()
	pad.Top += (legend.extraRows + p.labelBand()) * labelRow
	c := chartdraw.Chart{
		Width: p.pixelWidth(), Height: p.height(), DPI: dpi, ColorPalette: palette{},
		Background: chartdraw.Style{Padding: pad},
		XAxis: chartdraw.XAxis{
			Range:          &chartdraw.ContinuousRange{Min: timeX(from), Max: timeX(to)},
			Style:          chartdraw.Style{FontStyle: chartdraw.FontStyle{FontSize: axisSize, FontColor: colorMuted}},
			GridMajorStyle: chartdraw.Style{StrokeColor: colorGrid, StrokeWidth: 1},
		},
		YAxis: chartdraw.YAxis{
			Range:          &chartdraw.ContinuousRange{Min: 0, Max: top},
			Style:          chartdraw.Style{FontStyle: chartdraw.FontStyle{FontSize: axisSize, FontColor: colorMuted}},
			GridMajorStyle: chartdraw.Style{StrokeColor: colorGrid, StrokeWidth: 1},
		},
	}
	// chartdraw spans an axis from its first tick to its last: ticks
	// without labels at both ends keep the span the figure's.
	c.XAxis.Ticks = append(c.XAxis.Ticks, chartdraw.Tick{Value: timeX(from)})
	c.YAxisSecondary.Style.Hidden = true
	// A time label takes about 120 pixels with room around it.
	plotWidth := p.pixelWidth() - pad.Left - pad.Right - 70
	for _, t := range timeTicks(from, to, loc, min(maxTimeTicks, max(3, plotWidth/120+1))) {
		c.XAxis.Ticks = append(c.XAxis.Ticks, chartdraw.Tick{Value: timeX(t.At), Label: t.Label})
		c.XAxis.GridLines = append(c.XAxis.GridLines, chartdraw.GridLine{Value: timeX(t.At)})
	}
	c.XAxis.Ticks = append(c.XAxis.Ticks, chartdraw.Tick{Value: timeX(to)})
	for _, v := range p.values(top) {
		c.YAxis.Ticks = append(c.YAxis.Ticks, chartdraw.Tick{Value: v, Label: padLabel(formatValue(v), p.labelRunes)})
		c.YAxis.GridLines = append(c.YAxis.GridLines, chartdraw.GridLine{Value: v})
	}
	c.YAxis.Ticks = append(c.YAxis.Ticks, chartdraw.Tick{Value: 0}, chartdraw.Tick{Value: top})
	for _, l := range p.Lines {
		c.Series = append(c.Series, p.segments(l, from, to)...)
	}
	if len(c.Series) == 0 {
		// chartdraw draws no axes without a series: an invisible one.
		c.Series = append(c.Series, chartdraw.ContinuousSeries{
			Style:   chartdraw.Style{StrokeColor: drawing.ColorTransparent, StrokeWidth: 0},
			XValues: []float64{timeX(from), timeX(to)}, YValues: []float64{0, 0}})
	}
	c.Elements = append(c.Elements, func(r chartdraw.Renderer, box chartdraw.Box, _ chartdraw.Style) {
		f := &frame{box: box, from: from, to: to, top: top, scale: p.scale()}
		p.drawDecorations(r, f, legend)
	})
	onStrip := func(int, int) chartdraw.Renderer { return r }
	if err := c.Render(onStrip, io.Discard); err != nil {
		return fmt.Errorf("draw panel %q: %w", p.Title, err)
	}
	return nil
}

// segments cuts a line into the stretches between unknown values, each a
// chartdraw series in display units, within the panel's span.
func (p *Panel) segments(l Line, from, to time.Time) []chartdraw.Series {
	style := chartdraw.Style{StrokeColor: l.Color, StrokeWidth: lineWidth}
	if l.Dashed {
		style.StrokeDashArray = []float64{14, 10}
	}
	if l.Fill {
		style.FillColor = l.Color.WithAlpha(56)
	}
	var out []chartdraw.Series
	var xs, ys []float64
	flush := func() {
		switch len(xs) {
		case 0:
		case 1: // a lone reading: a short stub so it shows
			xs = append(xs, xs[0]+float64(20*time.Second))
			ys = append(ys, ys[0])
			fallthrough
		default:
			out = append(out, chartdraw.ContinuousSeries{Style: style, XValues: xs, YValues: ys})
		}
		xs, ys = nil, nil
	}
	for i, t := range l.Times {
		v := l.Values[i]
		if !finite(v) || t.Before(from) || t.After(to) {
			flush()
			continue
		}
		xs = append(xs, timeX(t))
		ys = append(ys, v/p.scale())
	}
	flush()
	return out
}

// drawDecorations draws what chartdraw does not: the title, the legend,
// rules, points and marks. Labels never cover one another: a rule's and a
// point's go where they belong, then each mark's label takes the first
// row of the plot where it covers none of them.
func (p *Panel) drawDecorations(r chartdraw.Renderer, f *frame, legend panelLegend) {
	band := p.labelBand()
	titleY := f.box.Top - 24 - (legend.extraRows+band)*labelRow
	titleColor := colorText
	if p.compact && slices.ContainsFunc(p.Marks, func(m Mark) bool { return m.Label != "" }) {
		titleColor = colorYellow // among many GPUs, those with alerts stand out
	}
	text(r, fit(p.titleText(), subtitleSize, f.box.Width()), f.box.Left, titleY, subtitleSize, titleColor)
	legend.draw(r, f.box, titleY)
	var l layout
	for _, rule := range p.Rules {
		y := f.y(rule.Value)
		if y < f.box.Top {
			continue
		}
		stroke(r, rule.Color, markWidth, rule.Dashed)
		r.MoveTo(f.box.Left, y)
		r.LineTo(f.box.Right, y)
		r.Stroke()
		ly := y - 8
		if rule.LabelBelow {
			ly = y + 30
		}
		label(r, rule.Label, f.box.Left+10, ly, rule.Color, alignLeft)
		l.take(labelBox(rule.Label, f.box.Left+10, ly, alignLeft))
	}
	for _, pt := range p.Points {
		if !f.inside(pt.At) {
			continue
		}
		x, y := f.x(pt.At), f.y(pt.Value)
		r.SetFillColor(pt.Color)
		r.SetStrokeColor(colorCanvas)
		r.SetStrokeWidth(3)
		r.Circle(9, x, y)
		r.FillStroke()
		align := alignLeft
		if labelBox(pt.Label, x, y+40, alignLeft).Max.X > f.box.Right {
			align = alignRight
		}
		label(r, pt.Label, x, y+40, pt.Color, align)
		l.take(labelBox(pt.Label, x, y+40, align))
	}
	// Labels go in the band above the plot, or else in the plot's rows.
	area := image.Rect(f.box.Left, f.box.Top, f.box.Right, f.box.Bottom)
	if band > 0 {
		area = image.Rect(f.box.Left, f.box.Top-band*labelRow, f.box.Right, f.box.Top)
	}
	for _, m := range p.Marks {
		if !f.inside(m.At) {
			continue
		}
		x := f.x(m.At)
		stroke(r, m.Color, markWidth, true)
		r.MoveTo(x, area.Min.Y)
		r.LineTo(x, f.box.Bottom)
		r.Stroke()
	}
	for _, m := range p.Marks {
		if m.Label == "" || !f.inside(m.At) {
			continue
		}
		x := f.x(m.At)
		texts := []string{m.Label}
		if m.Short != "" {
			texts = append(texts, m.Short)
		}
		if s, b, ok := l.placeMark(texts, x, area); ok {
			labelIn(r, s, b, m.Color)
		}
	}
}

// titleText is the panel's title with its unit.
func (p *Panel) titleText() string {
	if p.Unit != "" {
		return p.Title + " (" + p.Unit + ")"
	}
	return p.Title
}

// panelLegend is where a panel names its lines: beside its title when
// there is room, else in rows of their own under it.
type panelLegend struct {
	entries   []legendEntry
	rows      [][]legendEntry // the entries of each row under the title; nil beside it
	extraRows int
}

type legendEntry struct {
	name   string
	color  drawing.Color
	dashed bool
	width  int // the entry's pixels: its sample line and its name
}

// legendSample is the width of an entry's sample line and the room
// between it and its name, and between entries.
const (
	legendSample = 28 + 12
	legendSpace  = 24
)

// legend lays out the names of the panel's lines, when more than one has
// a name (a compact panel has none: its grid names the lines once).
func (p *Panel) legend() panelLegend {
	var out panelLegend
	if p.compact {
		return out
	}
	seen := map[string]bool{}
	for _, l := range p.Lines {
		if l.Name == "" || seen[l.Name] {
			continue
		}
		seen[l.Name] = true
		out.entries = append(out.entries, legendEntry{name: l.Name, color: l.Color, dashed: l.Dashed, width: legendSample + textWidth(l.Name, labelSize)})
	}
	if len(out.entries) < 2 {
		out.entries = nil
		return out
	}
	pad := p.padding()
	room := p.pixelWidth() - pad.Left - pad.Right
	beside := room - textWidth(p.titleText(), subtitleSize) - 2*legendSpace
	if legendWidth(out.entries) <= beside {
		return out
	}
	// Rows under the title, as many entries each as fit.
	var row []legendEntry
	for _, e := range out.entries {
		if len(row) > 0 && legendWidth(append(row, e)) > room {
			out.rows = append(out.rows, row)
			row = nil
		}
		row = append(row, e)
	}
	out.rows = append(out.rows, row)
	out.extraRows = len(out.rows)
	return out
}

// legendWidth is how wide entries are in one row.
func legendWidth(entries []legendEntry) int {
	w := 0
	for i, e := range entries {
		if i > 0 {
			w += legendSpace
		}
		w += e.width
	}
	return w
}

// draw writes the legend: right-aligned on the title's row, or its rows
// under the title from the plot's left.
func (l panelLegend) draw(r chartdraw.Renderer, plot chartdraw.Box, titleY int) {
	if l.rows == nil {
		x := plot.Right - legendWidth(l.entries)
		l.drawRow(r, l.entries, x, titleY)
		return
	}
	for i, row := range l.rows {
		l.drawRow(r, row, plot.Left, titleY+labelRow*(i+1))
	}
}

func (panelLegend) drawRow(r chartdraw.Renderer, entries []legendEntry, x, y int) {
	for _, e := range entries {
		stroke(r, e.color, lineWidth, e.dashed)
		r.MoveTo(x, y-7)
		r.LineTo(x+28, y-7)
		r.Stroke()
		text(r, e.name, x+legendSample, y, labelSize, colorText)
		x += e.width + legendSpace
	}
}

// timeX is a time as chartdraw's x value.
func timeX(t time.Time) float64 { return float64(t.UnixNano()) }
