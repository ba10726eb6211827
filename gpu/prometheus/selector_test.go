package prometheus

import "testing"

func TestParseSelector(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "", want: ""},
		{in: "  {}  ", want: ""},
		{in: `{cluster="a"}`, want: `{cluster="a"}`},
		{in: `{ cluster = "a" , job=~'gpu-.*', env!="dev", zone!~` + "`eu-.*`" + `, }`, want: `{cluster="a",job=~"gpu-.*",env!="dev",zone!~"eu-.*"}`},
		{in: `{team="ml \"core\"", path='it\'s'}`, want: `{team="ml \"core\"",path="it's"}`},
		{in: `cluster="a"`, err: `selector at column 1: a selector starts with {, as in {cluster="a"}`},
		{in: `{cluster="a"`, err: `selector at column 13: expected , or } after a matcher`},
		{in: `{cluster="a" job="b"}`, err: `selector at column 14: expected , or } after a matcher`},
		{in: `{cluster:"a"}`, err: `selector at column 9: expected =, !=, =~ or !~ after cluster`},
		{in: `{="a"}`, err: `selector at column 2: expected a label name, got "=\"a\"}"`},
		{in: `{cluster=a}`, err: `selector at column 10: expected a quoted value, got "a}"`},
		{in: `{cluster="a}`, err: `selector at column 10: the value "a} has no closing "`},
		{in: `{cluster="\q"}`, err: `selector at column 10: the value "\q"} has an invalid escape`},
		{in: `{__name__="up"}`, err: `selector at column 2: __name__ is gpuwatch's to choose (it asks for the GPU series of the schema): select by other labels, such as {job="gpu"}`},
		{in: `{cluster="a"} or up`, err: `selector at column 15: unexpected "or up" after the closing }`},
	} {
		sel, err := ParseSelector(tc.in)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseSelector(%s): got %v, want %s", tc.in, err, tc.err)
			}
		case err != nil:
			t.Errorf("ParseSelector(%s): %v", tc.in, err)
		case sel.String() != tc.want:
			t.Errorf("ParseSelector(%s) = %s, want %s", tc.in, sel, tc.want)
		}
	}
}

func TestSelectorQuery(t *testing.T) {
	sel := mustSelector(t, `{cluster="a"}`)
	if got, want := sel.Query([]string{"x", "y"}), `{__name__=~"x|y",cluster="a"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := (Selector{}).Query([]string{"x"}), `{__name__=~"x"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
