package promexport

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/rules"
)

// Tests is a gpuwatch rule test file written as a promtool test file.
type Tests struct {
	source, ruleFile string
	interval         time.Duration
	groups           []string // the rule file's groups, in order
	Cases            []TestCase
	Notes            []Note
}

// TestCase is one test: its input series, and for each check of the
// gpuwatch test, the ALERTS series that must be firing then.
type TestCase struct {
	Name     string
	Interval time.Duration
	Input    []InputSeries
	Checks   []AlertCheck
}

// AlertCheck says which alerts fire at a time: the firing ALERTS series
// of one rule (Alert), or of every rule.
type AlertCheck struct {
	At     time.Duration
	Alert  string
	Firing []string // the ALERTS series, as label sets
}

// ExportTests writes the cases of a gpuwatch rule test file as promtool
// tests of f, the export of the same rules, which the test file reads as
// ruleFile. gpuwatch's tests say which alerts fire when, not what they
// say, so each check is a PromQL test of the ALERTS series that fire, not
// an alert test (which compares annotations too). Checks of rules left out
// of f, and checks between two of f's evaluations, are left out and noted.
func ExportTests(tf *rules.TestFile, f *File, ruleFile string) *Tests {
	out := &Tests{source: tf.Path, ruleFile: ruleFile, interval: f.TestInterval()}
	for _, g := range f.Groups {
		out.groups = append(out.groups, g.Name)
	}
	exported := map[string]*rules.Rule{}
	for _, r := range tf.Rules {
		if !slices.Contains(f.LeftOut, r.Name) {
			exported[r.Name] = r
		}
	}
	for _, tc := range tf.Cases {
		if tc.Log != "" {
			out.Notes = append(out.Notes, Note{Rule: "test " + strconv.Quote(tc.Name), Kind: LeftOut, Part: "the test",
				Why: "its input is a GPU log (" + tc.Log + "), which promtool tests do not read"})
			continue
		}
		snaps := make([]*gpu.Snapshot, tc.Steps)
		uuids := map[int]string{}
		host := ""
		for i := range snaps {
			snaps[i] = tc.Snapshot(i)
			host = snaps[i].Host
			for _, d := range snaps[i].Devices {
				uuids[d.Index] = d.UUID
			}
		}
		c := TestCase{Name: tc.Name, Interval: tc.Interval, Input: Series(f.opts.Schema, snaps)}
		skip := func(what, why string) {
			out.Notes = append(out.Notes, Note{Rule: "test " + strconv.Quote(tc.Name), Kind: LeftOut, Part: what, Why: why})
		}
		for _, ch := range tc.Checks {
			at := "check at " + duration(ch.At)
			if ch.At%out.interval != 0 {
				skip(at, fmt.Sprintf("it falls between two evaluations of the exported rules (every %s)", duration(out.interval)))
				continue
			}
			if ch.Alert != "" && exported[ch.Alert] == nil {
				skip(at, ch.Alert+" is left out of the rule file")
				continue
			}
			check := AlertCheck{At: ch.At, Alert: ch.Alert}
			for _, a := range ch.Firing {
				r := exported[a.Alert]
				if r == nil {
					skip(at+" of "+a.Alert, a.Alert+" is left out of the rule file")
					continue
				}
				check.Firing = append(check.Firing, alertSeries(r, host, a.GPU, uuids[a.GPU]))
			}
			slices.Sort(check.Firing)
			c.Checks = append(c.Checks, check)
		}
		out.Cases = append(out.Cases, c)
	}
	return out
}

// alertSeries is the ALERTS series of rule r firing on a GPU.
func alertSeries(r *rules.Rule, host string, gpuIndex int, uuid string) string {
	labels := map[string]string{"alertname": r.Name, "alertstate": "firing", "host": host,
		"gpu": strconv.Itoa(gpuIndex), "uuid": uuid, "severity": string(r.Severity)}
	for k, v := range r.Labels {
		labels[k] = v
	}
	var pairs []string
	for _, k := range sortedKeys(labels) {
		pairs = append(pairs, k, labels[k])
	}
	return selector("ALERTS", pairs...)
}

// Write writes the promtool test file.
func (t *Tests) Write(w io.Writer) error {
	var b bytes.Buffer
	comment(&b, "", fmt.Sprintf("promtool tests of gpuwatch's rules, from %s, written by\n`gpuwatch rules export`: run them with `promtool test rules`. Each check is\nthe ALERTS series firing at a time: gpuwatch's tests say which alerts fire,\nnot what they say.", t.source))
	if len(t.Notes) > 0 {
		b.WriteString("#\n# Left out:\n")
		for _, n := range t.Notes {
			comment(&b, "", "- "+n.String())
		}
	}
	fmt.Fprintf(&b, "rule_files: [%s]\nevaluation_interval: %s\n", scalar(t.ruleFile), duration(t.interval))
	writeGroupOrder(&b, t.groups)
	b.WriteString("tests:\n")
	for _, c := range t.Cases {
		fmt.Fprintf(&b, "  - name: %s\n    interval: %s\n    input_series:\n", scalar(c.Name), duration(c.Interval))
		for _, s := range c.Input {
			fmt.Fprintf(&b, "      - series: %s\n        values: %s\n", scalar(s.Series), scalar(s.Values))
		}
		if len(c.Checks) == 0 {
			continue
		}
		b.WriteString("    promql_expr_test:\n")
		for _, ch := range c.Checks {
			sel := `ALERTS{alertstate="firing"}`
			if ch.Alert != "" {
				sel = fmt.Sprintf(`ALERTS{alertname=%s, alertstate="firing"}`, quote(ch.Alert))
			}
			fmt.Fprintf(&b, "      - expr: %s\n        eval_time: %s\n", scalar(sel), duration(ch.At))
			if len(ch.Firing) == 0 {
				b.WriteString("        exp_samples: []\n")
				continue
			}
			b.WriteString("        exp_samples:\n")
			for _, s := range ch.Firing {
				fmt.Fprintf(&b, "          - labels: %s\n            value: 1\n", scalar(s))
			}
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// String is the file's text.
func (t *Tests) String() string {
	var b strings.Builder
	t.Write(&b)
	return b.String()
}

// TestInterval is the interval promtool tests of f evaluate it at: every
// group's, or, where the groups have their own, the shortest (promtool
// evaluates every group at the test's evaluation_interval).
func (f *File) TestInterval() time.Duration {
	var shortest time.Duration
	for _, g := range f.Groups {
		if shortest == 0 || g.Interval < shortest {
			shortest = g.Interval
		}
	}
	if shortest == 0 {
		return cmp.Or(f.opts.Interval, DefaultMaxInterval)
	}
	return shortest
}

// writeGroupOrder writes a promtool test file's group_eval_order: the
// groups in the rule file's order, which promtool follows only for the
// groups it names.
func writeGroupOrder(b *bytes.Buffer, groups []string) {
	if len(groups) < 2 {
		return
	}
	b.WriteString("group_eval_order:\n")
	for _, g := range groups {
		fmt.Fprintf(b, "  - %s\n", scalar(g))
	}
}
