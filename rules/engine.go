package rules

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// trendSpan is the window over which a transition's trend (the steady rate
// of change of the alert's metric, see Trend) is measured.
const trendSpan = 30 * time.Minute

// maxTimeToFull is the longest time to full a transition reports: further
// out, "full in 3 days" says nothing about this alert.
const maxTimeToFull = 24 * time.Hour

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
	UUID     string // GPU UUID, or the MIG instance's
	GPUName  string // GPU model
	// MIG is the MIG instance the alert is about, nil for a whole GPU.
	MIG *gpu.MIG
	// Process is, for a rule that runs per process (Rule.PerProcess), the
	// process whose series it is; nil for a rule on the GPU.
	Process *gpu.Process
	// Value is, for a firing, the value that made the condition true: the
	// left side of the comparison that decided it (ValueExpr), in its base
	// unit, read at ValueAt. That is the transition's time unless the
	// condition stopped holding while the alert waited to fire or to
	// resolve (clear_when's band, keep_firing_for); NowText then says what
	// the same expression shows now. On a resolve, Value is the left side
	// of the comparison that resolved it, now, NaN when unknown, and the
	// Summary says it in words. ValueText formats Value with its unit.
	Value     float64
	ValueText string
	ValueExpr string
	ValueAt   time.Time
	NowText   string
	// Trend is how fast the alert's metric rises steadily, per second, over
	// the last half hour (see Trend; NaN until known); TrendText formats it
	// ("+328 MiB/min").
	Trend     float64
	TrendText string
	// TimeToFull is the time until memory is full at that trend, for memory
	// alerts whose memory grows and would be full within a day; for a rule
	// whose value is a time_to_full, it is that value. See HasTimeToFull.
	TimeToFull time.Duration
	StartsAt   time.Time // when the alert fired
	EndsAt     time.Time // when it resolved; zero while firing
	// Summary is the rule's summary, rendered when the alert fires; on a
	// resolve it says what is true now ("GPU 3 on node1: temperature is
	// 79 C now, under 80 C") and FiringSummary is the one it fired with.
	Summary       string
	FiringSummary string
	Description   string
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
	// Processes are the GPU's processes at the time, largest first; for a
	// GPU that stopped reporting, the last ones it reported; for a rule on
	// oom_exits, while the GPU runs none (the job just died), those of the
	// job that died.
	Processes []gpu.Process
	// Exit, on a resolve, is the job that left the GPU while the alert
	// fired; nil when none did.
	Exit *Exit
	// LastReport is when a GPU that stopped reporting last did; zero while
	// it reports.
	LastReport time.Time
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
	// Logger hears of rules skipped on a MIG instance that does not
	// measure what they read; nil says nothing.
	Logger *slog.Logger
}

// Engine evaluates rules on each snapshot and keeps the state of every
// alert (rule × GPU). It is not safe for concurrent use; one sampling loop
// drives it.
type Engine struct {
	rules []*Rule
	opts  Options
	specs []windowKey // the windows kept on each GPU: one per metric and span
	// stats are, per window, the statistics the rules read of it.
	stats  []windowStats
	trends []windowKey // the trends kept on each GPU
	counts []CountSpec // the counts of XID events kept on each GPU: one per test and span
	// histories are the metrics whose last half hour each GPU keeps.
	histories []Metric
	readings  readings   // what feed reads of each sample
	layout    []compiled // per rule
	gpus      map[string]*gpuState
	byIdx     map[int]*gpuState      // GPUs without a UUID
	order     []*gpuState            // every GPU, in the order they first reported
	hosts     map[string][]*gpuState // every GPU by the host it last reported from, in order (see place)
	eval      uint64                 // the number of the current Eval
	out       []Transition
	xids      []uint64
	ctx       EvalContext
	// restored holds saved alert states by GPU UUID until the GPU appears.
	restored map[string][]AlertRecord
	seqs     int // the next gpuState.seq
	// unmeasured are the rules skipped on MIG instances at this
	// evaluation, to warn of.
	unmeasured []unmeasured
	// processes evaluates the rules that run per process; nil when none
	// does.
	processes *processSeries
}

// windowKey identifies a window: rules that look at the same metric over
// the same span share it. longest is a trend's longest time scale.
type windowKey struct {
	metric  Metric
	span    time.Duration
	longest time.Duration
}

// compiled tells which of a GPU's windows a rule reads.
type compiled struct {
	when, clear             []int // slots of the conditions' windows, in the conditions' order
	whenTrends, clearTrends []int // slots of their trends
	whenCounts, clearCounts []int // slots of their counts
	trend                   int   // slot of the transition's trend; -1 for none
	history                 int   // index into Engine.histories; -1 for none
}

// gpuState is all the engine keeps of one GPU. An evaluation reads it
// from end to end, so what each evaluation reads comes first and lies
// together: the per-rule inputs in one array, the windows and trends of a
// GPU side by side (see newState).
type gpuState struct {
	index   int
	key     string        // what it is found by: its UUID (a process's series: see subject); "" for a GPU without one
	seq     int           // its place in Engine.order
	placed  bool          // it is in Engine.hosts, under seen.host
	stale   bool          // rules must be recomputed (after Inherit)
	samples int           // samples reported, counted up to unmeasuredAfter
	windows []*Window     // per slot
	trends  []*Trend      // per trend slot
	counts  []*EventCount // per count slot
	history []history     // per Engine.histories
	rules   []ruleOnGPU   // per rule
	inputs  inputs        // what the rules' conditions read
	alerts  []Alert       // per rule
	orphans []orphan      // firing alerts whose rule is gone, to resolve
	process gpu.Process   // the process, for a process's series (processSeries)
	seen
}

// ruleOnGPU is what evaluating a rule on a GPU reads besides its alert.
type ruleOnGPU struct {
	applies bool
	// quiet says the alert was inactive, its condition not holding, when
	// evalDevice last stepped it, and nothing changed it since: until the
	// condition holds, a step changes nothing, and its alert (far larger)
	// is not read. Whatever changes an alert but evalDevice does so to a
	// GPU's state before its first evaluation, or to one it forgets.
	quiet  bool
	repeat time.Duration // how often to repeat a firing alert
	// when and clear are where the inputs of the rule's conditions lie.
	when, clear inputSpan
}

// inputs are the windows, trends and counts of a GPU that its rules'
// conditions read: condition after condition, each one's in its order
// (see EvalContext).
type inputs struct {
	windows []*Window
	trends  []*Trend
	counts  []*EventCount
}

// inputSpan is where a condition's inputs lie in its GPU's inputs: the
// first and one past the last of each kind.
type inputSpan struct {
	windows, trends, counts [2]int32
}

// add appends the inputs of a condition, which reads the GPU's windows,
// trends and counts at those slots, and returns where they lie.
func (in *inputs) add(gs *gpuState, windows, trends, counts []int) inputSpan {
	return inputSpan{pick(&in.windows, gs.windows, windows), pick(&in.trends, gs.trends, trends), pick(&in.counts, gs.counts, counts)}
}

// into makes ctx read the inputs at sp.
func (in *inputs) into(ctx *EvalContext, sp inputSpan) {
	ctx.Windows = in.windows[sp.windows[0]:sp.windows[1]:sp.windows[1]]
	ctx.Trends = in.trends[sp.trends[0]:sp.trends[1]:sp.trends[1]]
	ctx.Counts = in.counts[sp.counts[0]:sp.counts[1]:sp.counts[1]]
}

// seen is what the engine knows of a GPU from the samples it reported.
type seen struct {
	holder holder
	host   string     // the host it reported from
	eval   uint64     // the Eval that last saw the GPU
	last   time.Time  // when it last reported
	device gpu.Device // its last reading, for evaluating it while it is missing
}

// NewEngine makes an engine for the rules.
func NewEngine(rules []*Rule, opts Options) *Engine {
	onGPU, perProcess := splitPerProcess(rules)
	e := newEngine(onGPU, opts)
	if len(perProcess) > 0 {
		e.processes = newProcessSeries(perProcess, opts)
	}
	return e
}

// newEngine makes an engine that evaluates the rules on each device of a
// snapshot.
func newEngine(rules []*Rule, opts Options) *Engine {
	e := &Engine{rules: rules, opts: opts, gpus: map[string]*gpuState{}, byIdx: map[int]*gpuState{}, hosts: map[string][]*gpuState{}}
	e.layout = make([]compiled, len(rules))
	for i, r := range rules {
		c := &e.layout[i]
		c.when = e.windowSlots(r.When)
		c.whenTrends = slots(&e.trends, r.When.Trends())
		c.whenCounts = countSlots(&e.counts, r.When.Counts())
		if r.ClearWhen != nil {
			c.clear = e.windowSlots(r.ClearWhen)
			c.clearTrends = slots(&e.trends, r.ClearWhen.Trends())
			c.clearCounts = countSlots(&e.counts, r.ClearWhen.Counts())
		}
		c.trend, c.history = -1, -1
		if m := r.When.ValueMetric(); m != MetricXID && !m.Observed() && m.Dimension().Base != Count {
			k := windowKey{metric: m, span: trendSpan}
			if w, ok := r.When.ValueTrend(); ok {
				k = windowKey{m, w.Span, w.Longest} // the trend the alert's value is about: one rate, not two
			}
			c.trend = slot(&e.trends, k)
			c.history = slot(&e.histories, m)
		}
	}
	e.readings = newReadings(e.specs, e.trends, e.histories)
	return e
}

// Rules returns the engine's rules: those on GPUs, then those that run
// per process.
func (e *Engine) Rules() []*Rule {
	if e.processes == nil {
		return e.rules
	}
	return slices.Concat(e.rules, e.processes.engine.rules)
}

// windowSlots returns the slots of the windows cond reads, adding them,
// and notes which statistics of each it reads.
func (e *Engine) windowSlots(cond *Cond) []int {
	out := slots(&e.specs, cond.Windows())
	e.stats = append(e.stats, make([]windowStats, len(e.specs)-len(e.stats))...)
	for i, s := range out {
		e.stats[s] |= cond.windowStats(i)
	}
	return out
}

// slots returns the slots in keys of the windows specs, adding them.
func slots(keys *[]windowKey, specs []WindowSpec) []int {
	out := make([]int, len(specs))
	for i, s := range specs {
		out[i] = slot(keys, windowKey{s.Metric, s.Span, s.Longest})
	}
	return out
}

// indexCount returns the index in specs of the count of c's test over c's
// span, or -1.
func indexCount(specs []CountSpec, c CountSpec) int {
	return slices.IndexFunc(specs, func(o CountSpec) bool { return o.Span == c.Span && o.Test() == c.Test() })
}

// countSlots returns the slots in specs of the counts, adding them.
func countSlots(specs *[]CountSpec, counts []CountSpec) []int {
	out := make([]int, len(counts))
	for i, c := range counts {
		out[i] = indexCount(*specs, c)
		if out[i] < 0 {
			*specs, out[i] = append(*specs, c), len(*specs)
		}
	}
	return out
}

// slot returns the index of k in keys, adding it if needed.
func slot[K comparable](keys *[]K, k K) int {
	if i := slices.Index(*keys, k); i >= 0 {
		return i
	}
	*keys = append(*keys, k)
	return len(*keys) - 1
}

// state returns the state of device d of host, found by key (its UUID;
// "" finds a GPU without one by its index), made when new.
func (e *Engine) state(host, key string, d *gpu.Device) *gpuState {
	var gs *gpuState
	if key != "" {
		gs = e.gpus[key]
	} else {
		gs = e.byIdx[d.Index]
	}
	if gs == nil {
		windows, trends := make([]Window, len(e.specs)), e.newTrends()
		gs = e.newState(func(i int) *Window {
			windows[i] = e.window(i)
			return &windows[i]
		}, func(k windowKey) *Trend { return trends.next(k) }, nil)
		gs.key = key
		if key != "" {
			e.gpus[key] = gs
		} else {
			e.byIdx[d.Index] = gs
		}
		gs.seq = e.seqs
		e.seqs++
		e.order = append(e.order, gs)
	}
	e.refresh(gs, host, d)
	return gs
}

// stateAt is state, for the i-th device of a snapshot of host: here are
// the host's GPUs (Engine.hosts) before the snapshot, which a host that
// lists its GPUs in the same order each time finds at the same place,
// without looking its key up.
func (e *Engine) stateAt(here []*gpuState, i int, host, key string, d *gpu.Device) *gpuState {
	if key != "" && i < len(here) && here[i].key == key {
		e.refresh(here[i], host, d)
		return here[i]
	}
	return e.state(host, key, d)
}

// refresh works out which rules apply to a GPU that is new, or whose state
// was taken over from the engine before a reload.
func (e *Engine) refresh(gs *gpuState, host string, d *gpu.Device) {
	if !gs.stale {
		return
	}
	for i, r := range e.rules {
		gs.rules[i].applies = r.AppliesTo(d)
		gs.rules[i].repeat = e.repeatInterval(r, host, d)
	}
	e.restore(gs)
	gs.stale = false
}

// newWindow makes the empty window of slot i, which keeps the statistics
// the rules read of it; a counter's keeps counting across a reset of the
// counter.
func (e *Engine) newWindow(i int) *Window {
	w := e.window(i)
	return &w
}

// window is the empty window of slot i (see newWindow).
func (e *Engine) window(i int) Window {
	w := windowOf(e.specs[i].span, e.stats[i])
	w.counter = e.specs[i].metric.IsCounter()
	return w
}

// newTrends makes the empty trends of a GPU's trend slots in one block,
// handed out in slot order by next.
func (e *Engine) newTrends() *trendBlock {
	n := 0
	for _, k := range e.trends {
		n += trendScales(max(k.span, trendSlices), k.longest)
	}
	return &trendBlock{trends: make([]Trend, len(e.trends)), scales: make([]trendScale, n)}
}

// trendBlock holds the trends of a GPU side by side, and their scales.
type trendBlock struct {
	trends []Trend
	scales []trendScale
}

// next is the block's next trend, made empty for k.
func (b *trendBlock) next(k windowKey) *Trend {
	t := &b.trends[0]
	b.trends = b.trends[1:]
	n := trendScales(max(k.span, trendSlices), k.longest)
	t.init(k.span, b.scales[:n:n])
	b.scales = b.scales[n:]
	return t
}

// newState makes a GPU's state, taking the window of each slot from
// window, each trend from trend and each count from count (a new one when
// count is nil or gives nil).
func (e *Engine) newState(window func(slot int) *Window, trend func(windowKey) *Trend, count func(CountSpec) *EventCount) *gpuState {
	gs := &gpuState{
		stale:   true,
		windows: make([]*Window, len(e.specs)),
		trends:  make([]*Trend, len(e.trends)),
		counts:  make([]*EventCount, len(e.counts)),
		rules:   make([]ruleOnGPU, len(e.rules)),
		alerts:  make([]Alert, len(e.rules)),
	}
	// The GPU's histories and its holder's memory, which every sample
	// adds to, keep their minutes side by side.
	hs := newHistories(len(e.histories) + 1)
	gs.history, gs.holder.memory = hs[:len(e.histories)], hs[len(e.histories)]
	for i := range e.specs {
		gs.windows[i] = window(i)
	}
	for i, k := range e.trends {
		gs.trends[i] = trend(k)
	}
	for i, c := range e.counts {
		if count != nil {
			gs.counts[i] = count(c)
		}
		if gs.counts[i] == nil {
			gs.counts[i] = NewEventCount(c.Span)
		}
	}
	for j, c := range e.layout {
		gs.rules[j].when = gs.inputs.add(gs, c.when, c.whenTrends, c.whenCounts)
		gs.rules[j].clear = gs.inputs.add(gs, c.clear, c.clearTrends, c.clearCounts)
	}
	return gs
}

// pick appends the elements of all at slots to block, and returns the
// first index and one past the last where they lie.
func pick[T any](block *[]T, all []T, slots []int) [2]int32 {
	start := len(*block)
	for _, s := range slots {
		*block = append(*block, all[s])
	}
	return [2]int32{int32(start), int32(len(*block))}
}

// Eval evaluates every rule on every GPU of the snapshot, at the snapshot's
// time, and returns the transitions people must hear about. The returned
// slice is reused by the next call.
//
// A GPU of the snapshot's host that reported before but is not in the
// snapshot (NVML lost it, its handle stopped answering, its rows stopped in
// a log) is evaluated too, with unknown readings and missing_for counting
// from its last report. One engine may evaluate the snapshots of many hosts
// (a fleet), one host at a time; a host whose GPUs all stopped reporting
// gets a snapshot without devices.
func (e *Engine) Eval(s *gpu.Snapshot) []Transition {
	e.out = e.out[:0]
	e.eval++
	here := e.hosts[s.Host]
	for i := range s.Devices {
		d := &s.Devices[i]
		e.evalReported(s, d, e.stateAt(here, i, s.Host, d.UUID, d))
	}
	for _, gs := range e.hosts[s.Host] {
		if gs.eval == e.eval {
			continue
		}
		e.refresh(gs, s.Host, &gs.device)
		missing := missingDevice(&gs.device)
		e.ctx.HeldFor, e.ctx.MissingFor = math.NaN(), s.Time.Sub(gs.last).Seconds()
		e.ctx.MemHeld, e.ctx.OOMExits = math.NaN(), gs.holder.oomExits(s.Time)
		e.evalDevice(s, &missing, gs, gs.device.Processes)
	}
	if e.processes != nil {
		e.out = e.processes.eval(s, e.out)
	}
	e.warnUnmeasured(s.Host)
	return e.out
}

// evalReported evaluates device d, which reported in snapshot s.
func (e *Engine) evalReported(s *gpu.Snapshot, d *gpu.Device, gs *gpuState) {
	gs.index = d.Index
	e.place(gs, s.Host)
	gs.eval, gs.last, gs.device = e.eval, s.Time, *d
	if gs.samples < unmeasuredAfter {
		if gs.samples++; gs.samples == unmeasuredAfter && d.MIG != nil {
			e.skipUnmeasured(gs)
		}
	}
	e.observe(s.Time, d, gs)
	e.ctx.HeldFor, e.ctx.MissingFor = gs.holder.heldFor(s.Time), 0
	e.ctx.MemHeld, e.ctx.OOMExits = gs.holder.memHeld(d), gs.holder.oomExits(s.Time)
	e.evalDevice(s, d, gs, d.Processes)
}

// Warm feeds a past snapshot to the GPUs' windows, trends, histories and
// job tracking without stepping any alert, so that an engine started late
// (a hub that just restarted, filling its windows from Prometheus's
// history) judges slopes and trends at once. Snapshots must come in time
// order and before the first Eval; a warmed GPU absent from the first
// Eval's snapshot of its host is missing since its last warmed sample.
func (e *Engine) Warm(s *gpu.Snapshot) {
	here := e.hosts[s.Host]
	for i := range s.Devices {
		d := &s.Devices[i]
		e.warmDevice(s, d, e.stateAt(here, i, s.Host, d.UUID, d))
	}
	if e.processes != nil {
		e.processes.warm(s)
	}
}

// warmDevice feeds device d of the past snapshot s to its state.
func (e *Engine) warmDevice(s *gpu.Snapshot, d *gpu.Device, gs *gpuState) {
	gs.index = d.Index
	e.place(gs, s.Host)
	e.observe(s.Time, d, gs)
	e.feed(s.Time, d, gs)
	e.countXIDs(s, d.Index, gs)
	gs.last, gs.device = s.Time, *d
}

// countXIDs gathers the XID codes the snapshot reports for the GPU at
// index into e.xids and feeds the GPU's counts with those that pass each
// count's test.
func (e *Engine) countXIDs(s *gpu.Snapshot, index int, gs *gpuState) {
	e.xids = e.xids[:0]
	for i := range s.Events {
		if ev := &s.Events[i]; ev.Kind == gpu.EventXID && ev.GPU == index {
			e.xids = append(e.xids, ev.XID)
		}
	}
	for i, c := range gs.counts {
		c.Add(s.Time, e.counts[i].Matches(e.xids))
	}
}

// observe follows who holds the GPU; a trend is the growth of one job, so
// when the GPU changes hands its trends start afresh.
func (e *Engine) observe(t time.Time, d *gpu.Device, gs *gpuState) {
	if gs.holder.observe(t, d) {
		for _, tr := range gs.trends {
			tr.Restart()
		}
	}
}

// readings reads each metric that the windows, trends and histories of a
// GPU follow once a sample, however many of them follow it.
type readings struct {
	metrics []Metric // each once
	// health is, per metric, how it reads a GPU's health; zero for a
	// metric that is not a health reading.
	health []healthMetric
	values []float64 // per metric: its reading of the sample being fed
	// windows, trends and histories are, per window, trend and history
	// slot, the index of its metric in metrics.
	windows, trends, histories []int
}

// newReadings plans the readings of the windows specs, the trends and the
// histories.
func newReadings(specs, trends []windowKey, histories []Metric) readings {
	var r readings
	for _, k := range specs {
		r.windows = append(r.windows, slot(&r.metrics, k.metric))
	}
	for _, k := range trends {
		r.trends = append(r.trends, slot(&r.metrics, k.metric))
	}
	for _, m := range histories {
		r.histories = append(r.histories, slot(&r.metrics, m))
	}
	r.values = make([]float64, len(r.metrics))
	r.health = make([]healthMetric, len(r.metrics))
	for i, m := range r.metrics {
		r.health[i], _ = healthMetricOf(m)
	}
	return r
}

// feed adds reading d at t to the GPU's windows, trends and histories.
func (e *Engine) feed(t time.Time, d *gpu.Device, gs *gpuState) {
	r := &e.readings
	for i, m := range r.metrics {
		if h := &r.health[i]; h.kind != 0 {
			r.values[i] = h.value(&d.Health) // as m.Value reads it, without finding how first
		} else {
			r.values[i] = readMetric(m, d, e.ctx.GPU)
		}
	}
	for i, w := range gs.windows {
		w.Add(t, r.values[r.windows[i]])
	}
	for i, tr := range gs.trends {
		tr.Add(t, r.values[r.trends[i]])
	}
	for i := range gs.history {
		gs.history[i].add(t, r.values[r.histories[i]])
	}
}

// missingDevice is d as a GPU that does not report: who it is, with every
// reading unknown.
func missingDevice(d *gpu.Device) gpu.Device {
	nan := math.NaN()
	return gpu.Device{Index: d.Index, UUID: d.UUID, Name: d.Name, MIG: d.MIG, MIGEnabled: d.MIGEnabled,
		UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan}
}

// evalDevice feeds the GPU's windows with d and steps each of its alerts;
// procs are the processes its transitions name.
func (e *Engine) evalDevice(s *gpu.Snapshot, d *gpu.Device, gs *gpuState, procs []gpu.Process) {
	if len(gs.orphans) > 0 {
		e.resolveOrphans(s, d, gs, procs)
	}
	e.feed(s.Time, d, gs)
	e.countXIDs(s, d.Index, gs)
	ctx := &e.ctx
	ctx.Device, ctx.XIDs = d, e.xids
	for j, r := range e.rules {
		on := &gs.rules[j]
		if !on.applies {
			continue
		}
		gs.inputs.into(ctx, on.when)
		when, why := r.When.Decide(ctx)
		if on.quiet && when != TruthTrue {
			continue // stepping it would change nothing
		}
		a := &gs.alerts[j]
		if when == TruthTrue {
			// The value that made the rule true, which a firing reports
			// even when it fires or repeats in clear_when's band.
			a.Value, a.ValueAt, a.ValueOf = r.When.ValueOf(ctx, why), s.Time, why
		}
		clear, clearWhy := TruthUnknown, -1
		if r.ClearWhen != nil && a.State != StateInactive {
			gs.inputs.into(ctx, on.clear)
			clear, clearWhy = r.ClearWhen.Decide(ctx)
		}
		switch change := a.Step(s.Time, when, clear, r.Timing); {
		case change == Fired:
			a.LastSentAt = s.Time
			e.emit(s, d, gs, j, procs, false)
		case change == Resolved:
			// What resolved it: clear_when holding, or when not holding.
			if r.ClearWhen == nil || clear != TruthTrue {
				gs.inputs.into(ctx, on.when)
				e.emitResolve(s, d, gs, j, procs, r.When, why)
			} else {
				e.emitResolve(s, d, gs, j, procs, r.ClearWhen, clearWhy)
			}
		case a.RepeatDue(s.Time, on.repeat):
			a.LastSentAt = s.Time
			e.emit(s, d, gs, j, procs, true)
		}
		on.quiet = a.State == StateInactive && !a.Holds
	}
}

func (e *Engine) repeatInterval(r *Rule, host string, d *gpu.Device) time.Duration {
	switch {
	case r.RepeatInterval > 0:
		return r.RepeatInterval
	case e.opts.RepeatFor != nil:
		return e.opts.RepeatFor(alertLabels(r, host, d, e.ctx.Process))
	}
	return e.opts.RepeatInterval
}

// alertLabels are the labels of rule r's alert on GPU d: for a MIG
// instance also its profile (mig_profile) and parent (parent_uuid), for a
// rule that runs per process also the process (pid).
func alertLabels(r *Rule, host string, d *gpu.Device, p *gpu.Process) map[string]string {
	labels := make(map[string]string, len(r.Labels)+8)
	maps.Copy(labels, r.Labels)
	labels["alert"] = r.Name
	labels["severity"] = string(r.Severity)
	labels["host"] = host
	labels["gpu"] = strconv.Itoa(d.Index)
	labels["uuid"] = d.UUID
	if d.MIG != nil {
		labels["parent_uuid"] = d.MIG.ParentUUID
		labels["mig_profile"] = d.MIG.Profile
	}
	if p != nil {
		labels["pid"] = strconv.Itoa(p.PID)
	}
	return labels
}

// emit builds the firing (or reminder) of rule j on device d. It runs only
// when something changes, so it may allocate.
func (e *Engine) emit(s *gpu.Snapshot, d *gpu.Device, gs *gpuState, j int, procs []gpu.Process, repeat bool) {
	r, a := e.rules[j], &gs.alerts[j]
	t := e.transition(s, d, gs, j, procs, repeat)
	t.Value, t.ValueAt, t.ValueExpr = a.Value, a.ValueAt, r.When.Expr(a.ValueOf)
	t.ValueText = r.When.FormatValue(a.ValueOf, a.Value)
	ctx := &e.ctx
	gs.inputs.into(ctx, gs.rules[j].when)
	now := a.Value
	if !a.ValueAt.Equal(s.Time) {
		now = r.When.ValueOf(ctx, a.ValueOf)
		t.NowText = r.When.FormatValue(a.ValueOf, now)
	}
	if c := e.layout[j]; c.trend >= 0 {
		m := e.trends[c.trend].metric
		t.Trend = gs.trends[c.trend].Rate()
		if r.When.isFn(a.ValueOf, fnSlope) {
			t.Trend = now
		}
		if !r.When.isRateOf(a.ValueOf, m) {
			// A value that is this rate already says it: one number, not two.
			t.TrendText = trendText(m.Dimension(), t.Trend)
		}
		if m == MetricMemoryUsed && d.MemKnown() {
			t.TimeToFull = timeToFull(float64(d.MemAllocatable()-min(d.MemUsed, d.MemAllocatable())), t.Trend)
		}
	}
	if r.When.isFn(a.ValueOf, fnTimeToFull) {
		// The alert's value is a time to full: when memory is full is when
		// it says, now.
		t.TimeToFull = time.Duration(math.MinInt64)
		if !math.IsNaN(now) && !math.IsInf(now, 0) {
			t.TimeToFull = time.Duration(now * float64(time.Second))
		}
	}
	data := templateData(&t, r, d)
	data.Value, data.StartsAt, data.TrueFor = a.Value, a.FiredAt, a.TrueFor()
	if t.HasTimeToFull() {
		data.TimeToFull = t.TimeToFull
	}
	t.Summary = render(r.Summary, &data)
	if t.Summary == "" {
		t.Summary = fmt.Sprintf("%s on %s (%s): %s", r.Name, t.Subject(), d.Name, t.ValueText)
	}
	a.Summary = t.Summary
	t.Description = render(r.Description, &data)
	t.AlertState = *a
	e.out = append(e.out, t)
}

// emitResolve builds the resolve of rule j on device d: cond is the
// condition whose comparison why resolved it (clear_when holding, or when
// no longer holding), evaluated in e.ctx.
func (e *Engine) emitResolve(s *gpu.Snapshot, d *gpu.Device, gs *gpuState, j int, procs []gpu.Process, cond *Cond, why int) {
	r, a := e.rules[j], &gs.alerts[j]
	t := e.transition(s, d, gs, j, procs, false)
	t.EndsAt = a.ResolvedAt
	if x := gs.holder.exit; !x.At.IsZero() && !x.At.Before(a.FiredAt) {
		t.Exit = &x
	}
	now, v := cond.Explain(&e.ctx, why)
	if now == "" {
		now = "its condition no longer holds"
	}
	if cond.isXID(why) && r.KeepFiringFor > 0 {
		now += " for " + formatSeconds(r.KeepFiringFor.Seconds())
	}
	t.Value, t.ValueText, t.ValueExpr, t.ValueAt = v, cond.FormatValue(why, v), cond.Expr(why), s.Time
	t.Summary = t.where() + ": " + now
	t.FiringSummary = a.Summary
	if c := e.layout[j]; c.trend >= 0 {
		t.Trend = gs.trends[c.trend].Rate()
	}
	data := templateData(&t, r, d)
	data.Value, data.StartsAt = v, a.FiredAt
	t.Description = render(r.Description, &data)
	t.AlertState = *a
	e.out = append(e.out, t)
}

// transition is the part of rule j's transition on device d that every
// kind shares: what, where, when, who, and the history of its metric.
func (e *Engine) transition(s *gpu.Snapshot, d *gpu.Device, gs *gpuState, j int, procs []gpu.Process, repeat bool) Transition {
	r, a := e.rules[j], &gs.alerts[j]
	t := Transition{
		At: s.Time, Rule: r, Alert: r.Name, State: a.State, Repeat: repeat,
		Severity: r.Severity, Host: s.Host, GPU: d.Index, UUID: d.UUID, GPUName: d.Name, MIG: d.MIG,
		Trend: math.NaN(), TimeToFull: time.Duration(math.MinInt64),
		StartsAt: a.FiredAt, Labels: alertLabels(r, s.Host, d, e.ctx.Process),
		Processes: sortedProcesses(procs),
	}
	if n := len(gs.holder.ooms); len(procs) == 0 && n > 0 && r.When.ValueMetric() == MetricOOMExits {
		t.Processes = gs.holder.ooms[n-1].Processes // already sorted
	}
	if p := e.ctx.Process; p != nil {
		t.Process = new(*p)
	}
	if gs.eval != e.eval {
		t.LastReport = gs.last
	}
	if c := e.layout[j]; c.trend >= 0 {
		t.History, t.HistoryDim = gs.history[c.history].series(s.Time), e.trends[c.trend].metric.Dimension()
	}
	return t
}

// HasTimeToFull reports whether TimeToFull holds a value.
func (t *Transition) HasTimeToFull() bool { return t.TimeToFull != time.Duration(math.MinInt64) }

// timeToFull is the time until free bytes are used up at perSecond; unknown
// (math.MinInt64) when memory does not grow or would last more than a day.
func timeToFull(free, perSecond float64) time.Duration {
	if !(perSecond > 0) || free/perSecond > maxTimeToFull.Seconds() {
		return time.Duration(math.MinInt64)
	}
	return time.Duration(free / perSecond * float64(time.Second))
}

// trendText formats a steady rise ("+328 MiB/min"); "" when the metric does
// not rise steadily, which says nothing worth a line.
func trendText(dim Dimension, perSecond float64) string {
	if !(perSecond > 0) {
		return ""
	}
	return "+" + Dimension{Base: dim.Base, PerSecond: true}.Format(perSecond)
}

func sortedProcesses(ps []gpu.Process) []gpu.Process {
	out := slices.Clone(ps)
	slices.SortStableFunc(out, func(a, b gpu.Process) int { return cmp.Compare(b.MemUsed, a.MemUsed) })
	return out
}

// AlertState is one alert's state, for the CLI, the API and tests.
type AlertState struct {
	Rule *Rule
	Host string
	GPU  int
	UUID string
	MIG  *gpu.MIG // the MIG instance, nil for a whole GPU
	// Process is the process of a rule that runs per process, nil for a
	// rule on the GPU.
	Process *gpu.Process
	Alert
}

// Labels are the alert's labels, as its transitions carry them (see
// Transition.Labels): what silences match.
func (a *AlertState) Labels() map[string]string {
	return alertLabels(a.Rule, a.Host, &gpu.Device{Index: a.GPU, UUID: a.UUID, MIG: a.MIG}, a.Process)
}

// Label names the alert's GPU for people (gpu.Label).
func (a *AlertState) Label() string { return gpu.Label(a.GPU, a.MIG) }

// Active returns every pending or firing alert.
func (e *Engine) Active() []AlertState {
	var out []AlertState
	visit := func(index int, uuid string, gs *gpuState) {
		for j, a := range gs.alerts {
			if a.State != StateInactive {
				out = append(out, AlertState{Rule: e.rules[j], Host: gs.host, GPU: index, UUID: uuid, MIG: gs.device.MIG, Alert: a})
			}
		}
	}
	for uuid, gs := range e.gpus {
		visit(gs.index, uuid, gs)
	}
	for idx, gs := range e.byIdx {
		visit(idx, "", gs)
	}
	if e.processes != nil {
		out = e.processes.active(out)
	}
	slices.SortFunc(out, func(a, b AlertState) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.UUID, b.UUID),
			cmp.Compare(a.Rule.Name, b.Rule.Name), cmp.Compare(pidOf(a.Process), pidOf(b.Process)))
	})
	return out
}

// Inherit takes over the state of old, an engine being replaced after a
// config reload: every rule of the same name keeps its alerts, and every
// window of the same metric and span keeps its samples, so a reload neither
// re-announces firing alerts nor forgets the last half hour.
func (e *Engine) Inherit(old *Engine) {
	adopt := func(ogs *gpuState) *gpuState {
		gs := e.newState(func(slot int) *Window {
			if i := slices.Index(old.specs, e.specs[slot]); i >= 0 {
				w := ogs.windows[i]
				w.keep(e.stats[slot])
				return w
			}
			return e.newWindow(slot)
		}, func(k windowKey) *Trend {
			if i := slices.Index(old.trends, k); i >= 0 {
				return ogs.trends[i]
			}
			return NewTrendScales(k.span, k.longest)
		}, func(c CountSpec) *EventCount {
			if i := indexCount(old.counts, c); i >= 0 {
				return ogs.counts[i]
			}
			return nil
		})
		gs.index, gs.key, gs.process, gs.seen = ogs.index, ogs.key, ogs.process, ogs.seen
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
		gs.orphans = append(gs.orphans, ogs.orphans...)
		adoptOrphans(gs, old.rules, ogs.alerts, e.rules)
		return gs
	}
	for _, ogs := range old.order {
		gs := adopt(ogs)
		if ogs.key != "" {
			e.gpus[ogs.key] = gs
		} else {
			e.byIdx[ogs.index] = gs
		}
		gs.seq, gs.placed = e.seqs, true
		e.seqs++
		e.order = append(e.order, gs)
		e.hosts[gs.host] = append(e.hosts[gs.host], gs)
	}
	e.eval = old.eval
	if e.processes == nil && old.processes != nil {
		// No rule runs per process any more: an engine of none resolves
		// what the old ones left firing.
		e.processes = newProcessSeries(nil, e.opts)
	}
	if e.processes != nil {
		e.processes.inherit(old.processes)
	}
}

// AlertRecord is an alert's state as saved across restarts. Severity and
// Labels are its rule's, so that an alert whose rule a restart finds gone
// can still be resolved the way it was sent.
type AlertRecord struct {
	Rule string
	// UUID is the alert's series (Transition.SeriesID): its GPU's UUID,
	// with the PID for a rule that runs per process.
	UUID     string
	Severity Severity
	Labels   map[string]string
	Alert
}

// Restore gives the engine alert states saved before a restart. Each is
// applied when its GPU first appears. A restored firing alert is not
// announced again; if its condition is known not to hold at the first
// evaluation, it resolves then. A firing alert of a rule that no longer
// exists resolves at that first evaluation; other records of such rules
// are dropped.
func (e *Engine) Restore(recs []AlertRecord) {
	var ofGPUs, ofProcesses []AlertRecord
	for _, r := range recs {
		if isProcessSeries(r.UUID) {
			ofProcesses = append(ofProcesses, r)
		} else {
			ofGPUs = append(ofGPUs, r)
		}
	}
	e.keep(ofGPUs)
	if len(ofProcesses) > 0 && e.processes == nil {
		e.processes = newProcessSeries(nil, e.opts)
	}
	if e.processes != nil {
		e.processes.engine.keep(ofProcesses)
	}
}

// keep holds saved alert states by the key of their GPU (or process)
// until it appears.
func (e *Engine) keep(recs []AlertRecord) {
	e.restored = map[string][]AlertRecord{}
	for _, r := range recs {
		e.restored[r.UUID] = append(e.restored[r.UUID], r)
	}
}

func (e *Engine) restore(gs *gpuState) {
	recs, ok := e.restored[gs.key]
	if !ok || gs.key == "" {
		return
	}
	for _, rec := range recs {
		j := slices.IndexFunc(e.rules, func(r *Rule) bool { return r.Name == rec.Rule })
		switch {
		case j >= 0:
			gs.alerts[j] = rec.Alert
		case rec.State == StateFiring:
			gone := &Rule{Name: rec.Rule, Severity: rec.Severity, Labels: rec.Labels}
			gs.orphans = append(gs.orphans, orphan{rule: gone, alert: rec.Alert})
		}
	}
	delete(e.restored, gs.key)
}
