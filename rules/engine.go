package rules

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// trendSpan is the window over which a transition's trend (rate of change of
// the alert's metric) is measured.
const trendSpan = 10 * time.Minute

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
	Labels      map[string]string
	Processes   []gpu.Process // the GPU's processes at the time, largest first
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
}

// Engine evaluates rules on each snapshot and keeps the state of every
// alert (rule × GPU). It is not safe for concurrent use; one sampling loop
// drives it.
type Engine struct {
	rules  []*Rule
	opts   Options
	specs  []WindowSpec // every window any rule needs, per GPU, in slot order
	trends []Metric     // the metrics whose trend transitions report
	layout []compiled   // per rule
	gpus   map[string]*gpuState
	byIdx  map[int]*gpuState // GPUs without a UUID
	out    []Transition
	xids   []uint64
	ctx    EvalContext
}

// compiled tells where a rule's windows and trend sit in a GPU's state.
type compiled struct {
	whenAt, whenLen   int
	clearAt, clearLen int
	trend             int // index into trends, -1 for none
}

type gpuState struct {
	index   int
	stale   bool // applies must be recomputed (after Inherit)
	windows []*Window
	trends  []*Window
	alerts  []Alert
	applies []bool
}

// NewEngine makes an engine for the rules.
func NewEngine(rules []*Rule, opts Options) *Engine {
	e := &Engine{rules: rules, opts: opts, gpus: map[string]*gpuState{}, byIdx: map[int]*gpuState{}}
	e.layout = e.plan()
	return e
}

// Rules returns the engine's rules.
func (e *Engine) Rules() []*Rule { return e.rules }

// plan assigns every rule its window and trend slots.
func (e *Engine) plan() []compiled {
	layout := make([]compiled, len(e.rules))
	for i, r := range e.rules {
		c := &layout[i]
		c.whenAt, c.whenLen = len(e.specs), len(r.When.Windows())
		e.specs = append(e.specs, r.When.Windows()...)
		if r.ClearWhen != nil {
			c.clearAt, c.clearLen = len(e.specs), len(r.ClearWhen.Windows())
			e.specs = append(e.specs, r.ClearWhen.Windows()...)
		}
		c.trend = e.trendSlot(r.When.ValueMetric())
	}
	return layout
}

// trendSlot returns the index of m's trend window, adding one if needed;
// metrics without a meaningful trend (xid, counts) get -1.
func (e *Engine) trendSlot(m Metric) int {
	if m == MetricXID || m.Dimension().Base == Count {
		return -1
	}
	for i, t := range e.trends {
		if t == m {
			return i
		}
	}
	e.trends = append(e.trends, m)
	return len(e.trends) - 1
}

func (e *Engine) state(d *gpu.Device) *gpuState {
	var gs *gpuState
	if d.UUID != "" {
		gs = e.gpus[d.UUID]
	} else {
		gs = e.byIdx[d.Index]
	}
	if gs != nil {
		if gs.stale {
			for i, r := range e.rules {
				gs.applies[i] = r.AppliesTo(d.Index, d.UUID, d.Name)
			}
			gs.stale = false
		}
		return gs
	}
	gs = &gpuState{
		windows: make([]*Window, len(e.specs)),
		trends:  make([]*Window, len(e.trends)),
		alerts:  make([]Alert, len(e.rules)),
		applies: make([]bool, len(e.rules)),
	}
	for i, s := range e.specs {
		gs.windows[i] = NewWindow(s.Span)
	}
	for i := range e.trends {
		gs.trends[i] = NewWindow(trendSpan)
	}
	for i, r := range e.rules {
		gs.applies[i] = r.AppliesTo(d.Index, d.UUID, d.Name)
	}
	if d.UUID != "" {
		e.gpus[d.UUID] = gs
	} else {
		e.byIdx[d.Index] = gs
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
	gs := e.state(d)
	gs.index = d.Index
	for i, w := range gs.windows {
		w.Add(s.Time, e.specs[i].Metric.Value(d))
	}
	for i, w := range gs.trends {
		w.Add(s.Time, e.trends[i].Value(d))
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
		c := &e.layout[j]
		ctx.Windows = gs.windows[c.whenAt : c.whenAt+c.whenLen]
		active := r.When.Eval(ctx)
		clear := false
		a := &gs.alerts[j]
		if r.ClearWhen != nil && a.State == StateFiring {
			ctx.Windows = gs.windows[c.clearAt : c.clearAt+c.clearLen]
			clear = r.ClearWhen.Eval(ctx)
		}
		change := a.Step(s.Time, active, clear, r.Timing)
		if a.State != StateInactive || change != NoChange {
			ctx.Windows = gs.windows[c.whenAt : c.whenAt+c.whenLen]
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
		case a.RepeatDue(s.Time, e.repeatInterval(r)):
			a.LastSentAt = s.Time
			e.emit(s, d, gs, j, true)
		}
	}
}

func (e *Engine) repeatInterval(r *Rule) time.Duration {
	if r.RepeatInterval > 0 {
		return r.RepeatInterval
	}
	return e.opts.RepeatInterval
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
		StartsAt: a.FiredAt, Labels: r.Labels,
		Processes: sortedProcesses(d.Processes),
	}
	if a.State == StateInactive {
		t.EndsAt = a.ResolvedAt
	}
	if c := e.layout[j]; c.trend >= 0 {
		w, m := gs.trends[c.trend], e.trends[c.trend]
		t.Trend = w.Slope()
		t.TrendText = trendText(m.Dimension(), t.Trend)
		if m == MetricMemoryUsed && w.Ready() && d.MemKnown() {
			t.TimeToFull = timeToFull(w, float64(d.MemTotal))
		}
	}
	data := TemplateData{Alert: r.Name, GPU: d.Index, UUID: d.UUID, Name: d.Name, Host: s.Host,
		Value: a.Value, ValueText: t.ValueText, Severity: string(r.Severity), Labels: r.Labels,
		Processes: t.Processes, StartsAt: a.FiredAt}
	t.Summary = render(r.Summary, &data)
	if t.Summary == "" {
		t.Summary = fmt.Sprintf("%s on GPU %d (%s): %s", r.Name, d.Index, d.Name, t.ValueText)
	}
	t.Description = render(r.Description, &data)
	e.out = append(e.out, t)
}

// HasTimeToFull reports whether TimeToFull holds a value.
func (t *Transition) HasTimeToFull() bool { return t.TimeToFull != time.Duration(math.MinInt64) }

func timeToFull(w *Window, full float64) time.Duration {
	slope := w.Slope()
	if slope <= 0 {
		return time.Duration(math.MaxInt64)
	}
	last, _ := w.Last()
	secs := max(0, (full-w.Predict(last))/slope)
	if secs > float64(math.MaxInt64/int64(time.Second)) {
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
// config reload: every rule of the same name keeps its alerts, and, when its
// conditions are unchanged, its windows, so a reload neither re-announces
// firing alerts nor forgets the last half hour.
func (e *Engine) Inherit(old *Engine) {
	oldRule := map[string]int{}
	for j, r := range old.rules {
		oldRule[r.Name] = j
	}
	adopt := func(ogs *gpuState, key string, byIndex bool) {
		gs := &gpuState{
			index:   ogs.index,
			windows: make([]*Window, len(e.specs)),
			trends:  make([]*Window, len(e.trends)),
			alerts:  make([]Alert, len(e.rules)),
			applies: make([]bool, len(e.rules)),
		}
		for i, s := range e.specs {
			gs.windows[i] = NewWindow(s.Span)
		}
		for i, m := range e.trends {
			gs.trends[i] = NewWindow(trendSpan)
			if k := slices.Index(old.trends, m); k >= 0 {
				gs.trends[i] = ogs.trends[k]
			}
		}
		for j, r := range e.rules {
			k, ok := oldRule[r.Name]
			if !ok {
				continue
			}
			gs.alerts[j] = ogs.alerts[k]
			or, oc, c := old.rules[k], old.layout[k], e.layout[j]
			if sameCond(or.When, r.When) {
				copy(gs.windows[c.whenAt:c.whenAt+c.whenLen], ogs.windows[oc.whenAt:oc.whenAt+oc.whenLen])
			}
			if r.ClearWhen != nil && sameCond(or.ClearWhen, r.ClearWhen) {
				copy(gs.windows[c.clearAt:c.clearAt+c.clearLen], ogs.windows[oc.clearAt:oc.clearAt+oc.clearLen])
			}
		}
		if byIndex {
			e.byIdx[ogs.index] = gs
		} else {
			e.gpus[key] = gs
		}
		gs.stale = true
	}
	for uuid, ogs := range old.gpus {
		adopt(ogs, uuid, false)
	}
	for _, ogs := range old.byIdx {
		adopt(ogs, "", true)
	}
}

func sameCond(a, b *Cond) bool {
	return a != nil && b != nil && a.String() == b.String()
}
