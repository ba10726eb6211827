package promexport

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/rules"
)

// annotations translates the rule's summary and description from
// gpuwatch's templates (.GPU, .Value | bytes, …) to Prometheus's ($labels,
// $value | humanize1024, …). A summary that does not translate is replaced
// by a plain one, a description left out; either is noted.
func (r *ruleExport) annotations(dim rules.Dimension, first rules.CondNode) map[string]string {
	t := tmplTranslator{dim: dim, valueIsCount: r.s.name == SchemaGPUWatch && first.Value.Metric == rules.MetricXID && first.Kind == rules.CondCompare,
		forSeconds: r.rule.For.Seconds()}
	if first.Value.Metric.IsEvent() && first.Value.Fn == "" && !t.valueIsCount {
		t.xidCodes = codesOf(first)
	}
	out := map[string]string{}
	plain := fmt.Sprintf("%s on GPU {{ $labels.gpu }} of {{ $labels.host }}: {{ %s }}", r.rule.Name, t.valueText("$value"))
	if r.rule.Summary == nil {
		out["summary"] = plain
	} else if s, why, trueFor := t.translate(r.rule.Summary); why == "" {
		out["summary"] = s
		if trueFor {
			r.notes = append(r.notes, Note{Rule: r.rule.Name, Kind: Caveat, Part: "summary",
				Why: ".TrueFor is the rule's for: Prometheus's templates do not know how long the condition has held, which is that when the alert fires and more later"})
		}
	} else {
		out["summary"] = plain
		r.notes = append(r.notes, Note{Rule: r.rule.Name, Kind: Caveat, Part: "summary",
			Why: why + "; the exported summary is a plain one: " + plain})
	}
	if r.rule.Description != nil {
		if s, why, _ := t.translate(r.rule.Description); why == "" {
			out["description"] = s
		} else {
			r.notes = append(r.notes, Note{Rule: r.rule.Name, Kind: Caveat, Part: "description", Why: why + "; the description is left out"})
		}
	}
	return out
}

// tmplTranslator writes a gpuwatch template as a Prometheus one.
type tmplTranslator struct {
	dim rules.Dimension
	// valueIsCount: the alert's value is a count of XID events, not the
	// value gpuwatch reports.
	valueIsCount bool
	// xidCodes, when set, are the XID codes the alert's value may be:
	// .ValueText says what each means, as gpuwatch's does.
	xidCodes []float64
	// forSeconds is the rule's for, which .TrueFor is when the alert
	// fires; trueFor says a template reads it.
	forSeconds float64
	trueFor    bool
	why        string // the first part that does not translate
}

// translate returns the template in Prometheus's language, or why it
// cannot be, and whether it reads .TrueFor.
func (t tmplTranslator) translate(tmpl *template.Template) (text, why string, trueFor bool) {
	if len(tmpl.Templates()) > 1 {
		return "", "templates that define others do not translate", false
	}
	text = t.list(tmpl.Tree.Root)
	return text, t.why, t.trueFor
}

func (t *tmplTranslator) fail(format string, args ...any) string {
	if t.why == "" {
		t.why = fmt.Sprintf(format, args...)
	}
	return ""
}

func (t *tmplTranslator) list(l *parse.ListNode) string {
	if l == nil {
		return ""
	}
	var b strings.Builder
	for _, n := range l.Nodes {
		b.WriteString(t.node(n))
	}
	return b.String()
}

func (t *tmplTranslator) node(n parse.Node) string {
	switch n := n.(type) {
	case *parse.TextNode:
		return string(n.Text)
	case *parse.CommentNode:
		return ""
	case *parse.ActionNode:
		if t.xidCodes != nil && isField(n.Pipe, "ValueText") {
			return t.xidText()
		}
		return "{{ " + t.pipe(n.Pipe) + " }}"
	case *parse.IfNode:
		s := "{{ if " + t.pipe(n.Pipe) + " }}" + t.list(n.List)
		if n.ElseList != nil {
			s += "{{ else }}" + t.list(n.ElseList)
		}
		return s + "{{ end }}"
	case *parse.RangeNode:
		return t.fail("{{range}} does not translate: Prometheus's alerts have no processes, and their labels are more than the rule's")
	}
	return t.fail("%s does not translate", n)
}

// isField reports whether the pipeline is the field .name alone.
func isField(p *parse.PipeNode, name string) bool {
	if len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return false
	}
	f, ok := p.Cmds[0].Args[0].(*parse.FieldNode)
	return ok && len(f.Ident) == 1 && f.Ident[0] == name
}

// xidText writes .ValueText of an alert whose value is an XID code: what
// the catalogue says of each code it may be, else the code.
func (t *tmplTranslator) xidText() string {
	var b strings.Builder
	for i, c := range t.xidCodes {
		if i > 0 {
			b.WriteString("{{ else if eq $value " + number(c).s + ".0 }}")
		} else {
			b.WriteString("{{ if eq $value " + number(c).s + ".0 }}")
		}
		x, _ := gpu.LookupXID(uint64(c))
		b.WriteString(x.Text())
	}
	b.WriteString(`{{ else }}XID {{ $value | printf "%.0f" }}{{ end }}`)
	return b.String()
}

// codesOf are the XID codes an alert on the XID test n may report: those
// of its set, or the catalogue's that pass it.
func codesOf(n rules.CondNode) []float64 {
	if n.Value.Metric == rules.MetricXID && n.Kind == rules.CondIn {
		return n.Set
	}
	if n.Value.Metric != rules.MetricXID {
		if codes, ok := xidCodes(n); ok {
			return codes.Set
		}
	}
	var out []float64
	for _, x := range gpu.XIDCatalogue() {
		if n.Value.Metric != rules.MetricXID || holds(float64(x.Code), n.Op, n.Quantity) {
			out = append(out, float64(x.Code))
		}
	}
	return out
}

// helpers are gpuwatch's template functions as Prometheus pipeline stages.
var helpers = map[string]string{
	"bytes":    `humanize1024 | printf "%sB"`,
	"percent":  `printf "%.3g%%"`,
	"duration": `humanizeDuration`,
	"xid":      `printf "XID %.0f"`,
}

// builtins are text/template's functions, which Prometheus's templates
// have too.
var builtins = []string{"and", "or", "not", "len", "index", "slice", "print", "printf", "println", "eq", "ne", "lt", "le", "gt", "ge", "html", "js", "urlquery"}

func (t *tmplTranslator) pipe(p *parse.PipeNode) string {
	if len(p.Decl) > 0 {
		return t.fail("template variables do not translate")
	}
	if t.isTrueForDuration(p) {
		// The rule's for, written as gpuwatch writes it ("45m"), not as
		// humanizeDuration would ("45m 0s").
		t.trueFor = true
		return strconv.Quote(rules.Dimension{Base: rules.Seconds}.Format(t.forSeconds))
	}
	stages := make([]string, 0, len(p.Cmds))
	for _, c := range p.Cmds {
		stages = append(stages, t.command(c))
	}
	return strings.Join(stages, " | ")
}

// isTrueForDuration reports whether p is .TrueFor | duration.
func (t *tmplTranslator) isTrueForDuration(p *parse.PipeNode) bool {
	if len(p.Cmds) != 2 || len(p.Cmds[0].Args) != 1 || len(p.Cmds[1].Args) != 1 {
		return false
	}
	f, ok1 := p.Cmds[0].Args[0].(*parse.FieldNode)
	id, ok2 := p.Cmds[1].Args[0].(*parse.IdentifierNode)
	return ok1 && ok2 && slices.Equal(f.Ident, []string{"TrueFor"}) && id.Ident == "duration"
}

func (t *tmplTranslator) command(c *parse.CommandNode) string {
	if id, ok := c.Args[0].(*parse.IdentifierNode); ok {
		args := make([]string, 0, len(c.Args)-1)
		for _, a := range c.Args[1:] {
			args = append(args, t.arg(a))
		}
		if h, ok := helpers[id.Ident]; ok {
			if len(args) == 0 {
				return h // piped: x | bytes
			}
			return strings.Join(args, " ") + " | " + h
		}
		if !slices.Contains(builtins, id.Ident) {
			return t.fail("the function %s does not translate", id.Ident)
		}
		return strings.TrimSpace(id.Ident + " " + strings.Join(args, " "))
	}
	if len(c.Args) > 1 {
		return t.fail("%s does not translate", c)
	}
	return t.arg(c.Args[0])
}

func (t *tmplTranslator) arg(n parse.Node) string {
	switch n := n.(type) {
	case *parse.FieldNode:
		return t.field(n.Ident)
	case *parse.PipeNode:
		return "(" + t.pipe(n) + ")"
	case *parse.StringNode:
		return n.Quoted
	case *parse.NumberNode:
		return n.Text
	case *parse.BoolNode:
		return n.String()
	case *parse.NilNode:
		return "nil"
	}
	return t.fail("%s does not translate", n)
}

// field maps a field of gpuwatch's template data to Prometheus's.
func (t *tmplTranslator) field(path []string) string {
	switch path[0] {
	case "GPU":
		return "$labels.gpu"
	case "Label":
		// gpu.Label: "GPU 0", "GPU 0 · MIG 3 (1g.10gb)" where the alert
		// carries its MIG instance's labels (dcgm-exporter's).
		return `(printf "GPU %s%s" $labels.gpu (or (and $labels.mig_profile (printf " · MIG %s (%s)" $labels.gpu_instance $labels.mig_profile)) ""))`
	case "UUID":
		return "$labels.uuid"
	case "Host":
		return "$labels.host"
	case "Alert":
		return "$labels.alertname"
	case "Severity":
		return "$labels.severity"
	case "Labels":
		if len(path) == 1 {
			return "$labels"
		}
		return "$labels." + strings.Join(path[1:], ".")
	case "Value", "ValueText":
		if t.valueIsCount {
			return t.fail(".%s does not translate: the alert's value is the number of XID events, not their code", path[0])
		}
		if path[0] == "Value" {
			return "$value"
		}
		return "(" + t.valueText("$value") + ")"
	case "Name":
		return t.fail(".Name does not translate: the exported alerts are labelled host, gpu and uuid, not the GPU's model")
	case "TimeToFull":
		return t.fail(".TimeToFull does not translate: it is gpuwatch's own reckoning of the memory's steady growth, which the alert's value is not")
	case "Processes":
		return t.fail(".Processes does not translate: Prometheus's alerts do not know the processes on a GPU")
	case "StartsAt":
		return t.fail(".StartsAt does not translate: Prometheus's templates do not know when an alert fired")
	case "TrueFor":
		t.trueFor = true
		return strconv.FormatFloat(t.forSeconds, 'f', -1, 64)
	}
	return t.fail(".%s does not translate", strings.Join(path, "."))
}

// valueText is the pipeline that writes the value x with its unit, as
// .ValueText does (rates per second rather than per minute).
func (t *tmplTranslator) valueText(x string) string {
	if t.valueIsCount {
		return x + ` | printf "%.0f XID events"`
	}
	per := ""
	if t.dim.PerSecond {
		per = "/s"
	}
	switch t.dim.Base {
	case rules.Bytes:
		return x + ` | humanize1024 | printf "%sB` + per + `"`
	case rules.Percent:
		return x + ` | printf "%.3g%%` + per + `"`
	case rules.Celsius:
		return x + ` | printf "%.3g C` + per + `"`
	case rules.Watts:
		return x + ` | printf "%.3g W` + per + `"`
	case rules.Seconds:
		if per == "" {
			return x + " | humanizeDuration"
		}
	}
	return x + ` | printf "%.3g` + per + `"`
}
