package digest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/plural"
	spark "github.com/gpuwatch/gpuwatch/internal/sparkline"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// Report layout limits: a digest is read in 20 seconds, so long lists are
// cut and the rest counted.
const (
	// DefaultTopUsers is how many users a report lists when Options.TopUsers
	// is not set.
	DefaultTopUsers = 5
	// MaxIdleHolders is how many idle holders a report lists.
	MaxIdleHolders = 10
	// MaxHostLines is how many hosts a fleet's report lists, one line
	// each.
	MaxHostLines = 50
	// MinIdleHeld is the shortest idle hold worth naming: shorter holds are
	// jobs starting or finishing, not waste.
	MinIdleHeld = 5 * time.Minute
	// MinUnderused is how long a GPU must be held at low utilization (under
	// LowUtilPercent, counted by the hour) to be named: an insight for the
	// morning about hours, not a page about minutes.
	MinUnderused = 2 * time.Hour
	// minHeldShare is how much of an hour a GPU must be held for the hour's
	// utilization to say how well its job uses it.
	minHeldShare = 0.5
	// SparkWidth is the most characters a utilization sparkline has; longer
	// windows average several hours into one character.
	SparkWidth = 48
)

// Options says what a report covers and how it is shown.
type Options struct {
	Name string // the digest's name in the config
	// Team names the team (people: groups) a report of its members'
	// usage is of; "" for everyone's.
	Team string
	// Host names the host in the title when the hours are of one host; a
	// report of several hosts (a hub's fleet) counts them instead.
	Host string
	// From and To bound the window; zero values take the span of the hours
	// given.
	From, To time.Time
	TopUsers int // how many users to list; 0 means DefaultTopUsers
	// PricePerKWh, when above 0, prices energy in Currency.
	PricePerKWh float64
	Currency    string
	// Location is the zone times are shown in; nil means UTC.
	Location *time.Location
	// Firing are the alerts still firing at To: the hours count an alert
	// only once it resolves, and a digest must not leave out the alert
	// that fired all night.
	Firing []FiringAlert
	// Step is how often the data was sampled, for a digest of a log, and
	// MaxGap the longest gap between samples the rollups bridged
	// (Rollups.SetMaxGap): a report of a sparse log says how it counted.
	// 0 for a live source.
	Step, MaxGap time.Duration
	// Burst is how many samples a log sampled in bursts has in each, about
	// (several within a second, then a pause of Step); 0 for a log sampled
	// evenly.
	Burst int
	// Health is every GPU's health at To (their readings and recent XIDs
	// judged by gpu.Assess); none leaves the report's health section out.
	Health []GPUHealth
}

// FiringAlert is an alert (a rule on a GPU) still firing, since when.
type FiringAlert struct {
	Alert string
	Since time.Time
}

// Report is a digest built from the hourly rollups of a window, ready to
// render. Utilizations are percentages; shares are fractions (0–1).
type Report struct {
	Name     string         `json:"name"`
	Team     string         `json:"team,omitempty"` // the team whose members' usage it is; "" for everyone's
	Host     string         `json:"host"`
	From     time.Time      `json:"from"`
	To       time.Time      `json:"to"`
	Location *time.Location `json:"-"`
	Currency string         `json:"currency,omitempty"`
	Priced   bool           `json:"priced"` // a price per kWh was set

	// Totals over every GPU (of every host).
	CoveredHours  float64 `json:"covered_hours"`   // GPU-hours the samples cover
	AvgUtil       float64 `json:"avg_util"`        // weighted by time
	BusyShare     float64 `json:"busy_share"`      // busy time / covered time
	IdleShare     float64 `json:"idle_share"`      // idle-held time / covered time
	IdleHeldHours float64 `json:"idle_held_hours"` // GPU-hours held idle
	EnergyKWh     float64 `json:"energy_kwh"`
	Cost          float64 `json:"cost,omitempty"`
	// StepSeconds is how often the data was sampled, when the report is of
	// a sparse log, and MaxGapSeconds how long one sample stands for at
	// most; both 0 otherwise.
	StepSeconds   float64 `json:"step_seconds,omitempty"`
	MaxGapSeconds float64 `json:"max_gap_seconds,omitempty"`
	// BurstSamples is how many samples each burst of a log sampled in
	// bursts holds, about, StepSeconds apart; 0 otherwise.
	BurstSamples int `json:"burst_samples,omitempty"`
	// UtilNotLogged and MemNotLogged say that no GPU's data had a
	// utilization, or memory used (a log that does not record it): the
	// averages, busy and idle times that need it are not known, not 0.
	UtilNotLogged bool `json:"util_not_logged,omitempty"`
	MemNotLogged  bool `json:"memory_not_logged,omitempty"`

	// Hosts are the hosts of the hours, by name, each one's totals; GPUs
	// are every host's GPUs, by host and index.
	Hosts []HostReport `json:"hosts"`
	GPUs  []GPUReport  `json:"gpus"`
	// Users are the top users by GPU-hours across every host; OtherUsers
	// counts the rest.
	Users      []UserReport `json:"users"`
	OtherUsers int          `json:"other_users"`
	// IdleHolders are the longest idle holds, longest first; OtherIdle
	// counts the rest.
	IdleHolders []IdleHolder `json:"idle_holders"`
	OtherIdle   int          `json:"other_idle"`
	// Underused are the GPUs held busy at low utilization for hours,
	// longest first.
	Underused   []Underused   `json:"underused"`
	Alerts      []AlertReport `json:"alerts"`
	AlertsFired int           `json:"alerts_fired"`
	// Health is each GPU's health at To, the worst first; empty when the
	// report was not given it.
	Health []GPUHealth `json:"health,omitempty"`
}

// Underused is a GPU a job kept busy at low utilization: starved by its
// input pipeline, or too small for the GPU.
type Underused struct {
	Host    string   `json:"host,omitempty"`
	GPU     int      `json:"gpu"`
	UUID    string   `json:"uuid"`
	MIG     *gpu.MIG `json:"mig,omitempty"`
	Hours   float64  `json:"hours"`    // held hours at low utilization
	AvgUtil float64  `json:"avg_util"` // percent, over those hours while held
	// User and Command are who held the GPU most in those hours and their
	// job; empty when the data names no processes (a log).
	User    string `json:"user,omitempty"`
	Command string `json:"command,omitempty"`
}

// HostReport is one host over the window: its GPUs' totals.
type HostReport struct {
	Host          string  `json:"host"`
	GPUs          int     `json:"gpus"`
	CoveredHours  float64 `json:"covered_hours"`
	AvgUtil       float64 `json:"avg_util"`
	BusyHours     float64 `json:"busy_hours"`
	IdleHeldHours float64 `json:"idle_held_hours"`
	EnergyKWh     float64 `json:"energy_kwh"`
	Cost          float64 `json:"cost,omitempty"`
	// Sparkline draws the host's hourly average utilization, as a GPU's.
	Sparkline string `json:"sparkline"`
	// UtilNotLogged says that none of the host's GPUs had a utilization.
	UtilNotLogged bool `json:"util_not_logged,omitempty"`
}

// GPUReport is one GPU over the window, or one MIG instance (MIG set),
// listed after its GPU (MIGEnabled).
type GPUReport struct {
	Host          string   `json:"host,omitempty"`
	GPU           int      `json:"gpu"`
	UUID          string   `json:"uuid"`
	Name          string   `json:"name"`
	MIG           *gpu.MIG `json:"mig,omitempty"`
	MIGEnabled    bool     `json:"mig_enabled,omitempty"`
	CoveredHours  float64  `json:"covered_hours"`
	AvgUtil       float64  `json:"avg_util"`
	PeakUtil      float64  `json:"peak_util"`
	PeakMem       uint64   `json:"peak_mem_bytes"`
	MemTotal      uint64   `json:"mem_total_bytes"`
	BusyHours     float64  `json:"busy_hours"`
	IdleHeldHours float64  `json:"idle_held_hours"`
	PeakTemp      float64  `json:"peak_temp_c"` // 0 when the data has no temperature
	EnergyKWh     float64  `json:"energy_kwh"`
	Cost          float64  `json:"cost,omitempty"`
	// Sparkline draws the hourly average utilization over the window on a
	// fixed 0–100% scale; a space is an hour without data.
	Sparkline string `json:"sparkline"`
	// UtilNotLogged and MemNotLogged say that the GPU's data has no
	// utilization, or no memory used, at all: its averages, peaks, busy
	// and idle hours that need it are unknown, not 0.
	UtilNotLogged bool `json:"util_not_logged,omitempty"`
	MemNotLogged  bool `json:"memory_not_logged,omitempty"`
}

// UserReport is one user's use of the GPUs over the window.
type UserReport struct {
	User     string  `json:"user"`
	GPUHours float64 `json:"gpu_hours"`
	GiBHours float64 `json:"gib_hours"`
	GPUs     []int   `json:"gpus"` // the indexes of the GPUs used, ascending, whichever their host
	// Hosts say which GPUs of which host the user used, by host.
	Hosts []UserHost `json:"hosts"`
	// Jobs are the Slurm jobs the user ran ("slurm:4242"), in the order
	// first seen; none outside Slurm.
	Jobs []string `json:"jobs,omitempty"`
}

// UserHost is the GPUs a user used on one host.
type UserHost struct {
	Host string `json:"host"`
	GPUs []int  `json:"gpus"` // ascending
	// Labels name the GPUs and MIG instances used, as gpu.Label does, in
	// GPUs' order ("GPU 0 · MIG 3 (1g.10gb)").
	Labels []string `json:"labels"`
}

// IdleHolder is a user who held memory on a GPU that computed nothing.
type IdleHolder struct {
	User     string   `json:"user"`
	Host     string   `json:"host,omitempty"`
	GPU      int      `json:"gpu"`
	UUID     string   `json:"uuid"`
	MIG      *gpu.MIG `json:"mig,omitempty"`
	Seconds  float64  `json:"seconds"`
	MaxBytes uint64   `json:"max_bytes"`
	// Job is the Slurm job that held it ("slurm:4242"); "" outside Slurm.
	Job string `json:"job,omitempty"`
}

// AlertReport is one rule's alerts in the window: Fired counts those that
// fired in it, StillFiring those firing at its end (some may have fired
// before it); the longest is to the end for those still firing.
type AlertReport struct {
	Alert          string  `json:"alert"`
	Fired          int     `json:"fired"`
	StillFiring    int     `json:"still_firing"`
	LongestSeconds float64 `json:"longest_seconds"`
}

// unknownUser names processes whose owner could not be attributed.
const unknownUser = "(unknown)"

// Build sums the hours of a window into a report. The hours may come in any
// order; hours outside [o.From, o.To) still count (the caller chose them),
// but the sparkline only draws the window.
func Build(gpus []GPUHour, users []UserHour, alerts []AlertHour, o Options) *Report {
	if o.TopUsers <= 0 {
		o.TopUsers = DefaultTopUsers
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	if o.From.IsZero() || o.To.IsZero() {
		from, to := span(gpus)
		if o.From.IsZero() {
			o.From = from
		}
		if o.To.IsZero() {
			o.To = to
		}
	}
	// Usage is kept by the clock hour: a window that starts within an
	// hour covers all of it, and says so.
	o.From = o.From.Truncate(time.Hour)
	r := &Report{Name: o.Name, Team: o.Team, Host: o.Host, From: o.From, To: o.To, Location: o.Location,
		Currency: o.Currency, Priced: o.PricePerKWh > 0}
	if o.MaxGap > MaxBridgedGap {
		r.StepSeconds, r.MaxGapSeconds = o.Step.Seconds(), o.MaxGap.Seconds()
	}
	if o.Burst > 1 {
		r.StepSeconds, r.BurstSamples = o.Step.Seconds(), o.Burst
	}
	users = withHosts(users, gpus)
	r.buildGPUs(gpus, o)
	r.buildHealth(o.Health)
	r.buildUsers(users, o.TopUsers)
	r.buildUnderused(gpus, users)
	r.buildAlerts(alerts, o)
	return r
}

// withHosts gives the user hours that name no host (written before hosts
// were kept with them) the host of their GPU's hours: the host of the GPU
// of that UUID, or the one host of the hours. It copies users before it
// changes one.
func withHosts(users []UserHour, gpus []GPUHour) []UserHour {
	if !slices.ContainsFunc(users, func(u UserHour) bool { return u.Host == "" }) {
		return users
	}
	byUUID := map[string]string{}
	hosts := map[string]bool{}
	for i := range gpus {
		if g := &gpus[i]; g.Host != "" {
			hosts[g.Host] = true
			if g.UUID != "" {
				byUUID[g.UUID] = g.Host
			}
		}
	}
	only := ""
	if len(hosts) == 1 {
		for h := range hosts {
			only = h
		}
	}
	users = slices.Clone(users)
	for i := range users {
		if u := &users[i]; u.Host == "" {
			u.Host = cmp.Or(byUUID[u.UUID], only)
		}
	}
	return users
}

// slot is a host's GPU as a report counts it: by index, so that a GPU
// replaced in its slot reads as one line, as on the host; a MIG instance
// by its GPU's index and its own IDs.
type slot struct {
	host string
	gpu  int
	mig  instanceID
}

// instanceID is a MIG instance's GPU and compute instance IDs, plus one,
// so that the zero value is a whole GPU.
type instanceID struct{ gi, ci int }

func instanceOf(m *gpu.MIG) instanceID {
	if m == nil {
		return instanceID{}
	}
	return instanceID{m.GPUInstance + 1, m.ComputeInstance + 1}
}

// slotOf is the slot of a GPU's hours.
func slotOf(host string, index int, m *gpu.MIG) slot { return slot{host, index, instanceOf(m)} }

// compareSlots orders slots by host and index, a GPU before its MIG
// instances.
func compareSlots(a, b slot) int {
	return cmp.Or(cmp.Compare(a.host, b.host), cmp.Compare(a.gpu, b.gpu), cmp.Compare(a.mig.gi, b.mig.gi), cmp.Compare(a.mig.ci, b.mig.ci))
}

// Fleet reports whether the report covers several hosts: its lines then
// say which host each GPU is on, and it lists hosts rather than GPUs.
func (r *Report) Fleet() bool { return len(r.Hosts) > 1 }

// buildUnderused finds the GPUs held busy at low utilization: hours that a
// job held the GPU for at least half of, at an average utilization between
// BusyPercent (below, the GPU is idle, reported as held idle) and
// LowUtilPercent, adding up to MinUnderused or more.
func (r *Report) buildUnderused(gpus []GPUHour, users []UserHour) {
	type acc struct {
		Underused
		heldSeconds, utilSeconds float64
		hours                    map[time.Time]bool
	}
	bySlot := map[slot]*acc{}
	for i := range gpus {
		h := &gpus[i]
		if h.Seconds <= 0 || h.HeldSeconds < minHeldShare*h.Seconds {
			continue
		}
		util := 100 * h.HeldUtilSeconds / h.HeldSeconds
		if util < BusyPercent || util >= LowUtilPercent {
			continue
		}
		k := slotOf(h.Host, h.GPU, h.MIG)
		a := bySlot[k]
		if a == nil {
			a = &acc{Underused: Underused{Host: h.Host, GPU: h.GPU, UUID: h.UUID, MIG: h.MIG}, hours: map[time.Time]bool{}}
			bySlot[k] = a
		}
		a.heldSeconds += h.HeldSeconds
		a.utilSeconds += h.HeldUtilSeconds
		a.hours[h.Hour] = true
	}
	// Who held each GPU most in its underused hours, and with what job.
	seconds := map[slot]map[string]float64{}
	commands := map[slot]map[string]string{}
	for i := range users {
		u := &users[i]
		k := slotOf(u.Host, u.GPU, u.MIG)
		a := bySlot[k]
		if a == nil || !a.hours[u.Hour] || u.User == "" || u.User == RollupUnknownUser {
			continue
		}
		if seconds[k] == nil {
			seconds[k], commands[k] = map[string]float64{}, map[string]string{}
		}
		seconds[k][u.User] += u.GPUSeconds
		if u.Command != "" {
			commands[k][u.User] = u.Command
		}
	}
	r.Underused = []Underused{}
	for k, a := range bySlot {
		if a.heldSeconds < MinUnderused.Seconds() {
			continue
		}
		a.Hours, a.AvgUtil = a.heldSeconds/3600, 100*a.utilSeconds/a.heldSeconds
		best := 0.0
		for _, user := range slices.Sorted(maps.Keys(seconds[k])) {
			if s := seconds[k][user]; s > best {
				best, a.User, a.Command = s, user, commands[k][user]
			}
		}
		r.Underused = append(r.Underused, a.Underused)
	}
	slices.SortFunc(r.Underused, func(a, b Underused) int {
		return cmp.Or(cmp.Compare(b.Hours, a.Hours), cmp.Compare(a.Host, b.Host), cmp.Compare(a.GPU, b.GPU))
	})
}

// span is the smallest hour and the end of the largest one.
func span(gpus []GPUHour) (from, to time.Time) {
	for i := range gpus {
		h := gpus[i].Hour
		if from.IsZero() || h.Before(from) {
			from = h
		}
		if end := h.Add(time.Hour); end.After(to) {
			to = end
		}
	}
	return from, to
}

// gpuAcc sums one GPU's hours (or one host's).
type gpuAcc struct {
	GPUHour           // sums and maxima; Hour unused
	spark   []float64 // util seconds and measured seconds per sparkline cell, interleaved
	gpus    int       // a host's: how many GPUs
}

// avgUtil is the average utilization (0–1) over the time it was logged.
func (a *gpuAcc) avgUtil() float64 { return ratio(a.UtilSeconds, a.Seconds-a.UtilMissingSeconds) }

// utilNotLogged and memNotLogged report whether none of the samples had a
// utilization, or memory used.
func (a *gpuAcc) utilNotLogged() bool { return a.Samples > 0 && a.UtilMissing >= a.Samples }
func (a *gpuAcc) memNotLogged() bool  { return a.Samples > 0 && a.MemMissing >= a.Samples }

// add sums an hour into the accumulator; cell is its sparkline cell, or
// -1 outside the window.
func (a *gpuAcc) add(h *GPUHour, cell int) { a.addWeighted(h, cell, 1) }

// addWeighted sums an hour into the accumulator, its time counted at
// weight w of a GPU's: a MIG instance's hours are its share of its GPU's
// compute, so that seven 1g.10gb instances busy for an hour make one busy
// GPU-hour.
func (a *gpuAcc) addWeighted(h *GPUHour, cell int, w float64) {
	a.Samples += h.Samples
	a.Seconds += w * h.Seconds
	a.UtilSeconds += w * h.UtilSeconds
	a.BusySeconds += w * h.BusySeconds
	a.IdleHeldSeconds += w * h.IdleHeldSeconds
	a.EnergyJoules += h.EnergyJoules
	a.UtilMissing += h.UtilMissing
	a.UtilMissingSeconds += w * h.UtilMissingSeconds
	a.MemMissing += h.MemMissing
	a.UtilMax = maxKnown(a.UtilMax, h.UtilMax)
	a.MemMax = max(a.MemMax, h.MemMax)
	a.MemTotal = max(a.MemTotal, h.MemTotal)
	a.TempMax = maxKnown(a.TempMax, h.TempMax)
	if cell >= 0 && cell < len(a.spark)/2 {
		a.spark[2*cell] += w * h.UtilSeconds
		a.spark[2*cell+1] += w * (h.Seconds - h.UtilMissingSeconds)
	}
}

// weight is how much of a GPU an hour's device counts for in a host's
// and the report's totals: a whole GPU all, a MIG instance its share of
// its GPU's compute, a GPU split into instances nothing but its energy
// (its instances count).
func weight(h *GPUHour) float64 {
	switch {
	case h.MIGEnabled:
		return 0
	case h.MIG != nil:
		return instanceShare(h.Name, h.MIG)
	}
	return 1
}

// instanceShare is how much of its GPU a device counts for in GPU-hours:
// a MIG instance its share of the GPU's compute (a seventh when its
// profile is unknown), a whole GPU all of it. name is the GPU's model,
// "" when unknown.
func instanceShare(name string, m *gpu.MIG) float64 {
	if m == nil {
		return 1
	}
	if w := gpu.ComputeShare(name, m.Profile); w > 0 {
		return w
	}
	return 1.0 / 7
}

func (r *Report) buildGPUs(gpus []GPUHour, o Options) {
	start := o.From.UTC().Truncate(time.Hour)
	hours := max(1, int(math.Ceil(o.To.Sub(start).Hours())))
	perCell := (hours + SparkWidth - 1) / SparkWidth
	cells := (hours + perCell - 1) / perCell

	var accs []*gpuAcc
	var slots []slot
	index := map[slot]int{} // → place in accs
	hostAccs := map[string]*gpuAcc{}
	var total gpuAcc
	for i := range gpus {
		h := &gpus[i]
		at := slotOf(h.Host, h.GPU, h.MIG)
		k, ok := index[at]
		if !ok {
			k = len(accs)
			index[at] = k
			accs = append(accs, &gpuAcc{GPUHour: GPUHour{GPU: h.GPU, Host: h.Host, MIG: h.MIG}, spark: make([]float64, 2*cells)})
			slots = append(slots, at)
			if hostAccs[h.Host] == nil {
				hostAccs[h.Host] = &gpuAcc{GPUHour: GPUHour{Host: h.Host}, spark: make([]float64, 2*cells)}
			}
			if h.MIG == nil {
				hostAccs[h.Host].gpus++
			}
		}
		a := accs[k]
		if h.UUID != "" {
			a.UUID = h.UUID
		}
		if h.Name != "" {
			a.Name = h.Name
		}
		a.MIGEnabled = a.MIGEnabled || h.MIGEnabled
		cell := -1
		if c := int(math.Floor(h.Hour.Sub(start).Hours())); c >= 0 {
			cell = c / perCell
		}
		a.add(h, cell)
		w := weight(h)
		hostAccs[h.Host].addWeighted(h, cell, w)
		total.addWeighted(h, -1, w)
	}
	order := make([]int, len(accs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return compareSlots(slots[a], slots[b]) })
	sorted := make([]*gpuAcc, len(accs))
	for i, k := range order {
		sorted[i] = accs[k]
	}
	accs = sorted
	// The sparklines draw the hours that have data, alike for every GPU:
	// a window longer than what was recorded is not drawn as blank columns.
	first, last := cells, -1
	for _, a := range accs {
		for c := range cells {
			if a.spark[2*c+1] > 0 {
				first, last = min(first, c), max(last, c)
			}
		}
	}
	drawn := func(a *gpuAcc) string {
		if last < first {
			return ""
		}
		return sparkline(a.spark[2*first : 2*last+2])
	}
	r.GPUs = make([]GPUReport, len(accs))
	for i, a := range accs {
		g := &r.GPUs[i]
		*g = GPUReport{Host: a.Host, GPU: a.GPU, UUID: a.UUID, Name: a.Name, MIG: a.MIG, MIGEnabled: a.MIGEnabled, CoveredHours: a.Seconds / 3600,
			AvgUtil: 100 * a.avgUtil(), PeakUtil: a.UtilMax, PeakMem: a.MemMax, MemTotal: a.MemTotal,
			BusyHours: a.BusySeconds / 3600, IdleHeldHours: a.IdleHeldSeconds / 3600, PeakTemp: a.TempMax,
			EnergyKWh: a.EnergyJoules / 3.6e6, Sparkline: drawn(a),
			UtilNotLogged: a.utilNotLogged(), MemNotLogged: a.memNotLogged()}
		if g.UtilNotLogged {
			g.Sparkline = ""
		}
		g.Cost = o.PricePerKWh * g.EnergyKWh
	}
	r.Hosts = make([]HostReport, 0, len(hostAccs))
	for _, host := range slices.Sorted(maps.Keys(hostAccs)) {
		a := hostAccs[host]
		h := HostReport{Host: host, GPUs: a.gpus, CoveredHours: a.Seconds / 3600, AvgUtil: 100 * a.avgUtil(), UtilNotLogged: a.utilNotLogged(),
			BusyHours: a.BusySeconds / 3600, IdleHeldHours: a.IdleHeldSeconds / 3600, EnergyKWh: a.EnergyJoules / 3.6e6,
			Sparkline: drawn(hostAccs[host])}
		h.Cost = o.PricePerKWh * h.EnergyKWh
		r.Hosts = append(r.Hosts, h)
	}
	r.CoveredHours = total.Seconds / 3600
	r.AvgUtil = 100 * total.avgUtil()
	r.UtilNotLogged, r.MemNotLogged = total.utilNotLogged(), total.memNotLogged()
	r.BusyShare = ratio(total.BusySeconds, total.Seconds)
	r.IdleShare = ratio(total.IdleHeldSeconds, total.Seconds)
	r.IdleHeldHours = total.IdleHeldSeconds / 3600
	r.EnergyKWh = total.EnergyJoules / 3.6e6
	r.Cost = o.PricePerKWh * r.EnergyKWh
}

// maxKnown is the larger of a and b, ignoring a b that is not a number, so
// one bad sample cannot spoil a peak (or the report's JSON).
func maxKnown(a, b float64) float64 {
	if math.IsNaN(b) || math.IsInf(b, 0) {
		return a
	}
	return max(a, b)
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// sparkline draws interleaved (util seconds, seconds) cells as bars on a
// fixed 0–100% scale, so the GPUs' lines compare at a glance; a cell without
// covered time is a gap.
func sparkline(cells []float64) string {
	percents := make([]float64, len(cells)/2)
	for c := range percents {
		percents[c] = math.NaN()
		if secs := cells[2*c+1]; secs > 0 {
			percents[c] = cells[2*c] / secs * 100
		}
	}
	return spark.Draw(percents, 0, 100)
}

// userAcc sums one user's hours.
type userAcc struct {
	UserReport
	slots []slot               // the GPUs used
	migs  map[slot]*gpu.MIG    // the MIG instances among them
	idle  map[slot]*IdleHolder // by GPU
}

func (r *Report) buildUsers(users []UserHour, top int) {
	var accs []*userAcc
	index := map[string]int{}
	for i := range users {
		h := &users[i]
		name := h.User
		if name == "" {
			name = unknownUser
		}
		k, ok := index[name]
		if !ok {
			k = len(accs)
			index[name] = k
			accs = append(accs, &userAcc{UserReport: UserReport{User: name}})
		}
		a := accs[k]
		a.GPUHours += instanceShare("", h.MIG) * h.GPUSeconds / 3600 // a MIG instance's hours are its share of its GPU's
		a.GiBHours += h.ByteSeconds / (1 << 30) / 3600
		if h.Job != "" && !slices.Contains(a.Jobs, h.Job) {
			a.Jobs = append(a.Jobs, h.Job)
		}
		at := slotOf(h.Host, h.GPU, h.MIG)
		if !slices.Contains(a.slots, at) {
			a.slots = append(a.slots, at)
			if h.MIG != nil {
				if a.migs == nil {
					a.migs = map[slot]*gpu.MIG{}
				}
				a.migs[at] = h.MIG
			}
		}
		if h.IdleHeldSeconds > 0 {
			if a.idle == nil {
				a.idle = map[slot]*IdleHolder{}
			}
			ih := a.idle[at]
			if ih == nil {
				ih = &IdleHolder{User: name, Host: h.Host, GPU: h.GPU, UUID: h.UUID, MIG: h.MIG}
				a.idle[at] = ih
			}
			ih.Seconds += h.IdleHeldSeconds
			ih.MaxBytes = max(ih.MaxBytes, h.IdleHeldMax)
			if h.Job != "" {
				ih.Job = h.Job
			}
		}
	}
	var holders []IdleHolder
	for _, a := range accs {
		a.placeGPUs()
		for _, ih := range a.idle {
			if ih.Seconds >= MinIdleHeld.Seconds() {
				holders = append(holders, *ih)
			}
		}
	}
	slices.SortFunc(accs, func(a, b *userAcc) int {
		return cmp.Or(cmp.Compare(b.GPUHours, a.GPUHours), cmp.Compare(b.GiBHours, a.GiBHours), cmp.Compare(a.User, b.User))
	})
	r.Users = make([]UserReport, 0, min(top, len(accs)))
	for _, a := range accs[:min(top, len(accs))] {
		r.Users = append(r.Users, a.UserReport)
	}
	r.OtherUsers = len(accs) - len(r.Users)
	slices.SortFunc(holders, func(a, b IdleHolder) int {
		return cmp.Or(cmp.Compare(b.Seconds, a.Seconds), cmp.Compare(a.User, b.User), cmp.Compare(a.Host, b.Host), cmp.Compare(a.GPU, b.GPU))
	})
	r.IdleHolders = holders[:min(MaxIdleHolders, len(holders))]
	r.OtherIdle = len(holders) - len(r.IdleHolders)
	if r.IdleHolders == nil {
		r.IdleHolders = []IdleHolder{}
	}
}

// placeGPUs fills the user's GPUs (indexes) and Hosts from the GPUs used.
func (a *userAcc) placeGPUs() {
	slices.SortFunc(a.slots, compareSlots)
	for _, s := range a.slots {
		if !slices.Contains(a.GPUs, s.gpu) {
			a.GPUs = append(a.GPUs, s.gpu)
		}
		if n := len(a.Hosts); n == 0 || a.Hosts[n-1].Host != s.host {
			a.Hosts = append(a.Hosts, UserHost{Host: s.host})
		}
		h := &a.Hosts[len(a.Hosts)-1]
		h.GPUs = append(h.GPUs, s.gpu)
		h.Labels = append(h.Labels, gpu.Label(s.gpu, a.migs[s]))
	}
	slices.Sort(a.GPUs)
}

func (r *Report) buildAlerts(alerts []AlertHour, o Options) {
	r.Alerts = []AlertReport{}
	index := map[string]int{}
	of := func(name string) *AlertReport {
		k, ok := index[name]
		if !ok {
			k = len(r.Alerts)
			index[name] = k
			r.Alerts = append(r.Alerts, AlertReport{Alert: name})
		}
		return &r.Alerts[k]
	}
	for i := range alerts {
		h := &alerts[i]
		if h.Fired <= 0 {
			continue
		}
		a := of(h.Alert)
		a.Fired += h.Fired
		a.LongestSeconds = max(a.LongestSeconds, h.LongestSeconds)
		r.AlertsFired += h.Fired
	}
	for _, f := range o.Firing {
		if !f.Since.Before(o.To) {
			continue
		}
		a := of(f.Alert)
		a.StillFiring++
		a.LongestSeconds = max(a.LongestSeconds, o.To.Sub(f.Since).Seconds())
		if !f.Since.Before(o.From) {
			a.Fired++
			r.AlertsFired++
		}
	}
	slices.SortFunc(r.Alerts, func(a, b AlertReport) int {
		return cmp.Or(cmp.Compare(b.Fired, a.Fired), cmp.Compare(a.Alert, b.Alert))
	})
}

// Title names the report: "GPU usage on node1, Mon 30 Nov 09:00 – Tue 1 Dec
// 09:00", in the report's zone; a fleet's says "on 12 hosts".
func (r *Report) Title() string {
	const layout = "Mon 2 Jan 15:04"
	on := ""
	switch {
	case r.Fleet():
		on = " on " + plural.Count(len(r.Hosts), "host")
	case r.Host != "":
		on = " on " + r.Host
	}
	title := fmt.Sprintf("GPU usage%s, %s – %s", on, r.From.In(r.loc()).Format(layout), r.To.In(r.loc()).Format(layout))
	if r.Team != "" {
		title = "Team " + r.Team + ": " + title
	}
	return title
}

func (r *Report) loc() *time.Location {
	if r.Location == nil {
		return time.UTC
	}
	return r.Location
}

// Notification wraps the report, rendered in every form, as a digest
// notification for a receiver.
func (r *Report) Notification(receiver string, at time.Time) (*notifier.Notification, error) {
	blocks, err := r.Blocks()
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode digest %q as JSON: %w", r.Name, err)
	}
	return &notifier.Notification{
		Receiver:  receiver,
		GroupKey:  receiver + "/digest/" + r.Name,
		Status:    notifier.StatusDigest,
		CreatedAt: at,
		Digest: &notifier.Digest{Name: r.Name, Title: r.Title(), Text: r.Text(), Markdown: r.Markdown(),
			Blocks: blocks, Data: data},
	}, nil
}
