package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The docs the tests read: README.md and the pages of docs/, parsed as
// markdown far enough to find their commands (fenced sh blocks and inline
// code), the blocks that show what the commands print, and their links.

// docsPages are the pages the tests read, relative to the repository: the
// README first, then docs/ in name order, the order their commands run in.
func docsPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(pages)
	return append([]string{"../README.md"}, pages...)
}

// readme is what the tests read of the pages: every page, and what they
// show together.
type readme struct {
	pages    []*page
	commands []string // every command, in the order the pages show them
	spans    []string // every inline code span, outside fenced blocks
}

// page is one markdown page.
type page struct {
	name   string // its path from the repository's root: README.md, docs/api.md
	text   string
	lines  []string
	blocks []fenced // every fenced block
	spans  []string // every inline code span, outside fenced blocks
}

// fenced is a fenced block: its language and its lines.
type fenced struct {
	page  *page
	lang  string
	lines []string
	line  int // the line number of the opening fence, 1-based
}

func (b fenced) String() string { return fmt.Sprintf("%s:%d", b.page.name, b.line) }

var (
	commandRE = regexp.MustCompile(`^(\./)?gpuwatch |^go |^CGO_CFLAGS=|^nvidia-smi |^\.ci/run$|^cp |^promtool |^curl |^GPUWATCH_[A-Z_]+=\S+ \S`)
)

func readREADME(t *testing.T) *readme {
	t.Helper()
	r := &readme{}
	for _, path := range docsPages(t) {
		p := readPage(t, path)
		r.pages = append(r.pages, p)
		for _, b := range p.blocks {
			if b.lang != "sh" {
				continue
			}
			for _, line := range b.lines {
				if cmd := shellCommand(line); cmd != "" && !slices.Contains(r.commands, cmd) {
					r.commands = append(r.commands, cmd)
				}
			}
		}
		for _, span := range p.spans {
			r.spans = append(r.spans, span)
			if commandRE.MatchString(span) && !slices.Contains(r.commands, span) {
				r.commands = append(r.commands, span)
			}
		}
	}
	return r
}

// readPage reads and parses one markdown page.
func readPage(t *testing.T, path string) *page {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := &page{name: strings.TrimPrefix(filepath.ToSlash(path), "../"), text: string(raw), lines: strings.Split(string(raw), "\n")}
	var prose strings.Builder
	var cur *fenced
	for i, line := range p.lines {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if cur == nil {
				cur = &fenced{page: p, lang: strings.TrimPrefix(trimmed, "```"), line: i + 1}
			} else {
				p.blocks = append(p.blocks, *cur)
				cur = nil
			}
			prose.WriteString("\n")
			continue
		}
		if cur != nil {
			cur.lines = append(cur.lines, line)
			prose.WriteString("\n")
			continue
		}
		prose.WriteString(line + "\n")
	}
	p.spans = codeSpans(prose.String())
	return p
}

// codeSpans are the inline code spans of markdown text, as CommonMark
// reads them (a span opened by n backticks ends at the next n), with runs
// of white space as one space.
func codeSpans(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		if text[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(text) && text[i+n] == '`' {
			n++
		}
		fence := strings.Repeat("`", n)
		rest := text[i+n:]
		end := -1
		for j := 0; j+n <= len(rest); j++ {
			if rest[j:j+n] == fence && (j+n == len(rest) || rest[j+n] != '`') && (j == 0 || rest[j-1] != '`') {
				end = j
				break
			}
		}
		if end < 0 {
			i += n
			continue
		}
		out = append(out, strings.Join(strings.Fields(rest[:end]), " "))
		i += n + end + n
	}
	return out
}

// shellCommand is a line of an sh block without its comment; "" for a
// comment or an empty line.
func shellCommand(line string) string {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return ""
	}
	if i := strings.Index(line, "  #"); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// block returns the first fenced block after the line holding marker, on
// the one page that has such a line.
func (r *readme) block(t *testing.T, marker string) fenced {
	t.Helper()
	p, at := r.find(t, marker)
	for _, b := range p.blocks {
		if b.line > at {
			return b
		}
	}
	t.Fatalf("%s: no fenced block after %q", p.name, marker)
	return fenced{}
}

// find returns the one page with a line holding marker, and the line's
// index; a marker on no page, or on several, fails the test.
func (r *readme) find(t *testing.T, marker string) (*page, int) {
	t.Helper()
	var found *page
	at := -1
	for _, p := range r.pages {
		i := slices.IndexFunc(p.lines, func(l string) bool { return strings.Contains(l, marker) })
		if i < 0 {
			continue
		}
		if found != nil {
			t.Fatalf("%q is on %s and on %s: the test needs one", marker, found.name, p.name)
		}
		found, at = p, i
	}
	if found == nil {
		t.Fatalf("no page has a line with %q", marker)
	}
	return found, at
}

// page returns the page of that name (docs/api.md).
func (r *readme) page(t *testing.T, name string) *page {
	t.Helper()
	for _, p := range r.pages {
		if p.name == name {
			return p
		}
	}
	t.Fatalf("no page %s", name)
	return nil
}

// spanAfter is the first inline code span after marker, past the marker,
// joined across lines, on the one page that has marker.
func (r *readme) spanAfter(t *testing.T, marker string) string {
	t.Helper()
	p, _ := r.find(t, strings.SplitN(marker, "\n", 2)[0])
	i := strings.Index(p.text, marker)
	if i < 0 {
		t.Fatalf("%s: no %q", p.name, marker)
	}
	spans := codeSpans(p.text[i+len(marker):])
	if len(spans) == 0 {
		t.Fatalf("%s: no code after %q", p.name, marker)
	}
	return spans[0]
}

// blocks are the fenced blocks of every page.
func (r *readme) blocks() []fenced {
	var out []fenced
	for _, p := range r.pages {
		out = append(out, p.blocks...)
	}
	return out
}
