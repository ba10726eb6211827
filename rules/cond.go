package rules

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
)

// Cond is a parsed condition of the rule language, such as
// `slope(memory.used, 10m) > 200MiB/min and memory.used_percent > 50`.
// It is immutable; one Cond may be evaluated from several goroutines.
type Cond struct {
	src     string
	root    node
	first   *leaf   // the first comparison
	leaves  []*leaf // every comparison, in the order written; leaf.index is its place
	windows []WindowSpec
	trends  []WindowSpec
	counts  []CountSpec
	metrics []Metric
}

// WindowSpec is one window of samples a condition needs: the engine keeps a
// Window of Span fed with Metric for it. Fn names the first function that
// uses the window; it is informational, since every function of one metric
// and span shares the window.
type WindowSpec struct {
	Fn     string
	Metric Metric
	Span   time.Duration
	// Longest is, for a trend or time_to_full over several time scales,
	// the longest of them (Span doubled until it would pass Longest); 0
	// for one.
	Longest time.Duration
}

// CountSpec is one count() of a condition: the XID test it counts
// events of, and over how long. The engine keeps an EventCount of Span
// for it, fed with the events each snapshot brings that pass the test.
type CountSpec struct {
	test *leaf
	Span time.Duration
}

// Test returns the XID test as the rule writes it: `xid.fault ==
// "application"`.
func (s CountSpec) Test() string {
	var b strings.Builder
	s.test.canonical(&b)
	return b.String()
}

// Matches counts the codes that pass the spec's test. It does not
// allocate.
func (s CountSpec) Matches(xids []uint64) int {
	n := 0
	for _, x := range xids {
		if s.test.testXID(x) {
			n++
		}
	}
	return n
}

// EvalContext is what a condition is evaluated against: one GPU at one
// instant.
type EvalContext struct {
	Device *gpu.Device
	// XIDs are the XID codes this GPU reported in this snapshot.
	XIDs []uint64
	// Windows holds one window per Cond.Windows entry, in the same order,
	// each fed with its metric by the engine; Trends one per Cond.Trends
	// entry.
	Windows []*Window
	Trends  []*Trend
	// Counts holds one count of XID events per Cond.Counts entry, in the
	// same order, each fed by the engine.
	Counts []*EventCount
	// HeldFor is how long, in seconds, the GPU has been held by its job (0
	// while it is free); MissingFor how long it has not reported while
	// other GPUs of its host did (0 while it reports). NaN when unknown.
	HeldFor, MissingFor float64
	// MemHeld is the memory in use above the GPU's resting level, in
	// bytes; OOMExits how many times the job on it died of a likely
	// out-of-memory in the last hour. NaN when unknown.
	MemHeld, OOMExits float64
	// Process is, for a rule that runs per process, the process whose
	// series Device's view is (see Rule.PerProcess), and GPU the device it
	// runs on, whose processes process.count and process.jobs count; both
	// nil on a GPU.
	Process *gpu.Process
	GPU     *gpu.Device
}

// CondError is a problem in a condition's text, at a 1-based column
// counted in characters.
type CondError struct {
	Col int
	Msg string
}

// Error returns "column N: msg".
func (e *CondError) Error() string { return fmt.Sprintf("column %d: %s", e.Col, e.Msg) }

// String returns the condition's source text.
func (c *Cond) String() string { return c.src }

// Windows returns the windows the condition needs, in order of first use;
// one metric and span appear once however many functions use them.
func (c *Cond) Windows() []WindowSpec { return slices.Clone(c.windows) }

// windowStats returns the statistics the condition reads of its window i
// (as Windows numbers them), for a Window to keep up to date.
func (c *Cond) windowStats(i int) windowStats {
	var stats windowStats
	for _, l := range c.leaves {
		if l.val.fn != fnTrend && l.val.fn != fnTimeToFull && l.val.window == i {
			stats |= l.val.fn.windowStats()
		}
	}
	return stats
}

// Trends returns the trend windows the condition needs, in order of first
// use: trend() keeps slice floors, not samples, so it has windows of its own.
func (c *Cond) Trends() []WindowSpec { return slices.Clone(c.trends) }

// Counts returns the counts of XID events the condition needs, in order
// of first use; one test and span appear once however often they are
// counted.
func (c *Cond) Counts() []CountSpec { return slices.Clone(c.counts) }

// Warnings returns what in the condition is valid but likely a mistake,
// each at its column: a percentage compared with a bare number between 0
// and 1 (memory.used_percent > 0.95), a fraction where a percent is meant.
func (c *Cond) Warnings() []CondError {
	if c == nil {
		return nil
	}
	var out []CondError
	for _, l := range c.leaves {
		if l.bare && l.op != opIn && l.val.dimension() == (Dimension{Base: Percent}) && l.q > 0 && l.q < 1 {
			num := formatNumber(l.q)
			out = append(out, CondError{Col: utf8.RuneCountInString(c.src[:l.numOff]) + 1, Msg: fmt.Sprintf(
				"%s %s %s compares a percentage with %s, which is %s%%: percentages run from 0 to 100; write %s for %s%%, or %s%% if you mean %s%%",
				l.val.text(), l.op, num, num, num, formatNumber(l.q*100), formatNumber(l.q*100), num, num)})
		}
	}
	return out
}

// Metrics returns the metrics the condition reads, directly or through a
// window, each once, in order of first use.
func (c *Cond) Metrics() []Metric { return slices.Clone(c.metrics) }

// Eval reports whether the condition holds. It uses three-valued logic: a
// comparison on an unknown (NaN) value is unknown, "not unknown" is
// unknown, "false and unknown" is false and "true or unknown" is true; an
// unknown result is false, so a condition on a missing metric does not hold.
// Eval does not allocate.
func (c *Cond) Eval(ctx *EvalContext) bool { return c.Truth(ctx) == TruthTrue }

// Truth evaluates the condition in three-valued logic; unknown means a
// reading or window it depends on has no value yet. A firing alert whose
// condition is unknown (say, just after a restart, with empty windows)
// neither resolves nor stays pending.
func (c *Cond) Truth(ctx *EvalContext) Truth {
	t, _ := c.Decide(ctx)
	return t
}

// Decide evaluates the condition like Truth and also says which comparison
// decided it (its index in the order the comparisons are written; -1 when
// there is none): the comparison whose left side made the condition true,
// or false. A true "and" is decided by its first operand (they all hold),
// an "or" by the first operand that holds; a false "and" by the first
// operand that does not hold; "not" by its operand. An alert reports the
// left side of the comparison that decided it (ValueOf), not one that
// happened to be written first. Decide does not allocate.
func (c *Cond) Decide(ctx *EvalContext) (Truth, int) {
	if c == nil || c.root == nil || ctx == nil {
		return TruthUnknown, -1
	}
	r, why := c.root.eval(ctx)
	i := -1
	if why != nil {
		i = why.index
	}
	switch r {
	case triTrue:
		return TruthTrue, i
	case triFalse:
		return TruthFalse, i
	}
	return TruthUnknown, i
}

// Value returns the left side of the condition's first comparison (see
// ValueOf).
func (c *Cond) Value(ctx *EvalContext) float64 { return c.ValueOf(ctx, 0) }

// ValueOf returns the left side of comparison i (as Decide numbers them):
// the value an alert reports. For xid, xid.fault and xid.action it is the
// code of ctx.XIDs that satisfies the comparison whose action costs most
// (the first of them), else the first code; NaN when there is none.
// A trend reports how fast the metric rises (Trend.Rate) when that still
// satisfies the comparison, else the rate it was compared by; so a value
// that made a condition true always satisfies its comparison.
func (c *Cond) ValueOf(ctx *EvalContext, i int) float64 {
	l := c.comparison(i)
	if l == nil || ctx == nil {
		return math.NaN()
	}
	if !l.val.isXID() {
		v := l.val.value(ctx)
		if r := l.val.report(ctx); math.IsNaN(v) || l.test(r) || !l.test(v) {
			return r
		}
		return v
	}
	// Of the codes that pass, the one whose action is the most costly:
	// XID 63 (reset the GPU) says more than XID 94 (restart the job).
	found, best := false, uint64(0)
	for _, x := range ctx.XIDs {
		if l.testXID(x) && (!found || gpu.XIDActionOf(x) > gpu.XIDActionOf(best)) {
			found, best = true, x
		}
	}
	if found {
		return float64(best)
	}
	if len(ctx.XIDs) > 0 {
		return float64(ctx.XIDs[0])
	}
	return math.NaN()
}

// comparison returns comparison i, nil when there is none.
func (c *Cond) comparison(i int) *leaf {
	if c == nil || i < 0 || i >= len(c.leaves) {
		return nil
	}
	return c.leaves[i]
}

// ValueDimension returns the dimension of Value, for formatting it.
func (c *Cond) ValueDimension() Dimension { return c.DimensionOf(0) }

// FormatValue writes v, a value of comparison i's left side, with its
// unit, as Dimension.Format does, except that a value past the
// comparison's quantity never reads as the quantity itself: the 60.4s of
// missing_for > 1m is "60.4s", not "1m".
func (c *Cond) FormatValue(i int, v float64) string {
	if c.isXID(i) && v >= 0 && v <= math.MaxUint32 && v == math.Trunc(v) {
		x, _ := gpu.LookupXID(uint64(v))
		return x.Text()
	}
	dim := c.DimensionOf(i)
	s := dim.Format(v)
	l := c.comparison(i)
	if l == nil || l.op == opIn || v == l.q || s != dim.Format(l.q) {
		return s
	}
	return dim.precise(v)
}

// DimensionOf returns the dimension of ValueOf(ctx, i), for formatting it.
func (c *Cond) DimensionOf(i int) Dimension {
	l := c.comparison(i)
	if l == nil {
		return Dimension{Base: Count}
	}
	return l.val.dimension()
}

// Explain says what comparison i shows now, for a resolve notice, and
// returns the value it compares: the expression as the rule writes it, its
// value, and how that compares with the comparison's quantity,
// "temperature is 79 C now, under 80 C". A GPU that reports again, an XID
// that no longer comes and memory that stopped growing get plain words:
// "the GPU reports again", "no new XID in (48, 79)". It is "" when there is
// no comparison i.
func (c *Cond) Explain(ctx *EvalContext, i int) (string, float64) {
	l := c.comparison(i)
	if l == nil || ctx == nil {
		return "", math.NaN()
	}
	holds := l.truth(ctx) == triTrue
	if l.val.isXID() {
		v := c.ValueOf(ctx, i)
		if holds {
			return "XID " + formatNumber(v) + " now", v
		}
		if l.val.metric != MetricXID {
			return "no new XID with " + l.text(), v
		}
		if l.op == opIn {
			return "no new XID in (" + joinNumbers(l.set) + ")", v
		}
		return "no new XID " + l.op.String() + " " + formatNumber(l.q), v
	}
	v := l.val.value(ctx)
	dim := l.val.dimension()
	switch {
	case l.val.fn == fnNone && l.val.metric == MetricMissingFor && v == 0:
		return "the GPU reports again", v
	case l.val.fn == fnTimeToFull && math.IsInf(v, 1):
		return l.val.text() + " is never now: memory does not grow", v
	}
	op := l.op
	if !holds {
		op = op.negate()
	}
	than := dim.Format(l.q)
	if op == opIn || op == opNotIn {
		than = "(" + joinNumbers(l.set) + ")"
	}
	if l.val.metric.States() != nil && l.val.fn == fnNone {
		return l.val.text() + " is " + l.val.metric.stateName(v) + " now", v
	}
	return l.val.text() + " is " + c.FormatValue(i, v) + " now, " + op.words() + " " + than, v
}

// Expr returns the left side of comparison i as the rule writes it:
// "temperature", "trend(memory.used, 40m)"; "" when there is none.
func (c *Cond) Expr(i int) string {
	if l := c.comparison(i); l != nil {
		return l.val.text()
	}
	return ""
}

// isXID reports whether comparison i tests xid.
func (c *Cond) isXID(i int) bool {
	l := c.comparison(i)
	return l != nil && l.val.isXID()
}

// isRateOf reports whether comparison i's left side is how fast m rises
// (a slope or a trend of it).
func (c *Cond) isRateOf(i int, m Metric) bool {
	l := c.comparison(i)
	return l != nil && l.val.metric == m && (l.val.fn == fnSlope || l.val.fn == fnTrend)
}

// joinNumbers writes numbers as a list: "48, 63, 79".
func joinNumbers(vs []float64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = formatNumber(v)
	}
	return strings.Join(parts, ", ")
}

// ValueIsSlope reports whether Value is a least-squares slope.
func (c *Cond) ValueIsSlope() bool { return c.isFn(0, fnSlope) }

// isFn reports whether comparison i's left side is function f.
func (c *Cond) isFn(i int, f fn) bool {
	l := c.comparison(i)
	return l != nil && l.val.fn == f
}

// ValueTrend returns the trend Value is computed from, for a trend or a
// time_to_full: its metric, window and longest time scale.
func (c *Cond) ValueTrend() (WindowSpec, bool) {
	if c == nil || c.first == nil || (c.first.val.fn != fnTrend && c.first.val.fn != fnTimeToFull) {
		return WindowSpec{}, false
	}
	v := c.first.val
	return WindowSpec{Fn: v.fn.String(), Metric: v.metric, Span: v.span, Longest: v.longest}, true
}

// ValueIsTimeToFull reports whether Value is a time_to_full.
func (c *Cond) ValueIsTimeToFull() bool { return c.isFn(0, fnTimeToFull) }

// ValueMetric returns the metric Value reads, directly or through a window.
func (c *Cond) ValueMetric() Metric {
	if c == nil || c.first == nil {
		return 0
	}
	return c.first.val.metric
}

// tri is a truth value of three-valued (Kleene) logic.
type tri uint8

const (
	triFalse tri = iota
	triTrue
	triUnknown
)

// String returns "true", "false" or "unknown".
func (t tri) String() string {
	switch t {
	case triTrue:
		return "true"
	case triFalse:
		return "false"
	}
	return "unknown"
}

// node is one node of a compiled condition.
type node interface {
	// eval returns the node's truth and the comparison that decided it
	// (see Cond.Decide).
	eval(ctx *EvalContext) (tri, *leaf)
	// canonical writes the node fully parenthesised with numbers in base
	// units, so that tests can compare parses.
	canonical(b *strings.Builder)
	// tree returns the node as Cond.Tree shows it.
	tree() CondNode
}

// junction is "and" or "or" of its operands. In three-valued logic one
// operand equal to stop (false for and, true for or) decides the result;
// otherwise any unknown operand makes it unknown.
type junction struct {
	xs   []node
	stop tri // triFalse for and, triTrue for or
}

func (n *junction) eval(ctx *EvalContext) (tri, *leaf) {
	r := triTrue - n.stop // the result when every operand is the other value
	var why, unknown *leaf
	for _, x := range n.xs {
		switch v, w := x.eval(ctx); v {
		case n.stop:
			return v, w
		case triUnknown:
			if r != triUnknown {
				r, unknown = triUnknown, w
			}
		default:
			if why == nil {
				why = w
			}
		}
	}
	if r == triUnknown {
		return r, unknown
	}
	return r, why
}

func (n *junction) canonical(b *strings.Builder) {
	sep := " or "
	if n.stop == triFalse {
		sep = " and "
	}
	b.WriteByte('(')
	for i, x := range n.xs {
		if i > 0 {
			b.WriteString(sep)
		}
		x.canonical(b)
	}
	b.WriteByte(')')
}

// notNode negates its operand; not unknown is unknown.
type notNode struct{ x node }

func (n *notNode) eval(ctx *EvalContext) (tri, *leaf) {
	switch r, why := n.x.eval(ctx); r {
	case triTrue:
		return triFalse, why
	case triFalse:
		return triTrue, why
	default:
		return r, why
	}
}

func (n *notNode) canonical(b *strings.Builder) {
	b.WriteString("not ")
	n.x.canonical(b)
}

// op is a comparison operator, or membership in a set of numbers.
type op uint8

const (
	opGT op = iota + 1
	opGE
	opLT
	opLE
	opEQ
	opNE
	opIn
	opNotIn // only as the negation of opIn, in messages
)

// negate returns the operator that holds exactly when o does not.
func (o op) negate() op {
	switch o {
	case opGT:
		return opLE
	case opGE:
		return opLT
	case opLT:
		return opGE
	case opLE:
		return opGT
	case opEQ:
		return opNE
	case opNE:
		return opEQ
	case opIn:
		return opNotIn
	}
	return opIn
}

// words says the operator for people: "over", "at or under".
func (o op) words() string {
	switch o {
	case opGT:
		return "over"
	case opGE:
		return "at or over"
	case opLT:
		return "under"
	case opLE:
		return "at or under"
	case opEQ:
		return "at"
	case opNE:
		return "not at"
	case opIn:
		return "in"
	}
	return "not in"
}

// String returns the operator as the language spells it.
func (o op) String() string {
	switch o {
	case opGT:
		return ">"
	case opGE:
		return ">="
	case opLT:
		return "<"
	case opLE:
		return "<="
	case opEQ:
		return "=="
	case opNE:
		return "!="
	case opIn:
		return "in"
	case opNotIn:
		return "not in"
	}
	return "?"
}

// leaf compares a value with a quantity, or tests its membership in a set.
type leaf struct {
	val   valueNode
	op    op
	q     float64   // the quantity, in base units
	set   []float64 // the numbers of "in"
	index int       // the comparison's place in Cond.leaves
	// bare says the quantity has no unit; numOff is its byte offset.
	bare   bool
	numOff int
}

func (n *leaf) eval(ctx *EvalContext) (tri, *leaf) {
	return n.truth(ctx), n
}

func (n *leaf) truth(ctx *EvalContext) tri {
	if n.val.isXID() {
		// xid holds when any of the snapshot's codes satisfies the test.
		if len(ctx.XIDs) == 0 {
			return triFalse // no event in this snapshot: known, and not this XID
		}
		for _, x := range ctx.XIDs {
			if n.testXID(x) {
				return triTrue
			}
		}
		return triFalse
	}
	v := n.val.value(ctx)
	if math.IsNaN(v) {
		return triUnknown
	}
	if n.test(v) {
		return triTrue
	}
	return triFalse
}

// testXID applies an XID test (xid, xid.fault, xid.action) to the XID
// code: the fault and action are the catalogue's.
func (n *leaf) testXID(code uint64) bool { return n.test(xidValue(n.val.metric, code)) }

// text writes the comparison as a person would: `xid.fault ==
// "hardware"`, `temperature > 85`.
func (n *leaf) text() string {
	var b strings.Builder
	b.WriteString(n.val.text() + " " + n.op.String() + " ")
	switch {
	case n.op == opIn:
		b.WriteString("(" + n.setText() + ")")
	case n.val.metric.States() != nil && n.val.fn == fnNone:
		b.WriteString(strconv.Quote(n.val.metric.stateName(n.q)))
	default:
		b.WriteString(formatNumber(n.q))
	}
	return b.String()
}

// setText writes the set of an "in": numbers, or quoted names for a
// metric of states.
func (n *leaf) setText() string {
	if n.val.metric.States() == nil || n.val.fn != fnNone {
		return joinNumbers(n.set)
	}
	parts := make([]string, len(n.set))
	for i, v := range n.set {
		parts[i] = strconv.Quote(n.val.metric.stateName(v))
	}
	return strings.Join(parts, ", ")
}

// test applies the comparison to v.
func (n *leaf) test(v float64) bool {
	switch n.op {
	case opGT:
		return v > n.q
	case opGE:
		return v >= n.q
	case opLT:
		return v < n.q
	case opLE:
		return v <= n.q
	case opEQ:
		return v == n.q
	case opNE:
		return v != n.q
	case opIn:
		return slices.Contains(n.set, v)
	}
	return false
}

func (n *leaf) canonical(b *strings.Builder) {
	n.val.canonical(b)
	b.WriteString(" " + n.op.String() + " ")
	if n.val.metric.States() != nil && n.val.fn == fnNone {
		if n.op == opIn {
			b.WriteString("(" + n.setText() + ")")
		} else {
			b.WriteString(strconv.Quote(n.val.metric.stateName(n.q)))
		}
		return
	}
	if n.op != opIn {
		b.WriteString(strconv.FormatFloat(n.q, 'f', -1, 64))
		return
	}
	b.WriteByte('(')
	for i, v := range n.set {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
	}
	b.WriteByte(')')
}

// fn is a window function, or none for a metric read directly.
type fn uint8

const (
	fnNone fn = iota
	fnAvg
	fnMin
	fnMax
	fnSlope
	fnTimeToFull
	fnTrend
	fnRate   // rate(counter, W): how fast a counter rises, per second
	fnActive // active(flag, W): how long a flag held within the window
	fnCount  // count(xid test, W): XID events that pass the test within the window

	fnEnd // one past the last function
)

// String returns the function's name.
func (f fn) String() string {
	switch f {
	case fnAvg:
		return "avg"
	case fnMin:
		return "min"
	case fnMax:
		return "max"
	case fnSlope:
		return "slope"
	case fnTimeToFull:
		return "time_to_full"
	case fnTrend:
		return "trend"
	case fnRate:
		return "rate"
	case fnActive:
		return "active"
	case fnCount:
		return "count"
	}
	return ""
}

// windowStats returns the statistics of a Window the function reads.
func (f fn) windowStats() windowStats {
	switch f {
	case fnMin:
		return statMin
	case fnMax:
		return statMax
	case fnAvg, fnSlope, fnActive: // active() is the flag's mean
		return statAll
	}
	return 0 // rate() reads the first and last samples only
}

// lookupFn finds the window function called name.
func lookupFn(name string) (fn, bool) {
	for f := fnAvg; f < fnEnd; f++ {
		if f.String() == name {
			return f, true
		}
	}
	return fnNone, false
}

// valueNode is the left side of a comparison: a metric, or a window
// function of a metric.
type valueNode struct {
	metric  Metric
	fn      fn
	window  int           // index into EvalContext.Windows (EvalContext.Trends for trend, EvalContext.Counts for count), for a function
	span    time.Duration // the window's span, for a function
	longest time.Duration // the longest time scale of a trend or time_to_full over several; 0 for one
	test    *leaf         // the XID test count() counts the events of
}

// isXID reports whether the value is an XID event test (xid, xid.fault,
// xid.action), true when one of the snapshot's events passes it.
func (v *valueNode) isXID() bool { return v.fn == fnNone && v.metric.IsEvent() }

// value computes the value, NaN when unknown.
func (v *valueNode) value(ctx *EvalContext) float64 {
	switch {
	case v.fn == fnNone && v.metric == MetricHeldFor:
		return ctx.HeldFor
	case v.fn == fnNone && v.metric == MetricMissingFor:
		return ctx.MissingFor
	case v.fn == fnNone && v.metric == MetricMemoryHeld:
		return ctx.MemHeld
	case v.fn == fnNone && v.metric == MetricOOMExits:
		return ctx.OOMExits
	case v.fn == fnNone:
		return readMetric(v.metric, ctx.Device, ctx.GPU)
	case v.fn == fnTrend || v.fn == fnTimeToFull:
		if v.window >= len(ctx.Trends) || ctx.Trends[v.window] == nil {
			return math.NaN()
		}
		tr := ctx.Trends[v.window]
		if v.fn == fnTrend {
			return tr.Value()
		}
		return tr.TimeToFull(v.full(ctx.Device))
	case v.fn == fnCount:
		if v.window >= len(ctx.Counts) || ctx.Counts[v.window] == nil {
			return math.NaN()
		}
		return ctx.Counts[v.window].Value()
	}
	if v.window >= len(ctx.Windows) || ctx.Windows[v.window] == nil {
		return math.NaN()
	}
	// Every statistic of a window is NaN until the window is Ready.
	w := ctx.Windows[v.window]
	switch v.fn {
	case fnAvg:
		return w.Avg()
	case fnMin:
		return w.Min()
	case fnMax:
		return w.Max()
	case fnRate:
		return w.Rate()
	case fnActive:
		// The share of the window's samples the flag held, over the
		// window's length, to the millisecond: the running mean's
		// rounding must not make 4 minutes 239.99999 s.
		return math.Round(w.Avg()*v.span.Seconds()*1000) / 1000
	}
	return w.Slope()
}

// report computes the value an alert reports: value, except that a trend
// reports how fast the metric rises (Trend.Rate) rather than the rate
// two-thirds of its window reach, which is what it is compared by.
func (v *valueNode) report(ctx *EvalContext) float64 {
	if v.fn == fnTrend && v.window < len(ctx.Trends) && ctx.Trends[v.window] != nil {
		return ctx.Trends[v.window].Rate()
	}
	return v.value(ctx)
}

// full is the value at which time_to_full's metric is full: what jobs
// can allocate (the total less what the driver reserves), NaN when memory
// is unknown; or 100 for memory.used_percent, the share of it in use; or
// for process.memory, what the process holds plus what the GPU has free:
// the process fills the GPU when it takes all that is left.
func (v *valueNode) full(d *gpu.Device) float64 {
	switch v.metric {
	case MetricMemoryUsedPercent:
		return 100
	case MetricProcessMemory:
		return MetricProcessMemory.Value(d) + MetricMemoryFree.Value(d)
	}
	return memValue(d, d.MemAllocatable())
}

// dimension returns the dimension of the value.
func (v *valueNode) dimension() Dimension {
	switch v.fn {
	case fnSlope, fnTrend, fnRate:
		return Dimension{Base: v.metric.Dimension().Base, PerSecond: true}
	case fnTimeToFull, fnActive:
		return Dimension{Base: Seconds}
	case fnCount:
		return Dimension{Base: Count}
	}
	return v.metric.Dimension()
}

func (v *valueNode) canonical(b *strings.Builder) {
	if v.fn == fnNone {
		b.WriteString(v.metric.String())
		return
	}
	secs := strconv.FormatFloat(v.span.Seconds(), 'f', -1, 64)
	if v.fn == fnCount {
		b.WriteString("count(")
		v.test.canonical(b)
		b.WriteString(", " + secs + "s)")
		return
	}
	b.WriteString(v.fn.String() + "(" + v.metric.String() + ", " + secs + "s")
	if v.longest > 0 {
		b.WriteString(", " + strconv.FormatFloat(v.longest.Seconds(), 'f', -1, 64) + "s")
	}
	b.WriteString(")")
}

// ParseCond parses a condition of the rule language. Its error is a
// *CondError for the first problem found, with the column it is at.
func ParseCond(src string) (*Cond, error) {
	p := &parser{src: src, c: &Cond{src: src}}
	root, err := p.parse()
	if err != nil {
		return nil, err
	}
	p.c.root = root
	return p.c, nil
}

// tokKind is the kind of a token.
type tokKind uint8

const (
	tokEOF tokKind = iota
	tokIdent
	tokNumber
	tokOp
	tokLParen
	tokRParen
	tokComma
	tokString // a name in quotes; text is what is between them
)

// token is one lexical token; off is its byte offset in the source.
type token struct {
	kind tokKind
	text string
	off  int
}

// parser is a recursive-descent parser that lexes on demand, because
// whether a word is a unit depends on what precedes it.
type parser struct {
	src   string
	pos   int   // byte offset of the next unread character
	tok   token // the current token
	depth int
	c     *Cond
}

// maxDepth bounds nesting, so hostile input cannot exhaust the stack.
const maxDepth = 100

// col returns the 1-based column, in characters, of byte offset off.
func (p *parser) col(off int) int { return utf8.RuneCountInString(p.src[:off]) + 1 }

func (p *parser) errAt(off int, format string, args ...any) *CondError {
	return &CondError{Col: p.col(off), Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) parse() (node, error) {
	if err := p.next(); err != nil {
		return nil, err
	}
	if p.tok.kind == tokEOF {
		return nil, p.errAt(p.tok.off, "empty condition; write a comparison such as memory.used_percent > 95")
	}
	root, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	switch {
	case p.tok.kind == tokEOF:
		return root, nil
	case p.tok.kind == tokRParen:
		return nil, p.errAt(p.tok.off, `unexpected ")" without a matching "("`)
	}
	return nil, p.errAt(p.tok.off, "unexpected %s after a complete condition; join conditions with and/or", p.describe())
}

// parseOr parses cond := term { "or" term }.
func (p *parser) parseOr() (node, error) {
	return p.parseList("or", triTrue, p.parseAnd)
}

// parseAnd parses term := factor { "and" factor }.
func (p *parser) parseAnd() (node, error) {
	return p.parseList("and", triFalse, p.parseFactor)
}

// parseList parses operands joined by the keyword kw, whose junction
// stops at stop.
func (p *parser) parseList(kw string, stop tri, operand func() (node, error)) (node, error) {
	x, err := operand()
	if err != nil {
		return nil, err
	}
	xs := []node{x}
	for p.isKeyword(kw) {
		if err := p.next(); err != nil {
			return nil, err
		}
		if p.tok.kind == tokEOF {
			return nil, p.errAt(p.tok.off, "expected a condition after %q", kw)
		}
		if x, err = operand(); err != nil {
			return nil, err
		}
		xs = append(xs, x)
	}
	if len(xs) == 1 {
		return x, nil
	}
	return &junction{xs: xs, stop: stop}, nil
}

// parseFactor parses factor := "not" factor | "(" cond ")" | compare | inset.
func (p *parser) parseFactor() (node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.errAt(p.tok.off, "condition nested too deeply (more than %d levels)", maxDepth)
	}
	switch {
	case p.isKeyword("not"):
		if err := p.next(); err != nil {
			return nil, err
		}
		if p.tok.kind == tokEOF {
			return nil, p.errAt(p.tok.off, `expected a condition after "not"`)
		}
		x, err := p.parseFactor()
		if err != nil {
			return nil, err
		}
		return &notNode{x: x}, nil
	case p.tok.kind == tokLParen:
		open := p.tok.off
		if err := p.next(); err != nil {
			return nil, err
		}
		if p.tok.kind == tokRParen {
			return nil, p.errAt(p.tok.off, `empty parentheses; write a condition inside "(" and ")"`)
		}
		x, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tokRParen {
			if p.tok.kind == tokEOF {
				return nil, p.errAt(p.tok.off, `missing ")" to close "(" at column %d`, p.col(open))
			}
			return nil, p.errAt(p.tok.off, `expected "and", "or" or ")" to close "(" at column %d, found %s`, p.col(open), p.describe())
		}
		return x, p.next()
	case p.tok.kind == tokIdent && !p.isAnyKeyword():
		return p.parseLeaf()
	case p.tok.kind == tokNumber:
		return nil, p.errAt(p.tok.off, "expected a metric, found number %q; put the metric on the left, e.g. memory.used_percent > 95", p.tok.text)
	case p.tok.kind == tokEOF:
		return nil, p.errAt(p.tok.off, "expected a condition, found the end")
	}
	return nil, p.errAt(p.tok.off, `expected a metric, function, "not" or "(", found %s`, p.describe())
}

// parseLeaf parses compare := value op quantity and inset := value "in" "(" number {"," number} ")".
func (p *parser) parseLeaf() (node, error) {
	val, err := p.parseValue()
	if err != nil {
		return nil, err
	}
	n := &leaf{val: val, index: len(p.c.leaves)}
	if p.c.first == nil {
		p.c.first = n
	}
	p.c.leaves = append(p.c.leaves, n)
	return n, p.parseComparison(n)
}

// parseComparison parses what follows a comparison's value: op quantity,
// op "name" for a metric of states, or "in" and its set.
func (p *parser) parseComparison(n *leaf) error {
	val := n.val
	if p.isKeyword("in") {
		return p.parseSet(n)
	}
	if p.tok.kind != tokOp {
		return p.errAt(p.tok.off, `expected a comparison (> >= < <= == !=) or "in" after %s, found %s`, val.text(), p.describe())
	}
	opTok := p.tok
	n.op = lookupOp(opTok.text)
	if err := p.nextNumber(); err != nil {
		return err
	}
	states := val.metric.States()
	if val.fn != fnNone {
		states = nil
	}
	switch {
	case p.tok.kind == tokString:
		if states == nil {
			return p.errAt(p.tok.off, "%s is a number, not a name; names in quotes compare %s", val.text(), stateMetricList())
		}
		if n.op != opEQ && n.op != opNE {
			return p.errAt(opTok.off, "%s is compared by name with == or != (or in), not %q", val.text(), opTok.text)
		}
		i, err := p.stateIndex(val.metric, states)
		if err != nil {
			return err
		}
		n.q = float64(i)
		return p.next()
	case states != nil:
		return p.errAt(p.tok.off, `%s is compared by name: write e.g. %s == %q; its names are %s`, val.text(), val.text(), states[len(states)-1], quotedList(states))
	}
	if p.tok.kind != tokNumber {
		if p.tok.kind == tokIdent {
			return p.errAt(p.tok.off, "expected a number after %q, found %s; a condition compares a value with a number, not with another metric", opTok.text, p.describe())
		}
		return p.errAt(p.tok.off, "expected a number after %q, found %s", opTok.text, p.describe())
	}
	num, err := p.number()
	if err != nil {
		return err
	}
	numTok := p.tok
	uoff, utext := p.unit()
	n.q, n.bare, n.numOff = num, utext == "", numTok.off
	if utext != "" {
		u, err := p.lookupUnit(uoff, utext)
		if err != nil {
			return err
		}
		want := val.dimension()
		if u.dim != want {
			return p.errAt(uoff, "unit %q is %s but %s is %s; %s", utext, unitNoun(u.dim), val.text(), want, unitHint(want))
		}
		n.q = num * u.factor
		if math.IsInf(n.q, 0) {
			return p.errAt(numTok.off, "number %s %s is out of range", numTok.text, utext)
		}
	}
	return p.next()
}

// stateIndex looks up the name of the current string token among the
// states of m.
func (p *parser) stateIndex(m Metric, states []string) (int, error) {
	if i := slices.Index(states, p.tok.text); i >= 0 {
		return i, nil
	}
	return 0, p.errAt(p.tok.off, "%s has no state %q%s; its names are %s", m, p.tok.text, didYouMean(p.tok.text, states), quotedList(states))
}

// stateMetricList names the metrics compared by name, for messages.
func stateMetricList() string {
	var names []string
	for _, m := range Metrics() {
		if m.States() != nil {
			names = append(names, m.String())
		}
	}
	return strings.Join(names, ", ")
}

// quotedList writes names quoted: "none", "reset".
func quotedList(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = strconv.Quote(n)
	}
	return strings.Join(parts, ", ")
}

// parseSet parses the "(" number {"," number} ")" of an inset.
func (p *parser) parseSet(n *leaf) error {
	n.op = opIn
	if err := p.next(); err != nil {
		return err
	}
	if p.tok.kind != tokLParen {
		return p.errAt(p.tok.off, `expected "(" after "in", found %s; write e.g. xid in (48, 79)`, p.describe())
	}
	states := n.val.metric.States()
	if n.val.fn != fnNone {
		states = nil
	}
	for {
		if err := p.nextNumber(); err != nil {
			return err
		}
		if states != nil || p.tok.kind == tokString {
			if states == nil {
				return p.errAt(p.tok.off, "%s is a number, not a name; names in quotes compare %s", n.val.text(), stateMetricList())
			}
			if p.tok.kind != tokString {
				return p.errAt(p.tok.off, `expected a name in quotes in the list of "in", found %s; the names of %s are %s`, p.describe(), n.val.text(), quotedList(states))
			}
			i, err := p.stateIndex(n.val.metric, states)
			if err != nil {
				return err
			}
			n.set = append(n.set, float64(i))
			if err := p.next(); err != nil {
				return err
			}
			if done, err := p.setSeparator(); done || err != nil {
				return err
			}
			continue
		}
		if p.tok.kind != tokNumber {
			return p.errAt(p.tok.off, `expected a number in the list of "in", found %s`, p.describe())
		}
		v, err := p.number()
		if err != nil {
			return err
		}
		if uoff, utext := p.unit(); utext != "" {
			return p.errAt(uoff, `"in" takes plain numbers, not units such as %q; use comparisons for quantities with units`, utext)
		}
		n.set = append(n.set, v)
		if err := p.next(); err != nil {
			return err
		}
		if done, err := p.setSeparator(); done || err != nil {
			return err
		}
	}
}

// setSeparator reads what follows an element of an "in" list: "," (more
// follow) or ")" (done, and the token after it is read).
func (p *parser) setSeparator() (done bool, err error) {
	switch p.tok.kind {
	case tokComma:
		return false, nil
	case tokRParen:
		return true, p.next()
	}
	return true, p.errAt(p.tok.off, `expected "," or ")" in the list of "in", found %s`, p.describe())
}

// parseValue parses value := metric | fn "(" metric "," duration ["," duration] ")",
// the second duration only for trend and time_to_full.
func (p *parser) parseValue() (valueNode, error) {
	name, off := p.tok.text, p.tok.off
	if err := p.next(); err != nil {
		return valueNode{}, err
	}
	f, isFn := lookupFn(name)
	if p.tok.kind != tokLParen {
		if isFn {
			return valueNode{}, p.errAt(off, "%s is a function; write %s(metric, window), e.g. %s(utilization.gpu, 30m)", name, name, name)
		}
		m, err := p.metric(name, off)
		if err != nil {
			return valueNode{}, err
		}
		p.useMetric(m)
		return valueNode{metric: m}, nil
	}
	if !isFn {
		if _, ok := lookupMetric(name); ok {
			return valueNode{}, p.errAt(off, "%s is a metric, not a function; functions are %s", name, fnList)
		}
		return valueNode{}, p.errAt(off, "unknown function %q%s; functions are %s", name, didYouMean(name, strings.Split(fnList, ", ")), fnList)
	}
	if err := p.next(); err != nil {
		return valueNode{}, err
	}
	if p.tok.kind != tokIdent {
		return valueNode{}, p.errAt(p.tok.off, "expected a metric as the first argument of %s, found %s", name, p.describe())
	}
	if _, ok := lookupFn(p.tok.text); ok {
		return valueNode{}, p.errAt(p.tok.off, "functions cannot be nested; %s takes a metric, e.g. %s(memory.used, 10m)", name, name)
	}
	m, err := p.metric(p.tok.text, p.tok.off)
	if err != nil {
		return valueNode{}, err
	}
	if f == fnCount {
		return p.parseCount(m)
	}
	switch {
	case m.IsEvent():
		return valueNode{}, p.errAt(p.tok.off, "%s does not apply to %s: it is an event, not a series; test it directly, e.g. xid in (79), or count its events, e.g. count(xid in (13, 31), 10m)", name, m)
	case m.Observed():
		return valueNode{}, p.errAt(p.tok.off, "%s does not apply to %s: gpuwatch keeps it from the GPU's past; compare it directly, e.g. %s > %s", name, m, m, observedExample(m))
	case f == fnTimeToFull && m != MetricMemoryUsed && m != MetricMemoryUsedPercent && m != MetricProcessMemory:
		return valueNode{}, p.errAt(p.tok.off, "time_to_full works only on memory.used, memory.used_percent and process.memory, not %s", m)
	case m.States() != nil:
		return valueNode{}, p.errAt(p.tok.off, "%s does not apply to %s: it is a state, compared by name, e.g. %s != %q", name, m, m, m.States()[0])
	case f == fnRate && !m.IsCounter():
		return valueNode{}, p.errAt(p.tok.off, "rate works on counters (%s), not %s; for how fast a reading changes use slope(%s, 10m)", metricList(Metric.IsCounter), m, m)
	case f == fnActive && !m.IsFlag():
		return valueNode{}, p.errAt(p.tok.off, "active works on flags (%s), not %s; for a reading over a window use avg, min or max", metricList(Metric.IsFlag), m)
	}
	if err := p.next(); err != nil {
		return valueNode{}, err
	}
	if p.tok.kind != tokComma {
		return valueNode{}, p.errAt(p.tok.off, `expected "," and a window after %s, found %s; write e.g. %s(%s, 10m)`, m, p.describe(), name, m)
	}
	span, err := p.window(name)
	if err != nil {
		return valueNode{}, err
	}
	if err := p.next(); err != nil {
		return valueNode{}, err
	}
	trend := f == fnTrend || f == fnTimeToFull
	var longest time.Duration
	if p.tok.kind == tokComma {
		if !trend {
			return valueNode{}, p.errAt(p.tok.off, `%s takes one window; only trend and time_to_full take a longest time scale after it`, name)
		}
		if longest, err = p.longest(name, span); err != nil {
			return valueNode{}, err
		}
	}
	if p.tok.kind != tokRParen {
		return valueNode{}, p.errAt(p.tok.off, `expected ")" to close %s(, found %s`, name, p.describe())
	}
	if err := p.next(); err != nil {
		return valueNode{}, err
	}
	p.useMetric(m)
	v := valueNode{metric: m, fn: f, span: span, longest: longest}
	if trend {
		v.window = useSpec(&p.c.trends, WindowSpec{Fn: name, Metric: m, Span: span, Longest: longest})
	} else {
		v.window = useSpec(&p.c.windows, WindowSpec{Fn: name, Metric: m, Span: span})
	}
	return v, nil
}

// parseCount parses the rest of count(test, window) after its metric m:
// the XID test's comparison, the window and the ")".
func (p *parser) parseCount(m Metric) (valueNode, error) {
	if !m.IsEvent() {
		return valueNode{}, p.errAt(p.tok.off, "count counts XID events: its first argument tests xid, xid.fault or xid.action, e.g. count(xid in (13, 31, 43), 10m), not %s", m)
	}
	test := &leaf{val: valueNode{metric: m}, index: -1}
	if err := p.next(); err != nil {
		return valueNode{}, err
	}
	if err := p.parseComparison(test); err != nil {
		return valueNode{}, err
	}
	if p.tok.kind != tokComma {
		return valueNode{}, p.errAt(p.tok.off, `expected "," and a window after %s, found %s; write e.g. count(xid in (13, 31), 10m)`, test.text(), p.describe())
	}
	span, err := p.window("count")
	if err != nil {
		return valueNode{}, err
	}
	if err := p.next(); err != nil {
		return valueNode{}, err
	}
	if p.tok.kind != tokRParen {
		return valueNode{}, p.errAt(p.tok.off, `expected ")" to close count(, found %s`, p.describe())
	}
	if err := p.next(); err != nil {
		return valueNode{}, err
	}
	p.useMetric(m)
	v := valueNode{metric: m, fn: fnCount, span: span, test: test}
	key := CountSpec{test: test, Span: span}
	v.window = slices.IndexFunc(p.c.counts, func(c CountSpec) bool { return c.Span == span && c.Test() == key.Test() })
	if v.window < 0 {
		p.c.counts, v.window = append(p.c.counts, key), len(p.c.counts)
	}
	return v, nil
}

// metricSummary lists the metrics for messages: each reading of memory,
// utilization, power and processes, the events and durations, then the
// families of health readings ("ecc.*") with their count.
func metricSummary() string {
	var names, families []string
	for _, m := range Metrics() {
		if _, health := healthMetricOf(m); !health {
			names = append(names, m.String())
			continue
		}
		family, _, _ := strings.Cut(m.String(), ".")
		if f := family + ".*"; !slices.Contains(families, f) && family != m.String() {
			families = append(families, f)
		} else if family == m.String() {
			families = append(families, family)
		}
	}
	return strings.Join(names, ", ") + " and the health readings " + strings.Join(families, ", ") + " (docs/rules.md lists them)"
}

// metricList names the metrics for which is holds, for messages.
func metricList(is func(Metric) bool) string {
	var names []string
	for _, m := range Metrics() {
		if is(m) {
			names = append(names, m.String())
		}
	}
	return strings.Join(names, ", ")
}

// longest parses the longest time scale after the window span of a trend
// or time_to_full, and the token after it.
func (p *parser) longest(name string, span time.Duration) (time.Duration, error) {
	off := p.tok.off
	longest, err := p.window(name)
	if err != nil {
		return 0, err
	}
	switch text := strings.TrimSpace(p.src[off+1 : p.pos]); {
	case longest < 2*span:
		return 0, p.errAt(off+1+strings.Index(p.src[off+1:], text), "the longest time scale %s must be at least twice the window %s: %s looks at the window and its doublings up to it, e.g. %s(memory.used, 40m, 6h)",
			text, formatSeconds(span.Seconds()), name, name)
	case longest >= span<<MaxTrendScales:
		return 0, p.errAt(off+1+strings.Index(p.src[off+1:], text), "the longest time scale %s is more than %d doublings of the window %s; take a longer window or a shorter longest time scale",
			text, MaxTrendScales-1, formatSeconds(span.Seconds()))
	}
	return longest, p.next()
}

// window parses the duration argument of a window function.
func (p *parser) window(name string) (time.Duration, error) {
	if err := p.nextNumber(); err != nil {
		return 0, err
	}
	if p.tok.kind != tokNumber {
		return 0, p.errAt(p.tok.off, "expected a window such as 10m after the comma in %s(, found %s", name, p.describe())
	}
	num, err := p.number()
	if err != nil {
		return 0, err
	}
	numTok := p.tok
	uoff, utext := p.unit()
	if utext == "" {
		return 0, p.errAt(numTok.off, "window %s needs a unit: ms, s, m, h or d (e.g. %sm)", numTok.text, numTok.text)
	}
	u, err := p.lookupUnit(uoff, utext)
	if err != nil {
		return 0, err
	}
	if u.dim != (Dimension{Base: Seconds}) {
		return 0, p.errAt(uoff, "window %s%s must be a duration; use ms, s, m, h or d", numTok.text, utext)
	}
	secs := num * u.factor
	switch {
	case !(secs > 0) || time.Duration(math.Round(secs*1e9)) <= 0:
		return 0, p.errAt(numTok.off, "window %s%s must be longer than 0", numTok.text, utext)
	case secs > maxWindow.Seconds():
		return 0, p.errAt(numTok.off, "window %s%s is longer than the maximum of %s", numTok.text, utext, formatSeconds(maxWindow.Seconds()))
	}
	return time.Duration(math.Round(secs * 1e9)), nil
}

// useMetric records that the condition reads m.
func (p *parser) useMetric(m Metric) {
	if !slices.Contains(p.c.metrics, m) {
		p.c.metrics = append(p.c.metrics, m)
	}
}

// useSpec returns the index in specs of the window of w's metric and
// spans, adding w.
func useSpec(specs *[]WindowSpec, w WindowSpec) int {
	for i, o := range *specs {
		if o.Metric == w.Metric && o.Span == w.Span && o.Longest == w.Longest {
			return i
		}
	}
	*specs = append(*specs, w)
	return len(*specs) - 1
}

// metric looks up the metric called name at off.
func (p *parser) metric(name string, off int) (Metric, error) {
	if m, ok := lookupMetric(name); ok {
		return m, nil
	}
	names := make([]string, 0, metricEnd)
	for _, m := range Metrics() {
		names = append(names, m.String())
	}
	return 0, p.errAt(off, "unknown metric %q%s; metrics are %s", name, didYouMean(name, names), metricSummary())
}

// lookupUnit looks up the unit spelled s at off.
func (p *parser) lookupUnit(off int, s string) (unit, error) {
	if u, ok := lookupUnit(s); ok {
		return u, nil
	}
	hint := ""
	if fix := suggestUnit(s); fix != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", fix)
	}
	return unit{}, p.errAt(off, "unknown unit %q%s; units are %s and rates such as MiB/min", s, hint, strings.ReplaceAll(allUnits, " ", ", "))
}

// number converts the current number token.
func (p *parser) number() (float64, error) {
	v, err := strconv.ParseFloat(p.tok.text, 64)
	if err != nil {
		return 0, p.errAt(p.tok.off, "number %s is out of range", p.tok.text)
	}
	return v, nil
}

// text writes the value as a person would, for messages.
func (v *valueNode) text() string {
	if v.fn == fnNone {
		return v.metric.String()
	}
	if v.fn == fnCount {
		return "count(" + v.test.text() + ", " + formatSeconds(v.span.Seconds()) + ")"
	}
	longest := ""
	if v.longest > 0 {
		longest = ", " + formatSeconds(v.longest.Seconds())
	}
	return v.fn.String() + "(" + v.metric.String() + ", " + formatSeconds(v.span.Seconds()) + longest + ")"
}

// fnList lists the window functions for messages.
const fnList = "avg, min, max, slope, time_to_full, trend, rate, active, count"

// describe names the current token for messages.
func (p *parser) describe() string {
	switch p.tok.kind {
	case tokEOF:
		return "the end"
	case tokString:
		return "the name " + strconv.Quote(p.tok.text)
	}
	return strconv.Quote(p.tok.text)
}

// isKeyword reports whether the current token is the keyword kw, in any case.
func (p *parser) isKeyword(kw string) bool {
	return p.tok.kind == tokIdent && strings.EqualFold(p.tok.text, kw)
}

func (p *parser) isAnyKeyword() bool {
	return p.isKeyword("and") || p.isKeyword("or") || p.isKeyword("not") || p.isKeyword("in")
}

// lookupOp finds the comparison operator spelled s.
func lookupOp(s string) op {
	for o := opGT; o < opIn; o++ {
		if o.String() == s {
			return o
		}
	}
	return 0
}

// next lexes the next token into p.tok.
func (p *parser) next() error { return p.lex(false) }

// nextNumber lexes the next token where a number may carry a minus sign.
func (p *parser) nextNumber() error { return p.lex(true) }

func (p *parser) lex(signed bool) error {
	for p.pos < len(p.src) && isSpace(p.src[p.pos]) {
		p.pos++
	}
	start := p.pos
	p.tok = token{off: start}
	if p.pos >= len(p.src) {
		return nil
	}
	c := p.src[p.pos]
	switch {
	case isIdentStart(c):
		for p.pos < len(p.src) && isIdentPart(p.src[p.pos]) {
			p.pos++
		}
		p.tok.kind = tokIdent
	case isDigit(c) || (signed && c == '-' && p.pos+1 < len(p.src) && isDigit(p.src[p.pos+1])):
		p.lexNumber()
	case c == '(':
		p.pos++
		p.tok.kind = tokLParen
	case c == ')':
		p.pos++
		p.tok.kind = tokRParen
	case c == ',':
		p.pos++
		p.tok.kind = tokComma
	case c == '"' || c == '\'':
		end := strings.IndexByte(p.src[p.pos+1:], c)
		if end < 0 {
			return p.errAt(start, "missing %c to end the name begun here", c)
		}
		p.pos += end + 2
		p.tok.kind = tokString
		p.tok.text = p.src[start+1 : p.pos-1]
		return nil
	case c == '>' || c == '<' || c == '=' || c == '!':
		p.pos++
		if p.pos < len(p.src) && p.src[p.pos] == '=' {
			p.pos++
		}
		p.tok.kind = tokOp
		switch p.src[start:p.pos] {
		case "=":
			return p.errAt(start, `"=" is not a comparison; use == to test equality`)
		case "!":
			return p.errAt(start, `"!" is not an operator; use not`)
		}
	case c == '&' || c == '|':
		for p.pos < len(p.src) && p.src[p.pos] == c {
			p.pos++
		}
		word := "and"
		if c == '|' {
			word = "or"
		}
		return p.errAt(start, "%q is not an operator; use %s", p.src[start:p.pos], word)
	default:
		r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
		return p.errAt(start, "unexpected character %q", string(r))
	}
	p.tok.text = p.src[start:p.pos]
	return nil
}

// lexNumber lexes [-]digits[.digits][e[+-]digits].
func (p *parser) lexNumber() {
	if p.src[p.pos] == '-' {
		p.pos++
	}
	p.digits()
	if p.pos+1 < len(p.src) && p.src[p.pos] == '.' && isDigit(p.src[p.pos+1]) {
		p.pos++
		p.digits()
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		i := p.pos + 1
		if i < len(p.src) && (p.src[i] == '+' || p.src[i] == '-') {
			i++
		}
		if i < len(p.src) && isDigit(p.src[i]) {
			p.pos = i
			p.digits()
		}
	}
	p.tok.kind = tokNumber
}

func (p *parser) digits() {
	for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
		p.pos++
	}
}

// unit reads the unit after a number, if any, and returns its offset and
// spelling. A space may separate the number and the unit ("5 GiB"), but
// then a keyword ("5 and ...") is not taken for a unit.
func (p *parser) unit() (int, string) {
	i := p.pos
	for i < len(p.src) && isSpace(p.src[i]) {
		i++
	}
	start := i
	for i < len(p.src) && isUnitChar(p.src[i]) {
		i++
	}
	word := p.src[start:i]
	if word == "" {
		return start, ""
	}
	if start > p.pos && isLetter(word[0]) {
		// After a space, only take a word that looks like a unit, so that
		// "85 and ..." and "85 temperature" are left to the parser.
		if _, ok := lookupUnit(word); !ok && suggestUnit(word) == "" {
			return start, ""
		}
	}
	p.pos = i
	return start, word
}

func isSpace(c byte) bool      { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool      { return '0' <= c && c <= '9' }
func isLetter(c byte) bool     { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isIdentStart(c byte) bool { return isLetter(c) || c == '_' }
func isIdentPart(c byte) bool  { return isIdentStart(c) || isDigit(c) || c == '.' }
func isUnitChar(c byte) bool   { return isLetter(c) || c == '%' || c == '/' }

// didYouMean returns ` (did you mean "x"?)` for the candidate closest to
// name, or one that name begins, or "" when none is close.
func didYouMean(name string, candidates []string) string {
	lower := strings.ToLower(name)
	if s := strictyaml.Suggest(lower, candidates); s != "" {
		return s
	}
	for _, c := range candidates {
		if len(lower) >= 3 && strings.HasPrefix(c, lower) {
			return fmt.Sprintf(" (did you mean %q?)", c)
		}
	}
	return ""
}

// canonicalString renders c fully parenthesised with numbers in base units.
func (c *Cond) canonicalString() string {
	var b strings.Builder
	c.root.canonical(&b)
	return b.String()
}
