package chart

import (
	"fmt"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/plural"
)

// GPUHistory is one GPU's recent readings, for /gpu history and replay
// plots.
type GPUHistory struct {
	Host  string   `json:"host"`
	Index int      `json:"gpu"`
	Name  string   `json:"name,omitempty"`
	UUID  string   `json:"uuid,omitempty"`
	MIG   *gpu.MIG `json:"mig,omitempty"` // a MIG instance of GPU Index; nil for the GPU
	// MemoryPercent is the share of memory in use, in percent;
	// Utilization in percent; Temperature in °C. Each may be empty.
	MemoryPercent Series `json:"memory_percent"`
	Utilization   Series `json:"utilization"`
	Temperature   Series `json:"temperature"`
}

// label names the GPU in a legend: "GPU 0", or "node1 GPU 0" when the
// figure shows several hosts.
func (g *GPUHistory) label(withHost bool) string {
	if withHost {
		return g.Host + " " + gpu.Label(g.Index, g.MIG)
	}
	return gpu.Label(g.Index, g.MIG)
}

// History is what /gpu history shows: memory, utilization and temperature
// of one or more GPUs over a window.
type History struct {
	Title    string // "node1 · last 6 h"
	From, To time.Time
	GPUs     []GPUHistory
	// Alerts are marked where they fired and resolved (replay plots).
	Alerts []AlertSpan
}

// AlertSpan is an alert's life on a GPU: when it fired and, if it did,
// resolved.
type AlertSpan struct {
	Alert      string
	Host       string
	GPU        int
	MIG        *gpu.MIG // the MIG instance; nil for a whole GPU
	FiredAt    time.Time
	ResolvedAt time.Time // zero while firing
}

// maxHistoryGPUs is how many GPUs a history chart draws: a node of
// sixteen, or the first sixteen of a fleet.
const maxHistoryGPUs = 16

// maxLineGPUs is how many GPUs a history draws as lines of their own
// colour on one chart a reading; more are drawn as a grid of a chart a
// GPU (see grid.go).
const maxLineGPUs = 4

// Figure lays out the history, times in loc.
func (h *History) Figure(loc *time.Location) *Figure {
	f := &Figure{Title: h.Title, From: h.From, To: h.To, Location: loc}
	gpus := h.GPUs
	if len(gpus) > maxHistoryGPUs {
		f.Subtitle = append(f.Subtitle, fmt.Sprintf("The first %d of %d GPUs; ask for one host or GPU to see the others", maxHistoryGPUs, len(gpus)))
		gpus = gpus[:maxHistoryGPUs]
	}
	hosts := map[string]bool{}
	for _, g := range gpus {
		hosts[g.Host] = true
	}
	withHost := len(hosts) > 1
	if len(gpus) > maxLineGPUs {
		f.Blocks = h.grid(gpus, withHost, loc)
	} else {
		f.Blocks = h.panels(gpus, withHost, loc)
	}
	if len(h.Alerts) > 0 {
		f.Subtitle = append(f.Subtitle, plural.Count(len(h.Alerts), "alert")+": marked where each fired (yellow) and resolved (green)")
		f.Subtitle = append(f.Subtitle, h.alertLines(maxSubtitle-len(f.Subtitle), withHost, loc)...)
	}
	return f
}

// alertLines say when each alert fired and resolved, in at most n lines:
// "GPU 5 · GPUMemoryLeak 18:30 – 19:20", "GPU 3 · GPUHot since 17:10".
func (h *History) alertLines(n int, withHost bool, loc *time.Location) []string {
	var out []string
	for i, a := range h.Alerts {
		if len(out) == n-1 && i < len(h.Alerts)-1 {
			out = append(out, fmt.Sprintf("and %d more", len(h.Alerts)-i))
			break
		}
		g := GPUHistory{Host: a.Host, Index: a.GPU, MIG: a.MIG}
		when := "since " + clock(a.FiredAt, loc)
		if !a.ResolvedAt.IsZero() {
			when = clock(a.FiredAt, loc) + " – " + clock(a.ResolvedAt, loc)
		}
		out = append(out, fmt.Sprintf("%s · %s %s", g.label(withHost), a.Alert, when))
	}
	return out
}

// panels draws a few GPUs as a chart a reading, a line of its own
// colour a GPU.
func (h *History) panels(gpus []GPUHistory, withHost bool, loc *time.Location) []Block {
	mem := &Panel{Title: "Memory used", Unit: "%", Max: 100, Height: 340}
	util := &Panel{Title: "Utilization", Unit: "%", Max: 100, Height: 340}
	temp := &Panel{Title: "Temperature", Unit: "°C", Height: 300}
	for i, g := range gpus {
		name, color := g.label(withHost), seriesColor(i)
		mem.Lines = append(mem.Lines, SeriesLine(name, &g.MemoryPercent, color))
		util.Lines = append(util.Lines, SeriesLine(name, &g.Utilization, color))
		if g.Temperature.Known() {
			temp.Lines = append(temp.Lines, SeriesLine(name, &g.Temperature, color))
		}
	}
	if len(gpus) == 1 {
		mem.Lines[0].Fill, util.Lines[0].Fill = true, true
	}
	if mem.legend().extraRows > 0 {
		// A legend too long for the title's row is shown once, above the
		// first chart: the others draw the same lines in the same colours.
		for _, p := range []*Panel{util, temp} {
			for i := range p.Lines {
				p.Lines[i].Name = ""
			}
		}
	}
	marks := h.marks(loc, h.Alerts, func(a AlertSpan) string {
		if len(gpus) > 1 {
			return a.Alert + " " + gpu.Label(a.GPU, a.MIG)
		}
		return a.Alert
	})
	// The first panel names the alerts; the others only draw their lines.
	mem.Marks = marks
	for _, m := range marks {
		m.Label, m.Short = "", ""
		util.Marks, temp.Marks = append(util.Marks, m), append(temp.Marks, m)
	}
	blocks := []Block{mem, util}
	if len(temp.Lines) > 0 {
		blocks = append(blocks, temp)
	}
	return blocks
}

// grid draws many GPUs as a chart a GPU, each on the same scale, each
// marked with its own alerts; the GPUs of several hosts are grouped
// under each host's name.
func (h *History) grid(gpus []GPUHistory, withHost bool, loc *time.Location) []Block {
	top := 100.0
	for _, g := range gpus {
		top = max(top, niceTop(g.Temperature.Max()*1.05))
	}
	blocks := []Block{gridLegend()}
	var row gridRow
	flush := func() {
		if len(row.cells) > 0 {
			blocks = append(blocks, row.aligned())
			row = gridRow{}
		}
	}
	for i, g := range gpus {
		if withHost && (i == 0 || gpus[i-1].Host != g.Host) {
			flush()
			blocks = append(blocks, hostHeading(g.Host))
		}
		var alerts []AlertSpan
		for _, a := range h.Alerts {
			if a.GPU == g.Index && gpu.CompareInstances(a.MIG, g.MIG) == 0 && (a.Host == g.Host || a.Host == "") {
				alerts = append(alerts, a)
			}
		}
		marks := h.marks(loc, alerts, func(a AlertSpan) string { return a.Alert })
		row.cells = append(row.cells, gridCell(g.label(false), &g, top, marks))
		if len(row.cells) == gridColumns {
			flush()
		}
	}
	flush()
	return blocks
}

// PNG draws the history, times in loc.
func (h *History) PNG(loc *time.Location) ([]byte, error) { return h.Figure(loc).PNG() }

// maxMarks is how many alert marks a panel carries before they blur.
const maxMarks = 16

// maxNamedMarks is how many alerts a panel names; past it, marks are
// lines without labels.
const maxNamedMarks = 3

// marks are the fired and resolved lines of alerts, each fired line
// labelled with name(alert) and the time, unless there are too many to
// name.
func (h *History) marks(loc *time.Location, alerts []AlertSpan, name func(AlertSpan) string) []Mark {
	var out []Mark
	for _, a := range alerts {
		if len(out) >= maxMarks {
			break
		}
		m := Mark{At: a.FiredAt, Color: colorYellow}
		if len(alerts) <= maxNamedMarks {
			m.Label, m.Short = name(a)+" "+clock(a.FiredAt, loc), name(a)
		}
		out = append(out, m)
		if !a.ResolvedAt.IsZero() {
			out = append(out, Mark{At: a.ResolvedAt, Label: "", Color: colorGreen})
		}
	}
	return out
}
