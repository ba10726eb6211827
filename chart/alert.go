package chart

import (
	"fmt"
	"math"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// Kind is the question an alert's chart answers.
type Kind string

// The kinds of alert charts.
const (
	// KindMemory: memory used climbing toward what jobs can allocate, the
	// growth projected to the ceiling (leaks, out of memory soon, nearly
	// full).
	KindMemory Kind = "memory"
	// KindTemperature: the temperature against the rule's thresholds.
	KindTemperature Kind = "temperature"
	// KindIdle: utilization beside the memory held.
	KindIdle Kind = "idle"
	// KindLost: the last hour before the GPU fell silent.
	KindLost Kind = "lost"
)

// Alert is what an alert's chart shows. The daemon fills it from the
// history it keeps when the alert fires or resolves; it is stored as JSON
// until the chart is drawn, so every field encodes.
type Alert struct {
	Kind    Kind     `json:"kind"`
	Alert   string   `json:"alert"`  // the rule's name
	Status  string   `json:"status"` // "firing" or "resolved"
	Host    string   `json:"host"`
	GPU     int      `json:"gpu"`
	MIG     *gpu.MIG `json:"mig,omitempty"` // the MIG instance; nil for a whole GPU
	GPUName string   `json:"gpu_name,omitempty"`
	// Holder names who holds the GPU: "pid 4242 · alice · python train.py".
	Holder string `json:"holder,omitempty"`
	// At is the transition's time, the right end of the history.
	At         time.Time `json:"at"`
	FiredAt    time.Time `json:"fired_at"`
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
	// LastReport is when a lost GPU last reported.
	LastReport time.Time `json:"last_report,omitzero"`
	// Memory is memory used, in bytes; Utilization in percent;
	// Temperature in °C. Each may be empty.
	Memory      Series `json:"memory"`
	Utilization Series `json:"utilization"`
	Temperature Series `json:"temperature"`
	// Ceiling is the memory jobs can allocate, in bytes (the total less
	// what the driver reserves); 0 when unknown.
	Ceiling float64 `json:"ceiling"`
	// Growth is the steady growth of memory the engine measured, in bytes
	// per second; 0 when memory does not grow.
	Growth float64 `json:"growth"`
	// Above and Below are a temperature alert's thresholds in °C: it
	// fires above Above and clears below Below; 0 when the rule has none.
	Above float64 `json:"above,omitempty"`
	Below float64 `json:"below,omitempty"`
	// Ending says how a resolved alert ended: "pid 4242 (alice) exited
	// with the GPU at 99% — a CUDA out-of-memory is likely".
	Ending string `json:"ending,omitempty"`
}

// Resolved reports whether the chart shows the alert's end.
func (a *Alert) Resolved() bool { return a.Status == "resolved" }

// FullAt is when memory meets the ceiling at the engine's growth, from
// the last known reading; ok is false when memory does not grow toward a
// known ceiling.
func (a *Alert) FullAt() (at time.Time, ok bool) {
	last, used, known := a.Memory.Last()
	if !known || !(a.Growth > 0) || !(a.Ceiling > 0) || a.Resolved() {
		return time.Time{}, false
	}
	if used >= a.Ceiling {
		return last, true
	}
	secs := (a.Ceiling - used) / a.Growth
	if secs > (7 * 24 * time.Hour).Seconds() {
		return time.Time{}, false
	}
	return last.Add(time.Duration(secs * float64(time.Second))), true
}

// Figure lays out the alert's chart, times in loc.
func (a *Alert) Figure(loc *time.Location) *Figure {
	if loc == nil {
		loc = time.UTC
	}
	f := &Figure{Title: a.title(), Location: loc, From: a.from(), To: a.At}
	switch {
	case a.Holder != "":
		f.Subtitle = append(f.Subtitle, "Held by "+a.Holder)
	case a.GPUName != "":
		f.Subtitle = append(f.Subtitle, a.GPUName)
	}
	switch a.Kind {
	case KindMemory:
		a.memoryFigure(f, loc)
	case KindTemperature:
		a.temperatureFigure(f, loc)
	case KindIdle:
		a.idleFigure(f, loc)
	default:
		a.lostFigure(f, loc)
	}
	if a.Ending != "" {
		f.Subtitle = append(f.Subtitle, a.Ending)
	}
	return f
}

// PNG draws the alert's chart, times in loc.
func (a *Alert) PNG(loc *time.Location) ([]byte, error) { return a.Figure(loc).PNG() }

func (a *Alert) title() string {
	title := fmt.Sprintf("%s · %s on %s", a.Alert, gpu.Label(a.GPU, a.MIG), a.Host)
	if a.Resolved() {
		title += " · resolved"
	}
	return title
}

// from is where the history starts: the earliest series' start.
func (a *Alert) from() time.Time {
	from := a.At.Add(-time.Hour)
	for _, s := range []*Series{&a.Memory, &a.Utilization, &a.Temperature} {
		if len(s.Values) > 0 && s.Start.Before(from) {
			from = s.Start
		}
	}
	return from
}

// marks are the vertical lines of the alert's life: fired, resolved,
// last report.
func (a *Alert) marks(loc *time.Location) []Mark {
	var out []Mark
	if !a.FiredAt.IsZero() {
		out = append(out, Mark{At: a.FiredAt, Label: "fired " + clock(a.FiredAt, loc), Color: colorYellow})
	}
	if !a.LastReport.IsZero() {
		out = append(out, Mark{At: a.LastReport, Label: "last report " + clock(a.LastReport, loc), Color: colorVermilion})
	}
	if !a.ResolvedAt.IsZero() {
		out = append(out, Mark{At: a.ResolvedAt, Label: "resolved " + clock(a.ResolvedAt, loc), Color: colorGreen})
	}
	return out
}

func (a *Alert) memoryFigure(f *Figure, loc *time.Location) {
	unit, scale := memoryUnit(math.Max(a.Ceiling, a.Memory.Max()))
	p := &Panel{Title: "Memory used", Unit: unit, Scale: scale, Marks: a.marks(loc),
		Lines: []Line{SeriesLine("used", &a.Memory, colorSky)}}
	p.Lines[0].Fill = true
	if a.Ceiling > 0 {
		p.Rules = append(p.Rules, Rule{Value: a.Ceiling, Color: colorVermilion,
			Label: fmt.Sprintf("allocatable %s %s", formatValue(a.Ceiling/scale), unit)})
	}
	if full, ok := a.FullAt(); ok {
		last, used, _ := a.Memory.Last()
		span := f.To.Sub(f.From)
		// Show the way to the ceiling when it is near; cut it at half the
		// history's span when it is far, and say when it ends.
		end, endValue := full, a.Ceiling
		if limit := last.Add(span / 2); end.After(limit) {
			end = limit
			endValue = used + a.Growth*limit.Sub(last).Seconds()
		}
		f.To = end.Add(span / 20)
		p.Lines = append(p.Lines, Line{Name: "growth " + rate(a.Growth), Times: []time.Time{last, end},
			Values: []float64{used, endValue}, Color: colorOrange, Dashed: true})
		p.Lines[0].Name = "used"
		label := "full ≈ " + clock(full, loc)
		if !full.Equal(end) {
			label = "full ≈ " + dayClock(full, loc) + " →"
		}
		p.Points = append(p.Points, Point{At: end, Value: endValue, Label: label, Color: colorOrange})
		f.Subtitle = append(f.Subtitle, fmt.Sprintf("Growing %s: full ≈ %s, in %s", rate(a.Growth), dayClock(full, loc), roughDuration(full.Sub(last))))
	}
	f.Blocks = []Block{p}
}

func (a *Alert) temperatureFigure(f *Figure, loc *time.Location) {
	p := &Panel{Title: "Temperature", Unit: "°C", Marks: a.marks(loc),
		Lines: []Line{SeriesLine("temperature", &a.Temperature, colorOrange)}}
	if a.Above > 0 {
		p.Rules = append(p.Rules, Rule{Value: a.Above, Label: fmt.Sprintf("fires above %s °C", formatValue(a.Above)), Color: colorVermilion})
	}
	if a.Below > 0 {
		p.Rules = append(p.Rules, Rule{Value: a.Below, Label: fmt.Sprintf("clears below %s °C", formatValue(a.Below)), Color: colorGreen, Dashed: true, LabelBelow: true})
	}
	top := math.Max(a.Temperature.Max(), a.Above)
	p.Max = niceTop(top * 1.1)
	f.Blocks = []Block{p}
}

func (a *Alert) idleFigure(f *Figure, loc *time.Location) {
	util := &Panel{Title: "Utilization", Unit: "%", Max: 100, Height: 330, Marks: a.marks(loc),
		Lines: []Line{SeriesLine("utilization", &a.Utilization, colorGreen)}}
	util.Lines[0].Fill = true
	unit, scale := memoryUnit(math.Max(a.Ceiling, a.Memory.Max()))
	mem := &Panel{Title: "Memory held", Unit: unit, Scale: scale, Height: 330, Marks: a.marks(loc),
		Lines: []Line{SeriesLine("held", &a.Memory, colorSky)}}
	mem.Lines[0].Fill = true
	if a.Ceiling > 0 {
		mem.Max = niceTop(a.Ceiling / scale)
	}
	f.Blocks = []Block{util, mem}
}

func (a *Alert) lostFigure(f *Figure, loc *time.Location) {
	if !a.LastReport.IsZero() {
		f.From = a.LastReport.Add(-time.Hour)
		f.To = maxTime(a.At, a.LastReport.Add(5*time.Minute))
		f.Subtitle = append(f.Subtitle, "Silent since "+dayClock(a.LastReport, loc))
	}
	unit, scale := memoryUnit(math.Max(a.Ceiling, a.Memory.Max()))
	mem := &Panel{Title: "Memory used", Unit: unit, Scale: scale, Height: 300, Marks: a.marks(loc),
		Lines: []Line{SeriesLine("used", &a.Memory, colorSky)}}
	util := &Panel{Title: "Utilization", Unit: "%", Max: 100, Height: 300, Marks: a.marks(loc),
		Lines: []Line{SeriesLine("utilization", &a.Utilization, colorGreen)}}
	f.Blocks = []Block{mem, util}
	if a.Temperature.Known() {
		f.Blocks = append(f.Blocks, &Panel{Title: "Temperature", Unit: "°C", Height: 300, Marks: a.marks(loc),
			Lines: []Line{SeriesLine("temperature", &a.Temperature, colorOrange)}})
	}
}

// memoryUnit picks the unit memory of up to top bytes reads best in.
func memoryUnit(top float64) (string, float64) {
	if top >= 1<<30 || !finite(top) {
		return "GiB", 1 << 30
	}
	return "MiB", 1 << 20
}

// rate formats a growth in bytes per second as people say it.
func rate(perSecond float64) string {
	perMin := perSecond * 60
	switch {
	case perMin >= 1<<30:
		return fmt.Sprintf("+%s GiB/min", formatValue(perMin/(1<<30)))
	case perMin >= 1<<20:
		return fmt.Sprintf("+%s MiB/min", formatValue(perMin/(1<<20)))
	}
	return fmt.Sprintf("+%s KiB/min", formatValue(perMin/(1<<10)))
}

// clock writes a time of day in loc.
func clock(t time.Time, loc *time.Location) string { return t.In(loc).Format("15:04") }

// dayClock writes a time with its weekday in loc.
func dayClock(t time.Time, loc *time.Location) string { return t.In(loc).Format("Mon 15:04") }

// roughDuration writes a duration to the minute or hour.
func roughDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "under a minute"
	case d < 2*time.Hour:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute)/time.Minute))
	}
	return fmt.Sprintf("%.1f h", d.Hours())
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
