package rules

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
)

// TemplateData is what a rule's summary and description templates see.
type TemplateData struct {
	Alert string
	GPU   int    // index
	UUID  string // GPU UUID, or the MIG instance's
	Name  string // GPU model name
	// Label names the GPU for people: "GPU 0", or "GPU 0 · MIG 3
	// (1g.10gb)" for a MIG instance (gpu.Label).
	Label string
	// MIG is the MIG instance, nil for a whole GPU: {{with .MIG}}{{.Profile}}{{end}}.
	MIG       *gpu.MIG
	Host      string
	Value     float64 // the condition's value, in its base unit (bytes, percent, C, W, seconds)
	ValueText string  // Value with its unit, e.g. "19.5 GiB"
	Severity  string
	Labels    map[string]string
	Processes []gpu.Process
	StartsAt  time.Time
	// TrueFor is how long the rule's `when` had held, without a break,
	// when Value was read: while the alert is pending, how long it has
	// been; when it fires, its `for` (or a little more).
	TrueFor time.Duration
	// TimeToFull is how long until the GPU's memory is full at its steady
	// growth; 0 when it is not growing or would last more than a day.
	TimeToFull time.Duration
	// Process is, for a rule that runs per process, the process whose
	// series it is ({{.Process.Holder}}, {{.Process.User}}); zero for a
	// rule on the GPU.
	Process gpu.Process
}

// templateData is the data of transition t's templates, but for its value
// and start.
func templateData(t *Transition, r *Rule, d *gpu.Device) TemplateData {
	data := TemplateData{Alert: r.Name, GPU: d.Index, UUID: d.UUID, Name: d.Name, Label: d.Label(), MIG: d.MIG,
		Host: t.Host, ValueText: t.ValueText, Severity: string(r.Severity), Labels: r.Labels, Processes: t.Processes}
	if t.Process != nil {
		data.Process = *t.Process
	}
	return data
}

// templateFuncs are the helpers a template may call:
// bytes (19.5 GiB), percent (97.3%), duration (23m10s) and xid (what an XID
// code means and what to do: "XID 79: the GPU has fallen off the bus —
// reset the GPU or reboot the node").
func templateFuncs() template.FuncMap {
	return template.FuncMap{
		"bytes":    func(v any) string { return Dimension{Base: Bytes}.Format(toFloat(v)) },
		"percent":  func(v any) string { return Dimension{Base: Percent}.Format(toFloat(v)) },
		"duration": formatDuration,
		"xid":      formatXID,
	}
}

// formatXID says what XID code v means and what to do about it.
func formatXID(v any) string {
	f := toFloat(v)
	if !(f >= 0 && f <= math.MaxUint32) || f != math.Trunc(f) {
		return "XID " + formatNumber(f)
	}
	x, _ := gpu.LookupXID(uint64(f))
	return x.Text()
}

func formatDuration(v any) string {
	if d, ok := v.(time.Duration); ok {
		return Dimension{Base: Seconds}.Format(d.Seconds())
	}
	return Dimension{Base: Seconds}.Format(toFloat(v))
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case time.Duration:
		return x.Seconds()
	}
	return math.NaN()
}

// parseTemplate parses a template and runs it once on sample data, so a
// misspelt field fails at load time, not when the alert fires.
func parseTemplate(name, text string) (*template.Template, error) {
	t, err := template.New(name).Funcs(templateFuncs()).Option("missingkey=zero").Parse(text)
	if err != nil {
		return nil, cleanTemplateError(err)
	}
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		if err := checkRanges(tt.Root); err != nil {
			return nil, err
		}
	}
	sample := TemplateData{Alert: "Sample", Name: "NVIDIA H100", Label: "GPU 0", Host: "host", Value: 1,
		Labels: map[string]string{}, Processes: []gpu.Process{{PID: 1, User: "alice", Command: "python"}}}
	if err := t.Execute(io.Discard, &sample); err != nil {
		return nil, cleanTemplateError(err)
	}
	return t, nil
}

// checkRanges refuses a range over something that is not the alert's data,
// such as {{range 1000000000}}: it would run for minutes when the rule is
// loaded and again on every notification.
func checkRanges(n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := checkRanges(c); err != nil {
				return err
			}
		}
	case *parse.RangeNode:
		if !refersToData(n.Pipe) {
			return templateError(fmt.Sprintf("{{range %s}} does not range over the alert's data; range over .Processes or .Labels", n.Pipe))
		}
		return checkBranches(&n.BranchNode)
	case *parse.IfNode:
		return checkBranches(&n.BranchNode)
	case *parse.WithNode:
		return checkBranches(&n.BranchNode)
	}
	return nil
}

func checkBranches(b *parse.BranchNode) error {
	if err := checkRanges(b.List); err != nil {
		return err
	}
	return checkRanges(b.ElseList)
}

// refersToData reports whether a pipeline reads a field or variable.
func refersToData(p *parse.PipeNode) bool {
	for _, c := range p.Cmds {
		for _, a := range c.Args {
			switch a := a.(type) {
			case *parse.FieldNode, *parse.VariableNode, *parse.DotNode, *parse.ChainNode:
				return true
			case *parse.PipeNode:
				if refersToData(a) {
					return true
				}
			}
		}
	}
	return false
}

// cleanTemplateError drops text/template's "template: NAME:" prefix, which
// repeats the field name the caller already gives, and says which fields
// exist when a template names one that does not.
func cleanTemplateError(err error) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "template: "); ok {
		if _, tail, ok := strings.Cut(rest, ": "); ok {
			msg = tail
		}
	}
	if strings.HasPrefix(msg, "function ") && strings.HasSuffix(msg, " not defined") {
		msg += "; the helpers are bytes, percent, duration and xid"
	}
	if _, tail, ok := strings.Cut(msg, "can't evaluate field "); ok {
		if name, typ, ok := strings.Cut(tail, " in type "); ok {
			if fields := templateFields(typ); fields != nil {
				msg = fmt.Sprintf("there is no field .%s%s; the fields are .%s", name,
					strictyaml.Suggest(name, fields), strings.Join(fields, " ."))
			}
		}
	}
	return templateError(msg)
}

// templateFields lists the fields of a type templates see, by the name
// text/template gives the type.
func templateFields(typ string) []string {
	var t reflect.Type
	switch strings.TrimPrefix(typ, "*") {
	case "rules.TemplateData":
		t = reflect.TypeFor[TemplateData]()
	case "gpu.Process":
		t = reflect.TypeFor[gpu.Process]()
	default:
		return nil
	}
	names := make([]string, t.NumField())
	for i := range names {
		names[i] = t.Field(i).Name
	}
	return names
}

type templateError string

func (e templateError) Error() string { return string(e) }

// render executes a template, falling back to the error text so a broken
// template at run time still produces a message.
func render(t *template.Template, data *TemplateData) string {
	if t == nil {
		return ""
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "template error: " + err.Error()
	}
	return b.String()
}
