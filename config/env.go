package config

import (
	"cmp"
	"errors"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
)

// expandEnv replaces ${VAR} and ${VAR:-default} in every scalar of the
// trees, in place, so positions stay those of the file. $$ is a literal $.
// A variable that is unset and has no default is an error: a secret that
// is silently empty fails far from where it was meant to be set. The
// redactor it returns puts ${VAR} back in place of the values of
// variables, so that an error quoting an expanded value shows no secret.
func expandEnv(file string, trees []*yaml.Node, lookup func(string) (string, bool)) (strictyaml.Errors, *strings.Replacer) {
	var errs strictyaml.Errors
	used := map[string]string{} // value → variable name
	seen := func(name, value string) {
		if len(value) >= minRedacted {
			used[value] = name
		}
	}
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "$") {
			v, err := expandString(n.Value, lookup, seen)
			if err != "" {
				errs = append(errs, strictyaml.Errorf(file, n, "%s", err))
				return
			}
			n.Value = v
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	for _, n := range trees {
		walk(n)
	}
	values := slices.Collect(maps.Keys(used))
	// Longer values first, so a secret that contains another is replaced
	// whole.
	slices.SortFunc(values, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	pairs := make([]string, 0, 2*len(values))
	for _, v := range values {
		pairs = append(pairs, v, "${"+used[v]+"}")
	}
	return errs, strings.NewReplacer(pairs...)
}

// minRedacted is the length from which an expanded value is hidden in
// errors: secrets are long, and hiding short values such as "5s" or "sim"
// would garble messages that quote the same text for other reasons.
const minRedacted = 8

// redact hides expanded values in the messages of errs.
func redact(errs strictyaml.Errors, r *strings.Replacer) {
	for _, e := range errs {
		var pe *strictyaml.Error
		if errors.As(e, &pe) {
			pe.Msg = r.Replace(pe.Msg)
		}
	}
}

func expandString(s string, lookup func(string) (string, bool), seen func(name, value string)) (string, string) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] != '$':
			b.WriteByte(s[i])
		case strings.HasPrefix(s[i:], "$$"):
			b.WriteByte('$')
			i++
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", "unterminated ${ in " + quoteShort(s) + ": write ${NAME}"
			}
			name, def, hasDef := strings.Cut(s[i+2:i+end], ":-")
			if !validEnvName(name) {
				return "", "${" + name + "} is not a valid environment variable name"
			}
			v, ok := lookup(name)
			switch {
			case ok && (v != "" || !hasDef):
				b.WriteString(v)
				seen(name, v)
			case hasDef:
				b.WriteString(def)
			default:
				return "", "environment variable " + name + " is not set: set it, or write ${" + name + ":-default}"
			}
			i += end
		default:
			b.WriteByte('$')
		}
	}
	return b.String(), ""
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// quoteShort quotes s, cut to a readable length. Values may be secrets once
// expanded, so only the text as written in the file is ever quoted.
func quoteShort(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return `"` + s + `"`
}
