package notifier

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MatchType is how a Matcher compares a label's value.
type MatchType int

// The match types, written =, !=, =~ and !~.
const (
	MatchEqual MatchType = iota
	MatchNotEqual
	MatchRegexp
	MatchNotRegexp
)

// String returns the operator as written: "=", "!=", "=~" or "!~".
func (t MatchType) String() string {
	switch t {
	case MatchEqual:
		return "="
	case MatchNotEqual:
		return "!="
	case MatchRegexp:
		return "=~"
	case MatchNotRegexp:
		return "!~"
	}
	return fmt.Sprintf("MatchType(%d)", int(t))
}

// Matcher tests one label of an alert, as in `severity="critical"` or
// `host!~"dev-.*"`. Build one with ParseMatcher or NewMatcher so that a
// regular expression is compiled once; regular expressions match the whole
// value, never a part of it.
type Matcher struct {
	Name  string
	Type  MatchType
	Value string

	re *regexp.Regexp // anchored; set for MatchRegexp and MatchNotRegexp
}

// MatcherError is a matcher that does not parse: Msg says what is wrong
// at Column, the 1-based position (in characters) in the matcher's text.
type MatcherError struct {
	Column int
	Msg    string
}

// Error returns "column N: what is wrong".
func (e *MatcherError) Error() string { return fmt.Sprintf("column %d: %s", e.Column, e.Msg) }

// NewMatcher returns a matcher of type t on label name for value, after
// checking the name and compiling a regular expression.
func NewMatcher(t MatchType, name, value string) (*Matcher, error) {
	if !validLabelName(name) {
		return nil, fmt.Errorf("invalid label name %q: use letters, digits and _, not starting with a digit", name)
	}
	m := &Matcher{Name: name, Type: t, Value: value}
	switch t {
	case MatchEqual, MatchNotEqual:
	case MatchRegexp, MatchNotRegexp:
		re, err := compileAnchored(value)
		if err != nil {
			return nil, err
		}
		m.re = re
	default:
		return nil, fmt.Errorf("invalid match type %d: want MatchEqual, MatchNotEqual, MatchRegexp or MatchNotRegexp", int(t))
	}
	return m, nil
}

// compileAnchored compiles value as a regular expression that must match a
// whole label value. The value is checked on its own first so that an
// error quotes what the user wrote, not our anchoring.
func compileAnchored(value string) (*regexp.Regexp, error) {
	if _, err := syntax.Parse(value, syntax.Perl); err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			if se.Expr == value {
				return nil, fmt.Errorf("invalid regular expression %q: %s", value, se.Code)
			}
			return nil, fmt.Errorf("invalid regular expression %q: %s in %q", value, se.Code, se.Expr)
		}
		return nil, fmt.Errorf("invalid regular expression %q: %w", value, err)
	}
	re, err := regexp.Compile("^(?:" + value + ")$")
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression %q: %w", value, err)
	}
	return re, nil
}

func validLabelName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i], i == 0) {
			return false
		}
	}
	return true
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || (!first && '0' <= c && c <= '9')
}

// Matches reports whether the labels satisfy the matcher. A missing label
// has the value "", so `gpu=""` matches alerts without a gpu label and
// `gpu!=""` those that have one.
func (m *Matcher) Matches(labels map[string]string) bool {
	v := labels[m.Name]
	switch m.Type {
	case MatchEqual:
		return v == m.Value
	case MatchNotEqual:
		return v != m.Value
	case MatchRegexp:
		return m.regexp().MatchString(v)
	case MatchNotRegexp:
		return !m.regexp().MatchString(v)
	}
	return false
}

// regexp returns the compiled expression. A Matcher written as a struct
// literal has none, so it is compiled here (slowly, every call) rather than
// cached, which would race; one that does not compile matches nothing.
func (m *Matcher) regexp() *regexp.Regexp {
	if m.re != nil {
		return m.re
	}
	re, err := compileAnchored(m.Value)
	if err != nil {
		return regexp.MustCompile(`[^\x00-\x{10FFFF}]`) // matches no string
	}
	return re
}

// String returns the canonical form, name, operator and the value quoted
// with Go escapes: `severity="critical"`. ParseMatcher reads it back.
func (m *Matcher) String() string {
	return m.Name + m.Type.String() + strconv.Quote(m.Value)
}

// MarshalText encodes the matcher as its String form, so that JSON (the
// persisted silences) holds `"severity=\"critical\""`.
func (m Matcher) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText parses the String form.
func (m *Matcher) UnmarshalText(b []byte) error {
	p, err := ParseMatcher(string(b))
	if err != nil {
		return fmt.Errorf("matcher %q: %w", b, err)
	}
	*m = *p
	return nil
}

// ParseMatcher parses one matcher: a label name, an operator (=, !=, =~ or
// !~) and a value, either quoted with Go escapes (`gpu=~"0|1"`) or bare
// (`severity=critical`). Spaces around the parts are allowed. Errors are
// *MatcherError values that say what is wrong and at which column.
func ParseMatcher(s string) (*Matcher, error) {
	p := matcherParser{s: s}
	if err := p.checkText(); err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.i == len(s) {
		return nil, p.errAt(p.i, `empty matcher: write name="value", e.g. severity="critical"`)
	}
	if s[p.i] == '{' {
		return nil, p.errAt(p.i, `unexpected "{": braces enclose a list of matchers; write one matcher here, e.g. severity="critical"`)
	}
	m, err := p.matcher("")
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.i < len(s) {
		if s[p.i] == ',' {
			return nil, p.errAt(p.i, "unexpected \",\" after the matcher: this takes one matcher; put each in its own list item")
		}
		msg := fmt.Sprintf("unexpected %q after the matcher %s", p.rest(), m)
		if isSpace(s[p.i-1]) {
			msg += ": quote a value that has spaces"
		}
		return nil, p.errAt(p.i, msg)
	}
	return m, nil
}

// Matchers is a list of matchers that must all match.
type Matchers []*Matcher

// Matches reports whether every matcher matches the labels; an empty list
// matches everything.
func (ms Matchers) Matches(labels map[string]string) bool {
	for _, m := range ms {
		if !m.Matches(labels) {
			return false
		}
	}
	return true
}

// String returns the canonical form `{a="b", c=~"d"}`, which ParseMatchers
// reads back.
func (ms Matchers) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(m.String())
	}
	b.WriteByte('}')
	return b.String()
}

// ParseMatchers parses a comma-separated list of matchers, with or without
// braces: `{a="b", c=~"d"}` or `a="b",c=~"d"`. Commas inside quoted values
// belong to the value; a trailing comma is allowed. An empty list (""
// or "{}") gives no matchers and no error.
func ParseMatchers(s string) (Matchers, error) {
	p := matcherParser{s: s}
	if err := p.checkText(); err != nil {
		return nil, err
	}
	p.skipSpace()
	braced := p.i < len(s) && s[p.i] == '{'
	if braced {
		p.i++
	}
	var ms Matchers
	for {
		p.skipSpace()
		if p.i == len(s) {
			if braced {
				return nil, p.errAt(p.i, `missing "}" at the end of the matchers`)
			}
			return ms, nil
		}
		if braced && s[p.i] == '}' {
			p.i++
			p.skipSpace()
			if p.i < len(s) {
				return nil, p.errAt(p.i, fmt.Sprintf("unexpected %q after the closing \"}\"", p.rest()))
			}
			return ms, nil
		}
		stops := ","
		if braced {
			stops = ",}"
		}
		m, err := p.matcher(stops)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
		p.skipSpace()
		switch {
		case p.i == len(s):
		case s[p.i] == ',':
			p.i++
		case braced && s[p.i] == '}':
		default:
			return nil, p.errAt(p.i, fmt.Sprintf("expected \",\" between matchers, found %q: quote a value that has spaces", p.rest()))
		}
	}
}

// matcherParser reads matchers from s; i is the byte offset of the next
// character.
type matcherParser struct {
	s string
	i int
}

func (p *matcherParser) checkText() error {
	if !utf8.ValidString(p.s) {
		return &MatcherError{Column: 1, Msg: "matcher text is not valid UTF-8"}
	}
	return nil
}

// errAt returns an error at byte offset off, reported as a column in
// characters.
func (p *matcherParser) errAt(off int, msg string) error {
	return &MatcherError{Column: utf8.RuneCountInString(p.s[:off]) + 1, Msg: msg}
}

// rest returns what follows the current position, shortened for messages.
func (p *matcherParser) rest() string {
	r := p.s[p.i:]
	if utf8.RuneCountInString(r) > 20 {
		r = string([]rune(r)[:20]) + "…"
	}
	return r
}

func (p *matcherParser) skipSpace() {
	for p.i < len(p.s) && isSpace(p.s[p.i]) {
		p.i++
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// matcher reads one matcher at the current (non-space) position. stops
// lists the characters that end a bare value besides spaces ("," and "}"
// in a list).
func (p *matcherParser) matcher(stops string) (*Matcher, error) {
	start := p.i
	for p.i < len(p.s) && isNameByte(p.s[p.i], p.i == start) {
		p.i++
	}
	name := p.s[start:p.i]
	if name == "" {
		return nil, p.errAt(p.i, fmt.Sprintf("expected a label name (letters, digits and _, not starting with a digit), found %q", p.rest()))
	}
	p.skipSpace()
	t, ok := p.operator()
	if !ok {
		return nil, p.errAt(p.i, fmt.Sprintf("expected =, !=, =~ or !~ after the label name %q", name))
	}
	p.skipSpace()
	valueAt := p.i
	var value string
	if p.i < len(p.s) && p.s[p.i] == '"' {
		v, err := p.quoted()
		if err != nil {
			return nil, err
		}
		value = v
	} else {
		v, err := p.bare(name, t, stops)
		if err != nil {
			return nil, err
		}
		value = v
	}
	m, err := NewMatcher(t, name, value)
	if err != nil {
		// The name was checked above, so this is a regular expression.
		return nil, p.errAt(valueAt, err.Error())
	}
	return m, nil
}

func (p *matcherParser) operator() (MatchType, bool) {
	r := p.s[p.i:]
	switch {
	case strings.HasPrefix(r, "=~"):
		p.i += 2
		return MatchRegexp, true
	case strings.HasPrefix(r, "!~"):
		p.i += 2
		return MatchNotRegexp, true
	case strings.HasPrefix(r, "!="):
		p.i += 2
		return MatchNotEqual, true
	case strings.HasPrefix(r, "="):
		p.i++
		return MatchEqual, true
	}
	return 0, false
}

// quoted reads a "…" value with Go escapes, reporting a bad escape at its
// own column.
func (p *matcherParser) quoted() (string, error) {
	open := p.i
	p.i++
	var b strings.Builder
	for {
		if p.i >= len(p.s) {
			return "", p.errAt(open, `unterminated quoted value: add the closing "`)
		}
		c := p.s[p.i]
		switch c {
		case '"':
			p.i++
			return b.String(), nil
		case '\n':
			return "", p.errAt(p.i, `newline in quoted value: write it as \n`)
		}
		r, multibyte, tail, err := strconv.UnquoteChar(p.s[p.i:], '"')
		if err != nil {
			if c == '\\' && p.i+1 >= len(p.s) {
				return "", p.errAt(open, `unterminated quoted value: add the closing "`)
			}
			return "", p.errAt(p.i, fmt.Sprintf("invalid escape %q in quoted value: use Go escapes such as \\\" \\\\ \\n \\t or \\u00e9", escapePrefix(p.s[p.i:])))
		}
		if r < utf8.RuneSelf || multibyte {
			b.WriteRune(r)
		} else {
			b.WriteByte(byte(r)) // \xNN: a raw byte
		}
		p.i = len(p.s) - len(tail)
	}
}

// escapePrefix returns the start of a bad escape for a message.
func escapePrefix(s string) string {
	n := 0
	for i := range s {
		if n == 2 {
			return s[:i]
		}
		n++
	}
	return s
}

// bare reads an unquoted value: everything up to a space or one of stops.
// Characters that would make the text ambiguous must be quoted.
func (p *matcherParser) bare(name string, t MatchType, stops string) (string, error) {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if isSpace(c) || strings.IndexByte(stops, c) >= 0 {
			break
		}
		if c == '\'' && p.i == start {
			return "", p.errAt(p.i, fmt.Sprintf("single quotes do not quote a value: use double quotes, e.g. %s%s\"value\"", name, t))
		}
		if c == '=' && p.i == start && t == MatchEqual {
			return "", p.errAt(p.i-1, `"==" is not an operator: use = (and quote a value that starts with =)`)
		}
		if strings.IndexByte("\"'`{},=!~\\", c) >= 0 {
			return "", p.errAt(p.i, fmt.Sprintf("unexpected %q in an unquoted value: quote the value, e.g. %s%s%q", string(rune(c)), name, t, p.s[start:p.i]+p.bareTail(stops)))
		}
		p.i++
	}
	if p.i == start {
		return "", p.errAt(p.i, fmt.Sprintf(`expected a value after %s%s: write %s%s"" to match a missing or empty label`, name, t, name, t))
	}
	return p.s[start:p.i], nil
}

// bareTail returns the rest of an unquoted value that has a character
// needing quotes, up to a space, for the suggested fix.
func (p *matcherParser) bareTail(stops string) string {
	end := strings.IndexAny(p.s[p.i:], " \t\r\n"+stops)
	if end < 0 {
		return p.s[p.i:]
	}
	return p.s[p.i : p.i+end]
}
