package cli_test

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/rules"
)

// TestREADMEWalk walks the README's two paths as a newcomer does — "Try
// it" (the demo, in every scenario it offers) and "A first config" (copy
// the example, check it, look at the GPUs, run the daemon on simulated
// GPUs) — and reads what the messages say: every value a firing shows
// satisfies its rule's threshold, in its facts and in its summary, and
// every resolve says what is true now, not what was wrong.
func TestREADMEWalk(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example := exampleRules(t)

	t.Run("try it", func(t *testing.T) {
		if !strings.Contains(string(readme), "go run ./cmd/gpuwatch demo") || !strings.Contains(string(readme), "`--scenario` picks one of") {
			t.Fatal("the README's Try it no longer runs the demo and offers its scenarios: walk its new path")
		}
		scenarios := regexp.MustCompile(`what to simulate: ([^\n]+) \(default`).FindStringSubmatch(gpuwatch(t, "demo", "--help").stdout)
		if scenarios == nil {
			t.Fatal("demo --help lists no scenarios")
		}
		for _, scenario := range strings.Split(scenarios[1], ", ") {
			got := gpuwatch(t, "demo", "--speed", "0", "--scenario", scenario)
			if got.code != cli.ExitOK {
				t.Errorf("demo --scenario %s: exit %d\n%s", scenario, got.code, got.stderr)
				continue
			}
			checkMessages(t, "demo --scenario "+scenario, got.stdout, example)
		}
	})

	t.Run("a first config", func(t *testing.T) {
		if !strings.Contains(string(readme), "cp config.example.yaml config.yaml") || !strings.Contains(string(readme), "with `type: sim` under\n`source:`") {
			t.Fatal("the README's first config no longer copies the example and tries it on simulated GPUs: walk its new path")
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "config.yaml")
		text := mustRead(t, "../config.example.yaml")
		writeFile(t, path, text)
		if got := gpuwatch(t, "check", "--config", path); got.code != cli.ExitOK || !strings.Contains(got.stdout, ": ok: 18 rules, 1 receiver, source nvml every 5s") {
			t.Errorf("check of the example: exit %d\n%s%s", got.code, got.stdout, got.stderr)
		}
		if got := gpuwatch(t, "status"); got.code != cli.ExitOK &&
			(got.code != cli.ExitRuntime || !strings.Contains(got.stderr, "is the NVIDIA driver installed? To try gpuwatch without a GPU run `gpuwatch demo`")) {
			t.Errorf("status without a GPU: exit %d, stderr %q; want the driver's absence said, exit 3", got.code, got.stderr)
		}
		// `type: sim` under source:, as the README says. The simulation
		// runs at 1200x so that the test waits seconds, not the scenario's
		// hour, and the state and the API stay in the test's folder.
		addr := freeAddr(t)
		text = strings.Replace(text, "  type: nvml\n", "  type: sim\n", 1)
		text = strings.Replace(text, "    speed: 1 ", "    speed: 1200 ", 1)
		text = strings.Replace(text, "  listen: 127.0.0.1:9477\n", "  listen: "+addr+"\n", 1)
		text = strings.Replace(text, "storage:\n", "storage:\n  path: @DIR@/gpuwatch.db\n", 1)
		writeFile(t, path, text)
		if got := gpuwatch(t, "check", "--config", path); got.code != cli.ExitOK || !strings.Contains(got.stdout, "source sim every 5s") {
			t.Fatalf("check of the example on simulated GPUs: exit %d\n%s%s", got.code, got.stdout, got.stderr)
		}
		d := runInProcess(t, path)
		defer d.stop()
		// While the fan is out, status shows the daemon's alert with the
		// value its message shows.
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := gpuwatch(t, "status", "--config", path)
			m := regexp.MustCompile(`(?m)^  FIRING   GPUHot \[critical\] \S+ GPU \d+ since [^:]+:\d\d:\d\d \S+: (.+)$`).FindStringSubmatch(got.stdout)
			if m != nil {
				checkValue(t, "status: GPUHot", example["GPUHot"], m[1])
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("status --config: GPUHot did not fire within 30s:\n%s", got.stdout)
			}
			time.Sleep(20 * time.Millisecond)
		}
		waitFor(t, &d.stdout, "RESOLVED GPUHot")
		checkMessages(t, "run on simulated GPUs", d.stdout.String(), example)
	})
}

// exampleRules are the rules of config.example.yaml by name.
func exampleRules(t *testing.T) map[string]*rules.Rule {
	t.Helper()
	cfg, err := config.Parse("config.example.yaml", []byte(mustRead(t, "../config.example.yaml")), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*rules.Rule{}
	for _, r := range cfg.Rules {
		out[r.Name] = r
	}
	return out
}

// consoleHead is the first line of an alert on the console.
var consoleHead = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+  (FIRING  |STILL FIRING|RESOLVED) (\w+) \[\w+\] \S+ (GPU \d+(?: · MIG \d+(?: \([^)]*\))?)?(?:.*, pid \d+)?)`)

// checkMessages reads the console's alerts in out: a firing's value (its
// facts line) and its summary's quantity of the same kind satisfy its
// rule's threshold; a resolve says what holds now, truly, and never
// repeats what the alert fired about.
func checkMessages(t *testing.T, what, out string, example map[string]*rules.Rule) {
	t.Helper()
	fired := map[string]string{} // alert/gpu → the summary it fired with
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		m := consoleHead.FindStringSubmatch(line)
		if m == nil || i+1 >= len(lines) {
			continue
		}
		state, name, key := m[1], m[2], m[2]+"/"+m[3]
		r := example[name]
		if r == nil {
			t.Errorf("%s: %s is no rule of the example", what, name)
			continue
		}
		summary := strings.TrimSpace(lines[i+1])
		if state == "RESOLVED" {
			if summary == fired[key] {
				t.Errorf("%s: %s resolved saying %q, what it fired about: a resolve says what is true now", what, key, summary)
			}
			checkNow(t, what+": resolve of "+key, summary)
			continue
		}
		fired[key] = summary
		facts := ""
		if i+2 < len(lines) {
			facts = strings.TrimSpace(lines[i+2])
		}
		value, ok := strings.CutPrefix(facts, "value ")
		if !ok {
			t.Errorf("%s: %s %s without a value line: %q", what, state, key, facts)
			continue
		}
		value, _, _ = strings.Cut(value, " · ")
		value, _, _ = strings.Cut(value, " (full around")
		value, _, _ = strings.Cut(value, " at ") // read earlier; "(now …)" follows
		dim := checkValue(t, what+": "+strings.TrimSpace(state)+" "+key, r, value)
		// The summary's first quantity of the value's kind agrees too.
		for _, q := range quantities(summary) {
			if q.dim == dim {
				checkValue(t, what+": summary of "+key+" ("+summary+")", r, q.text)
				break
			}
		}
	}
	if len(fired) == 0 && strings.Contains(out, "FIRING") {
		t.Errorf("%s: found no alert to read in\n%s", what, out)
	}
}

// checkValue checks that text, a value as a message writes it, satisfies
// one of the rule's comparisons of its kind, and returns its kind.
func checkValue(t *testing.T, what string, r *rules.Rule, text string) rules.Dimension {
	t.Helper()
	if code, ok := xidValue(text); ok {
		checkXID(t, what, r, text, code)
		return rules.Dimension{Base: rules.Count}
	}
	v, dim, ok := parseQuantity(text)
	if !ok {
		t.Errorf("%s: value %q is no quantity a message writes", what, text)
		return dim
	}
	var tried []string
	for _, c := range comparisons(r.When.Tree()) {
		if c.Value.Dimension() != dim {
			continue
		}
		if holds(c, v) {
			return dim
		}
		tried = append(tried, c.Op+" "+c.Value.Dimension().Format(c.Quantity))
	}
	t.Errorf("%s: the message says %s, which satisfies none of %s's comparisons of its kind (%s): when: %s",
		what, text, r.Name, strings.Join(tried, ", "), r.When)
	return dim
}

// xidText is an XID as a message writes it: "XID 79: the GPU has fallen
// off the bus — …".
var xidText = regexp.MustCompile(`^XID (\d+)(?::|$)`)

// xidValue reads the code of an XID as a message writes it.
func xidValue(text string) (uint64, bool) {
	m := xidText.FindStringSubmatch(strings.TrimSpace(text))
	if m == nil {
		return 0, false
	}
	code, err := strconv.ParseUint(m[1], 10, 64)
	return code, err == nil
}

// checkXID checks that the XID code, which a message says as text,
// passes one of the rule's tests of XIDs: by code (xid in (…), xid > 0)
// or by what the catalogue says of it (xid.fault, xid.action).
func checkXID(t *testing.T, what string, r *rules.Rule, text string, code uint64) {
	t.Helper()
	x, _ := gpu.LookupXID(code)
	for _, c := range comparisons(r.When.Tree()) {
		v := float64(code)
		switch c.Value.Metric {
		case rules.MetricXIDFault:
			v = float64(x.Fault)
		case rules.MetricXIDAction:
			v = float64(x.Action)
		case rules.MetricXID:
		default:
			continue
		}
		if c.Value.Fn == "" && holds(c, v) {
			return
		}
	}
	t.Errorf("%s: the message says %s, which passes none of %s's tests of XIDs: when: %s", what, text, r.Name, r.When)
}

// nowSentence is a resolve's summary: "GPU 3 on node1: temperature is 79 C
// now, under 80 C".
var nowSentence = regexp.MustCompile(`^GPU \d+ on \S+: (?:\S+(?: \S+)?|\w+\([^)]*\)) is (.+) now, (over|at or over|under|at or under|at|not at) (.+)$`)

// checkNow checks that a resolve's summary says what holds now, and that
// it does hold.
func checkNow(t *testing.T, what, summary string) {
	t.Helper()
	for _, plain := range []string{": the GPU reports again", " is never now: memory does not grow", ": no new XID"} {
		if strings.Contains(summary, plain) {
			return
		}
	}
	m := nowSentence.FindStringSubmatch(summary)
	if m == nil {
		t.Errorf("%s: %q does not say what is true now", what, summary)
		return
	}
	v, vd, ok1 := parseQuantity(m[1])
	q, qd, ok2 := parseQuantity(m[3])
	op := map[string]string{"over": ">", "at or over": ">=", "under": "<", "at or under": "<=", "at": "==", "not at": "!="}[m[2]]
	if !ok1 || !ok2 || vd != qd || !holds(rules.CondNode{Op: op, Quantity: q}, v) {
		t.Errorf("%s: %q says what is not so", what, summary)
	}
}

// comparisons are the comparisons of a condition's tree.
func comparisons(n rules.CondNode) []rules.CondNode {
	if n.Kind == rules.CondCompare || n.Kind == rules.CondIn {
		return []rules.CondNode{n}
	}
	var out []rules.CondNode
	for _, o := range n.Operands {
		out = append(out, comparisons(o)...)
	}
	return out
}

func holds(c rules.CondNode, v float64) bool {
	if c.Kind == rules.CondIn {
		return slices.Contains(c.Set, v)
	}
	switch c.Op {
	case ">":
		return v > c.Quantity
	case ">=":
		return v >= c.Quantity
	case "<":
		return v < c.Quantity
	case "<=":
		return v <= c.Quantity
	case "==":
		return v == c.Quantity
	case "!=":
		return v != c.Quantity
	}
	return false
}

// quantity is a value as a message writes it.
type quantity struct {
	text string
	dim  rules.Dimension
}

// quantityText finds the quantities messages write: "97.1%", "86 C",
// "968 MiB/min", "27m37s", "60.4s", "never".
var quantityText = regexp.MustCompile(`-?\d+(?:\.\d+)?(?:%| C\b| W\b| (?:B|KiB|MiB|GiB|TiB|PiB)(?:/min)?\b)|\b(?:\d+d)?(?:\d+h)?(?:\d+m)?(?:\d+(?:\.\d+)?s)?\b|\bnever\b`)

// quantities are the quantities of a text, in order.
func quantities(text string) []quantity {
	var out []quantity
	for _, s := range quantityText.FindAllString(text, -1) {
		if _, dim, ok := parseQuantity(s); ok {
			out = append(out, quantity{s, dim})
		}
	}
	return out
}

// parseQuantity reads a value as rules.Dimension.Format writes it.
func parseQuantity(s string) (float64, rules.Dimension, bool) {
	s = strings.TrimSpace(s)
	per := rules.Dimension{}
	if rest, ok := strings.CutSuffix(s, "/min"); ok {
		s, per.PerSecond = rest, true
	}
	number := func(text string, unit float64, base rules.BaseDim) (float64, rules.Dimension, bool) {
		v, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		d := rules.Dimension{Base: base, PerSecond: per.PerSecond}
		if per.PerSecond {
			unit /= 60
		}
		return v * unit, d, err == nil
	}
	for i, u := range []string{" B", " KiB", " MiB", " GiB", " TiB", " PiB"} {
		if n, ok := strings.CutSuffix(s, u); ok {
			return number(n, math.Pow(1024, float64(i)), rules.Bytes)
		}
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return number(s, 1, rules.Count) // a count, or a count per minute
	}
	switch {
	case per.PerSecond:
	case strings.HasSuffix(s, "%"):
		return number(strings.TrimSuffix(s, "%"), 1, rules.Percent)
	case strings.HasSuffix(s, " C"):
		return number(strings.TrimSuffix(s, " C"), 1, rules.Celsius)
	case strings.HasSuffix(s, " W"):
		return number(strings.TrimSuffix(s, " W"), 1, rules.Watts)
	case s == "never":
		return math.Inf(1), rules.Dimension{Base: rules.Seconds}, true
	case regexp.MustCompile(`^-?\d+(?:\.\d+)?$`).MatchString(s):
		return number(s, 1, rules.Count) // a count: "3" deaths
	case s != "":
		if strings.HasSuffix(s, "ms") {
			return number(strings.TrimSuffix(s, "ms"), 0.001, rules.Seconds)
		}
		m := regexp.MustCompile(`^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$`).FindStringSubmatch(s)
		if m == nil {
			return 0, rules.Dimension{}, false
		}
		var secs float64
		for j, unit := range []float64{86400, 3600, 60, 1} {
			if m[j+1] != "" {
				v, _ := strconv.ParseFloat(m[j+1], 64)
				secs += v * unit
			}
		}
		return secs, rules.Dimension{Base: rules.Seconds}, true
	}
	return 0, rules.Dimension{}, false
}
