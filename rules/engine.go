package rules

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// trendSpan is the window over which a transition's trend (rate of change of
// the alert's metric) is measured.
const trendSpan = 10 * time.Minute

// historySteps is how many minutes a transition's History covers.
const historySteps = 30

// Transition is an alert that people must hear about: it fired, resolved, or
// is still firing and due for a reminder. It carries everything a notifier
// needs to say what is wrong, where, how bad, and who is behind it.
type Transition struct {
	At       time.Time
	Rule     *Rule
	Alert    string // the rule's name
	State    State  // StateFiring (fired or repeat) or StateInactive (resolved)
	Repeat   bool   // a reminder of an alert that was already announced
	Severity Severity
	Host     string
	GPU      int    // index
	UUID     string // GPU UUID
	GPUName  string // GPU model
	// Value is the condition's value (its first comparison's left side), in
	// its base unit; ValueText formats it with its unit.
	Value     float64
	ValueText string
	// Trend is how fast the alert's metric changes, per second, over the last
	// ten minutes (NaN until known); TrendText formats it ("+328 MiB/min").
	Trend     float64
	TrendText string
	// TimeToFull is the time until memory is full at the current trend, for
	// memory alerts; NaN when unknown or not a memory alert, +Inf when memory
	// is not growing.
	TimeToFull  time.Duration
	StartsAt    time.Time // when the alert fired
	EndsAt      time.Time // when it resolved; zero while firing
	Summary     string
	Description string
	// Labels are the rule's labels plus alert, severity, host, gpu (index)
	// and uuid: what routes and silences match on.
	Labels map[string]string
	// History is the alert's metric over the last 30 minutes, one average a
	// minute, oldest first (NaN where unknown); HistoryDim is its dimension.
	History    []float64
	HistoryDim Dimension
	// AlertState is the alert's state after this transition, to persist so
	// a restart neither repeats nor forgets it.
	AlertState Alert
	Processes  []gpu.Process // the GPU's processes at the time, largest first
}

// Resolved reports whether the transition announces the alert's end.
func (t *Transition) Resolved() bool { return t.State != StateFiring }

// StateName is "firing" or "resolved", as notifications and JSON say it.
func (t *Transition) StateName() string {
	if t.Resolved() {
		return "resolved"
	}
	return "firing"
}

// Options tune an Engine.
type Options struct {
	// RepeatInterval is how often a firing alert is announced again when its
	// rule does not say; 0 announces each alert once.
	RepeatInterval time.Duration
	// RepeatFor, when set, replaces RepeatInterval: it gets an alert's
	// labels (see Transition.Labels) once, when its GPU first appears, and
	// says how often to repeat it (the route's repeat_interval).
	RepeatFor func(labels map[string]string) time.Duration
}

// Engine evaluates rules on each snapshot and keeps the state of every
// alert (rule × GPU). It is not safe for concurrent use; one sampling loop
// drives it.
type Engine struct {
	rules []*Rule
	opts  Options
	specs []windowKey // the windows kept on each GPU: one per metric and span
	// histories are the metrics whose last half hour each GPU keeps.
	histories []Metric
	layout    []compiled // per rule
	gpus      map[string]*gpuState
	byIdx     map[int]*gpuState // GPUs without a UUID
	out       []Transition
	xids      []uint64
	ctx       EvalContext
	// restored holds saved alert states by GPU UUID until the GPU appears.
	restored map[string][]AlertRecord
}

// windowKey identifies a window: rules that look at the same metric over
// the same span share it.
type windowKey struct {
	metric Metric
	span   time.Duration
}

// compiled tells which of a GPU's windows a rule reads.
type compiled struct {
	when, clear []int // slots of the conditions' windows, in the conditions' order
	trend       int   // slot of the trend window; -1 for none
	history     int   // index into Engine.histories; -1 for none
}

type gpuState struct {
	index   int
	stale   bool      // applies must be recomputed (after Inherit)
	windows []*Window // per slot
	history []history // per Engine.histories
	// when and clear are, per rule, the windows its conditions read.
	when, clear [][]*Window
	alerts      []Alert
	applies     []bool
	repeat      []time.Duration // per rule: how often to repeat a firing alert
}

// NewEngine makes an engine for the rules.
func NewEngine(rules []*Rule, opts Options) *Engine {
	e := &Engine{rules: rules, opts: opts, gpus: map[string]*gpuState{}, byIdx: map[int]*gpuState{}}
	e.layout = make([]compiled, len(rules))
	for i, r := range rules {
		c := &e.layout[i]
		c.when = e.slots(r.When.Windows())
		if r.ClearWhen != nil {
			c.clear = e.slots(r.ClearWhen.Windows())
		}
		c.trend, c.history = -1, -1
		if m := r.When.ValueMetric(); m != MetricXID && m.Dimension().Base != Count {
			c.trend = e.slot(windowKey{m, trendSpan})
			if c.history = slices.Index(e.histories, m); c.history < 0 {
				e.histories, c.history = append(e.histories, m), len(e.histories)
			}
		}
	}
	return e
}

// Rules returns the engine's rules.
func (e *Engine) Rules() []*Rule { return e.rules }

func (e *Engine) slots(specs []WindowSpec) []int {
	out := make([]int, len(specs))
	for i, s := range specs {
		out[i] = e.slot(windowKey{s.Metric, s.Span})
	}
	return out
}

// slot returns the index of the window k, adding it if needed.
func (e *Engine) slot(k windowKey) int {
	if i := slices.Index(e.specs, k); i >= 0 {
		return i
	}
	e.specs = append(e.specs, k)
	return len(e.specs) - 1
}

func (e *Engine) state(host string, d *gpu.Device) *gpuState {
	var gs *gpuState
	if d.UUID != "" {
		gs = e.gpus[d.UUID]
	} else {
		gs = e.byIdx[d.Index]
	}
	if gs == nil {
		gs = e.newState(func(k windowKey) *Window { return NewWindow(k.span) })
		if d.UUID != "" {
			e.gpus[d.UUID] = gs
		} else {
			e.byIdx[d.Index] = gs
		}
	}
	if gs.stale {
		for i, r := range e.rules {
			gs.applies[i] = r.AppliesTo(d.Index, d.UUID, d.Name)
			gs.repeat[i] = e.repeatInterval(r, host, d)
		}
		e.restore(gs, d)
		gs.stale = false
	}
	return gs
}

// newState makes a GPU's state, taking each window from window.
func (e *Engine) newState(window func(windowKey) *Window) *gpuState {
	gs := &gpuState{
		stale:   true,
		windows: make([]*Window, len(e.specs)),
		when:    make([][]*Window, len(e.rules)),
		clear:   make([][]*Window, len(e.rules)),
		alerts:  make([]Alert, len(e.rules)),
		applies: make([]bool, len(e.rules)),
		repeat:  make([]time.Duration, len(e.rules)),
		history: make([]history, len(e.histories)),
	}
	for i, k := range e.specs {
		gs.windows[i] = window(k)
	}
	pick := func(slots []int) []*Window {
		ws := make([]*Window, len(slots))
		for i, s := range slots {
			ws[i] = gs.windows[s]
		}
		return ws
	}
	for j, c := range e.layout {
		gs.when[j], gs.clear[j] = pick(c.when), pick(c.clear)
	}
	return gs
}

// Eval evaluates every rule on every GPU of the snapshot, at the snapshot's
// time, and returns the transitions people must hear about. The returned
// slice is reused by the next call.
func (e *Engine) Eval(s *gpu.Snapshot) []Transition {
	e.out = e.out[:0]
	for i := range s.Devices {
		e.evalDevice(s, &s.Devices[i])
	}
	return e.out
}

func (e *Engine) evalDevice(s *gpu.Snapshot, d *gpu.Device) {
	gs := e.state(s.Host, d)
	gs.index = d.Index
	for i, w := range gs.windows {
		w.Add(s.Time, e.specs[i].metric.Value(d))
	}
	for i := range gs.history {
		gs.history[i].add(s.Time, e.histories[i].Value(d))
	}
	e.xids = e.xids[:0]
	for i := range s.Events {
		if ev := &s.Events[i]; ev.Kind == gpu.EventXID && ev.GPU == d.Index {
			e.xids = append(e.xids, ev.XID)
		}
	}
	ctx := &e.ctx
	ctx.Device, ctx.XIDs = d, e.xids
	for j, r := range e.rules {
		if !gs.applies[j] {
			continue
		}
		ctx.Windows = gs.when[j]
		when := r.When.Truth(ctx)
		clear := TruthUnknown
		a := &gs.alerts[j]
		if r.ClearWhen != nil && a.State == StateFiring {
			ctx.Windows = gs.clear[j]
			clear = r.ClearWhen.Truth(ctx)
		}
		change := a.Step(s.Time, when, clear, r.Timing)
		if a.State != StateInactive || change != NoChange {
			ctx.Windows = gs.when[j]
			if v := r.When.Value(ctx); !math.IsNaN(v) || change == NoChange {
				a.Value = v
			}
		}
		switch {
		case change == Fired:
			a.LastSentAt = s.Time
			e.emit(s, d, gs, j, false)
		case change == Resolved:
			e.emit(s, d, gs, j, false)
		case a.RepeatDue(s.Time, gs.repeat[j]):
			a.LastSentAt = s.Time
			e.emit(s, d, gs, j, true)
		}
	}
}

func (e *Engine) repeatInterval(r *Rule, host string, d *gpu.Device) time.Duration {
	switch {
	case r.RepeatInterval > 0:
		return r.RepeatInterval
	case e.opts.RepeatFor != nil:
		return e.opts.RepeatFor(alertLabels(r, host, d))
	}
	return e.opts.RepeatInterval
}

// alertLabels are the labels of rule r's alert on GPU d.
func alertLabels(r *Rule, host string, d *gpu.Device) map[string]string {
	labels := make(map[string]string, len(r.Labels)+5)
	maps.Copy(labels, r.Labels)
	labels["alert"] = r.Name
	labels["severity"] = string(r.Severity)
	labels["host"] = host
	labels["gpu"] = strconv.Itoa(d.Index)
	labels["uuid"] = d.UUID
	return labels
}

// emit builds the transition of rule j on device d. It runs only when
// something changes, so it may allocate.
func (e *Engine) emit(s *gpu.Snapshot, d *gpu.Device, gs *gpuState, j int, repeat bool) {
	r, a := e.rules[j], &gs.alerts[j]
	dim := r.When.ValueDimension()
	t := Transition{
		At: s.Time, Rule: r, Alert: r.Name, State: a.State, Repeat: repeat,
		Severity: r.Severity, Host: s.Host, GPU: d.Index, UUID: d.UUID, GPUName: d.Name,
		Value: a.Value, ValueText: dim.Format(a.Value),
		Trend: math.NaN(), TimeToFull: time.Duration(math.MinInt64),
		StartsAt: a.FiredAt, Labels: alertLabels(r, s.Host, d),
		Processes: sortedProcesses(d.Processes),
	}
	if a.State == StateInactive {
		t.EndsAt = a.ResolvedAt
	}
	if c := e.layout[j]; c.trend >= 0 {
		w, m := gs.windows[c.trend], e.specs[c.trend].metric
		t.History, t.HistoryDim = gs.history[c.history].series(s.Time), m.Dimension()
		t.Trend = w.Slope()
		t.TrendText = trendText(m.Dimension(), t.Trend)
		if m == MetricMemoryUsed && w.Ready() && d.MemKnown() {
			t.TimeToFull = timeToFull(w, float64(d.MemTotal))
		}
	}
	data := TemplateData{Alert: r.Name, GPU: d.Index, UUID: d.UUID, Name: d.Name, Host: s.Host,
		Value: a.Value, ValueText: t.ValueText, Severity: string(r.Severity), Labels: r.Labels,
		Processes: t.Processes, StartsAt: a.FiredAt}
	t.Summary = a.Summary
	if a.State == StateFiring || t.Summary == "" {
		t.Summary = render(r.Summary, &data)
		if t.Summary == "" {
			t.Summary = fmt.Sprintf("%s on GPU %d (%s): %s", r.Name, d.Index, d.Name, t.ValueText)
		}
		a.Summary = t.Summary
	}
	t.Description = render(r.Description, &data)
	t.AlertState = *a
	e.out = append(e.out, t)
}

// HasTimeToFull reports whether TimeToFull holds a value.
func (t *Transition) HasTimeToFull() bool { return t.TimeToFull != time.Duration(math.MinInt64) }

// timeToFull is secondsToFull as a duration, saturating at MaxInt64 (never).
func timeToFull(w *Window, full float64) time.Duration {
	secs := secondsToFull(w, full)
	if math.IsNaN(secs) || secs > float64(math.MaxInt64/int64(time.Second)) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(secs * float64(time.Second))
}

func trendText(dim Dimension, perSecond float64) string {
	if math.IsNaN(perSecond) {
		return ""
	}
	text := Dimension{Base: dim.Base, PerSecond: true}.Format(perSecond)
	if perSecond >= 0 {
		return "+" + text
	}
	return text
}

func sortedProcesses(ps []gpu.Process) []gpu.Process {
	out := slices.Clone(ps)
	slices.SortStableFunc(out, func(a, b gpu.Process) int { return cmp.Compare(b.MemUsed, a.MemUsed) })
	return out
}

// AlertState is one alert's state, for the CLI, the API and tests.
type AlertState struct {
	Rule *Rule
	GPU  int
	UUID string
	Alert
}

// Active returns every pending or firing alert.
func (e *Engine) Active() []AlertState {
	var out []AlertState
	visit := func(index int, uuid string, gs *gpuState) {
		for j, a := range gs.alerts {
			if a.State != StateInactive {
				out = append(out, AlertState{Rule: e.rules[j], GPU: index, UUID: uuid, Alert: a})
			}
		}
	}
	for uuid, gs := range e.gpus {
		visit(gs.index, uuid, gs)
	}
	for idx, gs := range e.byIdx {
		visit(idx, "", gs)
	}
	slices.SortFunc(out, func(a, b AlertState) int {
		return cmp.Or(cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.Rule.Name, b.Rule.Name))
	})
	return out
}

// Inherit takes over the state of old, an engine being replaced after a
// config reload: every rule of the same name keeps its alerts, and every
// window of the same metric and span keeps its samples, so a reload neither
// re-announces firing alerts nor forgets the last half hour.
func (e *Engine) Inherit(old *Engine) {
	adopt := func(ogs *gpuState) *gpuState {
		gs := e.newState(func(k windowKey) *Window {
			if i := slices.Index(old.specs, k); i >= 0 {
				return ogs.windows[i]
			}
			return NewWindow(k.span)
		})
		gs.index = ogs.index
		for i, m := range e.histories {
			if k := slices.Index(old.histories, m); k >= 0 {
				gs.history[i] = ogs.history[k]
			}
		}
		for j, r := range e.rules {
			if k := slices.IndexFunc(old.rules, func(o *Rule) bool { return o.Name == r.Name }); k >= 0 {
				gs.alerts[j] = ogs.alerts[k]
			}
		}
		return gs
	}
	for uuid, ogs := range old.gpus {
		e.gpus[uuid] = adopt(ogs)
	}
	for idx, ogs := range old.byIdx {
		e.byIdx[idx] = adopt(ogs)
	}
}

// AlertRecord is an alert's state as saved across restarts.
type AlertRecord struct {
	Rule string
	UUID string
	Alert
}

// Restore gives the engine alert states saved before a restart. Each is
// applied when its GPU first appears; records of rules that no longer exist
// are dropped. A restored firing alert is not announced again; if its
// condition is known not to hold at the first evaluation, it resolves then.
func (e *Engine) Restore(recs []AlertRecord) {
	e.restored = map[string][]AlertRecord{}
	for _, r := range recs {
		e.restored[r.UUID] = append(e.restored[r.UUID], r)
	}
}

func (e *Engine) restore(gs *gpuState, d *gpu.Device) {
	recs, ok := e.restored[d.UUID]
	if !ok || d.UUID == "" {
		return
	}
	for _, rec := range recs {
		if j := slices.IndexFunc(e.rules, func(r *Rule) bool { return r.Name == rec.Rule }); j >= 0 {
			gs.alerts[j] = rec.Alert
		}
	}
	delete(e.restored, d.UUID)
}
