package strictyaml

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

type inner struct {
	Pos  Pos
	Name string   `yaml:"name,required"`
	Tags []string `yaml:"tags"`
}

type kinds struct {
	Pos      Pos
	S        string            `yaml:"s"`
	B        bool              `yaml:"b"`
	I        int               `yaml:"i"`
	I64      int64             `yaml:"i64"`
	I32      int32             `yaml:"i32"`
	U        uint              `yaml:"u"`
	U64      uint64            `yaml:"u64"`
	U32      uint32            `yaml:"u32"`
	F        float64           `yaml:"f"`
	D        time.Duration     `yaml:"d"`
	P        *inner            `yaml:"p"`
	In       inner             `yaml:"in"`
	List     []inner           `yaml:"list"`
	Map      map[string]string `yaml:"map"`
	Node     yaml.Node         `yaml:"node"`
	Ignored  string            `yaml:"-"`
	untagged string
}

func decodeText(t *testing.T, text string, out any) []string {
	t.Helper()
	root, err := Parse("f.yaml", []byte(text))
	if err != nil {
		t.Fatalf("Parse(%q): %v", text, err)
	}
	var lines []string
	for _, e := range Decode("f.yaml", root, out) {
		lines = append(lines, e.Error())
	}
	return lines
}

func TestDecodeEveryKind(t *testing.T) {
	text := `s: text
b: true
i: -42
i64: 0x10
i32: 2147483647
u: 7
u64: 18446744073709551615
u32: 4294967295
f: 2.5e3
d: 1h30m
p: {name: pointed}
in:
  name: inner
  tags: [a, b]
list:
  - name: one
  - name: two
map: {x: "1", y: "2"}
node: [raw, value]
`
	var k kinds
	if errs := decodeText(t, text, &k); len(errs) > 0 {
		t.Fatalf("Decode: got errors %q, want none", errs)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"s", k.S, "text"},
		{"b", k.B, true},
		{"i", k.I, -42},
		{"i64", k.I64, int64(16)},
		{"i32", k.I32, int32(2147483647)},
		{"u", k.U, uint(7)},
		{"u64", k.U64, uint64(18446744073709551615)},
		{"u32", k.U32, uint32(4294967295)},
		{"f", k.F, 2500.0},
		{"d", k.D, 90 * time.Minute},
		{"p.name", k.P.Name, "pointed"},
		{"p.pos", k.P.Pos, Pos{11, 4}},
		{"in.name", k.In.Name, "inner"},
		{"in.tags", strings.Join(k.In.Tags, ","), "a,b"},
		{"in.pos", k.In.Pos, Pos{13, 3}},
		{"list", len(k.List), 2},
		{"list[1].name", k.List[1].Name, "two"},
		{"list[1].pos", k.List[1].Pos, Pos{17, 5}},
		{"map", fmt.Sprint(k.Map), "map[x:1 y:2]"},
		{"node kind", k.Node.Kind, yaml.SequenceNode},
		{"node line", k.Node.Line, 19},
		{"node items", len(k.Node.Content), 2},
		{"pos", k.Pos, Pos{1, 1}},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	const fields = "valid fields: s, b, i, i64, i32, u, u64, u32, f, d, p, in, list, map, node"
	tests := []struct {
		text string
		want []string
	}{
		{"s: [a]", []string{`f.yaml:1:4: s must be a string, not a list`}},
		{"b: yes", []string{`f.yaml:1:4: b must be true or false, not "yes"`}},
		{"b: 'true'", []string{`f.yaml:1:4: b must be true or false, not "true"`}},
		{"i: 1.5", []string{`f.yaml:1:4: i must be a whole number, not "1.5"`}},
		{"i32: 2147483648", []string{`f.yaml:1:6: i32 must be a whole number, not "2147483648"`}},
		{"u: -1", []string{`f.yaml:1:4: u must be a whole number of 0 or more, not "-1"`}},
		{"u32: 4294967296", []string{`f.yaml:1:6: u32 must be a whole number of 0 or more, not "4294967296"`}},
		{"f: fast", []string{`f.yaml:1:4: f must be a number, not "fast"`}},
		{"f: {x: 1}", []string{`f.yaml:1:4: f must be a number, not a mapping`}},
		{"d: 5", []string{`f.yaml:1:4: d: "5" is not a duration: write it like 30s, 5m, 1h30m or 2d`}},
		{"d: [5s]", []string{`f.yaml:1:4: d must be a duration, not a list`}},
		{"in: text", []string{`f.yaml:1:5: in must be a mapping of fields, not "text"`}},
		{"list: {name: x}", []string{`f.yaml:1:7: list must be a list, not a mapping`}},
		{"map: [a]", []string{`f.yaml:1:6: map must be a mapping of names to values, not a list`}},
		{"map: {a: [1]}", []string{`f.yaml:1:10: map.a must be a string, not a list`}},
		{"list: [{name: a}, {tags: x}]", []string{
			`f.yaml:1:26: list[1].tags must be a list, not "x"`,
			`f.yaml:1:19: list[1] needs the field "name"`,
		}},
		{"in: {}", []string{`f.yaml:1:5: in needs the field "name"`}},
		{"in:", []string{`f.yaml:1:4: in needs the field "name"`}},
		{"list: [~]", []string{`f.yaml:1:8: list[0] needs the field "name"`}},
		{"s: a\ns: b", []string{`f.yaml:2:1: field "s" appears twice in the file`}},
		{"map: {a: x, a: y}", []string{`f.yaml:1:13: map: key "a" appears twice`}},
		{"in: {name: a, nmae: b}", []string{`f.yaml:1:15: unknown field "nmae" in in (did you mean "name"?); valid fields: name, tags`}},
		{"Ignored: x\nuntagged: y", []string{
			`f.yaml:1:1: unknown field "Ignored" in the file; ` + fields,
			`f.yaml:2:1: unknown field "untagged" in the file; ` + fields,
		}},
		{"[1, 2]", []string{`f.yaml:1:1: the file must be a mapping of fields, not a list`}},
	}
	for _, tt := range tests {
		var k kinds
		if got := decodeText(t, tt.text, &k); !slices.Equal(got, tt.want) {
			t.Errorf("Decode(%q):\ngot  %q\nwant %q", tt.text, got, tt.want)
		}
	}
}

func TestDecodeEmptyValuesKeepDefaults(t *testing.T) {
	k := kinds{S: "keep?", I: 5, D: time.Second, Map: map[string]string{"a": "b"}}
	// `p:` alone sets the pointer, so its required field is missing.
	errs := decodeText(t, "s:\ni: ~\nd:\nmap: null\nlist:\np:\n", &k)
	if want := []string{`f.yaml:6:3: p needs the field "name"`}; !slices.Equal(errs, want) {
		t.Fatalf("got errors %q, want %q", errs, want)
	}
	// An empty string field is set to "": `s:` is an empty string.
	if k.S != "" || k.I != 5 || k.D != time.Second || k.Map["a"] != "b" || k.List != nil {
		t.Errorf("got s %q i %d d %v map %v list %v; want \"\", 5, 1s, map[a:b], nil", k.S, k.I, k.D, k.Map, k.List)
	}
	if k.P == nil {
		t.Error("p: got nil, want an empty *inner: `p:` alone selects it")
	}
}

func TestDecodeAliases(t *testing.T) {
	var k kinds
	text := "s: &s text\nmap: &m {a: b}\nin: {name: *s, tags: [*s, *s]}\nlist: [{name: *s}]\np: {name: x}\nd: &d 2d\ni: 1\nf: 1\nu: 1\n"
	text += "node: *m\n"
	if errs := decodeText(t, text, &k); len(errs) > 0 {
		t.Fatalf("got errors %q, want none", errs)
	}
	if k.In.Name != "text" || strings.Join(k.In.Tags, ",") != "text,text" || k.List[0].Name != "text" || k.D != 48*time.Hour {
		t.Errorf("got in %+v list %+v d %v, want the anchored values", k.In, k.List, k.D)
	}
	if k.Node.Kind != yaml.MappingNode {
		t.Errorf("node: got kind %v, want the aliased mapping", k.Node.Kind)
	}
}

func TestDecodeNamed(t *testing.T) {
	root, err := Parse("f.yaml", []byte("tags: x"))
	if err != nil {
		t.Fatal(err)
	}
	var in inner
	errs := DecodeNamed("f.yaml", root, &in, "rules[3]")
	want := `f.yaml:1:7: rules[3].tags must be a list, not "x"` + "\n" + `f.yaml:1:1: rules[3] needs the field "name"`
	if errs.Error() != want {
		t.Errorf("got %q, want %q", errs.Error(), want)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"empty", "", "f.yaml:1:1: the file is empty"},
		{"comment only", "# nothing\n", "f.yaml:1:1: the file is empty"},
		{"bad indentation", "a:\n  - b\n  c: d\n", "f.yaml:2:1: invalid YAML: did not find expected '-' indicator (at or below this line; check the indentation)"},
		{"unclosed flow", "a: b\nc: [1, 2\nd: e\n", "f.yaml:2:1: invalid YAML: did not find expected ',' or ']' (at or below this line; check the indentation)"},
		{"list then key", "- a\nb: c\n", "f.yaml:2:1: invalid YAML: did not find expected '-' indicator (at or below this line; check the indentation)"},
		{"tab", "a: b\n\tc: d\n", "f.yaml:2:1: invalid YAML: a tab indents this line: YAML is indented with spaces only; replace the tab with spaces"},
		{"tab as the only indentation", "source:\n\ttype: sim\n", "f.yaml:2:1: invalid YAML: a tab indents this line: YAML is indented with spaces only; replace the tab with spaces"},
		{"tab after spaces", "rules:\n  - alert: X\n  \twhen: y\n", "f.yaml:3:3: invalid YAML: a tab indents this line: YAML is indented with spaces only; replace the tab with spaces"},
		{"tab in a nested block", "source:\n  type: sim\n\tinterval: 5s\n", "f.yaml:3:1: invalid YAML: a tab indents this line: YAML is indented with spaces only; replace the tab with spaces"},
		{"mapping in value", "a: b: c\n", "f.yaml:1:1: invalid YAML: mapping values are not allowed in this context"},
		{"unknown anchor", "a: 1\nb: [x, *nope]\n", "f.yaml:2:8: invalid YAML: alias *nope refers to no anchor: define &nope before it"},
		{"unterminated string", "a: \"open\nb: c\n", "f.yaml:3:1: invalid YAML: found unexpected end of stream"},
	}
	for _, tt := range tests {
		_, err := Parse("f.yaml", []byte(tt.text))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: got %v, want %s", tt.name, err, tt.want)
		}
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("%s: got %T, want *Error", tt.name, err)
		}
	}
}

func TestReadFile(t *testing.T) {
	if _, err := ReadFile("testdata/none.yaml"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile(missing): got %v, want os.ErrNotExist", err)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "90s", want: 90 * time.Second},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "2d", want: 48 * time.Hour},
		{in: "1.5d", want: 36 * time.Hour},
		{in: " 5m ", want: 5 * time.Minute},
		{in: "0", want: 0},
		{in: "0d", want: 0},
		{in: "250ms", want: 250 * time.Millisecond},
		{in: "-1s", err: `"-1s" is negative: durations must be 0 or more`},
		{in: "-2d", err: `"-2d" is negative: durations must be 0 or more`},
		{in: "abc", err: `"abc" is not a duration: write it like 30s, 5m, 1h30m or 2d`},
		{in: "5", err: `"5" is not a duration: write it like 30s, 5m, 1h30m or 2d`},
		{in: "d", err: `"d" is not a duration: write it like 30s, 5m, 1h30m or 2d`},
		{in: "1e9d", err: `"1e9d" is not a duration: write it like 30s, 5m, 1h30m or 2d`},
		{in: "", err: `"" is not a duration: write it like 30s, 5m, 1h30m or 2d`},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tt.want || gotErr != tt.err {
			t.Errorf("ParseDuration(%q): got %v, %q; want %v, %q", tt.in, got, gotErr, tt.want, tt.err)
		}
	}
}

func TestErrorFormatting(t *testing.T) {
	plain := errors.New("read rule file: gone")
	es := Errors{
		&Error{File: "a.yaml", Pos: Pos{3, 7}, Msg: "bad value"},
		&Error{Pos: Pos{1, 2}, Msg: "no file"},
		plain,
	}
	if got, want := es.Error(), "a.yaml:3:7: bad value\n1:2: no file\nread rule file: gone"; got != want {
		t.Errorf("Errors.Error: got %q, want %q", got, want)
	}
	if !errors.Is(es, plain) {
		t.Error("errors.Is(list, member): got false, want true")
	}
	var pe *Error
	if !errors.As(error(es), &pe) || pe.Msg != "bad value" {
		t.Errorf("errors.As: got %v, want the first *Error", pe)
	}
	if err := (Errors{}).Err(); err != nil {
		t.Errorf("empty Errors.Err: got %v, want nil", err)
	}
	if err := es.Err(); err == nil {
		t.Error("Errors.Err: got nil, want the list")
	}
	if got := AsErrors(es); len(got) != 3 {
		t.Errorf("AsErrors(list): got %d, want 3", len(got))
	}
	if got := AsErrors(plain); len(got) != 1 || got[0] != plain {
		t.Errorf("AsErrors(one): got %v, want [%v]", got, plain)
	}
	if got := AsErrors(nil); got != nil {
		t.Errorf("AsErrors(nil): got %v, want nil", got)
	}
	n := &yaml.Node{Line: 4, Column: 9}
	if got, want := Errorf("f.yaml", n, "x %d", 1).Error(), "f.yaml:4:9: x 1"; got != want {
		t.Errorf("Errorf: got %q, want %q", got, want)
	}
}

func TestSort(t *testing.T) {
	at := func(file string, line, col int) error { return &Error{File: file, Pos: Pos{line, col}, Msg: "m"} }
	es := Errors{
		at("c.yaml", 9, 1), at("r.yaml", 2, 5), at("c.yaml", 3, 4), errors.New("read rule file: x"),
		at("c.yaml", 3, 2), at("r.yaml", 1, 1), at("c.yaml", 3, 2),
	}
	es.Sort()
	want := "c.yaml:3:2: m\nc.yaml:3:2: m\nc.yaml:3:4: m\nc.yaml:9:1: m\nr.yaml:1:1: m\nr.yaml:2:5: m\nread rule file: x"
	if got := es.Error(); got != want {
		t.Errorf("Sort: got\n%s\nwant\n%s", got, want)
	}
}

func TestSuggest(t *testing.T) {
	valid := []string{"source", "storage", "server", "receivers", "route", "rules"}
	tests := []struct{ got, want string }{
		{"sorce", ` (did you mean "source"?)`},
		{"rule", ` (did you mean "rules"?)`},
		{"recievers", ` (did you mean "receivers"?)`},
		{"servers", ` (did you mean "server"?)`},
		{"completely-different", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Suggest(tt.got, valid); got != tt.want {
			t.Errorf("Suggest(%q): got %q, want %q", tt.got, got, tt.want)
		}
	}
	if got := Suggest("x", nil); got != "" {
		t.Errorf("Suggest with no names: got %q, want \"\"", got)
	}
}

func TestResolve(t *testing.T) {
	target := &yaml.Node{Kind: yaml.ScalarNode, Value: "v"}
	alias := &yaml.Node{Kind: yaml.AliasNode, Alias: &yaml.Node{Kind: yaml.AliasNode, Alias: target}}
	if got := Resolve(alias); got != target {
		t.Errorf("Resolve(alias of alias): got %v, want the scalar", got)
	}
	if got := Resolve(nil); got != nil {
		t.Errorf("Resolve(nil): got %v, want nil", got)
	}
}

func BenchmarkDecode(b *testing.B) {
	root, err := Parse("f.yaml", []byte("s: text\ni: 4\nd: 5m\nin: {name: a, tags: [x, y]}\nlist: [{name: a}, {name: b}]\nmap: {a: b}\n"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var k kinds
		if errs := Decode("f.yaml", root, &k); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
