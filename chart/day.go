package chart

import (
	"fmt"
	"time"
)

// Day is the picture of a digest for one host: utilization of each GPU
// by the hour, the memory held and how much of it idle, and who used the
// GPUs.
type Day struct {
	Title    string // "GPU usage on node1"
	Subtitle []string
	// Start is the first hour; each GPU's Utilization has a value an hour.
	Start time.Time
	GPUs  []DayGPU
	Users []UserHours // most GPU-hours first
}

// DayGPU is one GPU's day.
type DayGPU struct {
	Label         string  // "GPU 0"
	Utilization   Values  // percent, an hour each; NaN (null in JSON) when unknown
	HeldHours     float64 // hours memory was held
	IdleHeldHours float64 // hours memory was held while the GPU was idle
}

// UserHours is one user's GPU-hours.
type UserHours struct {
	User     string
	GPUHours float64
}

// Figure lays out the picture, times in loc.
func (d *Day) Figure(loc *time.Location) *Figure {
	heat := &Heatmap{Title: "Utilization by hour", Start: d.Start}
	held := &Bars{Title: "Memory held", Unit: "h", Sets: []BarSet{
		{Name: "held", Color: colorSky, Values: make([]float64, len(d.GPUs))},
		{Name: "held while idle", Color: colorOrange, Values: make([]float64, len(d.GPUs))},
	}}
	for i, g := range d.GPUs {
		heat.Rows = append(heat.Rows, HeatmapRow{Label: g.Label, Values: g.Utilization})
		held.Rows = append(held.Rows, g.Label)
		held.Sets[0].Values[i], held.Sets[1].Values[i] = g.HeldHours, g.IdleHeldHours
	}
	users := &Bars{Title: "GPU-hours by user", Unit: "GPU-h", Sets: []BarSet{{Name: "GPU-hours", Color: colorGreen}}}
	for _, u := range d.Users {
		users.Rows = append(users.Rows, u.User)
		users.Sets[0].Values = append(users.Sets[0].Values, u.GPUHours)
	}
	hours := 0
	for _, g := range d.GPUs {
		hours = max(hours, len(g.Utilization))
	}
	f := &Figure{Title: d.Title, Subtitle: d.Subtitle, Location: loc, From: d.Start, To: d.Start.Add(time.Duration(hours) * time.Hour),
		Blocks: []Block{heat, held, users}}
	if len(d.Users) > maxBarRows {
		f.Subtitle = append(f.Subtitle, fmt.Sprintf("The %d users with the most GPU-hours of %d", maxBarRows, len(d.Users)))
	}
	return f
}

// PNG draws the picture, times in loc.
func (d *Day) PNG(loc *time.Location) ([]byte, error) { return d.Figure(loc).PNG() }
