// Package promexport writes gpuwatch's rules as a Prometheus rule file, so
// that a fleet whose Prometheus evaluates its alerts keeps gpuwatch's tuned
// rules, and gpuwatch's rule tests as `promtool test rules` files.
//
// Every alert keeps gpuwatch's meaning, with one alert per rule and GPU
// (labels host, gpu, uuid, severity and the rule's labels):
//   - a condition is true where its PromQL has a sample, and known to be
//     false where its negation (comparisons inverted, and/or swapped) has
//     one; neither is unknown, as in gpuwatch's three-valued logic;
//   - window functions are recording rules over (t−W, t], ready once
//     their samples span half the window: avg/min/max → *_over_time,
//     slope → deriv, trend → the order statistics of its slice floors;
//   - gpuwatch's state machine is Prometheus's (for counts only the time
//     the condition holds), with the ALERTS series carrying what it adds:
//     a firing alert resolves only when its condition is known to be
//     false, and with clear_when only once clear_when holds (hysteresis).
//
// What cannot be carried faithfully is said, per rule and part, as a Note:
// the rule is left out, or kept and marked approximate.
package promexport

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/rules"
)

// Options say how to export.
type Options struct {
	Schema Schema
	// Target is the engine that evaluates the rules: Prometheus (the
	// default) or vmalert.
	Target Target
	// Interval is how often the engine evaluates every group of the
	// rules: XID events are counted from one evaluation to the next, and
	// subqueries sample every Interval. At most MaxInterval. Zero: each
	// group at the interval its rules need (NeededInterval).
	Interval time.Duration
	// Source names where the rules come from, for the file's header.
	Source string
}

// Target is the rule engine an export is for.
type Target string

// The targets.
const (
	// TargetPrometheus is Prometheus 2.42 or later.
	TargetPrometheus Target = "prometheus"
	// TargetVMAlert is VictoriaMetrics' vmalert 1.79 or later, over
	// VictoriaMetrics: its PromQL is MetricsQL, and it writes a recording
	// rule's result to VictoriaMetrics after it evaluates the rule.
	TargetVMAlert Target = "vmalert"
)

// ParseTarget checks a target's name; "" is TargetPrometheus.
func ParseTarget(name string) (Target, error) {
	switch t := Target(name); t {
	case "":
		return TargetPrometheus, nil
	case TargetPrometheus, TargetVMAlert:
		return t, nil
	}
	return "", fmt.Errorf("target %q is not prometheus or vmalert", name)
}

// MaxInterval is the longest evaluation interval: an alert's state must
// still be in the ALERTS series (Prometheus's 5-minute lookback) at the
// next evaluation.
const MaxInterval = 5 * time.Minute

// minWindow is the shortest window the export carries: Prometheus counts
// milliseconds, and scrapes every few seconds.
const minWindow = time.Second

// NoteKind says what a Note means for its rule.
type NoteKind int

const (
	// LeftOut: the rule is not in the file.
	LeftOut NoteKind = iota + 1
	// Approximate: the rule is in the file, but may decide differently
	// from gpuwatch.
	Approximate
	// Caveat: the rule is translated faithfully, with a condition or a
	// limit worth knowing.
	Caveat
)

// String names the kind as the file and the command say it.
func (k NoteKind) String() string {
	switch k {
	case LeftOut:
		return "left out"
	case Approximate:
		return "approximate"
	}
	return "note"
}

// Note is something a rule uses that the export cannot carry exactly.
type Note struct {
	Rule string
	Kind NoteKind
	Part string // the part of the rule: "when: trend(memory.used, 40m)", "summary"
	Why  string
}

// String is "RULE: KIND: PART: WHY".
func (n Note) String() string {
	return fmt.Sprintf("%s: %s: %s: %s", n.Rule, n.Kind, n.Part, n.Why)
}

// File is the exported rule file: its groups (see Group), and their
// rules: the recording rules of the window functions the alerts read, each
// before the first rule that reads it, and the alerts.
type File struct {
	opts   Options
	Groups []Group
	Rules  []Rule // every group's, in the groups' order
	// LeftOut names the rules not exported; Notes say why.
	LeftOut []string
	Notes   []Note
}

// Rule is a recording rule (Record) or an alerting rule (Alert), or, for a
// rule left out, only the comment that says so.
type Rule struct {
	Group         string
	Record        string
	Alert         string
	Expr          string
	For           time.Duration
	KeepFiringFor time.Duration
	Labels        map[string]string
	Annotations   map[string]string
	Comment       []string // lines written above it
}

// Export translates rules.
func Export(rs []*rules.Rule, opts Options) (*File, error) {
	if opts.Schema != SchemaGPUWatch && opts.Schema != SchemaDCGM {
		return nil, fmt.Errorf("schema %q is not gpuwatch or dcgm", opts.Schema)
	}
	if opts.Target == "" {
		opts.Target = TargetPrometheus
	}
	if opts.Target != TargetPrometheus && opts.Target != TargetVMAlert {
		return nil, fmt.Errorf("target %q is not prometheus or vmalert", opts.Target)
	}
	if opts.Interval < 0 || opts.Interval > MaxInterval || opts.Interval%time.Millisecond != 0 {
		return nil, fmt.Errorf("evaluation interval %v must be a whole number of milliseconds, at most %v (Prometheus's lookback)", opts.Interval, MaxInterval)
	}
	x := &exporter{opts: opts, s: schema{name: opts.Schema}, file: &File{opts: opts}, recorded: map[string]bool{}}
	x.plan(rs)
	x.heldRange, x.missingRange = historyRanges(rs, x.base.interval)
	for _, r := range rs {
		x.current = x.groupOf[r]
		x.rule(r)
	}
	x.arrange()
	return x.file, nil
}

// exporter translates the rules of one file.
type exporter struct {
	opts     Options
	s        schema
	file     *File
	recorded map[string]bool
	// heldRange and missingRange are how far back held_for and
	// missing_for look: past every threshold the rules compare them with.
	heldRange, missingRange time.Duration

	// The groups: the base group's history, each rule's group, in order;
	// current is the group of the rule being translated, and owners the
	// groups the records being made go to, innermost last, where they
	// are not current's.
	base    *groupPlan
	groupOf map[*rules.Rule]*groupPlan
	groups  []*groupPlan
	current *groupPlan
	owners  []*groupPlan
}

// historyRanges returns how far back the held_for and missing_for rules
// must look: five minutes past the largest threshold any rule compares
// them with, and for held_for past the longest trend (which counts from
// the job's start), in whole evaluation intervals.
func historyRanges(rs []*rules.Rule, interval time.Duration) (held, missing time.Duration) {
	var walk func(n rules.CondNode)
	walk = func(n rules.CondNode) {
		for _, o := range n.Operands {
			walk(o)
		}
		if n.Value.Fn == "trend" || n.Value.Fn == "time_to_full" {
			held = max(held, n.Value.Window+n.Value.Window/12)
		}
		if n.Kind != rules.CondCompare || n.Value.Fn != "" {
			return
		}
		q := time.Duration(min(max(n.Quantity, 0), (30*24*time.Hour).Seconds()) * float64(time.Second))
		switch n.Value.Metric {
		case rules.MetricHeldFor:
			held = max(held, q)
		case rules.MetricMissingFor:
			missing = max(missing, q)
		}
	}
	for _, r := range rs {
		walk(r.When.Tree())
		if r.ClearWhen != nil {
			walk(r.ClearWhen.Tree())
		}
	}
	round := func(d time.Duration) time.Duration {
		d += 5 * time.Minute
		return (d + interval - 1) / interval * interval
	}
	return round(held), round(missing)
}

// untranslatable is why a part of a rule cannot be exported.
type untranslatable struct {
	part, why string
}

func (u *untranslatable) Error() string { return u.part + ": " + u.why }

// ruleExport translates one rule.
type ruleExport struct {
	*exporter
	rule  *rules.Rule
	field string // "when" or "clear_when", for notes
	notes []Note
}

func (x *exporter) rule(r *rules.Rule) {
	re := &ruleExport{exporter: x, rule: r}
	before := len(x.file.Rules)
	alert, err := re.alert()
	var u *untranslatable
	if errors.As(err, &u) {
		// The recording rules made for it serve no alert.
		for _, rec := range x.file.Rules[before:] {
			delete(x.recorded, rec.Record)
		}
		x.file.Rules = x.file.Rules[:before]
		re.notes = []Note{{Rule: r.Name, Kind: LeftOut, Part: u.part, Why: u.why}}
		x.file.LeftOut = append(x.file.LeftOut, r.Name)
		alert = Rule{}
	}
	notes := dedupNotes(re.notes)
	for _, n := range notes {
		alert.Comment = append(alert.Comment, n.String())
	}
	alert.Group = x.current.name
	x.file.Rules = append(x.file.Rules, alert)
	x.file.Notes = append(x.file.Notes, notes...)
}

// dedupNotes merges the notes that say the same of several parts.
func dedupNotes(ns []Note) []Note {
	var out []Note
	for _, n := range ns {
		i := slices.IndexFunc(out, func(o Note) bool { return o.Kind == n.Kind && o.Why == n.Why })
		switch {
		case i < 0:
			out = append(out, n)
		case !slices.Contains(strings.Split(out[i].Part, "; "), n.Part):
			out[i].Part += "; " + n.Part
		}
	}
	return out
}

// note records a note about the current part of the rule.
func (r *ruleExport) note(kind NoteKind, part, why string) {
	r.notes = append(r.notes, Note{Rule: r.rule.Name, Kind: kind, Part: r.field + ": " + part, Why: why})
}

func (r *ruleExport) fail(part, why string) error {
	return &untranslatable{part: r.field + ": " + part, why: why}
}

// alert builds the alerting rule:
//
//	when
//	or (the alert firing, unless when is known to be false)
//
// or, with clear_when,
//
//	when
//	or (the alert firing, unless clear_when holds)
//
// where "the alert firing" is its ALERTS series of the last evaluation:
// what gpuwatch's state machine adds to Prometheus's. A pending alert
// needs when itself, as Prometheus's for does.
func (r *ruleExport) alert() (Rule, error) {
	rule := r.rule
	r.field = "when"
	if rule.PerProcess() {
		return Rule{}, r.fail("process.memory", "the rule runs per process (a window of process.memory), and the exported rules see GPUs: gpuwatch's hub evaluates it on the agents' "+gwProcessMem)
	}
	when := rule.When.Tree()
	tw, err := r.truth(when, true)
	if err != nil {
		return Rule{}, err
	}
	fw, err := r.truth(when, false)
	if err != nil {
		return Rule{}, err
	}
	first := firstLeaf(when)
	vr, err := r.report(first)
	if err != nil {
		return Rule{}, err
	}
	if !reportsFirst(when) {
		tw = bin(bin(vr, "and", tw), "or", tw)
	}
	state := func(s string) expr {
		st := raw(fmt.Sprintf(`max by (%s) (ALERTS{alertname=%s, alertstate=%q})`, r.s.gpuLabels(), quote(rule.Name), s))
		return bin(bin(vr, "and", st), "or", st)
	}
	branches := []expr{tw}
	if rule.ClearWhen == nil {
		branches = append(branches, bin(state("firing"), "unless", fw))
	} else {
		r.field = "clear_when"
		clear := rule.ClearWhen.Tree()
		tc, err := r.truth(clear, true)
		if err != nil {
			return Rule{}, err
		}
		branches = append(branches, bin(state("firing"), "unless", tc))
	}
	r.field = "gpus"
	parts := make([]string, len(branches))
	for i, b := range branches {
		parts[i] = b.operand()
	}
	text := strings.Join(parts, "\nor\n")
	if len(rule.GPUs) > 0 {
		set, err := r.gpuSet(rule.GPUs)
		if err != nil {
			return Rule{}, err
		}
		text = "(\n" + indent(text) + "\n)\nand " + set.s
	}
	a := Rule{Group: r.current.name, Alert: rule.Name, Expr: text, For: rule.For, KeepFiringFor: rule.KeepFiringFor,
		Labels: map[string]string{"severity": string(rule.Severity)}}
	for k, v := range rule.Labels {
		a.Labels[k] = v
	}
	r.field = ""
	a.Annotations = r.annotations(rule.When.ValueDimension(), first)
	return a, nil
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

// firstLeaf is the condition's first comparison: its left side is the
// alert's value.
func firstLeaf(n rules.CondNode) rules.CondNode {
	for len(n.Operands) > 0 {
		n = n.Operands[0]
	}
	return n
}

// reportsFirst reports whether the truth of n has the value of its first
// comparison wherever it holds: and keeps the value of its first operand,
// or and not do not.
func reportsFirst(n rules.CondNode) bool {
	for n.Kind == rules.CondAnd {
		n = n.Operands[0]
	}
	return n.Kind == rules.CondCompare || n.Kind == rules.CondIn
}

// truth is where n is true (want) or known to be false (!want).
func (r *ruleExport) truth(n rules.CondNode, want bool) (expr, error) {
	switch n.Kind {
	case rules.CondAnd, rules.CondOr:
		op := "and"
		if (n.Kind == rules.CondOr) == want {
			op = "or"
		}
		xs := make([]expr, len(n.Operands))
		for i, o := range n.Operands {
			x, err := r.truth(o, want)
			if err != nil {
				return expr{}, err
			}
			xs[i] = x
		}
		return join(op, xs...), nil
	case rules.CondNot:
		return r.truth(n.Operands[0], !want)
	case rules.CondCompare, rules.CondIn:
		if n.Value.Metric.IsEvent() && n.Value.Fn == "" {
			codes, err := r.xidTest(n)
			if err != nil {
				return expr{}, err
			}
			return r.xidTruth(codes, want)
		}
		v, err := r.value(n.Value)
		if err != nil {
			return expr{}, err
		}
		var t expr
		if n.Kind == rules.CondIn {
			t = inSet(v, n.Set, want)
		} else {
			t = compare(v, n.Op, n.Quantity, want)
		}
		if want && n.Value.Fn == "trend" {
			// An alert on a trend reports how fast it grows, the median.
			rate, err := r.report(n)
			if err != nil {
				return expr{}, err
			}
			t = bin(rate, "and", t)
		}
		return t, nil
	}
	return expr{}, r.fail("condition", "empty")
}

// negated maps each comparison to the one that holds where it does not,
// for a known value.
var negated = map[string]string{">": "<=", ">=": "<", "<": ">=", "<=": ">", "==": "!=", "!=": "=="}

// compare is where v op q holds (want), or where it is known not to.
// Inequality is written as < or >, which an unknown (NaN) value fails.
func compare(v expr, op string, q float64, want bool) expr {
	if !want {
		op = negated[op]
	}
	if op == "!=" {
		return bin(bin(v, "<", number(q)), "or", bin(v, ">", number(q)))
	}
	return bin(v, op, number(q))
}

// inSet is where v is one of set (want), or known not to be.
func inSet(v expr, set []float64, want bool) expr {
	eqs := make([]expr, len(set))
	for i, x := range set {
		eqs[i] = bin(v, "==", number(x))
	}
	in := join("or", eqs...)
	if want {
		return in
	}
	return bin(bin(v, "==", v), "unless", in)
}

// part names a value as the rule language writes it.
func part(v rules.CondValue) string {
	switch {
	case v.Fn == "":
		return v.Metric.String()
	case v.Fn == "count" && v.Test != nil:
		return fmt.Sprintf("count(%s, %s)", testText(*v.Test), duration(v.Window))
	}
	if v.Longest > 0 {
		return fmt.Sprintf("%s(%s, %s, %s)", v.Fn, v.Metric, duration(v.Window), duration(v.Longest))
	}
	return fmt.Sprintf("%s(%s, %s)", v.Fn, v.Metric, duration(v.Window))
}

// value is the value of v where it is known.
func (r *ruleExport) value(v rules.CondValue) (expr, error) {
	switch {
	case v.Fn == "" && v.Metric == rules.MetricHeldFor:
		return r.heldFor()
	case v.Fn == "" && v.Metric == rules.MetricMissingFor:
		return r.missingFor(), nil
	case v.Fn == "" && v.Metric == rules.MetricMemoryHeld:
		return r.memHeld()
	case v.Fn == "" && v.Metric == rules.MetricOOMExits:
		return r.oomExits()
	case v.Fn == "":
		if f := r.s.form(v.Metric); f.note != "" {
			r.note(Caveat, v.Metric.String(), f.note)
		}
		return r.metric(v.Metric)
	}
	if err := r.checkWindow(v); err != nil {
		return expr{}, err
	}
	switch v.Fn {
	case "trend":
		e, err := r.trend(v.Metric, v.Window)
		if err == nil {
			r.note(Approximate, part(v), scalesApproximation(v)+trendApproximation)
		}
		return e, err
	case "time_to_full":
		e, err := r.timeToFull(v.Metric, v.Window)
		if err == nil {
			r.note(Approximate, part(v), timeToFullApproximation+scalesApproximation(v)+"for trend "+trendApproximation)
		}
		return e, err
	case "rate":
		r.note(Approximate, part(v), "Prometheus's rate() extrapolates to the window's ends; gpuwatch's is the rise from the window's first sample to its last")
	case "active":
		// The share of the window the flag held, over the window's length.
		avg, err := r.window(v.Metric, "avg", v.Window)
		if err != nil {
			return expr{}, err
		}
		return bin(avg, "*", seconds(v.Window)), nil
	case "count":
		return r.xidCount(v)
	}
	return r.window(v.Metric, v.Fn, v.Window)
}

// report is the value an alert on n reports: its value, except that a
// trend reports how fast the metric grows (the median rate).
func (r *ruleExport) report(n rules.CondNode) (expr, error) {
	switch {
	case n.Value.Metric.IsEvent() && n.Value.Fn == "":
		codes, err := r.xidTest(n)
		if err != nil {
			return expr{}, err
		}
		return r.xidTruth(codes, true)
	case n.Value.Fn == "trend":
		if _, err := r.value(n.Value); err != nil {
			return expr{}, err
		}
		return raw(r.recordName(n.Value.Metric, "trend_rate", n.Value.Window)), nil
	}
	return r.value(n.Value)
}

// checkWindow refuses windows Prometheus cannot hold, and notes those it
// rounds.
func (r *ruleExport) checkWindow(v rules.CondValue) error {
	if v.Window < minWindow {
		return r.fail(part(v), fmt.Sprintf("a window shorter than %v holds at most one scrape in Prometheus", minWindow))
	}
	exact := v.Window%time.Millisecond == 0 && (v.Window/2)%time.Millisecond == 0
	if v.Fn == "trend" || v.Fn == "time_to_full" {
		exact = exact && (v.Window/12)%time.Millisecond == 0 && v.Window%12 == 0
	}
	if !exact {
		r.note(Approximate, part(v), "Prometheus counts time in milliseconds: the window (and its halves and slices) are rounded to them")
	}
	return nil
}

// record adds a recording rule once, to the group being made, and
// returns its name as a selector.
func (x *exporter) record(name, help string, e expr) expr {
	if !x.recorded[name] {
		x.recorded[name] = true
		x.file.Rules = append(x.file.Rules, Rule{Group: x.owner().name, Record: name, Expr: e.s, Comment: []string{help}})
	}
	return raw(name)
}

// recordName is the name of the recording rule of fn over metric m's
// window w: gpuwatch:memory_used_percent:min_5m.
func (x *exporter) recordName(m rules.Metric, fn string, w time.Duration) string {
	return "gpuwatch:" + strings.ReplaceAll(m.String(), ".", "_") + ":" + fn + "_" + duration(w)
}

// gpuSet is every GPU a rule's gpus selects: by index, by UUID (in any
// case), or by a glob on the name.
func (r *ruleExport) gpuSet(sels []rules.GPUSelector) (expr, error) {
	family, nameLabel, uuidLabel := gwInfo, "name", "uuid"
	if r.s.name == SchemaDCGM {
		family, nameLabel, uuidLabel = dcgmFBUsed, "modelName", "UUID"
	}
	var xs []expr
	for _, s := range sels {
		var m string
		switch {
		case s.Index >= 0:
			m = fmt.Sprintf("gpu=%q", fmt.Sprint(s.Index))
		case s.UUID != "":
			m = fmt.Sprintf("%s=~%s", uuidLabel, quote("(?i)"+regexp.QuoteMeta(s.UUID)))
		default:
			re, err := globRegexp(s.NameGlob)
			if err != nil {
				return expr{}, r.fail(fmt.Sprintf("%q", s.NameGlob), err.Error())
			}
			m = fmt.Sprintf("%s=~%s", nameLabel, quote(re))
		}
		xs = append(xs, r.s.sel(family, m))
	}
	return r.s.perGPU(join("or", xs...)), nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare)
	return keys
}
