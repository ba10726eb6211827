package prometheus

import (
	"fmt"
	"strconv"
	"strings"
)

// Selector is the label matchers a hub adds to every query, written as in
// PromQL: {cluster="a", job=~"gpu-.*"}. The zero Selector matches every
// series.
type Selector struct {
	matchers []matcher
}

type matcher struct {
	name, op, value string
}

// ParseSelector parses a selector in PromQL's syntax: braces around
// comma-separated matchers NAME OP "VALUE", with OP one of = != =~ !~ and
// the value in double, single or back quotes. An empty string is the empty
// selector. The metric name is gpuwatch's to choose: a __name__ matcher is
// an error.
func ParseSelector(text string) (Selector, error) {
	p := &selectorParser{text: text}
	p.space()
	if p.done() {
		return Selector{}, nil
	}
	if !p.take("{") {
		return Selector{}, p.errorf("a selector starts with {, as in {cluster=\"a\"}")
	}
	var sel Selector
	for {
		p.space()
		if p.take("}") {
			break
		}
		if len(sel.matchers) > 0 {
			if !p.take(",") {
				return Selector{}, p.errorf("expected , or } after a matcher")
			}
			p.space()
			if p.take("}") { // a trailing comma, as PromQL allows
				break
			}
		}
		m, err := p.matcher()
		if err != nil {
			return Selector{}, err
		}
		sel.matchers = append(sel.matchers, m)
	}
	p.space()
	if !p.done() {
		return Selector{}, p.errorf("unexpected %q after the closing }", p.rest())
	}
	return sel, nil
}

type selectorParser struct {
	text string
	pos  int
}

func (p *selectorParser) done() bool   { return p.pos >= len(p.text) }
func (p *selectorParser) rest() string { return clip(p.text[p.pos:], 40) }

func (p *selectorParser) errorf(format string, args ...any) error {
	return fmt.Errorf("selector at column %d: %s", p.pos+1, fmt.Sprintf(format, args...))
}

func (p *selectorParser) space() {
	for !p.done() && strings.ContainsRune(" \t\r\n", rune(p.text[p.pos])) {
		p.pos++
	}
}

func (p *selectorParser) take(s string) bool {
	if strings.HasPrefix(p.text[p.pos:], s) {
		p.pos += len(s)
		return true
	}
	return false
}

func (p *selectorParser) matcher() (matcher, error) {
	start := p.pos
	for !p.done() && isLabelChar(p.text[p.pos], p.pos == start) {
		p.pos++
	}
	name := p.text[start:p.pos]
	switch {
	case name == "":
		return matcher{}, p.errorf("expected a label name, got %q", p.rest())
	case name == "__name__":
		p.pos = start
		return matcher{}, p.errorf("__name__ is gpuwatch's to choose (it asks for the GPU series of the schema): select by other labels, such as {job=\"gpu\"}")
	}
	p.space()
	var op string
	for _, o := range []string{"=~", "!~", "!=", "="} {
		if p.take(o) {
			op = o
			break
		}
	}
	if op == "" {
		return matcher{}, p.errorf("expected =, !=, =~ or !~ after %s", name)
	}
	p.space()
	value, err := p.quoted()
	if err != nil {
		return matcher{}, err
	}
	return matcher{name: name, op: op, value: value}, nil
}

func isLabelChar(c byte, first bool) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
}

// quoted reads a PromQL string: "…" and '…' with Go's escapes, `…` raw.
func (p *selectorParser) quoted() (string, error) {
	start := p.pos
	if p.done() || !strings.ContainsRune("\"'`", rune(p.text[p.pos])) {
		return "", p.errorf("expected a quoted value, got %q", p.rest())
	}
	quote := p.text[p.pos]
	p.pos++
	for !p.done() && p.text[p.pos] != quote {
		if p.text[p.pos] == '\\' && quote != '`' {
			p.pos++
		}
		p.pos++
	}
	if p.done() {
		p.pos = start
		return "", p.errorf("the value %s has no closing %c", clip(p.text[start:], 40), quote)
	}
	p.pos++
	raw := p.text[start:p.pos]
	if quote == '\'' {
		// Go quotes runes with ', strings with ": swap the quotes.
		inner := raw[1 : len(raw)-1]
		inner = strings.ReplaceAll(strings.ReplaceAll(inner, `\'`, `'`), `"`, `\"`)
		raw = `"` + inner + `"`
	}
	v, err := strconv.Unquote(raw)
	if err != nil {
		p.pos = start
		return "", p.errorf("the value %s has an invalid escape", clip(p.text[start:], 40))
	}
	return v, nil
}

// clip shortens text to n runes for an error message.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// String writes the selector back in PromQL's syntax; "" for the empty one.
func (s Selector) String() string {
	if len(s.matchers) == 0 {
		return ""
	}
	return "{" + s.inner() + "}"
}

func (s Selector) inner() string {
	parts := make([]string, len(s.matchers))
	for i, m := range s.matchers {
		parts[i] = m.name + m.op + strconv.Quote(m.value)
	}
	return strings.Join(parts, ",")
}

// Query is the PromQL selector of the series named names that the
// selector matches: {__name__=~"a|b",cluster="a"}.
func (s Selector) Query(names []string) string {
	q := `{__name__=~"` + strings.Join(names, "|") + `"`
	if len(s.matchers) > 0 {
		q += "," + s.inner()
	}
	return q + "}"
}
