package promexport

import (
	"strings"
	"testing"
	"text/template"

	"github.com/gpuwatch/gpuwatch/rules"
)

func TestTemplateTranslation(t *testing.T) {
	funcs := template.FuncMap{"bytes": func(any) string { return "" }, "percent": func(any) string { return "" }, "duration": func(any) string { return "" }}
	for _, c := range []struct {
		text string
		dim  rules.Dimension
		want string // the translation, or the start of why it does not translate
	}{
		{"GPU {{.GPU}} on {{.Host}} ({{.UUID}})", rules.Dimension{}, "GPU {{ $labels.gpu }} on {{ $labels.host }} ({{ $labels.uuid }})"},
		{"{{.Value | bytes}}", rules.Dimension{Base: rules.Bytes}, `{{ $value | humanize1024 | printf "%sB" }}`},
		{"{{bytes .Value}}", rules.Dimension{Base: rules.Bytes}, `{{ $value | humanize1024 | printf "%sB" }}`},
		{"{{.Value | percent}}", rules.Dimension{Base: rules.Percent}, `{{ $value | printf "%.3g%%" }}`},
		{"{{.Value | duration}}", rules.Dimension{Base: rules.Seconds}, `{{ $value | humanizeDuration }}`},
		{"{{.ValueText}}", rules.Dimension{Base: rules.Bytes, PerSecond: true}, `{{ ($value | humanize1024 | printf "%sB/s") }}`},
		{"{{.ValueText}}", rules.Dimension{Base: rules.Celsius}, `{{ ($value | printf "%.3g C") }}`},
		{`{{if .Labels.team}}{{.Labels.team}}{{else}}nobody{{end}}`, rules.Dimension{}, "{{ if $labels.team }}{{ $labels.team }}{{ else }}nobody{{ end }}"},
		{`{{index .Labels "team"}} {{.Alert}} {{.Severity}}`, rules.Dimension{}, `{{ index $labels "team" }} {{ $labels.alertname }} {{ $labels.severity }}`},
		{`{{printf "%.1f" .Value}}{{/* a comment */}}`, rules.Dimension{}, `{{ printf "%.1f" $value }}`},
		{"{{.Name}}", rules.Dimension{}, "!.Name does not translate"},
		{"{{if .TimeToFull}}x{{end}}", rules.Dimension{}, "!.TimeToFull does not translate"},
		{"{{range .Processes}}{{.User}}{{end}}", rules.Dimension{}, "!{{range}} does not translate"},
		{"{{.StartsAt}}", rules.Dimension{}, "!.StartsAt does not translate"},
		{"{{with .Labels}}{{.team}}{{end}}", rules.Dimension{}, "!{{with .Labels}}"},
		{"{{$x := .GPU}}{{$x}}", rules.Dimension{}, "!template variables do not translate"},
		{"idle for {{.TrueFor | duration}}", rules.Dimension{}, `idle for {{ "45m" }}`}, // the rule's for
		{"idle for {{.TrueFor}} s", rules.Dimension{}, "idle for {{ 2700 }} s"},
	} {
		tmpl := template.Must(template.New("t").Funcs(funcs).Parse(c.text))
		got, why, trueFor := tmplTranslator{dim: c.dim, forSeconds: 2700}.translate(tmpl)
		if trueFor != strings.Contains(c.text, ".TrueFor") {
			t.Errorf("%s: reads .TrueFor %v", c.text, trueFor)
		}
		if want, ok := strings.CutPrefix(c.want, "!"); ok {
			if !strings.HasPrefix(why, want) {
				t.Errorf("%s: got %q (why %q), want it refused: %q", c.text, got, why, want)
			}
			continue
		}
		if why != "" || got != c.want {
			t.Errorf("%s: got %q (why %q), want %q", c.text, got, why, c.want)
		}
	}
}
