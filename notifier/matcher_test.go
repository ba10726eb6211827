package notifier

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestParseMatcher(t *testing.T) {
	tests := []struct {
		in        string
		name      string
		typ       MatchType
		value     string
		canonical string
	}{
		{`severity="critical"`, "severity", MatchEqual, "critical", `severity="critical"`},
		{`alert!="GPUHot"`, "alert", MatchNotEqual, "GPUHot", `alert!="GPUHot"`},
		{`gpu=~"0|1"`, "gpu", MatchRegexp, "0|1", `gpu=~"0|1"`},
		{`host!~"dev-.*"`, "host", MatchNotRegexp, "dev-.*", `host!~"dev-.*"`},
		{`severity=critical`, "severity", MatchEqual, "critical", `severity="critical"`},
		{`gpu=~0|1`, "gpu", MatchRegexp, "0|1", `gpu=~"0|1"`},
		{`host!~dev-.*`, "host", MatchNotRegexp, "dev-.*", `host!~"dev-.*"`},
		{`  a  !=  "b" `, "a", MatchNotEqual, "b", `a!="b"`},
		{`gpu=""`, "gpu", MatchEqual, "", `gpu=""`},
		{`_x9="a,b} c"`, "_x9", MatchEqual, "a,b} c", `_x9="a,b} c"`},
		{`a="x\u00e9\x41\"\\"`, "a", MatchEqual, `xéA"\`, `a="xéA\"\\"`},
		{`a="tab\there"`, "a", MatchEqual, "tab\there", `a="tab\there"`},
		{`a="\xff"`, "a", MatchEqual, "\xff", `a="\xff"`},
		{`uuid=GPU-1a2b`, "uuid", MatchEqual, "GPU-1a2b", `uuid="GPU-1a2b"`},
		{`a=~"\\d+"`, "a", MatchRegexp, `\d+`, `a=~"\\d+"`},
		{`a=é`, "a", MatchEqual, "é", `a="é"`},
	}
	for _, tt := range tests {
		m, err := ParseMatcher(tt.in)
		if err != nil {
			t.Errorf("ParseMatcher(%q): got error %v, want none", tt.in, err)
			continue
		}
		if m.Name != tt.name || m.Type != tt.typ || m.Value != tt.value {
			t.Errorf("ParseMatcher(%q): got %q %v %q, want %q %v %q", tt.in, m.Name, m.Type, m.Value, tt.name, tt.typ, tt.value)
		}
		if got := m.String(); got != tt.canonical {
			t.Errorf("ParseMatcher(%q).String(): got %s, want %s", tt.in, got, tt.canonical)
		}
	}
}

func TestParseMatcherErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{``, `column 1: empty matcher: write name="value", e.g. severity="critical"`},
		{`   `, `column 4: empty matcher: write name="value", e.g. severity="critical"`},
		{`severity`, `column 9: expected =, !=, =~ or !~ after the label name "severity"`},
		{`severity:critical`, `column 9: expected =, !=, =~ or !~ after the label name "severity"`},
		{`severity critical`, `column 10: expected =, !=, =~ or !~ after the label name "severity"`},
		{`a!b`, `column 2: expected =, !=, =~ or !~ after the label name "a"`},
		{`9gpu="a"`, `column 1: expected a label name (letters, digits and _, not starting with a digit), found "9gpu=\"a\""`},
		{`é="x"`, `column 1: expected a label name (letters, digits and _, not starting with a digit), found "é=\"x\""`},
		{`{a="b"}`, `column 1: unexpected "{": braces enclose a list of matchers; write one matcher here, e.g. severity="critical"`},
		{`gpu=`, `column 5: expected a value after gpu=: write gpu="" to match a missing or empty label`},
		{`gpu=~ `, `column 7: expected a value after gpu=~: write gpu=~"" to match a missing or empty label`},
		{`gpu==1`, `column 4: "==" is not an operator: use = (and quote a value that starts with =)`},
		{`gpu="a`, `column 5: unterminated quoted value: add the closing "`},
		{`a="\`, `column 3: unterminated quoted value: add the closing "`},
		{`a="é`, `column 3: unterminated quoted value: add the closing "`},
		{"a=\"x\ny\"", `column 5: newline in quoted value: write it as \n`},
		{`gpu="a\q"`, `column 7: invalid escape "\\q" in quoted value: use Go escapes such as \" \\ \n \t or \u00e9`},
		{`éé="\q"`, `column 1: expected a label name (letters, digits and _, not starting with a digit), found "éé=\"\\q\""`},
		{`a="é\q"`, `column 5: invalid escape "\\q" in quoted value: use Go escapes such as \" \\ \n \t or \u00e9`},
		{`gpu=~"(a"`, `column 6: invalid regular expression "(a": missing closing )`},
		{`gpu=~"*"`, `column 6: invalid regular expression "*": missing argument to repetition operator`},
		{`gpu=~"a{2,1}"`, `column 6: invalid regular expression "a{2,1}": invalid repeat count in "{2,1}"`},
		{`a=~[`, `column 4: invalid regular expression "[": missing closing ]`},
		{`a!~"(?P<x"`, `column 4: invalid regular expression "(?P<x": invalid named capture`},
		{`alert=GPU Hot`, `column 11: unexpected "Hot" after the matcher alert="GPU": quote a value that has spaces`},
		{`a="b"c`, `column 6: unexpected "c" after the matcher a="b"`},
		{`a="b",c="d"`, `column 6: unexpected "," after the matcher: this takes one matcher; put each in its own list item`},
		{`a='b'`, `column 3: single quotes do not quote a value: use double quotes, e.g. a="value"`},
		{`a=b"c`, `column 4: unexpected "\"" in an unquoted value: quote the value, e.g. a="b\"c"`},
		{`host=~dev-{1}`, `column 11: unexpected "{" in an unquoted value: quote the value, e.g. host=~"dev-{1}"`},
		{`a=\n`, `column 3: unexpected "\\" in an unquoted value: quote the value, e.g. a="\\n"`},
		{"a=\xff", `column 1: matcher text is not valid UTF-8`},
	}
	for _, tt := range tests {
		m, err := ParseMatcher(tt.in)
		if err == nil {
			t.Errorf("ParseMatcher(%q): got %s, want error %q", tt.in, m, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("ParseMatcher(%q): got error\n\t%s\nwant\n\t%s", tt.in, err, tt.want)
		}
		var me *MatcherError
		if !errors.As(err, &me) {
			t.Errorf("ParseMatcher(%q): got error of type %T, want *MatcherError", tt.in, err)
		}
	}
}

func TestMatcherMatches(t *testing.T) {
	labels := map[string]string{"alert": "GPUHot", "severity": "critical", "gpu": "10", "host": "dev-box", "empty": ""}
	tests := []struct {
		matcher string
		want    bool
	}{
		{`alert="GPUHot"`, true},
		{`alert="GPUHo"`, false},
		{`alert!="GPUHot"`, false},
		{`alert!="Other"`, true},
		{`gpu=~"1"`, false}, // anchored: "1" does not match "10"
		{`gpu=~"1."`, true},
		{`gpu=~"0|1"`, false},
		{`gpu=~"0|10"`, true}, // alternation is anchored as a whole
		{`gpu!~"1"`, true},
		{`host=~"dev"`, false},
		{`host=~"dev-.*"`, true},
		{`host!~"dev-.*"`, false},
		{`host=~"DEV-.*"`, false},
		{`host=~"(?i)DEV-.*"`, true},
		{`missing=""`, true}, // a missing label is ""
		{`missing!=""`, false},
		{`missing="x"`, false},
		{`missing!="x"`, true},
		{`missing=~".*"`, true},
		{`missing=~".+"`, false},
		{`missing!~".+"`, true},
		{`empty=""`, true},
		{`gpu!=""`, true},
	}
	for _, tt := range tests {
		m, err := ParseMatcher(tt.matcher)
		if err != nil {
			t.Fatalf("ParseMatcher(%q): %v", tt.matcher, err)
		}
		if got := m.Matches(labels); got != tt.want {
			t.Errorf("%s.Matches(%v): got %v, want %v", tt.matcher, labels, got, tt.want)
		}
		if got := m.Matches(nil); got != m.Matches(map[string]string{}) {
			t.Errorf("%s.Matches(nil): got %v, want the same as for no labels", tt.matcher, got)
		}
	}
}

func TestMatcherLiteral(t *testing.T) {
	// A matcher written as a struct literal has no compiled expression; it
	// still matches as a parsed one does.
	tests := []struct {
		m    Matcher
		want bool
	}{
		{Matcher{Name: "gpu", Type: MatchRegexp, Value: "1|2"}, true},
		{Matcher{Name: "gpu", Type: MatchNotRegexp, Value: "1|2"}, false},
		{Matcher{Name: "gpu", Type: MatchRegexp, Value: "("}, false}, // does not compile: matches nothing
		{Matcher{Name: "gpu", Type: MatchType(9), Value: "2"}, false},
	}
	for _, tt := range tests {
		if got := tt.m.Matches(map[string]string{"gpu": "2"}); got != tt.want {
			t.Errorf("%s.Matches(gpu=2): got %v, want %v", &tt.m, got, tt.want)
		}
	}
}

func TestNewMatcherErrors(t *testing.T) {
	tests := []struct {
		typ         MatchType
		name, value string
		want        string
	}{
		{MatchEqual, "", "a", `invalid label name "": use letters, digits and _, not starting with a digit`},
		{MatchEqual, "a-b", "a", `invalid label name "a-b": use letters, digits and _, not starting with a digit`},
		{MatchRegexp, "a", "(", `invalid regular expression "(": missing closing )`},
		{MatchType(7), "a", "b", `invalid match type 7: want MatchEqual, MatchNotEqual, MatchRegexp or MatchNotRegexp`},
	}
	for _, tt := range tests {
		_, err := NewMatcher(tt.typ, tt.name, tt.value)
		if err == nil || err.Error() != tt.want {
			t.Errorf("NewMatcher(%v, %q, %q): got error %v, want %q", tt.typ, tt.name, tt.value, err, tt.want)
		}
	}
}

func TestMatchTypeString(t *testing.T) {
	tests := map[MatchType]string{MatchEqual: "=", MatchNotEqual: "!=", MatchRegexp: "=~", MatchNotRegexp: "!~", MatchType(5): "MatchType(5)"}
	for typ, want := range tests {
		if got := typ.String(); got != want {
			t.Errorf("MatchType(%d).String(): got %q, want %q", int(typ), got, want)
		}
	}
}

func TestParseMatchers(t *testing.T) {
	tests := []struct {
		in   string
		want string // String() of the result
		n    int
	}{
		{`{a="b", c=~"d"}`, `{a="b", c=~"d"}`, 2},
		{`a="b",c=~"d"`, `{a="b", c=~"d"}`, 2},
		{` { a = "b" , c =~ "d" } `, `{a="b", c=~"d"}`, 2},
		{`a="x,y", b=c,`, `{a="x,y", b="c"}`, 2},
		{`{a="}", b="{,}"}`, `{a="}", b="{,}"}`, 2},
		{`{a=b,}`, `{a="b"}`, 1},
		{`{a=b}`, `{a="b"}`, 1},
		{`severity="critical"`, `{severity="critical"}`, 1},
		{`{}`, `{}`, 0},
		{``, `{}`, 0},
		{`   `, `{}`, 0},
	}
	for _, tt := range tests {
		ms, err := ParseMatchers(tt.in)
		if err != nil {
			t.Errorf("ParseMatchers(%q): got error %v, want none", tt.in, err)
			continue
		}
		if got := ms.String(); got != tt.want || len(ms) != tt.n {
			t.Errorf("ParseMatchers(%q): got %s (%d matchers), want %s (%d)", tt.in, got, len(ms), tt.want, tt.n)
		}
	}
}

func TestParseMatchersErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{`{a=b`, `column 5: missing "}" at the end of the matchers`},
		{`{a=b} x`, `column 7: unexpected "x" after the closing "}"`},
		{`a=b c=d`, `column 5: expected "," between matchers, found "c=d": quote a value that has spaces`},
		{`{,}`, `column 2: expected a label name (letters, digits and _, not starting with a digit), found ",}"`},
		{`a=b,,c=d`, `column 5: expected a label name (letters, digits and _, not starting with a digit), found ",c=d"`},
		{`a=b, c=~"("`, `column 9: invalid regular expression "(": missing closing )`},
		{`{a=b, c}`, `column 8: expected =, !=, =~ or !~ after the label name "c"`},
		{`a="b`, `column 3: unterminated quoted value: add the closing "`},
		{`a=b}`, `column 4: unexpected "}" in an unquoted value: quote the value, e.g. a="b}"`},
	}
	for _, tt := range tests {
		ms, err := ParseMatchers(tt.in)
		if err == nil {
			t.Errorf("ParseMatchers(%q): got %s, want error %q", tt.in, ms, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("ParseMatchers(%q): got error\n\t%s\nwant\n\t%s", tt.in, err, tt.want)
		}
	}
}

func TestMatchersMatches(t *testing.T) {
	labels := map[string]string{"alert": "GPUHot", "severity": "critical"}
	tests := []struct {
		ms   string
		want bool
	}{
		{`{}`, true},
		{`{alert="GPUHot"}`, true},
		{`{alert="GPUHot", severity="critical"}`, true},
		{`{alert="GPUHot", severity="warning"}`, false},
		{`{alert=~"GPU.*", severity!="info", host=""}`, true},
	}
	for _, tt := range tests {
		ms, err := ParseMatchers(tt.ms)
		if err != nil {
			t.Fatalf("ParseMatchers(%q): %v", tt.ms, err)
		}
		if got := ms.Matches(labels); got != tt.want {
			t.Errorf("%s.Matches(%v): got %v, want %v", tt.ms, labels, got, tt.want)
		}
	}
}

func TestMatcherJSON(t *testing.T) {
	ms, err := ParseMatchers(`{a="b", gpu=~"0|1", host!~"dev-.*", note!="say \"hi\"\n"}`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(ms)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	const want = `["a=\"b\"","gpu=~\"0|1\"","host!~\"dev-.*\"","note!=\"say \\\"hi\\\"\\n\""]`
	if string(b) != want {
		t.Errorf("json.Marshal: got %s, want %s", b, want)
	}
	var back Matchers
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("json.Unmarshal(%s): %v", b, err)
	}
	if back.String() != ms.String() {
		t.Errorf("round trip: got %s, want %s", back, ms)
	}
	// The compiled expression survives the round trip.
	if !back.Matches(map[string]string{"a": "b", "gpu": "1", "host": "prod", "note": "x"}) {
		t.Errorf("round trip: %s does not match what %s matches", back, ms)
	}
	// A plain Matcher value encodes the same way.
	b, err = json.Marshal(*ms[1])
	if err != nil || string(b) != `"gpu=~\"0|1\""` {
		t.Errorf("json.Marshal(Matcher): got %s, %v, want %q", b, err, `"gpu=~\"0|1\""`)
	}

	var m Matcher
	err = json.Unmarshal([]byte(`"gpu=~\"(\""`), &m)
	const wantErr = `matcher "gpu=~\"(\"": column 6: invalid regular expression "(": missing closing )`
	if err == nil || err.Error() != wantErr {
		t.Errorf("json.Unmarshal of a bad matcher: got error %v, want %q", err, wantErr)
	}
}

func BenchmarkMatchersMatches(b *testing.B) {
	ms, err := ParseMatchers(`{alert=~"GPU(Hot|MemoryNearFull)", severity="critical", host!~"dev-.*"}`)
	if err != nil {
		b.Fatal(err)
	}
	labels := map[string]string{"alert": "GPUMemoryNearFull", "severity": "critical", "host": "prod-3", "gpu": "1"}
	b.ReportAllocs()
	for b.Loop() {
		if !ms.Matches(labels) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkParseMatchers(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseMatchers(`{alert=~"GPU(Hot|MemoryNearFull)", severity="critical", host!~"dev-.*"}`); err != nil {
			b.Fatal(err)
		}
	}
}
