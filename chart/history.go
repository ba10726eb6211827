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

// maxHistoryGPUs is how many GPUs a history chart draws: more lines than
// colours tell apart help no one.
const maxHistoryGPUs = 8

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
	mem := &Panel{Title: "Memory used", Unit: "%", Max: 100, Height: 340}
	util := &Panel{Title: "Utilization", Unit: "%", Max: 100, Height: 340}
	temp := &Panel{Title: "Temperature", Unit: "°C", Height: 300}
	for i, g := range gpus {
		name, color := g.label(len(hosts) > 1), seriesColor(i)
		mem.Lines = append(mem.Lines, SeriesLine(name, &g.MemoryPercent, color))
		util.Lines = append(util.Lines, SeriesLine(name, &g.Utilization, color))
		if g.Temperature.Known() {
			temp.Lines = append(temp.Lines, SeriesLine(name, &g.Temperature, color))
		}
	}
	if len(gpus) == 1 {
		mem.Lines[0].Fill, util.Lines[0].Fill = true, true
	}
	marks := h.marks(loc, len(gpus) > 1)
	// The first panel names the alerts; the others only draw their lines.
	mem.Marks = marks
	for _, m := range marks {
		m.Label = ""
		util.Marks, temp.Marks = append(util.Marks, m), append(temp.Marks, m)
	}
	f.Blocks = []Block{mem, util}
	if len(temp.Lines) > 0 {
		f.Blocks = append(f.Blocks, temp)
	}
	if len(h.Alerts) > 0 {
		f.Subtitle = append(f.Subtitle, plural.Count(len(h.Alerts), "alert")+": marked where each fired (yellow) and resolved (green)")
	}
	return f
}

// PNG draws the history, times in loc.
func (h *History) PNG(loc *time.Location) ([]byte, error) { return h.Figure(loc).PNG() }

// maxMarks is how many alert marks a panel carries before they blur.
const maxMarks = 16

// maxNamedMarks is how many alerts a panel names; past it, marks are
// lines without labels.
const maxNamedMarks = 3

// marks are the alerts' fired and resolved lines.
func (h *History) marks(loc *time.Location, nameGPU bool) []Mark {
	var out []Mark
	for _, a := range h.Alerts {
		if len(out) >= maxMarks {
			break
		}
		name := a.Alert
		if len(h.Alerts) > maxNamedMarks {
			name = "" // too many names to read: the lines say when
		}
		if nameGPU {
			name = a.Alert + " " + gpu.Label(a.GPU, a.MIG)
		}
		label := ""
		if name != "" {
			label = name + " " + clock(a.FiredAt, loc)
		}
		out = append(out, Mark{At: a.FiredAt, Label: label, Color: colorYellow})
		if !a.ResolvedAt.IsZero() {
			out = append(out, Mark{At: a.ResolvedAt, Label: "", Color: colorGreen})
		}
	}
	return out
}
