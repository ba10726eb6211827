package promexport

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/rules"
)

// reportedAt records, for every GPU reporting now, the time of its
// latest sample.
func (r *ruleExport) reportedAt() expr {
	var e expr
	r.inBaseGroup(func() {
		e = r.exporter.record("gpuwatch:reported_at", "the time of the GPU's latest sample, while it reports", r.s.reportedAt())
	})
	return e
}

// heldFor records held_for: how long the job on a GPU has held it, 0 while
// it is free. The job took the GPU at the sample after the last free one
// in the history kept (heldRange), or, when it held the GPU all along, at
// its first sample.
func (r *ruleExport) heldFor() (expr, error) {
	e, err := r.heldForRecord()
	if err != nil {
		return e, err
	}
	why := fmt.Sprintf("counted in evaluations (every %s) over the last %s; a job that takes over from another between two samples, with the memory held throughout, is not told apart",
		duration(r.base.interval), duration(r.heldRange))
	if r.s.name == SchemaDCGM {
		why = "dcgm-exporter names a GPU's Kubernetes pods, not its processes: a GPU is held by more than 1 GiB in use or by a pod; " + why
	}
	r.note(Caveat, "held_for", why)
	return e, nil
}

// heldForRecord records held_for, in the base group: it reads the
// history of when the GPU was held and free.
func (r *ruleExport) heldForRecord() (e expr, err error) {
	r.inBaseGroup(func() { e, err = r.heldForBase() })
	return e, err
}

func (r *ruleExport) heldForBase() (expr, error) {
	used, err := r.metric(rules.MetricMemoryUsed)
	if err != nil {
		return expr{}, err
	}
	procs, err := r.metric(rules.MetricProcessCount)
	if err != nil {
		return expr{}, err
	}
	rest := r.restingLevel(used)
	at := r.reportedAt()
	isHeld := bin(bin(bin(used, "-", rest), ">", number(heldBytes)), "or", bin(procs, ">", raw("0")))
	held := r.exporter.record("gpuwatch:held_at", "the time of the GPU's latest sample, while a job holds it (more than 1 GiB above its resting level in use, or a process)", bin(at, "and", isHeld))
	free := r.exporter.record("gpuwatch:free_at", "the time of the GPU's latest sample, while no job holds it", bin(at, "unless", isHeld))
	e := r.base.interval
	sinceFree := bin(raw(fmt.Sprintf("time() - %s - %s", seconds(e).s, call("max_over_time", rangeOf(free, r.heldRange)).s)), "and", held)
	allAlong := bin(raw("time() - "+call("min_over_time", rangeOf(held, r.heldRange)).s), "and", held)
	return r.exporter.record("gpuwatch:held_for", "held_for: seconds the job on the GPU has held it, 0 while it is free",
		join("or", sinceFree, allAlong, bin(raw("0"), "*", free))), nil
}

// restingLevel is a GPU's resting level: the least memory it has had in
// use once that was at most 2 GiB (rules.Held), 0 until then. A recording
// rule keeps it as a running minimum, each evaluation the smaller of the
// memory in use now and the level before (for as long as Prometheus's
// lookback keeps it). used is memory.used's recording rule.
func (r *ruleExport) restingLevel(used expr) expr {
	const name = "gpuwatch:memory_resting_bytes"
	now := bin(used, "<=", number(gpu.RestingMax))
	before := call("last_over_time", rangeOf(raw(name), MaxInterval))
	rest := r.exporter.record(name, "the GPU's resting level: the least memory in use it has reported, once at most 2 GiB",
		join("or", bin(now, "<", before), before, now))
	return bin(rest, "or", bin(raw("0"), "*", used))
}

// memHeld records memory.held: the memory in use above the GPU's resting
// level.
func (r *ruleExport) memHeld() (expr, error) {
	used, err := r.metric(rules.MetricMemoryUsed)
	if err != nil {
		return expr{}, err
	}
	why := "the resting level is the least memory in use Prometheus has seen (gpuwatch also leaves out what processes hold); it restarts should Prometheus lose the GPU's series for longer than its lookback"
	r.note(Caveat, "memory.held", why)
	return r.exporter.record("gpuwatch:memory_held_bytes", "memory.held: memory in use above the GPU's resting level, in bytes",
		call("clamp_min", bin(used, "-", r.restingLevel(used)), raw("0"))), nil
}

// oomExits records oom_exits: how many times in the last hour a job left
// the GPU (the GPU held at the group's evaluation before, free at this
// one, read its own interval apart) with memory at 95 % or more of what
// jobs can allocate, after it rose by a point or more in the half hour
// before (read a minute apart).
func (r *ruleExport) oomExits() (expr, error) {
	if _, err := r.heldForRecord(); err != nil {
		return expr{}, err
	}
	pct, err := r.metric(rules.MetricMemoryUsedPercent)
	if err != nil {
		return expr{}, err
	}
	prev := "offset " + duration(r.interval())
	last := raw(pct.s + " " + prev)
	// The half hour before at one sample a minute: enough to see a rise,
	// at a thirtieth of what every sample costs a fleet.
	low := call("min_over_time", raw(pct.s+"[30m:1m] "+prev))
	exit := join("and", raw("gpuwatch:free_at"), raw("gpuwatch:held_at "+prev),
		bin(last, ">=", number(oomLikelyPercent)), bin(bin(last, "-", low), ">=", raw("1")))
	events := r.exporter.record("gpuwatch:oom_exit", "a job left the GPU at this evaluation with it nearly full, after its memory rose: a likely CUDA out-of-memory",
		bin(bin(exit, "*", raw("0")), "+", raw("1")))
	r.note(Approximate, "oom_exits", fmt.Sprintf("a job's exit is seen from one evaluation (every %s) to the next, so one started again within an evaluation is not; and every job on the GPU counts, where gpuwatch counts the runs of one job (its command or Slurm job)", duration(r.interval())))
	return r.exporter.record("gpuwatch:oom_exits", "oom_exits: likely out-of-memory exits of jobs on the GPU in the last hour",
		bin(call("count_over_time", rangeOf(events, time.Hour)), "or", bin(raw("0"), "*", r.reportedAt()))), nil
}

// missingFor records missing_for: how long a GPU has not reported, 0 while
// it does. A gpuwatch agent reports a GPU it lost with gpuwatch_gpu_lost
// 1; a GPU whose series stopped (its host is gone) is missing too, as for
// gpuwatch's hub.
func (r *ruleExport) missingFor() expr {
	at := r.reportedAt()
	gone := bin(raw("time() - "+call("max_over_time", rangeOf(at, r.missingRange)).s), "unless", at)
	why := fmt.Sprintf("a GPU missing for longer than %s, the history kept, is unknown rather than missing (an alert on it keeps firing)", duration(r.missingRange))
	if r.s.name == SchemaDCGM {
		why = "dcgm-exporter has no lost signal: a GPU is missing when its series stop; " + why
	}
	r.note(Caveat, "missing_for", why)
	var e expr
	r.inBaseGroup(func() {
		e = r.exporter.record("gpuwatch:missing_for", "missing_for: seconds since the GPU last reported, 0 while it does",
			bin(gone, "or", bin(raw("0"), "*", at)))
	})
	return e
}

// xidTruth is where an xid test holds (want) or is known not to: an XID
// event since the previous evaluation. xid is known for every GPU the
// series know of: no event there is false.
func (r *ruleExport) xidTruth(n rules.CondNode, want bool) (expr, error) {
	rec, why := r.s.xidEvents(duration(r.interval()))
	events := r.exporter.record("gpuwatch:xid_events", "xid: the XID events since the previous evaluation", rec)
	if why != "" {
		r.note(Approximate, "xid", why)
	}
	var t expr
	name := "gpuwatch:xid_events:" + testName(n)
	switch {
	case n.Kind == rules.CondIn:
		t = r.xidIn(events, n.Set)
	default:
		if r.s.name == SchemaDCGM {
			t = compare(events, n.Op, n.Quantity, true)
		} else {
			t = r.s.perGPU(raw(events.s + "{xid" + codeMatcher(n.Op, n.Quantity) + "}"))
			r.note(Caveat, "xid "+n.Op+" "+strconv.FormatFloat(n.Quantity, 'f', -1, 64),
				"the alert's value is how many such XID events there were, not a code")
		}
	}
	t = r.exporter.record(name, "xid: the GPUs with such an XID event since the previous evaluation", t)
	if want {
		return t, nil
	}
	return bin(r.s.known(), "unless", t), nil
}

// xidTest is an XID test as xid alone: an xid.fault or xid.action test
// becomes xid in (the catalogue's codes that pass it).
func (r *ruleExport) xidTest(n rules.CondNode) (rules.CondNode, error) {
	if n.Value.Metric == rules.MetricXID {
		return n, nil
	}
	codes, ok := xidCodes(n)
	if !ok {
		return n, r.fail(n.Value.Metric.String(), "the test passes XID codes outside gpuwatch's catalogue, which PromQL cannot list, or none")
	}
	r.note(Caveat, n.Value.Metric.String(), "the XID codes gpuwatch's catalogue gives that "+n.Value.Metric.String()+": xid in ("+joinCodes(codes.Set)+")")
	return codes, nil
}

// xidCount records count(test, W): how many XID events that pass the test
// the GPU reported within the window, 0 where it reported none. Only
// gpuwatch agents count their XIDs; dcgm-exporter's latest XID misses one
// that repeats the code before it.
func (r *ruleExport) xidCount(v rules.CondValue) (expr, error) {
	if r.s.name == SchemaDCGM {
		return expr{}, r.fail(part(v), "dcgm-exporter's latest XID cannot count XIDs that repeat a code (gpuwatch's hub counts them from DCGM_EXP_XID_ERRORS_COUNT)")
	}
	if v.Test == nil {
		return expr{}, r.fail(part(v), "count without its XID test")
	}
	test, err := r.xidTest(*v.Test)
	if err != nil {
		return expr{}, err
	}
	rec, _ := r.s.xidEvents(duration(r.opts.Interval))
	events := r.exporter.record("gpuwatch:xid_events", "xid: the XID events since the previous evaluation", rec)
	matcher := ""
	switch {
	case test.Kind == rules.CondIn:
		codes := make([]string, len(test.Set))
		for i, c := range test.Set {
			codes[i] = strconv.FormatFloat(c, 'f', -1, 64)
		}
		matcher = `xid=~"` + strings.Join(codes, "|") + `"`
	default:
		matcher = "xid" + codeMatcher(test.Op, test.Quantity)
	}
	sum := raw("sum by (" + r.s.gpuLabels() + ") (" + call("sum_over_time", rangeOf(raw(events.s+"{"+matcher+"}"), v.Window-time.Millisecond)).s + ")")
	name := "gpuwatch:xid_events:count_" + duration(v.Window) + "_" + testName(test)
	return r.record(name, fmt.Sprintf("%s: the XID events that pass the test within (t−%s, t]", part(v), duration(v.Window)),
		bin(sum, "or", bin(raw("0"), "*", r.s.known()))), nil
}

// testName writes an XID test for a recording rule's name: in_13_31_43,
// gt_60.
func testName(n rules.CondNode) string {
	if n.Kind == rules.CondIn {
		codes := make([]string, len(n.Set))
		for i, c := range n.Set {
			codes[i] = nameNumber(c)
		}
		return "in_" + strings.Join(codes, "_")
	}
	return map[string]string{">": "gt", ">=": "ge", "<": "lt", "<=": "le", "==": "eq", "!=": "ne"}[n.Op] + "_" + nameNumber(n.Quantity)
}

// joinCodes writes codes as a list: "48, 79".
func joinCodes(set []float64) string {
	parts := make([]string, len(set))
	for i, c := range set {
		parts[i] = strconv.FormatFloat(c, 'f', -1, 64)
	}
	return strings.Join(parts, ", ")
}

// xidIn is where an XID event has one of the codes, valued the smallest
// such code, so an alert reports it.
func (r *ruleExport) xidIn(events expr, set []float64) expr {
	if r.s.name == SchemaDCGM {
		return inSet(events, set, true) // dcgm-exporter's value is the code
	}
	xs := make([]expr, len(set))
	for i, c := range set {
		xs[i] = bin(bin(raw(fmt.Sprintf(`%s{xid=%q}`, events.s, strconv.FormatFloat(c, 'f', -1, 64))), "*", raw("0")), "+", number(c))
	}
	return raw("min by (" + r.s.gpuLabels() + ") (" + join("or", xs...).s + ")")
}

// nameNumber writes a number for a recording rule's name: 48, 0p5, m1.
func nameNumber(v float64) string {
	return strings.NewReplacer(".", "p", "-", "m", "+", "").Replace(strconv.FormatFloat(v, 'f', -1, 64))
}

// codeMatcher is the label matcher of the XID codes (non-negative
// integers) for which code op q holds: ="79", !="13", =~"4[89]|[5-9][0-9]|…".
func codeMatcher(op string, q float64) string {
	text := strconv.FormatFloat(q, 'f', -1, 64)
	switch op {
	case "==":
		return "=" + quote(text)
	case "!=":
		return "!=" + quote(text)
	}
	lo, hi := 0.0, math.Inf(1)
	switch op {
	case ">":
		lo = math.Floor(q) + 1
	case ">=":
		lo = math.Ceil(q)
	case "<":
		hi = math.Ceil(q) - 1
	case "<=":
		hi = math.Floor(q)
	}
	lo = max(lo, 0)
	if hi < lo {
		return `="none"` // no code holds
	}
	if lo > 1e15 {
		return `="none"`
	}
	h := int64(-1)
	if !math.IsInf(hi, 1) && hi < 1e15 {
		h = int64(hi)
	}
	return "=~" + quote(intRange(int64(lo), h))
}

// intRange is a regular expression matching the decimal integers from lo
// to hi (hi < 0: no end), without leading zeros.
func intRange(lo, hi int64) string {
	var alts []string
	loText := strconv.FormatInt(lo, 10)
	for n := len(loText); ; n++ {
		first, last := int64(math.Pow10(n-1)), int64(math.Pow10(n))-1
		if n == 1 {
			first = 0
		}
		if hi >= 0 && first > hi {
			break
		}
		if hi < 0 && n > len(loText) {
			// Every longer number: one with n digits or more.
			alts = append(alts, "[1-9][0-9]{"+strconv.Itoa(n-1)+",}")
			break
		}
		a, b := max(lo, first), last
		if hi >= 0 {
			b = min(hi, last)
		}
		alts = append(alts, sameLength(strconv.FormatInt(a, 10), strconv.FormatInt(b, 10)))
		if hi >= 0 && b == hi {
			break
		}
	}
	return strings.Join(alts, "|")
}

// sameLength matches the numbers from a to b, both written with the same
// number of digits.
func sameLength(a, b string) string {
	if a == b {
		return a
	}
	if len(a) == 1 {
		return "[" + a + "-" + b + "]"
	}
	if a[0] == b[0] {
		return a[:1] + group(sameLength(a[1:], b[1:]))
	}
	rest := len(a) - 1
	nines, zeros := strings.Repeat("9", rest), strings.Repeat("0", rest)
	var alts []string
	if a[1:] == zeros {
		alts = append(alts, span(a[0], a[0])+anyDigits(rest))
	} else {
		alts = append(alts, a[:1]+group(sameLength(a[1:], nines)))
	}
	if a[0]+1 <= b[0]-1 {
		alts = append(alts, span(a[0]+1, b[0]-1)+anyDigits(rest))
	}
	if b[1:] == nines {
		alts = append(alts, span(b[0], b[0])+anyDigits(rest))
	} else {
		alts = append(alts, b[:1]+group(sameLength(zeros, b[1:])))
	}
	return strings.Join(alts, "|")
}

func group(re string) string {
	if strings.Contains(re, "|") {
		return "(?:" + re + ")"
	}
	return re
}

func span(a, b byte) string {
	if a == b {
		return string(a)
	}
	return "[" + string(a) + "-" + string(b) + "]"
}

func anyDigits(n int) string {
	if n == 1 {
		return "[0-9]"
	}
	return "[0-9]{" + strconv.Itoa(n) + "}"
}

// globRegexp turns a GPU name glob (path.Match syntax) into a regular
// expression that matches the same names.
func globRegexp(glob string) (string, error) {
	rs := []rune(glob)
	var b strings.Builder
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; c {
		case '*':
			b.WriteString("[^/]*")
		case '?':
			b.WriteString("[^/]")
		case '\\':
			if i+1 >= len(rs) {
				return "", fmt.Errorf("the glob ends in an escape")
			}
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case '[':
			class, next, err := globClass(rs, i+1)
			if err != nil {
				return "", err
			}
			b.WriteString(class)
			i = next
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if _, err := regexp.Compile(b.String()); err != nil {
		return "", fmt.Errorf("the glob has no regular expression that matches the same names: %v", err)
	}
	return b.String(), nil
}

// globClass translates the character class of a glob that starts at
// rs[i], after its "[", and returns the index of its "]".
func globClass(rs []rune, i int) (string, int, error) {
	var b strings.Builder
	b.WriteByte('[')
	if i < len(rs) && rs[i] == '^' {
		b.WriteByte('^')
		i++
	}
	char := func() (rune, error) {
		if i >= len(rs) {
			return 0, fmt.Errorf("the glob's [ has no ]")
		}
		c := rs[i]
		if c == '\\' {
			i++
			if i >= len(rs) {
				return 0, fmt.Errorf("the glob ends in an escape")
			}
			c = rs[i]
		}
		i++
		return c, nil
	}
	items := 0
	for {
		if i >= len(rs) {
			return "", 0, fmt.Errorf("the glob's [ has no ]")
		}
		if rs[i] == ']' && items > 0 {
			b.WriteByte(']')
			return b.String(), i, nil
		}
		lo, err := char()
		if err != nil {
			return "", 0, err
		}
		hi := lo
		if i < len(rs) && rs[i] == '-' {
			i++
			if hi, err = char(); err != nil {
				return "", 0, err
			}
		}
		b.WriteString(classChar(lo))
		if hi != lo {
			b.WriteString("-" + classChar(hi))
		}
		items++
	}
}

// classChar writes c for a character class of a regular expression.
func classChar(c rune) string {
	if c < 128 && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
		return `\` + string(c)
	}
	return string(c)
}
