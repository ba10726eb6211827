package notifier

import (
	"errors"
	"testing"
	"unicode/utf8"
)

var matcherSeeds = []string{
	`severity="critical"`, `alert!="GPUHot"`, `gpu=~"0|1"`, `host!~"dev-.*"`, `severity=critical`,
	`a="x\u00e9\x41\"\\"`, `a="\xff"`, `gpu=`, `gpu==1`, `a='b'`, `{a="b"}`, `a="b",c="d"`,
	`gpu=~"(a"`, `alert=GPU Hot`, "a=\"x\ny\"", `a="\`, ``,
}

// checkMatcherError fails unless err is a *MatcherError pointing inside s.
func checkMatcherError(t *testing.T, s string, err error) {
	t.Helper()
	var me *MatcherError
	if !errors.As(err, &me) {
		t.Fatalf("parse %q: got error of type %T (%v), want *MatcherError", s, err, err)
	}
	if me.Column < 1 || me.Column > utf8.RuneCountInString(s)+1 {
		t.Fatalf("parse %q: got column %d, want 1 to %d", s, me.Column, utf8.RuneCountInString(s)+1)
	}
}

func FuzzParseMatcher(f *testing.F) {
	for _, s := range matcherSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMatcher(s)
		if err != nil {
			checkMatcherError(t, s, err)
			return
		}
		back, err := ParseMatcher(m.String())
		if err != nil {
			t.Fatalf("ParseMatcher(%q) gave %s, which does not parse: %v", s, m, err)
		}
		if back.Name != m.Name || back.Type != m.Type || back.Value != m.Value {
			t.Fatalf("ParseMatcher(%q) gave %s, which parses back as %s", s, m, back)
		}
		labels := map[string]string{m.Name: m.Value}
		if back.Matches(labels) != m.Matches(labels) {
			t.Fatalf("%s and its re-parse disagree on %v", m, labels)
		}
	})
}

func FuzzParseMatchers(f *testing.F) {
	for _, s := range matcherSeeds {
		f.Add(s)
	}
	for _, s := range []string{`{a="b", c=~"d"}`, `a="b",c=~"d"`, `a="x,y", b=c,`, `{}`, `{a=b`, `{a=b} x`, `a=b c=d`, `{,}`, `{a="}"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseMatchers(s)
		if err != nil {
			checkMatcherError(t, s, err)
			return
		}
		back, err := ParseMatchers(ms.String())
		if err != nil {
			t.Fatalf("ParseMatchers(%q) gave %s, which does not parse: %v", s, ms, err)
		}
		if back.String() != ms.String() || len(back) != len(ms) {
			t.Fatalf("ParseMatchers(%q) gave %s, which parses back as %s", s, ms, back)
		}
		for i := range ms {
			if back[i].Name != ms[i].Name || back[i].Type != ms[i].Type || back[i].Value != ms[i].Value {
				t.Fatalf("ParseMatchers(%q) matcher %d: got %s back, want %s", s, i, back[i], ms[i])
			}
		}
	})
}
