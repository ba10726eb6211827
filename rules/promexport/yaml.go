package promexport

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// header explains the file to whoever opens it.
const header = `Each alert keeps the meaning gpuwatch gives it, one alert per rule and GPU
(labels host, gpu, uuid):
- a condition holds where its PromQL has a sample and is known to be false
  where its negation has one; neither is unknown, as in gpuwatch;
- windows are (t-W, t] ([W-1ms] in Prometheus 2's closed ranges) and hold a
  value once their samples span half the window; the recording rules
  gpuwatch:METRIC:FN_WINDOW keep them;
- an alert's ALERTS series keeps what gpuwatch's state machine adds: a
  firing alert resolves only when its condition is known to be false, and
  with clear_when only once clear_when holds (hysteresis); a pending alert
  needs its condition at every evaluation, as for's does.
`

// Write writes the rule file, with the notes as comments.
func (f *File) Write(w io.Writer) error {
	var b bytes.Buffer
	comment(&b, "", fmt.Sprintf("Prometheus rules of gpuwatch for %s series, from %s,\nwritten by `gpuwatch rules export`: check them with `promtool check rules`.\nThey need Prometheus 2.42 or later (keep_firing_for).\n\n%s",
		seriesOf(f.opts.Schema), f.opts.Source, header))
	if len(f.Notes) > 0 {
		b.WriteString("#\n# What does not translate exactly:\n")
		for _, n := range f.Notes {
			comment(&b, "", "- "+n.String())
		}
	}
	if len(f.Groups) == 0 {
		b.WriteString("groups: []\n")
	} else {
		b.WriteString("groups:\n")
	}
	const in = "      "
	for i, r := range f.Rules {
		if i == 0 || r.Group != f.Rules[i-1].Group {
			g := f.Groups[slices.IndexFunc(f.Groups, func(g Group) bool { return g.Name == r.Group })]
			fmt.Fprintf(&b, "  - name: %s\n    interval: %s\n", scalar(g.Name), duration(g.Interval))
			if f.opts.Target == TargetVMAlert {
				// VictoriaMetrics answers a query of the last 30 s
				// (-search.latencyOffset) as of 30 s ago unless told
				// not to cache it: an alert would be 30 s late.
				b.WriteString("    params: {nocache: [\"1\"]}\n")
			}
			if slices.ContainsFunc(f.Rules, func(o Rule) bool { return o.Group == g.Name && (o.Record != "" || o.Alert != "") }) {
				b.WriteString("    rules:\n")
			} else {
				b.WriteString("    rules: [] # every rule of it is left out\n")
			}
		}
		comment(&b, in, strings.Join(r.Comment, "\n"))
		switch {
		case r.Record != "":
			fmt.Fprintf(&b, "%s- record: %s\n", in, r.Record)
		case r.Alert != "":
			fmt.Fprintf(&b, "%s- alert: %s\n", in, scalar(r.Alert))
		default:
			continue
		}
		fmt.Fprintf(&b, "%s  expr: |-\n", in)
		for _, line := range strings.Split(r.Expr, "\n") {
			fmt.Fprintf(&b, "%s    %s\n", in, line)
		}
		if r.For > 0 {
			fmt.Fprintf(&b, "%s  for: %s\n", in, duration(r.For))
		}
		if r.KeepFiringFor > 0 {
			fmt.Fprintf(&b, "%s  keep_firing_for: %s\n", in, duration(r.KeepFiringFor))
		}
		mapping(&b, in+"  ", "labels", r.Labels)
		mapping(&b, in+"  ", "annotations", r.Annotations)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// seriesOf names the series a schema reads.
func seriesOf(s Schema) string {
	if s == SchemaDCGM {
		return "dcgm-exporter's DCGM_FI_DEV_*"
	}
	return "gpuwatch agents' gpuwatch_gpu_*"
}

// comment writes text as comment lines, each after indent.
func comment(b *bytes.Buffer, indent, text string) {
	if text == "" {
		return
	}
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		b.WriteString(strings.TrimRight(indent+"# "+line, " ") + "\n")
	}
}

// mapping writes a mapping of strings, keys in order.
func mapping(b *bytes.Buffer, indent, name string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintf(b, "%s%s:\n", indent, name)
	for _, k := range sortedKeys(m) {
		fmt.Fprintf(b, "%s  %s: %s\n", indent, scalar(k), scalar(m[k]))
	}
}

// scalar writes s as a YAML scalar on one line.
func scalar(s string) string {
	n := yaml.Node{Kind: yaml.ScalarNode, Value: s}
	if strings.ContainsAny(s, "\n") {
		n.Style = yaml.DoubleQuotedStyle
	}
	out, err := yaml.Marshal(&n)
	if err != nil {
		return fmt.Sprintf("%q", s)
	}
	return strings.TrimSuffix(string(out), "\n")
}
