package rules

import (
	"io"
	"math"
	"strings"
	"text/template"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// TemplateData is what a rule's summary and description templates see.
type TemplateData struct {
	Alert     string
	GPU       int    // index
	UUID      string // GPU UUID
	Name      string // GPU model name
	Host      string
	Value     float64 // the condition's value, in its base unit (bytes, percent, C, W, seconds)
	ValueText string  // Value with its unit, e.g. "19.5 GiB"
	Severity  string
	Labels    map[string]string
	Processes []gpu.Process
	StartsAt  time.Time
}

// templateFuncs are the helpers a template may call:
// bytes (19.5 GiB), percent (97.3%) and duration (23m10s).
func templateFuncs() template.FuncMap {
	return template.FuncMap{
		"bytes":    func(v any) string { return Dimension{Base: Bytes}.Format(toFloat(v)) },
		"percent":  func(v any) string { return Dimension{Base: Percent}.Format(toFloat(v)) },
		"duration": formatDuration,
	}
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
	sample := TemplateData{Alert: "Sample", Name: "NVIDIA H100", Host: "host", Value: 1,
		Labels: map[string]string{}, Processes: []gpu.Process{{PID: 1, User: "alice", Command: "python"}}}
	if err := t.Execute(io.Discard, sample); err != nil {
		return nil, cleanTemplateError(err)
	}
	return t, nil
}

// cleanTemplateError drops text/template's "template: NAME:" prefix, which
// repeats the field name the caller already gives.
func cleanTemplateError(err error) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "template: "); ok {
		if _, tail, ok := strings.Cut(rest, ": "); ok {
			msg = tail
		}
	}
	return templateError(msg)
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
