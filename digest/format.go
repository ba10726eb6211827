package digest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Format is a form a report is rendered in, as `gpuwatch digest --format`
// and GET /api/v1/digest?format= name it.
type Format string

// The forms of a report.
const (
	FormatText     Format = "text"     // plain text, for the console
	FormatMarkdown Format = "markdown" // for chat webhooks
	FormatBlocks   Format = "blocks"   // Slack Block Kit, a JSON array of blocks
	FormatJSON     Format = "json"     // the report's data
	// FormatPNG is the picture of the day of each host (Pictures), which
	// Render does not draw: it is drawn from the hours, not the report.
	FormatPNG Format = "png"
)

// Formats lists every form, in the order help texts name them.
func Formats() []Format {
	return []Format{FormatText, FormatMarkdown, FormatBlocks, FormatJSON, FormatPNG}
}

// ParseFormat reads a form's name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats() {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, 0, len(Formats()))
	for _, f := range Formats() {
		names = append(names, string(f))
	}
	return "", fmt.Errorf("format %q is not one of %s", s, strings.Join(names, ", "))
}

// ContentType is the media type of the form, for an HTTP answer.
func (f Format) ContentType() string {
	switch f {
	case FormatBlocks, FormatJSON:
		return "application/json"
	case FormatPNG:
		return "image/png"
	case FormatMarkdown:
		return "text/markdown; charset=utf-8"
	}
	return "text/plain; charset=utf-8"
}

// Render renders the report in form f; JSON forms end with a newline.
// The pictures of FormatPNG are not the report's: Pictures draws them.
func (r *Report) Render(f Format) ([]byte, error) {
	switch f {
	case FormatPNG:
		return nil, fmt.Errorf("digest %q: a report does not draw its picture; the hours do (Pictures)", r.Name)
	case FormatMarkdown:
		return []byte(r.Markdown()), nil
	case FormatBlocks:
		b, err := r.Blocks()
		return append(b, '\n'), err
	case FormatJSON:
		b, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("encode digest %q as JSON: %w", r.Name, err)
		}
		return append(b, '\n'), nil
	}
	return []byte(r.Text()), nil
}
