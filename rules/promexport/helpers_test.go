package promexport

import (
	"math"
	"path"
	"regexp"
	"strconv"
	"testing"
	"time"
)

func TestCodeMatcherMatchesTheCodesTheComparisonHolds(t *testing.T) {
	for _, op := range []string{">", ">=", "<", "<=", "==", "!="} {
		for _, q := range []float64{0, 1, 9, 10, 13, 47.5, 79, 99, 100, 101, 999, 1000, 4095, -3} {
			m := codeMatcher(op, q)
			var match func(string) bool
			switch {
			case m[0] == '=' && m[1] == '~':
				re := regexp.MustCompile("^(?:" + mustUnquote(t, m[2:]) + ")$")
				match = re.MatchString
			case m[0] == '!':
				v := mustUnquote(t, m[2:])
				match = func(s string) bool { return s != v }
			default:
				v := mustUnquote(t, m[1:])
				match = func(s string) bool { return s == v }
			}
			for code := 0; code <= 5000; code++ {
				want := map[string]bool{">": float64(code) > q, ">=": float64(code) >= q, "<": float64(code) < q,
					"<=": float64(code) <= q, "==": float64(code) == q, "!=": float64(code) != q}[op]
				if got := match(strconv.Itoa(code)); got != want {
					t.Fatalf("xid %s %v: matcher %s on %d: got %v, want %v", op, q, m, code, got, want)
				}
			}
		}
	}
}

func mustUnquote(t *testing.T, s string) string {
	t.Helper()
	v, err := strconv.Unquote(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func TestGlobRegexpMatchesWhatPathMatchDoes(t *testing.T) {
	names := []string{"NVIDIA A100-SXM4-40GB", "NVIDIA A100 80GB PCIe", "NVIDIA H100 80GB HBM3", "NVIDIA H100", "Tesla V100-SXM2-16GB",
		"NVIDIA GeForce RTX 4090", "a*b", "a.b", "a/b", "[x]", "NVIDIA A10", "x-y", "^$"}
	globs := []string{"NVIDIA A100*", "*H100*", "NVIDIA ?100*", "*", "NVIDIA [AH]100*", "NVIDIA [^A]*", "Tesla V100-SXM[0-9]-??GB",
		`a\*b`, "a.b", "a*", "[a-c]*", `\[x\]`, `x[\-]y`, "^$", "NVIDIA A10"}
	for _, g := range globs {
		re, err := globRegexp(g)
		if err != nil {
			t.Fatalf("%q: %v", g, err)
		}
		rx := regexp.MustCompile("^(?:" + re + ")$")
		for _, n := range names {
			want, err := path.Match(g, n)
			if err != nil {
				t.Fatalf("%q: %v", g, err)
			}
			if got := rx.MatchString(n); got != want {
				t.Errorf("glob %q (regexp %s) on %q: got %v, want %v", g, re, n, got, want)
			}
		}
	}
}

func TestNotation(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		vals []float64
		want string
	}{
		{[]float64{5, 5, 5, 5}, "5x3"},
		{[]float64{1, 2, 3, 4, 9}, "1+1x3 9"},
		{[]float64{10, 8, 6}, "10-2x2"},
		{[]float64{0.5, 0.25}, "0.5 0.25"},
		{[]float64{0.1, 0.2, 0.30000000000000004}, "0.1 0.2 0.30000000000000004"}, // not whole: no a+bxN
		{[]float64{1, nan, nan, nan, 2}, "1 stale _x2 2"},
		{[]float64{nan, nan, 3, 3, 3}, "_x2 3x2"},
		{[]float64{7, 7, 7, nan, nan}, "7x2 stale"},
		{[]float64{1073741824, 1073741824, 1073741824}, "1073741824x2"},
	} {
		if got := notation(c.vals); got != c.want {
			t.Errorf("notation(%v) = %q, want %q", c.vals, got, c.want)
		}
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5 * time.Minute: "5m", 90 * time.Second: "1m30s", 40*time.Minute - time.Millisecond: "39m59s999ms",
		26 * time.Hour: "1d2h", 1500 * time.Microsecond: "2ms", 0: "0s", 200 * time.Second: "3m20s",
	} {
		if got := duration(d); got != want {
			t.Errorf("duration(%v) = %q, want %q", d, got, want)
		}
	}
}
