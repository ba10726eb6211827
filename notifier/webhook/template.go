package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"reflect"
	"strings"
	"text/template"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// templateFuncs are the helpers a body template may call.
func templateFuncs() template.FuncMap {
	return template.FuncMap{
		"json": func(v any) (string, error) {
			b, err := json.Marshal(v)
			return string(b), err
		},
		"bytes":    func(v any) (string, error) { return numberFunc(v, formatBytes) },
		"percent":  func(v any) (string, error) { return numberFunc(v, formatPercent) },
		"duration": templateDuration,
	}
}

// numberFunc applies format to any number a template holds.
func numberFunc(v any, format func(float64) string) (string, error) {
	f, ok := toFloat(v)
	if !ok {
		return "", fmt.Errorf("want a number, got %T", v)
	}
	return format(f), nil
}

// templateDuration shows a time.Duration, or a number of seconds
// (TimeToFull), as "12m".
func templateDuration(v any) (string, error) {
	if d, ok := v.(time.Duration); ok {
		return formatDuration(d.Seconds()), nil
	}
	return numberFunc(v, formatDuration)
}

func toFloat(v any) (float64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), true
	}
	return math.NaN(), false
}

func parseTemplate(text string) (*template.Template, error) {
	t, err := template.New("body").Funcs(templateFuncs()).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("template does not parse: %w", err)
	}
	return t, nil
}

// executeTemplate renders the body; a body meant as JSON must be JSON, or
// the far side would refuse it anyway.
func executeTemplate(t *template.Template, m *notifier.Notification, contentType string) ([]byte, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, m); err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	if isJSON(contentType) && !json.Valid(b.Bytes()) {
		return nil, fmt.Errorf("template made a body that is not JSON (quote strings with the json function, e.g. {{json .Summary}}): %s",
			shorten(b.String(), 120))
	}
	return b.Bytes(), nil
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// checkTemplate parses the template and tries it on a sample notification,
// so a misspelt field shows at check time, not at the first alert.
func checkTemplate(text, contentType string) []string {
	t, err := parseTemplate(text)
	if err != nil {
		return []string{err.Error()}
	}
	for _, status := range []notifier.Status{notifier.StatusFiring, notifier.StatusResolved} {
		if _, err := executeTemplate(t, sampleNotification(status), contentType); err != nil {
			return []string{fmt.Sprintf("%v (on a sample %s notification)", err, status)}
		}
	}
	return nil
}

// sampleNotification is a notification with every field set, to try
// templates on.
func sampleNotification(status notifier.Status) *notifier.Notification {
	at := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	a := notifier.Alert{Key: "host/Rule/GPU-0", Name: "Rule", Status: status, Severity: "warning", Host: "host",
		UUID: "GPU-0", GPUName: "GPU", Labels: map[string]string{"alert": "Rule"}, Summary: `a "quoted" summary`,
		Description: "description", Value: 1, ValueText: "1", Trend: 1, TrendText: "+1/s", TimeToFull: 60,
		StartsAt: at, At: at, Processes: []gpu.Process{{PID: 1, User: "user", Command: "cmd", MemUsed: 1 << 30}}}
	if status == notifier.StatusResolved {
		a.EndsAt = at.Add(time.Minute)
		a.At = a.EndsAt
	}
	return &notifier.Notification{ID: 1, Receiver: "receiver", GroupKey: "receiver/Rule/" + string(status),
		Status: status, Alerts: []notifier.Alert{a}, CreatedAt: a.At}
}
