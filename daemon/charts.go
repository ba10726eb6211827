package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/rules"
)

// BucketCharts holds the data of the pictures notifications name, by
// chart id, for ChartRetention: receivers draw them when they deliver,
// the API when someone follows a chart_url.
const BucketCharts = "charts"

// ChartRetention is how long a chart's data is kept.
const ChartRetention = 7 * 24 * time.Hour

// minChartSpan is the shortest history an alert's chart shows; a rule
// with long windows shows three of them.
const minChartSpan = time.Hour

// chartRecord is what BucketCharts keeps: an alert's chart or a host's
// picture of the day.
type chartRecord struct {
	At    time.Time    `json:"at"`
	Alert *chart.Alert `json:"alert,omitempty"`
	Day   *chart.Day   `json:"day,omitempty"`
}

// ErrNoChart says a chart id names no chart kept.
var ErrNoChart = errors.New("no such chart: it is older than a week, or was never made")

// chartID names a chart: the same transition always gets the same id, so
// a retried commit writes one record.
func chartID(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:12])
}

// chartKind says which chart a rule's alerts get; false for none (XID
// errors, power).
func chartKind(r *rules.Rule) (chart.Kind, bool) {
	if r == nil || r.When == nil {
		return "", false
	}
	ms := r.When.Metrics()
	has := func(want ...rules.Metric) bool {
		return slices.ContainsFunc(ms, func(m rules.Metric) bool { return slices.Contains(want, m) })
	}
	switch {
	case has(rules.MetricMissingFor):
		return chart.KindLost, true
	case has(rules.MetricTemperature):
		return chart.KindTemperature, true
	case has(rules.MetricUtilizationGPU, rules.MetricUtilizationMemory):
		return chart.KindIdle, true
	case has(rules.MetricMemoryUsed, rules.MetricMemoryFree, rules.MetricMemoryUsedPercent, rules.MetricProcessMemory, rules.MetricMemoryHeld, rules.MetricOOMExits):
		return chart.KindMemory, true
	}
	return "", false
}

// chartSpan is how much history a rule's chart shows: three times its
// longest window, at least an hour, at most the day the daemon keeps.
func chartSpan(r *rules.Rule) time.Duration {
	longest := time.Duration(0)
	for _, c := range []*rules.Cond{r.When, r.ClearWhen} {
		if c == nil {
			continue
		}
		for _, w := range append(c.Windows(), c.Trends()...) {
			longest = max(longest, w.Span)
		}
	}
	return min(max(3*longest, minChartSpan), historyMinutes*time.Minute)
}

// alertCharts makes the charts of the transitions that get one (fired
// and resolved alerts, not reminders) from the history, and returns them
// by alert key and transition time, for Dispatch to name.
func (d *Daemon) alertCharts(ts []rules.Transition) map[string]string {
	var out map[string]string
	for i := range ts {
		t := &ts[i]
		kind, ok := chartKind(t.Rule)
		if !ok || t.Repeat || !t.Resolved() && t.StartsAt.IsZero() {
			continue
		}
		a, ok := d.alertChart(t, kind)
		if !ok {
			continue
		}
		raw, err := json.Marshal(chartRecord{At: t.At, Alert: a})
		if err != nil {
			d.logger.Error("cannot encode an alert's chart; the alert goes without it", "alert", t.Alert, "err", err)
			continue
		}
		key := notifier.AlertKey(t.Host, t.Alert, t.UUID)
		id := chartID(key, t.StateName(), t.At.UTC().Format(time.RFC3339Nano))
		if out == nil {
			out = map[string]string{}
		}
		out[transitionKey(t)] = id
		d.pendingCharts = append(d.pendingCharts, pendingChart{id: id, raw: raw})
	}
	return out
}

// pendingChart is a chart made during an evaluation, to write with its
// commit.
type pendingChart struct {
	id  string
	raw []byte
}

func transitionKey(t *rules.Transition) string {
	return notifier.AlertKey(t.Host, t.Alert, t.UUID) + "|" + t.StateName() + "|" + t.At.String()
}

// alertChart fills the chart of transition t from the history kept of
// its GPU; false when the daemon kept none.
func (d *Daemon) alertChart(t *rules.Transition, kind chart.Kind) (*chart.Alert, bool) {
	h, ok := d.history.History(t.Host, t.UUID, t.GPU, chartSpan(t.Rule))
	if !ok {
		return nil, false
	}
	a := &chart.Alert{Kind: kind, Alert: t.Alert, Status: t.StateName(), Host: t.Host, GPU: t.GPU, MIG: t.MIG, GPUName: t.GPUName,
		At: t.At, FiredAt: t.StartsAt, ResolvedAt: t.EndsAt, LastReport: t.LastReport,
		Ceiling: float64(h.MemAllocatable)}
	start := h.End.Add(-time.Duration(len(h.MemoryUsed)-1) * h.Step)
	a.Memory = chart.Series{Start: start, Step: h.Step, Values: make(chart.Values, len(h.MemoryUsed))}
	for i, pct := range h.MemoryUsed {
		a.Memory.Values[i] = pct / 100 * float64(h.MemTotal)
		if h.MemTotal == 0 {
			a.Memory.Values[i] = math.NaN()
		}
	}
	a.Utilization = chart.Series{Start: start, Step: h.Step, Values: h.Utilization}
	a.Temperature = chart.Series{Start: start, Step: h.Step, Values: h.Temperature}
	if len(t.Processes) > 0 {
		p := t.Processes[0]
		a.Holder = fmt.Sprintf("pid %d · %s · %s", p.PID, p.User, p.Command)
	}
	if t.Exit != nil {
		a.Ending = t.Exit.Text(t.Label())
	}
	switch kind {
	case chart.KindMemory:
		if t.Rule.When.ValueMetric().Dimension().Base == rules.Bytes && t.Trend > 0 {
			a.Growth = t.Trend
		}
	case chart.KindTemperature:
		a.Above, a.Below = temperatureThresholds(t.Rule)
	}
	return a, true
}

// temperatureThresholds reads a temperature rule's thresholds: the
// temperature above which it fires and, with clear_when, below which it
// clears; 0 for one it does not have.
func temperatureThresholds(r *rules.Rule) (above, below float64) {
	find := func(c *rules.Cond, ops ...string) float64 {
		if c == nil {
			return 0
		}
		var walk func(n rules.CondNode) float64
		walk = func(n rules.CondNode) float64 {
			if n.Kind == rules.CondCompare && n.Value.Metric == rules.MetricTemperature && slices.Contains(ops, n.Op) {
				return n.Quantity
			}
			for _, o := range n.Operands {
				if v := walk(o); v != 0 {
					return v
				}
			}
			return 0
		}
		return walk(c.Tree())
	}
	return find(r.When, ">", ">="), find(r.ClearWhen, "<", "<=")
}

// ChartPNG draws a kept chart, times in the daemon's zone.
func (d *Daemon) ChartPNG(id string) ([]byte, error) {
	raw, ok, err := d.db.Get(BucketCharts, id)
	switch {
	case err != nil:
		return nil, fmt.Errorf("read chart %s: %w", id, err)
	case !ok:
		return nil, fmt.Errorf("chart %s: %w", id, ErrNoChart)
	}
	var rec chartRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("decode chart %s: %w", id, err)
	}
	defer releaseDrawing()
	switch {
	case rec.Alert != nil:
		return rec.Alert.PNG(d.location())
	case rec.Day != nil:
		return rec.Day.PNG(d.location())
	}
	return nil, fmt.Errorf("chart %s holds nothing to draw", id)
}

// releaseDrawing hands the memory of a chart just drawn back to the
// system. Drawing one takes 3–4 MB (the pixels of its tallest part, the
// PNG compressor) that are garbage at once, and an agent draws a few a
// day: the runtime would keep that memory resident for the next, making
// a charting agent's RSS a third larger (BenchmarkRunDay8GPUs/charts).
// Freeing it costs a collection of a small heap, a millisecond or two.
func releaseDrawing() { debug.FreeOSMemory() }

// location is the zone the daemon shows times in.
func (d *Daemon) location() *time.Location {
	if d.opts.Location != nil {
		return d.opts.Location
	}
	return time.Local
}

// forgetOldCharts deletes the charts older than ChartRetention and sets
// aside those it cannot read.
func (d *Daemon) forgetOldCharts() {
	all, err := d.db.All(BucketCharts)
	if err != nil {
		d.logger.Error("cannot read the kept charts to forget old ones; trying again in an hour", "err", err)
		return
	}
	cutoff := d.opts.Now().Add(-ChartRetention)
	for id, raw := range all {
		var rec struct {
			At time.Time `json:"at"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			d.setAside(BucketCharts, id, fmt.Errorf("not a chart: %w", err))
			continue
		}
		if !rec.At.Before(cutoff) {
			continue
		}
		if err := d.db.Delete(BucketCharts, id); err != nil {
			d.logger.Error("cannot forget an old chart; trying again in an hour", "chart", id, "err", err)
			return
		}
	}
}

var _ notifier.Charts = (*Daemon)(nil)

// chartQueuePrefix starts the name of the outbox that feeds a receiver's
// chart uploads: "charts:team-slack".
const chartQueuePrefix = "charts:"

// queueChartUploads puts, for every receiver that uploads pictures, the
// notifications of c that name one in the receiver's chart outbox too,
// behind the text: the text goes first and never waits for a picture.
func (d *Daemon) queueChartUploads(c *notifier.Commit) {
	for receiver, queue := range d.chartQueues {
		for _, raw := range c.Outbox[receiver] {
			var n notifier.Notification
			if err := json.Unmarshal(raw, &n); err != nil || !namesChart(&n) {
				continue
			}
			if c.Outbox == nil {
				c.Outbox = map[string][][]byte{}
			}
			c.Outbox[queue] = append(c.Outbox[queue], raw)
		}
	}
}

// namesChart reports whether a notification names a picture.
func namesChart(n *notifier.Notification) bool {
	if n.Digest != nil {
		return len(n.Digest.Charts) > 0
	}
	return slices.ContainsFunc(n.Alerts, func(a notifier.Alert) bool { return a.Chart != "" })
}

// writeCharts adds the charts made in this evaluation to its commit.
func (d *Daemon) writeCharts(c *notifier.Commit) {
	for _, p := range d.pendingCharts {
		c.PutRecord(BucketCharts, p.id, p.raw)
	}
	d.pendingCharts = d.pendingCharts[:0]
}

// chartFile serves GET /api/v1/charts/ID.png: a kept chart, drawn now.
func (d *Daemon) chartFile(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutSuffix(r.PathValue("file"), ".png")
	if !ok || id == "" {
		http.Error(w, "ask for a chart as /api/v1/charts/ID.png", http.StatusNotFound)
		return
	}
	png, err := d.ChartPNG(id)
	switch {
	case errors.Is(err, ErrNoChart):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		d.logger.Error("cannot draw a chart", "chart", id, "err", err)
		http.Error(w, "the chart could not be drawn; the log says why", http.StatusInternalServerError)
		return
	}
	servePNG(w, png)
}

// servePNG answers with a picture. It shows what credentials let see:
// no cache keeps it.
func servePNG(w http.ResponseWriter, png []byte) {
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(png)
}

// dayCharts keeps the pictures of a digest's window, one per host, and
// returns their ids, for its notifications to name.
func (d *Daemon) dayCharts(c *notifier.Commit, name string, at time.Time, days []*chart.Day) []string {
	var ids []string
	for _, day := range days {
		raw, err := json.Marshal(chartRecord{At: at, Day: day})
		if err != nil {
			d.logger.Error("cannot encode a digest's picture; the digest goes without it", "digest", name, "err", err)
			continue
		}
		id := chartID("digest", name, day.Title, at.UTC().Format(time.RFC3339Nano))
		c.PutRecord(BucketCharts, id, raw)
		ids = append(ids, id)
	}
	return ids
}
