// Package strictyaml decodes YAML documents into Go structs strictly: unknown
// and duplicate keys are errors, every error carries the line and column of
// the offending node, and all errors of a document are reported at once rather
// than stopping at the first. gpuwatch's config and rule files go through it so
// that `gpuwatch check` can print every problem as FILE:LINE:COL: message.
//
// Struct fields are named by their `yaml:"name"` tag; the option `required`
// (`yaml:"alert,required"`) makes a missing key an error. A field of type
// yaml.Node receives the raw node (for values the caller parses itself, with
// their positions); a field of type Pos receives the position of the mapping
// it belongs to. time.Duration accepts Go durations plus "d" for days. An
// empty value (`key:` with nothing after it) leaves a field's default, except
// that a required field of an empty struct is still missing and a pointer to
// a struct is set, so `console:` alone selects the console.
package strictyaml

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Pos is a position in a YAML file, 1-based.
type Pos struct {
	Line, Col int
}

// PosOf returns the position of a node.
func PosOf(n *yaml.Node) Pos { return Pos{Line: n.Line, Col: n.Column} }

// Error is one problem in a YAML file, at a position.
type Error struct {
	File string
	Pos
	Msg string
}

// Error formats the problem as FILE:LINE:COL: message, the form editors and
// CI logs link to.
func (e *Error) Error() string {
	if e.File == "" {
		return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Errorf makes an Error at the node's position.
func Errorf(file string, n *yaml.Node, format string, args ...any) *Error {
	return &Error{File: file, Pos: PosOf(n), Msg: fmt.Sprintf(format, args...)}
}

// Errors is a list of problems; it is an error itself so a whole list can be
// returned, and printed one problem per line.
type Errors []error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.Is and errors.As look at each problem.
func (es Errors) Unwrap() []error { return es }

// Sort orders the problems as a reader meets them: by file, in the order the
// files first appear in the list, then by line and column. Errors without a
// position (a file that could not be read) stay in their order, as a group
// where the first of them stood.
func (es Errors) Sort() {
	rank := map[string]int{}
	key := func(e error) (int, Pos) {
		var pe *Error
		if !errors.As(e, &pe) {
			return rankOf(rank, ""), Pos{}
		}
		return rankOf(rank, pe.File), pe.Pos
	}
	for _, e := range es {
		key(e)
	}
	slices.SortStableFunc(es, func(a, b error) int {
		ra, pa := key(a)
		rb, pb := key(b)
		return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(pa.Line, pb.Line), cmp.Compare(pa.Col, pb.Col))
	})
}

func rankOf(rank map[string]int, file string) int {
	r, ok := rank[file]
	if !ok {
		r = len(rank)
		rank[file] = r
	}
	return r
}

// Err returns nil for an empty list and the list otherwise.
func (es Errors) Err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// Parse parses YAML text into its document node. A syntax error becomes an
// *Error with the line yaml.v3 reports; so do aliases that make the
// document stand for far more than is written in it, or for an endless
// one (see MaxExpandedNodes).
func Parse(file string, data []byte) (*yaml.Node, error) {
	if err := checkUTF8(file, data); err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(file, data, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &Error{File: file, Pos: Pos{1, 1}, Msg: "the file is empty"}
	}
	if err := checkAliases(file, doc.Content[0]); err != nil {
		return nil, err
	}
	return doc.Content[0], nil
}

// ReadFile reads (see ReadData) and parses a YAML file.
func ReadFile(path string) (*yaml.Node, error) {
	data, err := ReadData(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// MaxFileSize is the largest config or rule file gpuwatch reads: far more
// than any real one, far less than what a wrong name (/dev/zero, a log)
// would make it hold in memory.
const MaxFileSize = 16 << 20

// ReadData reads a config or rule file: a regular file (or a link to one)
// of at most MaxFileSize bytes. Anything else is refused, saying what it
// is, without reading it: a FIFO or a device would block or never end.
func ReadData(path string) ([]byte, error) {
	// O_NONBLOCK: a FIFO opens at once instead of waiting for a writer,
	// and is refused below; on a regular file it changes nothing.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file but %s: name a YAML file", path, fileKind(fi.Mode()))
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s has %d bytes, more than the %d MiB a config or rule file may have: is it the right file?", path, fi.Size(), MaxFileSize>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s grew past the %d MiB a config or rule file may have while it was read", path, MaxFileSize>>20)
	}
	return data, nil
}

// fileKind names what a file that is not regular is.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file (" + m.Type().String() + ")"
}

// checkUTF8 finds the first byte of data that is not UTF-8, where yaml.v3
// only says the file has one, and says where it is. A file that starts
// with a UTF-16 byte order mark is left to yaml.v3, which reads it.
func checkUTF8(file string, data []byte) error {
	if utf8.Valid(data) || len(data) >= 2 && (data[0] == 0xFF && data[1] == 0xFE || data[0] == 0xFE && data[1] == 0xFF) {
		return nil
	}
	line, start := 1, 0
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			col := utf8.RuneCount(data[start:i]) + 1
			return &Error{File: file, Pos: Pos{line, col},
				Msg: fmt.Sprintf("invalid UTF-8 (byte 0x%02x): gpuwatch reads YAML as UTF-8; save the file as UTF-8 (iconv -f LATIN1 -t UTF-8, or your editor's encoding menu)", data[i])}
		}
		if r == '\n' {
			line, start = line+1, i+1
		}
		i += size
	}
	return nil
}

// isParserProblem reports whether msg is one of yaml.v3's parser (not
// scanner) errors. yaml.v3 reports their line 0-based, and as the line where
// the enclosing block starts when there is one, so the problem is on that
// line or below it.
func isParserProblem(msg string) bool {
	for _, scanner := range []string{"alphabetic", "whitespace", "digit", "comment", "hexdecimal"} {
		if strings.HasPrefix(msg, "did not find expected "+scanner) {
			return false
		}
	}
	for _, parser := range []string{"did not find expected", "found undefined tag handle", "found duplicate %", "found incompatible YAML document"} {
		if strings.HasPrefix(msg, parser) {
			return true
		}
	}
	return false
}

func syntaxError(file string, data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1
	hasLine := false
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, tail, ok := strings.Cut(rest, ":"); ok {
			if n, convErr := strconv.Atoi(num); convErr == nil {
				line, msg, hasLine = n, strings.TrimSpace(tail), true
			}
		}
	}
	if isParserProblem(msg) {
		if hasLine {
			line++
		}
		if strings.HasPrefix(msg, "did not find expected") {
			msg += " (at or below this line; check the indentation)"
		}
	}
	pos := Pos{line, 1}
	if isTabProblem(msg) {
		if at := indentingTab(data, line); at.Line > 0 {
			return &Error{File: file, Pos: at, Msg: "invalid YAML: a tab indents this line: YAML is indented with spaces only; replace the tab with spaces"}
		}
	}
	if name, ok := strings.CutPrefix(msg, "unknown anchor '"); ok {
		// yaml.v3 gives no line for an alias to an anchor never defined.
		name, _, _ = strings.Cut(name, "'")
		if at := posOfText(data, "*"+name); at.Line > 0 {
			pos = at
		}
		msg = fmt.Sprintf("alias *%s refers to no anchor: define &%s before it", name, name)
	}
	return &Error{File: file, Pos: pos, Msg: "invalid YAML: " + msg}
}

// isTabProblem reports whether msg is how yaml.v3 refuses a tab where
// indentation belongs.
func isTabProblem(msg string) bool {
	return strings.Contains(msg, "found character that cannot start any token") ||
		strings.Contains(msg, "found a tab character that violates indentation")
}

// indentingTab returns the position of the first tab in a line's
// indentation, from line from on (yaml.v3 reports the line before the tab,
// or the block's first line); the zero Pos when there is none.
func indentingTab(data []byte, from int) Pos {
	for pass := 0; pass < 2; pass++ {
		for i, l := range strings.Split(string(data), "\n") {
			if i+1 < from && pass == 0 {
				continue
			}
			indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
			if col := strings.IndexByte(indent, '\t'); col >= 0 && strings.TrimSpace(l) != "" {
				return Pos{i + 1, col + 1}
			}
		}
	}
	return Pos{}
}

// posOfText returns the position of the first occurrence of text in data, or
// the zero Pos.
func posOfText(data []byte, text string) Pos {
	i := strings.Index(string(data), text)
	if i < 0 {
		return Pos{}
	}
	before := string(data[:i])
	line := strings.Count(before, "\n") + 1
	col := utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:]) + 1
	return Pos{line, col}
}

// Decoder decodes nodes of one file.
type Decoder struct {
	File string
	errs Errors
}

// Decode decodes node into out (a pointer) and returns every problem found.
// Messages name the top-level node "the file".
func Decode(file string, node *yaml.Node, out any) Errors {
	return DecodeNamed(file, node, out, "")
}

// DecodeNamed is Decode for a node inside a file: messages name it what
// (such as "rules[2]") rather than "the file".
func DecodeNamed(file string, node *yaml.Node, out any, what string) Errors {
	d := &Decoder{File: file}
	d.decode(node, reflect.ValueOf(out).Elem(), what)
	return d.errs
}

var (
	nodeType     = reflect.TypeFor[yaml.Node]()
	posType      = reflect.TypeFor[Pos]()
	durationType = reflect.TypeFor[time.Duration]()
)

func (d *Decoder) fail(n *yaml.Node, format string, args ...any) {
	d.errs = append(d.errs, Errorf(d.File, n, format, args...))
}

// Resolve follows aliases to the node they stand for.
func Resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func (d *Decoder) decode(n *yaml.Node, v reflect.Value, what string) {
	n = Resolve(n)
	if v.Type() == nodeType {
		v.Set(reflect.ValueOf(*n))
		return
	}
	if isNull(n) {
		switch {
		case v.Kind() == reflect.Struct:
			// An empty mapping: required fields are still required.
			d.structure(&yaml.Node{Kind: yaml.MappingNode, Line: n.Line, Column: n.Column}, v, what)
			return
		case v.Kind() == reflect.Pointer && v.Type().Elem().Kind() == reflect.Struct:
			// `console:` with nothing after it still selects the console.
			v.Set(reflect.New(v.Type().Elem()))
			d.decode(n, v.Elem(), what)
			return
		case v.Kind() != reflect.String:
			return // an empty value leaves the default
		}
	}
	if v.Type() == durationType {
		d.duration(n, v, what)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), what)
	case reflect.Struct:
		d.structure(n, v, what)
	case reflect.Slice:
		d.sequence(n, v, what)
	case reflect.Map:
		d.mapping(n, v, what)
	case reflect.String:
		if d.scalar(n, what, "a string") {
			v.SetString(n.Value)
		}
	case reflect.Bool:
		if !d.scalar(n, what, "true or false") {
			return
		}
		var b bool
		if err := n.Decode(&b); err != nil || n.Tag != "!!bool" {
			d.fail(n, "%s must be true or false, not %q", what, n.Value)
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32:
		if !d.scalar(n, what, "a whole number") {
			return
		}
		i, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil || v.OverflowInt(i) {
			d.fail(n, "%s must be a whole number, not %q", what, n.Value)
			return
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		if !d.scalar(n, what, "a whole number") {
			return
		}
		u, err := strconv.ParseUint(n.Value, 0, 64)
		if err != nil || v.OverflowUint(u) {
			d.fail(n, "%s must be a whole number of 0 or more, not %q", what, n.Value)
			return
		}
		v.SetUint(u)
	case reflect.Float64:
		if !d.scalar(n, what, "a number") {
			return
		}
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			d.fail(n, "%s must be a number, not %q", what, n.Value)
			return
		}
		v.SetFloat(f)
	default:
		d.fail(n, "%s: values of Go type %s cannot be decoded", what, v.Type())
	}
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func (d *Decoder) scalar(n *yaml.Node, what, want string) bool {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, "%s must be %s, not %s", what, want, kindName(n))
		return false
	}
	return true
}

func (d *Decoder) duration(n *yaml.Node, v reflect.Value, what string) {
	if !d.scalar(n, what, "a duration") {
		return
	}
	dur, err := ParseDuration(n.Value)
	if err != nil {
		d.fail(n, "%s: %v", what, err)
		return
	}
	v.SetInt(int64(dur))
}

// ParseDuration parses a Go duration ("90s", "1h30m") and also accepts days
// ("2d"). Negative durations are refused.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		switch {
		case err == nil && n < 0:
			return 0, fmt.Errorf("%q is negative: durations must be 0 or more", s)
		case err == nil && n < 1e5:
			return time.Duration(n * float64(24*time.Hour)), nil
		}
	}
	dur, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: write it like 30s, 5m, 1h30m or 2d", s)
	}
	if dur < 0 {
		return 0, fmt.Errorf("%q is negative: durations must be 0 or more", s)
	}
	return dur, nil
}

func (d *Decoder) sequence(n *yaml.Node, v reflect.Value, what string) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, "%s must be a list, not %s", what, kindName(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", what, i))
	}
	v.Set(s)
}

func (d *Decoder) mapping(n *yaml.Node, v reflect.Value, what string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, "%s must be a mapping of names to values, not %s", what, kindName(n))
		return
	}
	if v.Type().Key().Kind() != reflect.String {
		d.fail(n, "%s: maps need string keys", what)
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := Resolve(n.Content[i]), n.Content[i+1]
		if seen[key.Value] {
			d.fail(key, "%s: key %q appears twice", what, key.Value)
			continue
		}
		seen[key.Value] = true
		elem := reflect.New(v.Type().Elem()).Elem()
		d.decode(val, elem, what+"."+key.Value)
		m.SetMapIndex(reflect.ValueOf(key.Value).Convert(v.Type().Key()), elem)
	}
	v.Set(m)
}

type field struct {
	index    int
	required bool
}

func (d *Decoder) structure(n *yaml.Node, v reflect.Value, what string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, "%s must be a mapping of fields, not %s", orTop(what), kindName(n))
		return
	}
	fields, names := structFields(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := Resolve(n.Content[i]), n.Content[i+1]
		f, ok := fields[key.Value]
		switch {
		case !ok:
			d.fail(key, "unknown field %q in %s%s; valid fields: %s", key.Value, orTop(what), suggest(key.Value, names), strings.Join(names, ", "))
			continue
		case seen[key.Value]:
			d.fail(key, "field %q appears twice in %s", key.Value, orTop(what))
			continue
		}
		seen[key.Value] = true
		name := key.Value
		if what != "" {
			name = what + "." + key.Value
		}
		d.decode(val, v.Field(f.index), name)
	}
	for _, name := range names {
		if f := fields[name]; f.required && !seen[name] {
			d.fail(n, "%s needs the field %q", orTop(what), name)
		}
	}
	for i := range v.NumField() {
		if v.Type().Field(i).Type == posType {
			v.Field(i).Set(reflect.ValueOf(PosOf(n)))
		}
	}
}

func structFields(t reflect.Type) (map[string]field, []string) {
	fields := map[string]field{}
	var names []string
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("yaml")
		if tag == "" || tag == "-" || !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fields[name] = field{index: i, required: strings.Contains(opts, "required")}
		names = append(names, name)
	}
	return fields, names
}

func orTop(what string) string {
	if what == "" {
		return "the file"
	}
	return what
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "this"
}

// suggest returns ` (did you mean "x"?)` when a valid name is close to got.
func suggest(got string, valid []string) string {
	best, bestDist := "", 3
	for _, v := range valid {
		if d := editDistance(got, v); d < bestDist {
			best, bestDist = v, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// Suggest is suggest for callers outside the package: it names the closest
// of valid to got, or returns "".
func Suggest(got string, valid []string) string { return suggest(got, valid) }

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// AsErrors flattens err into its problems: an Errors list, or one error.
func AsErrors(err error) []error {
	var es Errors
	if errors.As(err, &es) {
		return es
	}
	if err == nil {
		return nil
	}
	return []error{err}
}
