package promexport

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/rules"
)

// The rule groups. Prometheus and vmalert evaluate a file's groups side by
// side, each on its own schedule, and a group's rules one after the other.
// The export gives each alert a group of its own, with the records only it
// reads, at the interval its rules need; a trend is computed in groups of
// its own (trendGroups), which the alerts on it read, and a window that
// needs fewer evaluations than the group of the rule that reads it has a
// group at its own interval (windowGroup). The records several groups
// read the history of (when each GPU last reported and was held) are the
// base group's, gpuwatch. A group reads another group's records only over
// past ranges, where one evaluation more or less of the other group
// changes nothing but the newest sample, or as of the other group's
// latest evaluation, which the file says, where the record is not cheap
// to compute again (a trend's records) or need not be computed as often
// (a long window). Whatever else it needs of another group's records now,
// it computes itself: the record's expression is written in place of its
// name. So the order in which the groups run does not matter.

// baseGroup is the base group's name.
const baseGroup = "gpuwatch"

// Group is one rule group of the file.
type Group struct {
	Name     string
	Interval time.Duration
}

// groupPlan is a group being made: its rules of the rule file.
type groupPlan struct {
	name     string
	interval time.Duration
	rules    []*rules.Rule
	// keep is whether its records stay in it though other groups read
	// them now (as of its latest evaluation): the windows that need
	// fewer evaluations than their readers.
	keep bool
}

// plan puts each rule in its group and sets each group's interval.
func (x *exporter) plan(rs []*rules.Rule) {
	x.base = &groupPlan{name: baseGroup, interval: x.opts.Interval}
	if x.base.interval == 0 {
		x.base.interval = historyInterval(rs)
	}
	x.groupOf = map[*rules.Rule]*groupPlan{}
	byName := map[string]*groupPlan{}
	for _, r := range rs {
		name := groupName(r)
		g := byName[name]
		if g == nil {
			g = &groupPlan{name: name}
			byName[name] = g
			x.groups = append(x.groups, g)
		}
		g.rules = append(g.rules, r)
		x.groupOf[r] = g
	}
	for _, g := range x.groups {
		g.interval = x.opts.Interval
		if g.interval == 0 {
			g.interval = NeededInterval(g.rules)
		}
	}
}

// groupName is the group of a rule: its own. What a trend computes is
// the trend's groups'; the rule reads it as of their latest evaluation.
func groupName(r *rules.Rule) string { return baseGroup + ":" + r.Name }

// historyInterval is the base group's interval: held_for and missing_for
// count in its evaluations, at least two within the shortest threshold a
// rule compares them with and one within each trend's slice (a trend
// counts from its job's start), at most DefaultMaxInterval, a whole number
// of 5 seconds where it is that long.
func historyInterval(rs []*rules.Rule) time.Duration {
	need := DefaultMaxInterval
	var walk func(n rules.CondNode)
	walk = func(n rules.CondNode) {
		for _, o := range n.Operands {
			walk(o)
		}
		switch v := n.Value; {
		case v.Fn == "trend" || v.Fn == "time_to_full":
			need = min(need, v.Window/12)
		case n.Kind == rules.CondCompare && v.Fn == "" && (v.Metric == rules.MetricHeldFor || v.Metric == rules.MetricMissingFor) && n.Quantity > 0:
			need = min(need, time.Duration(min(n.Quantity, DefaultMaxInterval.Seconds())*float64(time.Second))/2)
		}
	}
	for _, r := range rs {
		walk(r.When.Tree())
		if r.ClearWhen != nil {
			walk(r.ClearWhen.Tree())
		}
	}
	return roundInterval(need)
}

// owner is the group the record being made goes to.
func (x *exporter) owner() *groupPlan {
	if n := len(x.owners); n > 0 {
		return x.owners[n-1]
	}
	if x.current == nil {
		return x.base
	}
	return x.current
}

// inGroup makes what f records g's.
func (x *exporter) inGroup(g *groupPlan, f func()) {
	x.owners = append(x.owners, g)
	defer func() { x.owners = x.owners[:len(x.owners)-1] }()
	f()
}

// trendGroups are the groups of trend(m, w): the one that evaluates it
// (its current slice's floor, sampled four times a slice),
// and the one that computes what changes once a slice, a few times a
// slice (at most every DefaultMaxInterval).
func (x *exporter) trendGroups(m rules.Metric, w time.Duration) (fast, slices *groupPlan) {
	name := trendGroupName(m, w)
	fast = x.group(name, roundInterval(min(w/12/4, DefaultMaxInterval)))
	slices = x.group(name+":slices", max(min(w/12, DefaultMaxInterval).Round(time.Millisecond), time.Millisecond))
	return fast, slices
}

// windowGroup is the group that records a window of w over a series of
// the exporter's, where the window needs fewer evaluations than the
// group of the rule that reads it: a window holds ten evaluations of
// its own group (at most DefaultMaxInterval apart), and the rule reads
// it as of that group's latest evaluation, which the file says. nil
// where the rule's group is the window's.
func (x *exporter) windowGroup(w time.Duration) *groupPlan {
	owner := x.owner()
	need := roundInterval(min(w/10, DefaultMaxInterval))
	if x.opts.Interval > 0 || owner == x.base || need <= owner.interval {
		return nil
	}
	g := x.group(fmt.Sprintf("%s:windows_%s", baseGroup, duration(need)), need)
	g.keep = true
	return g
}

// windowGroupOf is the window group (windowGroup) that records the
// record name; nil where it is in another group.
func (x *exporter) windowGroupOf(name string) *groupPlan {
	i := slices.IndexFunc(x.file.Rules, func(r Rule) bool { return r.Record == name })
	if i < 0 {
		return nil
	}
	for _, g := range x.groups {
		if g.keep && g.name == x.file.Rules[i].Group {
			return g
		}
	}
	return nil
}

// group is the group named name, made at interval (or at --interval)
// where there is none yet.
func (x *exporter) group(name string, interval time.Duration) *groupPlan {
	for _, g := range x.groups {
		if g.name == name {
			return g
		}
	}
	if x.opts.Interval > 0 {
		interval = x.opts.Interval
	}
	g := &groupPlan{name: name, interval: interval}
	x.groups = append(x.groups, g)
	return g
}

// trendGroupName is the group of trend(m, w).
func trendGroupName(m rules.Metric, w time.Duration) string {
	return fmt.Sprintf("%s:%s:trend_%s", baseGroup, metricStem(m), duration(w))
}

// interval is the interval of the group the record being made goes to.
func (x *exporter) interval() time.Duration { return x.owner().interval }

// inBaseGroup makes what f records the base group's.
func (x *exporter) inBaseGroup(f func()) { x.inGroup(x.base, f) }

// recordRef finds the names of gpuwatch's records in an expression, and
// what follows each: a range ([), an offset or an @ modifier make a read
// of its history; label matchers ({), a read now that cannot be written
// out in its place.
var recordRef = regexp.MustCompile(`gpuwatch:[A-Za-z0-9_:]+(\[| offset | @ |\{)?`)

// refName is the record a match of recordRef names, and whether it reads
// its history.
func refName(m []string) (string, bool) {
	return strings.TrimSuffix(m[0], m[1]), m[1] != "" && m[1] != "{"
}

// writable is whether a match of recordRef can be replaced by the
// record's expression.
func writable(m []string) bool { return m[1] == "" }

// subqueryRange finds a subquery's range, [D:S].
var subqueryRange = regexp.MustCompile(`\[[0-9a-z]+:[0-9a-z]*\]`)

// arrange moves to the base group the cheap records several groups read
// now (the readings themselves, when a GPU was held, windows two alerts
// share), and writes out, in the group that reads it, a cheap record whose
// value depends on its group's interval (the XID events since the last
// evaluation); with vmalert, which reads a record only once it has been
// written, it writes out every cheap record a group reads of its own. It
// drops the records nothing reads any more, and puts the groups in order:
// the base group, then each rule's group in the order of the rules.
func (x *exporter) arrange() {
	f := x.file
	byName := map[string]*Rule{}
	for i := range f.Rules {
		if r := &f.Rules[i]; r.Record != "" {
			byName[r.Record] = r
		}
	}
	cheap := map[string]bool{}
	var isCheap func(name string) bool
	isCheap = func(name string) bool {
		if c, ok := cheap[name]; ok {
			return c
		}
		cheap[name] = false // until known: a record never reads itself
		r := byName[name]
		if r == nil {
			return false
		}
		c := !subqueryRange.MatchString(r.Expr)
		for _, m := range recordRef.FindAllStringSubmatch(r.Expr, -1) {
			if name, history := refName(m); c && !history && !isCheap(name) {
				c = false
			}
		}
		cheap[name] = c
		return c
	}
	// The groups that read each record now.
	readers := map[string][]string{}
	for _, r := range f.Rules {
		for _, m := range recordRef.FindAllStringSubmatch(r.Expr, -1) {
			if name, history := refName(m); !history && !slices.Contains(readers[name], r.Group) {
				readers[name] = append(readers[name], r.Group)
			}
		}
	}
	var toBase func(name string)
	toBase = func(name string) {
		r := byName[name]
		if r == nil || r.Group == x.base.name {
			return
		}
		r.Group = x.base.name
		for _, m := range recordRef.FindAllStringSubmatch(r.Expr, -1) {
			if name, history := refName(m); !history && !perEvaluation(name) {
				toBase(name)
			}
		}
	}
	kept := map[string]bool{}
	for _, g := range x.groups {
		kept[g.name] = g.keep
	}
	for name, groups := range readers {
		if r := byName[name]; r != nil && isCheap(name) && !perEvaluation(name) && !kept[r.Group] &&
			slices.ContainsFunc(groups, func(g string) bool { return g != r.Group }) {
			toBase(name)
		}
	}
	// inline writes expression e, of group g, with the records it reads
	// now that it must compute itself written out.
	var inline func(e, g string) string
	inline = func(e, g string) string {
		return recordRef.ReplaceAllStringFunc(e, func(ref string) string {
			m := recordRef.FindStringSubmatch(ref)
			name, _ := refName(m)
			r := byName[name]
			if !writable(m) || r == nil || !isCheap(name) || r.Group == x.base.name && g != x.base.name {
				return ref
			}
			if r.Group != g && perEvaluation(name) || r.Group == g && x.opts.Target == TargetVMAlert && g != x.base.name {
				return "(" + inline(r.Expr, g) + ")"
			}
			return ref
		})
	}
	for i := range f.Rules {
		if r := &f.Rules[i]; r.Expr != "" {
			r.Expr = inline(r.Expr, r.Group)
		}
	}
	x.crossGroupNotes(byName)
	// Drop the records no rule reads any more, until none is left to drop.
	for dropped := true; dropped; {
		dropped = false
		read := map[string]bool{}
		for _, r := range f.Rules {
			for _, m := range recordRef.FindAllStringSubmatch(r.Expr, -1) {
				if name, _ := refName(m); name != r.Record {
					read[name] = true
				}
			}
		}
		f.Rules = slices.DeleteFunc(f.Rules, func(r Rule) bool {
			if r.Record != "" && !read[r.Record] {
				dropped = true
				return true
			}
			return false
		})
	}
	if x.opts.Target == TargetVMAlert {
		x.keepFiring()
	}
	order := x.groupOrder()
	var rs []Rule
	for _, g := range order {
		n := len(rs)
		for _, r := range f.Rules {
			if r.Group == g.name {
				rs = append(rs, r)
			}
		}
		if len(rs) > n {
			f.Groups = append(f.Groups, Group{Name: g.name, Interval: g.interval})
		}
	}
	f.Rules = rs
}

// groupOrder puts the groups in the order the file lists them: each after
// the groups whose records it reads (promtool's tests evaluate the groups
// one after the other, in the file's order), else in the order they were
// made: the base group, then the rules' groups.
func (x *exporter) groupOrder() []*groupPlan {
	recordedIn := map[string]string{}
	for _, r := range x.file.Rules {
		if r.Record != "" {
			recordedIn[r.Record] = r.Group
		}
	}
	deps := map[string][]string{}
	for _, r := range x.file.Rules {
		for _, m := range recordRef.FindAllStringSubmatch(r.Expr, -1) {
			name, _ := refName(m)
			if o, ok := recordedIn[name]; ok && o != r.Group && !slices.Contains(deps[r.Group], o) {
				deps[r.Group] = append(deps[r.Group], o)
			}
		}
	}
	left := append([]*groupPlan{x.base}, x.groups...)
	var order []*groupPlan
	placed := map[string]bool{}
	for len(left) > 0 {
		i := slices.IndexFunc(left, func(g *groupPlan) bool {
			return !slices.ContainsFunc(deps[g.name], func(d string) bool { return !placed[d] })
		})
		if i < 0 {
			i = 0 // the groups read each other: as made
		}
		order = append(order, left[i])
		placed[left[i].name] = true
		left = slices.Delete(left, i, i+1)
	}
	return order
}

// perEvaluation is whether a record's value depends on its group's
// interval: the XID events since the group's last evaluation.
func perEvaluation(name string) bool { return strings.HasPrefix(name, "gpuwatch:xid_events") }

// crossGroupNotes notes, for each alert, the records it reads now from
// another group: as of that group's latest evaluation.
func (x *exporter) crossGroupNotes(byName map[string]*Rule) {
	f := x.file
	interval := map[string]time.Duration{x.base.name: x.base.interval}
	for _, g := range x.groups {
		interval[g.name] = g.interval
	}
	for _, g := range x.groups {
		var from []string
		for _, r := range f.Rules {
			if r.Group != g.name {
				continue
			}
			for _, m := range recordRef.FindAllStringSubmatch(r.Expr, -1) {
				name, history := refName(m)
				if o := byName[name]; !history && o != nil && o.Group != g.name && o.Group != x.base.name && !slices.Contains(from, name) {
					from = append(from, name)
				}
			}
		}
		if len(from) == 0 {
			continue
		}
		// One note for each group read from, naming its records.
		var sources []string
		names := map[string][]string{}
		for _, name := range from {
			o := byName[name].Group
			if names[o] == nil {
				sources = append(sources, o)
			}
			names[o] = append(names[o], name)
		}
		for _, o := range sources {
			slices.Sort(names[o])
		}
		for _, rule := range g.rules {
			for _, o := range sources {
				n := Note{Rule: rule.Name, Kind: Caveat, Part: "group",
					Why: fmt.Sprintf("%s reads %s from the group %s, as of its latest evaluation (every %s)", g.name, strings.Join(names[o], ", "), o, duration(interval[o]))}
				if i := slices.IndexFunc(f.Rules, func(r Rule) bool { return r.Alert == rule.Name }); i >= 0 {
					f.Rules[i].Comment = append(f.Rules[i].Comment, n.String())
					f.Notes = append(f.Notes, n)
				}
			}
		}
	}
}
