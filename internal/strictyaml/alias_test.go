package strictyaml

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// bomb is levels of lists that each alias the level below nine times.
func bomb(levels int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, y]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 9), ", "))
	}
	return b.String()
}

func TestParseRefusesAliasBombs(t *testing.T) {
	tests := []struct {
		name, text string
		want       string // the error, "" for none
	}{
		{"shared values", "base: &b {receiver: ops, group_wait: 10s}\nroutes: [*b, *b, *b, *b, *b, *b, *b, *b]\n", ""},
		{"merge keys", "base: &b {a: 1, b: 2}\none: {<<: *b, c: 3}\ntwo: {<<: *b, c: 4}\n", ""},
		{"four levels", bomb(4), ""},
		{"seven levels", bomb(7), "8:10: the aliases of this file make its 82 nodes stand for 16815133, more than 100820: alias *a6 alone stands for 1660753"},
		{"an alias in its own value", "a: &loop\n  - x\n  - *loop\n", "3:5: alias *loop is inside the value of its own anchor &loop"},
		{"an alias in a nested value of its own", "a: &m\n  b:\n    c: [*m]\n", "3:9: alias *m is inside the value of its own anchor &m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(tt.text))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Parse: got %v, want no error", err)
				}
				return
			}
			var pe *Error
			if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "f.yaml:"+tt.want) {
				t.Fatalf("Parse: got %v, want f.yaml:%s…", err, tt.want)
			}
		})
	}
}
