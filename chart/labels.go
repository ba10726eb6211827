package chart

import (
	"image"
	"strings"
	"unicode/utf8"

	"github.com/go-analyze/charts/chartdraw"
)

// labelRow is the height of a row of labels: a label's backing (34
// pixels) and the gap to the next.
const labelRow = 40

// labelGap is the least room between two labels.
const labelGap = 6

// layout keeps the boxes of what a panel already wrote, so that each
// label it adds goes where it covers none of them.
type layout struct {
	taken []image.Rectangle
}

// take notes a box as written.
func (l *layout) take(b image.Rectangle) { l.taken = append(l.taken, b) }

// free reports whether b, with a gap around it, covers nothing taken.
func (l *layout) free(b image.Rectangle) bool {
	b = b.Inset(-labelGap / 2)
	for _, t := range l.taken {
		if b.Overlaps(t) {
			return false
		}
	}
	return true
}

// labelBox is the box label draws s in at (x, y) with align.
func labelBox(s string, x, y int, align alignment) image.Rectangle {
	w, h := textWidth(s, labelSize), (&glyphs{dpi: dpi}).emHeight(labelSize)
	switch align {
	case alignRight:
		x -= w + 8
	case alignCenter:
		x -= w / 2
	default:
		x += 8
	}
	return image.Rect(x-6, y-h-2, x+w+6, y+8)
}

// labelRows is how many rows of labels fit in area.
func labelRows(area image.Rectangle) int {
	rows := 0
	for area.Min.Y+26+labelRow*rows+8 <= area.Max.Y {
		rows++
	}
	return rows
}

// placeMark finds where the label of a mark at x goes, and which of its
// texts (the longest first: "GPUHot 14:05", "GPUHot") it shows: beside
// its line, to the right where it fits within area, else to the left;
// failing both, across the line; in the first row from area's top where
// it covers nothing written. ok is false when no row of area has room:
// the mark keeps its line alone.
func (l *layout) placeMark(texts []string, x int, area image.Rectangle) (text string, box image.Rectangle, ok bool) {
	for _, beside := range []bool{true, false} {
		for row := range labelRows(area) {
			y := area.Min.Y + 26 + labelRow*row
			for _, s := range texts {
				var boxes []image.Rectangle
				if beside {
					boxes = []image.Rectangle{labelBox(s, x, y, alignLeft), labelBox(s, x, y, alignRight)}
				} else {
					b := labelBox(s, x, y, alignCenter)
					b = b.Add(image.Pt(max(0, area.Min.X-b.Min.X), 0))
					boxes = []image.Rectangle{b.Sub(image.Pt(max(0, b.Max.X-area.Max.X), 0))}
				}
				for _, b := range boxes {
					if b.Min.X >= area.Min.X && b.Max.X <= area.Max.X && l.free(b) {
						l.take(b)
						return s, b, true
					}
				}
			}
		}
	}
	return "", image.Rectangle{}, false
}

// textWidth is how many pixels s takes written at size in the charts'
// font.
func textWidth(s string, size float64) int {
	f := chartdraw.GetDefaultFont()
	if f == nil {
		return 0
	}
	return (&glyphs{dpi: dpi}).width(s, f, size)
}

// fit shortens s, ending it with an ellipsis, until it takes at most
// width pixels written at size.
func fit(s string, size float64, width int) string {
	if textWidth(s, size) <= width {
		return s
	}
	runes := []rune(s)
	lo, hi := 0, len(runes) // the longest prefix that fits is in [lo, hi]
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if textWidth(string(runes[:mid])+"…", size) <= width {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0 {
		return "…"
	}
	return trimEnd(string(runes[:lo])) + "…"
}

// wrap breaks s at spaces into lines of at most width pixels written at
// size, at most n of them: the last ends with an ellipsis where s goes
// on.
func wrap(s string, size float64, width, n int) []string {
	var lines []string
	words := strings.Fields(s)
	for len(words) > 0 && len(lines) < n {
		k := 1 // a word wider than a line has a line of its own
		for k < len(words) && textWidth(strings.Join(words[:k+1], " "), size) <= width {
			k++
		}
		if len(lines) == n-1 {
			k = len(words) // the last line takes the rest
		}
		lines = append(lines, fit(strings.Join(words[:k], " "), size, width))
		words = words[k:]
	}
	return lines
}

// trimEnd drops the spaces and separators a cut leaves at the end.
func trimEnd(s string) string {
	for s != "" {
		r, n := utf8.DecodeLastRuneInString(s)
		if r != ' ' && r != '·' && r != ',' && r != '-' {
			break
		}
		s = s[:len(s)-n]
	}
	return s
}
