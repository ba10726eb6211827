package promexport

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// InputSeries is one series of a promtool test: a selector and its values
// in promtool's notation, one per step.
type InputSeries struct {
	Series string
	Values string
}

// Series turns snapshots taken one step apart into the series Prometheus
// would have scraped from gpuwatch agents (or dcgm-exporter) on those
// GPUs: snaps[i] is step i, nil for a step without a snapshot. A series a
// scrape no longer has is marked stale, as Prometheus marks it; a GPU a
// host's snapshot no longer has is, on an agent, lost (gpuwatch_gpu_lost
// 1, its readings gone), and gone altogether from dcgm-exporter.
func Series(s Schema, snaps []*gpu.Snapshot) []InputSeries {
	b := &seriesBuilder{schema: s, steps: len(snaps), byKey: map[string][]float64{},
		xids: map[string]map[string]float64{}, lastXID: map[string]float64{}}
	known := map[string]gpu.Device{} // by host and GPU, since first seen
	var order []string
	for i, snap := range snaps {
		if snap == nil {
			continue
		}
		reported := map[string]bool{}
		for _, d := range snap.Devices {
			key := snap.Host + "\x00" + d.UUID + "\x00" + strconv.Itoa(d.Index)
			if _, ok := known[key]; !ok {
				order = append(order, key)
			}
			known[key] = d
			reported[key] = true
			b.device(i, snap.Host, &d, snap.Events)
		}
		for _, key := range order {
			if d := known[key]; !reported[key] && hostOf(key) == snap.Host {
				b.lost(i, snap.Host, &d)
			}
		}
	}
	return b.finish()
}

func hostOf(key string) string { h, _, _ := strings.Cut(key, "\x00"); return h }

// seriesBuilder collects the values of every series, step by step.
type seriesBuilder struct {
	schema Schema
	steps  int
	byKey  map[string][]float64 // NaN: no sample
	order  []string
	// xids are an agent's XID counters per GPU and code; lastXID
	// dcgm-exporter's latest code per GPU.
	xids    map[string]map[string]float64
	lastXID map[string]float64
}

// set records the value of a series at step i.
func (b *seriesBuilder) set(i int, series string, v float64) {
	vals, ok := b.byKey[series]
	if !ok {
		vals = make([]float64, b.steps)
		for j := range vals {
			vals[j] = math.NaN()
		}
		b.byKey[series] = vals
		b.order = append(b.order, series)
	}
	vals[i] = v
}

// selector writes a series' name and labels.
func selector(name string, labels ...string) string {
	parts := make([]string, 0, len(labels)/2)
	for i := 0; i+1 < len(labels); i += 2 {
		parts = append(parts, labels[i]+"="+strconv.Quote(labels[i+1]))
	}
	return name + "{" + strings.Join(parts, ", ") + "}"
}

// gpuSeries writes the selector of a per-GPU series of the schema.
func (b *seriesBuilder) gpuSeries(name, host string, d *gpu.Device, more ...string) string {
	labels := []string{"gpu", strconv.Itoa(d.Index), "host", host, "name", d.Name, "uuid", d.UUID}
	if b.schema == SchemaDCGM {
		labels = []string{"Hostname", host, "UUID", d.UUID, "gpu", strconv.Itoa(d.Index), "modelName", d.Name}
	}
	return selector(name, append(labels, more...)...)
}

// gauge records a reading, unless it is unknown.
func (b *seriesBuilder) gauge(i int, name, host string, d *gpu.Device, v float64) {
	if !math.IsNaN(v) && !math.IsInf(v, 0) {
		b.set(i, b.gpuSeries(name, host, d), v)
	}
}

// device records what a reporting GPU's exporter shows at step i.
func (b *seriesBuilder) device(i int, host string, d *gpu.Device, events []gpu.Event) {
	key := host + "\x00" + d.UUID
	counters := b.xids[key]
	if counters == nil {
		counters = map[string]float64{}
		b.xids[key] = counters
	}
	for _, ev := range events {
		if ev.Kind == gpu.EventXID && ev.GPU == d.Index {
			counters[strconv.FormatUint(ev.XID, 10)]++
			b.lastXID[key] = float64(ev.XID)
		}
	}
	if b.schema == SchemaDCGM {
		if d.MemKnown() {
			b.gauge(i, dcgmFBUsed, host, d, float64(d.MemUsed)/mib)
			b.gauge(i, dcgmFBFree, host, d, float64(d.MemTotal-min(d.MemUsed, d.MemTotal))/mib)
		}
		b.gauge(i, dcgmUtil, host, d, d.UtilGPU)
		b.gauge(i, dcgmMemUtil, host, d, d.UtilMem)
		b.gauge(i, dcgmTemp, host, d, d.TempC)
		b.gauge(i, dcgmPower, host, d, d.PowerW)
		b.gauge(i, dcgmPowerLimit, host, d, d.PowerLimitW)
		b.gauge(i, dcgmXID, host, d, b.lastXID[key])
		return
	}
	b.gauge(i, gwInfo, host, d, 1)
	b.gauge(i, gwLost, host, d, 0)
	if d.MemKnown() {
		b.gauge(i, gwMemUsed, host, d, float64(d.MemUsed))
		b.gauge(i, gwMemTotal, host, d, float64(d.MemTotal))
	}
	b.gauge(i, gwUtil, host, d, d.UtilGPU/100)
	b.gauge(i, gwMemUtil, host, d, d.UtilMem/100)
	b.gauge(i, gwTemp, host, d, d.TempC)
	b.gauge(i, gwPower, host, d, d.PowerW)
	b.gauge(i, gwPowerLimit, host, d, d.PowerLimitW)
	b.gauge(i, gwProcesses, host, d, float64(len(d.Processes)))
	for _, p := range d.Processes {
		b.set(i, selector(gwProcessMem, "command", p.Command, "container", p.Container, "gpu", strconv.Itoa(d.Index),
			"host", host, "pid", strconv.Itoa(p.PID), "user", p.User, "uuid", d.UUID), float64(p.MemUsed))
	}
	b.counters(i, host, d, counters)
}

// lost records a GPU an agent knows that stopped reporting: its info and
// counters stay, its readings go.
func (b *seriesBuilder) lost(i int, host string, d *gpu.Device) {
	if b.schema == SchemaDCGM {
		return
	}
	b.gauge(i, gwInfo, host, d, 1)
	b.gauge(i, gwLost, host, d, 1)
	b.counters(i, host, d, b.xids[host+"\x00"+d.UUID])
}

func (b *seriesBuilder) counters(i int, host string, d *gpu.Device, counters map[string]float64) {
	for _, code := range sortedKeys(counters) {
		b.set(i, b.gpuSeries(gwXID, host, d, "xid", code), counters[code])
	}
}

// finish writes every series' values in promtool's notation.
func (b *seriesBuilder) finish() []InputSeries {
	out := make([]InputSeries, 0, len(b.order))
	for _, key := range b.order {
		out = append(out, InputSeries{Series: key, Values: notation(b.byKey[key])})
	}
	return out
}

// notation writes values as promtool's series notation: a sample, "_" for
// none, "stale" where a series ends, and runs as "vxN" (v N+1 times) or
// "a+bxN" (a, a+b, …, a+N·b) for whole numbers.
func notation(vals []float64) string {
	end := len(vals)
	for end > 0 && math.IsNaN(vals[end-1]) {
		end--
	}
	var parts []string
	for i := 0; i < end; {
		v := vals[i]
		if math.IsNaN(v) {
			n := 0
			if i > 0 && !math.IsNaN(vals[i-1]) {
				parts = append(parts, "stale")
				i++
				continue
			}
			for i+n < end && math.IsNaN(vals[i+n]) {
				n++
			}
			parts = append(parts, fmt.Sprintf("_x%d", n))
			i += n
			continue
		}
		run := 1
		step := 0.0
		if i+1 < end && !math.IsNaN(vals[i+1]) {
			step = vals[i+1] - v
		}
		exact := v == math.Trunc(v) && step == math.Trunc(step) && math.Abs(v) < 1<<50 && math.Abs(step) < 1<<40
		for i+run < end && !math.IsNaN(vals[i+run]) && vals[i+run] == v+float64(run)*step && (step == 0 || exact) {
			run++
		}
		switch {
		case run >= 3 && step == 0:
			parts = append(parts, sample(v)+"x"+strconv.Itoa(run-1))
		case run >= 3:
			parts = append(parts, sample(v)+signed(step)+"x"+strconv.Itoa(run-1))
		default:
			run = 1
			parts = append(parts, sample(v))
		}
		i += run
	}
	if end < len(vals) && end > 0 {
		parts = append(parts, "stale")
	}
	return strings.Join(parts, " ")
}

func sample(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func signed(v float64) string {
	if v < 0 {
		return sample(v)
	}
	return "+" + sample(v)
}
