package config

import (
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
)

func TestExpandString(t *testing.T) {
	env := lookupFrom(map[string]string{
		"HOST":  "gpu-1",
		"EMPTY": "",
		"PORT":  "9477",
		"REF":   "${HOST}", // values are not expanded again
		"_x9":   "ok",
	})
	tests := []struct {
		in, want, err string
	}{
		{in: "plain", want: "plain"},
		{in: "${HOST}", want: "gpu-1"},
		{in: "http://${HOST}:${PORT}/hook", want: "http://gpu-1:9477/hook"},
		{in: "${MISSING:-fallback}", want: "fallback"},
		{in: "${MISSING:-}", want: ""},
		{in: "${EMPTY}", want: ""},
		{in: "${EMPTY:-used when empty}", want: "used when empty"},
		{in: "${HOST:-unused}", want: "gpu-1"},
		{in: "${MISSING:-a:-b}", want: "a:-b"},
		{in: "${REF}", want: "${HOST}"},
		{in: "${_x9}", want: "ok"},
		{in: "$$", want: "$"},
		{in: "$${HOST}", want: "${HOST}"},
		{in: "cost: $$5", want: "cost: $5"},
		{in: "$$$${HOST}", want: "$${HOST}"},
		{in: "$HOST $ $5", want: "$HOST $ $5"},
		{in: "trailing $", want: "trailing $"},
		{in: "${MISSING}", err: "environment variable MISSING is not set: set it, or write ${MISSING:-default}"},
		{in: "${HOST", err: `unterminated ${ in "${HOST": write ${NAME}`},
		{in: "${}", err: "${} is not a valid environment variable name"},
		{in: "${9LIVES}", err: "${9LIVES} is not a valid environment variable name"},
		{in: "${A-B}", err: "${A-B} is not a valid environment variable name"},
		{in: "${:-x}", err: "${} is not a valid environment variable name"},
		{in: "${" + strings.Repeat("x", 60), err: `unterminated ${ in "${xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…": write ${NAME}`},
	}
	for _, tt := range tests {
		got, err := expandString(tt.in, env, func(string, string) {})
		if got != tt.want || err != tt.err {
			t.Errorf("expandString(%q): got %q, error %q; want %q, error %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestExpandEnvEverywhere: every scalar is expanded, keys and list items
// included, and an error points at the scalar that holds the variable.
func TestExpandEnvEverywhere(t *testing.T) {
	text := "a: ${X}\nb:\n  - ${X}-1\n  - {c: '${X}'}\n${K}: v\nd: |\n  line ${X}\ne: ${NOPE}\nf: [ok, \"${NOPE2}\"]\n"
	root, err := strictyaml.Parse("c.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	errs, _ := expandEnv("c.yaml", []*yaml.Node{root}, lookupFrom(map[string]string{"X": "x", "K": "key"}))
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		"c.yaml:8:4: environment variable NOPE is not set: set it, or write ${NOPE:-default}",
		"c.yaml:9:9: environment variable NOPE2 is not set: set it, or write ${NOPE2:-default}",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors: got %q, want %q", got, want)
	}
	var values []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if len(n.Content) == 0 {
			values = append(values, n.Value)
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(root)
	wantValues := []string{"a", "x", "b", "x-1", "c", "x", "key", "v", "d", "line x\n", "e", "${NOPE}", "f", "ok", "${NOPE2}"}
	if !slices.Equal(values, wantValues) {
		t.Errorf("values: got %q, want %q", values, wantValues)
	}
}

func TestRedactor(t *testing.T) {
	root, err := strictyaml.Parse("c.yaml", []byte("a: ${LONG}\nb: ${SHORT}\nc: ${LONGER}\nd: ${UNSET:-defaultvalue}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, r := expandEnv("c.yaml", []*yaml.Node{root}, lookupFrom(map[string]string{
		"LONG":   "secret-value",
		"LONGER": "secret-value-2", // holds LONG: replaced whole
		"SHORT":  "sim",            // too short to hide
	}))
	tests := []struct{ in, want string }{
		{`"secret-value" is wrong`, `"${LONG}" is wrong`},
		{`"secret-value-2" is wrong`, `"${LONGER}" is wrong`},
		{`type "sim" is wrong`, `type "sim" is wrong`},
		{`"defaultvalue" is a default, not a secret`, `"defaultvalue" is a default, not a secret`},
	}
	for _, tt := range tests {
		if got := r.Replace(tt.in); got != tt.want {
			t.Errorf("Replace(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}
