package rules

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
)

// Severity says how urgent an alert is.
type Severity string

// The severities a rule may have.
const (
	SeverityInfo     Severity = "info"
	SeverityWarning  Severity = "warning"
	SeverityCritical Severity = "critical"
)

// Rule is one alerting rule, loaded and checked.
type Rule struct {
	Name      string
	When      *Cond
	ClearWhen *Cond // nil: the alert resolves when When stops holding
	Timing
	Severity       Severity
	Labels         map[string]string
	Summary        *template.Template // nil: a default summary
	Description    *template.Template // nil: none
	GPUs           []GPUSelector      // empty: every GPU
	Receivers      []string           // empty: the route decides
	RepeatInterval time.Duration      // 0: the route's default
	// File and Pos say where the rule was defined.
	File string
	Pos  strictyaml.Pos
	// Warnings are what in the rule is valid but likely a mistake
	// (memory.used_percent > 0.95, a fraction where a percent is meant),
	// at their place in the file; gpuwatch check prints them.
	Warnings []*strictyaml.Error
}

// ruleYAML is the rule as written in YAML; fields the rules package parses
// itself stay yaml.Nodes so their errors point into the expression.
type ruleYAML struct {
	Pos            strictyaml.Pos
	Alert          yaml.Node         `yaml:"alert,required"`
	When           yaml.Node         `yaml:"when,required"`
	For            time.Duration     `yaml:"for"`
	KeepFiringFor  time.Duration     `yaml:"keep_firing_for"`
	ClearWhen      yaml.Node         `yaml:"clear_when"`
	Severity       yaml.Node         `yaml:"severity"`
	Labels         map[string]string `yaml:"labels"`
	Summary        yaml.Node         `yaml:"summary"`
	Description    yaml.Node         `yaml:"description"`
	GPUs           []yaml.Node       `yaml:"gpus"`
	Receivers      []string          `yaml:"receivers"`
	RepeatInterval time.Duration     `yaml:"repeat_interval"`
}

type fileYAML struct {
	Rules yaml.Node `yaml:"rules,required"`
}

// ParseFile parses a rule file: a mapping with a `rules:` list. The error,
// if any, is a strictyaml.Errors listing every problem with its position.
func ParseFile(file string, data []byte) ([]*Rule, error) {
	root, err := strictyaml.Parse(file, data)
	if err != nil {
		return nil, err
	}
	var f fileYAML
	errs := strictyaml.Decode(file, root, &f)
	if f.Rules.Kind == 0 {
		errs.Sort()
		return nil, errs.Err()
	}
	// The rules are checked even when the file has other problems, so that
	// every problem is reported at once.
	rules, rerrs := ParseList(file, &f.Rules)
	errs = append(errs, rerrs...)
	errs = append(errs, CheckUnique(rules)...)
	errs.Sort()
	return rules, errs.Err()
}

// LoadFile reads and parses a rule file.
func LoadFile(path string) ([]*Rule, error) {
	data, err := strictyaml.ReadData(path)
	if err != nil {
		return nil, fmt.Errorf("read rule file: %w", err)
	}
	return ParseFile(path, data)
}

// ParseList parses a YAML list of rules, as found under `rules:` in a rule
// file or in the config file. It returns the rules that are valid and every
// problem found.
func ParseList(file string, list *yaml.Node) ([]*Rule, strictyaml.Errors) {
	list = strictyaml.Resolve(list)
	if list.Kind == yaml.ScalarNode && list.Tag == "!!null" {
		return nil, nil
	}
	if list.Kind != yaml.SequenceNode {
		return nil, strictyaml.Errors{strictyaml.Errorf(file, list, "rules must be a list of rules, each starting with `- alert: Name`")}
	}
	var rules []*Rule
	var errs strictyaml.Errors
	for i, item := range list.Content {
		r, rerrs := parseRule(file, item, fmt.Sprintf("rules[%d]", i))
		errs = append(errs, rerrs...)
		if len(rerrs) == 0 {
			rules = append(rules, r)
		}
	}
	return rules, errs
}

// CheckUnique reports rules that share a name: an alert's identity is its
// rule's name, so two rules of one name would overwrite each other's state.
func CheckUnique(rules []*Rule) strictyaml.Errors {
	var errs strictyaml.Errors
	first := map[string]*Rule{}
	for _, r := range rules {
		if prev, dup := first[r.Name]; dup {
			errs = append(errs, &strictyaml.Error{File: r.File, Pos: r.Pos,
				Msg: fmt.Sprintf("alert %q is defined twice (first at %s:%d:%d); give each rule its own name", r.Name, prev.File, prev.Pos.Line, prev.Pos.Col)})
			continue
		}
		first[r.Name] = r
	}
	return errs
}

// Bounds on what a rule names and says: an alert's name and labels go
// into every notification, the store's keys and Prometheus's series, and
// its summary into every message; far longer ones are mistakes, and
// would make every write of the alert's state fail.
const (
	MaxAlertNameBytes  = 128
	MaxLabels          = 32
	MaxLabelNameBytes  = 128
	MaxLabelValueBytes = 1024
	MaxTemplateBytes   = 4096 // a summary or description, as written
	// MinRepeatInterval is the shortest repeat_interval, of a rule or a
	// route: a shorter one would announce a firing alert again at almost
	// every sample.
	MinRepeatInterval = time.Minute
)

var (
	alertNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`)
	labelNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// reservedLabels are set by gpuwatch itself on every alert.
var reservedLabels = []string{"alert", "alertname", "severity", "host", "gpu", "uuid"}

type ruleParser struct {
	file     string
	errs     strictyaml.Errors
	warnings []*strictyaml.Error
}

func (p *ruleParser) fail(n *yaml.Node, format string, args ...any) {
	p.errs = append(p.errs, strictyaml.Errorf(p.file, n, format, args...))
}

func parseRule(file string, node *yaml.Node, what string) (*Rule, strictyaml.Errors) {
	var y ruleYAML
	p := &ruleParser{file: file}
	p.errs = strictyaml.DecodeNamed(file, node, &y, what)
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	r := &Rule{
		Name:           y.Alert.Value,
		Timing:         Timing{For: y.For, KeepFiringFor: y.KeepFiringFor},
		Labels:         y.Labels,
		Receivers:      y.Receivers,
		RepeatInterval: y.RepeatInterval,
		File:           file,
		Pos:            y.Pos,
	}
	if y.Alert.Kind != yaml.ScalarNode {
		p.fail(&y.Alert, "alert must be the rule's name (like GPUMemoryNearFull), not a %s", nodeKind(&y.Alert))
	} else if len(r.Name) > MaxAlertNameBytes {
		p.fail(&y.Alert, "alert name is %d bytes, the most is %d: name the rule in a few words (like GPUMemoryNearFull)", len(r.Name), MaxAlertNameBytes)
	} else if !alertNameRE.MatchString(r.Name) {
		p.fail(&y.Alert, "alert name %q must start with a letter and hold only letters, digits, '_', '.' or '-' (like GPUMemoryNearFull)", r.Name)
	}
	r.When = p.cond(&y.When, "when")
	if !absent(&y.ClearWhen) {
		r.ClearWhen = p.cond(&y.ClearWhen, "clear_when")
		r.HasClear = true
	}
	if y.RepeatInterval < 0 || y.RepeatInterval > 0 && y.RepeatInterval < MinRepeatInterval {
		p.fail(cmp.Or(mappingValue(node, "repeat_interval"), node), "repeat_interval %v is shorter than %v: the alert would be announced again at almost every sample; "+
			"give %v or more, or leave it out for the route's", y.RepeatInterval, MinRepeatInterval, MinRepeatInterval)
	}
	r.Severity = p.severity(&y.Severity)
	p.labels(node, r.Labels)
	r.Summary = p.template(&y.Summary, "summary")
	r.Description = p.template(&y.Description, "description")
	for i := range y.GPUs {
		r.GPUs = append(r.GPUs, p.gpuSelector(&y.GPUs[i]))
	}
	r.Warnings = p.warnings
	return r, p.errs
}

func (p *ruleParser) cond(n *yaml.Node, field string) *Cond {
	if n.Kind != yaml.ScalarNode || strings.TrimSpace(n.Value) == "" {
		p.fail(n, "%s must be a condition such as `memory.used_percent > 95`", field)
		return nil
	}
	c, err := ParseCond(n.Value)
	if err == nil {
		for _, w := range c.Warnings() {
			p.warnings = append(p.warnings, &strictyaml.Error{File: p.file, Pos: condPos(n, w.Col), Msg: fmt.Sprintf("%s: %s", field, w.Msg)})
		}
		return c
	}
	pos := strictyaml.PosOf(n)
	var ce *CondError
	msg := err.Error()
	if errors.As(err, &ce) {
		msg = ce.Msg
		pos = condPos(n, ce.Col)
	}
	p.errs = append(p.errs, &strictyaml.Error{File: p.file, Pos: pos, Msg: fmt.Sprintf("%s: %s", field, msg)})
	return nil
}

// condPos maps a column inside an expression to the file, for expressions
// written on one line; multi-line ones point at the value's start.
func condPos(n *yaml.Node, col int) strictyaml.Pos {
	pos := strictyaml.PosOf(n)
	switch n.Style {
	case 0, yaml.FlowStyle:
		pos.Col += col - 1
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		if !strings.ContainsAny(n.Value, "\n'\"\\") {
			pos.Col += col
		}
	}
	return pos
}

func (p *ruleParser) severity(n *yaml.Node) Severity {
	if absent(n) {
		return SeverityWarning
	}
	if n.Kind != yaml.ScalarNode {
		p.fail(n, "severity must be one of info, warning, critical, not a %s", nodeKind(n))
		return SeverityWarning
	}
	valid := []string{string(SeverityInfo), string(SeverityWarning), string(SeverityCritical)}
	if s := Severity(n.Value); containsString(valid, n.Value) {
		return s
	}
	p.fail(n, "severity %q is not one of info, warning, critical%s", n.Value, strictyaml.Suggest(n.Value, valid))
	return SeverityWarning
}

func (p *ruleParser) labels(rule *yaml.Node, labels map[string]string) {
	if len(labels) > MaxLabels {
		p.fail(labelKeyNode(rule, ""), "a rule has %d labels, the most is %d", len(labels), MaxLabels)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(labels)) {
		at := labelKeyNode(rule, name)
		switch {
		case len(name) > MaxLabelNameBytes:
			p.fail(at, "label name is %d bytes, the most is %d", len(name), MaxLabelNameBytes)
		case len(labels[name]) > MaxLabelValueBytes:
			p.fail(at, "label %s's value is %d bytes, the most is %d", name, len(labels[name]), MaxLabelValueBytes)
		case !labelNameRE.MatchString(name):
			p.fail(at, "label name %q must be letters, digits and '_', not starting with a digit", name)
		case containsString(reservedLabels, name):
			p.fail(at, "label %q is set by gpuwatch itself; use the rule's own fields (alert, severity) or another label name", name)
		}
	}
}

// labelKeyNode finds the key node of a label for its position.
func labelKeyNode(rule *yaml.Node, name string) *yaml.Node {
	rule = strictyaml.Resolve(rule)
	for i := 0; i+1 < len(rule.Content); i += 2 {
		if rule.Content[i].Value != "labels" {
			continue
		}
		labels := strictyaml.Resolve(rule.Content[i+1])
		for j := 0; j+1 < len(labels.Content); j += 2 {
			if labels.Content[j].Value == name {
				return labels.Content[j]
			}
		}
		return labels
	}
	return rule
}

// absent reports whether an optional field was left out or left empty
// (`summary:` with nothing after it); either way its default applies.
func absent(n *yaml.Node) bool {
	return n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// nodeKind names a node that is not a scalar, for messages.
func nodeKind(n *yaml.Node) string {
	if n.Kind == yaml.SequenceNode {
		return "list"
	}
	return "mapping"
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (p *ruleParser) template(n *yaml.Node, field string) *template.Template {
	if absent(n) {
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		p.fail(n, "%s must be text (a Go template like \"GPU {{.GPU}} at {{.Value | percent}}\")", field)
		return nil
	}
	if len(n.Value) > MaxTemplateBytes {
		p.fail(n, "%s is %d bytes, the most is %d: say it in a sentence or two", field, len(n.Value), MaxTemplateBytes)
		return nil
	}
	t, err := parseTemplate(field, n.Value)
	if err != nil {
		p.fail(n, "%s: %v", field, err)
		return nil
	}
	return t
}
