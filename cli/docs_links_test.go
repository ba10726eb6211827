package cli_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestDocsLinks follows every relative link of every markdown file of the
// repository (the README, docs/, the READMEs of packages and scripts): the
// file or folder it names exists, and the #anchor it names is a heading of
// that page, as GitHub makes anchors of headings.
func TestDocsLinks(t *testing.T) {
	var files []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string][]string{} // page → its anchors
	anchorsOf := func(path string) []string {
		if a, ok := anchors[path]; ok {
			return a
		}
		anchors[path] = headingAnchors(readPage(t, path))
		return anchors[path]
	}
	linkRE := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	n := 0
	for _, file := range files {
		p := readPage(t, file)
		for i, line := range proseLines(p) {
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
					continue // http:, https:, mailto:
				}
				n++
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), path)
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: the link to %s leads nowhere: %v", p.name, i+1, target, err)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s:%d: the link %s has an anchor into a file that is not markdown", p.name, i+1, target)
					continue
				}
				if !slices.Contains(anchorsOf(dest), anchor) {
					t.Errorf("%s:%d: the link %s: %s has no heading for #%s (it has %s)", p.name, i+1, target, dest, anchor, strings.Join(anchorsOf(dest), ", "))
				}
			}
		}
	}
	if n < 50 {
		t.Errorf("followed %d links; the docs have many more: is the link pattern right?", n)
	}
}

// proseLines are the lines of a page, with those of fenced blocks and the
// inline code of the others blanked, so only real links remain.
func proseLines(p *page) []string {
	out := slices.Clone(p.lines)
	for _, b := range p.blocks {
		for i := b.line - 1; i <= b.line+len(b.lines) && i < len(out); i++ {
			out[i] = ""
		}
	}
	code := regexp.MustCompile("`[^`]*`")
	for i := range out {
		out[i] = code.ReplaceAllString(out[i], "``")
	}
	return out
}

// headingAnchors are the anchors GitHub gives a page's headings: lower
// case, punctuation dropped, spaces as hyphens, a repeated one numbered.
func headingAnchors(p *page) []string {
	var out []string
	seen := map[string]int{}
	prose := proseLines(p)
	for i, line := range p.lines {
		if prose[i] == "" || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		anchor := b.String()
		if n := seen[anchor]; n > 0 {
			seen[anchor]++
			anchor += "-" + strconv.Itoa(n)
		} else {
			seen[anchor] = 1
		}
		out = append(out, anchor)
	}
	return out
}
