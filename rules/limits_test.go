package rules

import (
	"fmt"
	"strings"
	"testing"
)

// TestRuleSizesBounded: a 1 MiB alert name or summary, a label of a page,
// or a rule with dozens of labels is refused at its line and column, as
// a silence's comment is: names and labels go into the store's keys and
// every notification.
func TestRuleSizesBounded(t *testing.T) {
	var labels strings.Builder
	for i := range MaxLabels + 1 {
		fmt.Fprintf(&labels, "      l%d: x\n", i)
	}
	for _, c := range []struct{ name, text, want string }{
		{"a 1 MiB name", "rules:\n  - alert: G" + strings.Repeat("x", 1<<20) + "\n    when: temperature > 85\n",
			"2:12: alert name is 1048577 bytes, the most is 128"},
		{"a 1 MiB summary", "rules:\n  - alert: GPUHot\n    when: temperature > 85\n    summary: " + strings.Repeat("x", 1<<20) + "\n",
			"4:14: summary is 1048576 bytes, the most is 4096"},
		{"a long label value", "rules:\n  - alert: GPUHot\n    when: temperature > 85\n    labels:\n      team: " + strings.Repeat("x", 2000) + "\n",
			"5:7: label team's value is 2000 bytes, the most is 1024"},
		{"a long label name", "rules:\n  - alert: GPUHot\n    when: temperature > 85\n    labels:\n      t" + strings.Repeat("x", 200) + ": ml\n",
			"5:7: label name is 201 bytes, the most is 128"},
		{"too many labels", "rules:\n  - alert: GPUHot\n    when: temperature > 85\n    labels:\n" + labels.String(),
			"5:7: a rule has 33 labels, the most is 32"},
	} {
		_, err := ParseFile("r.yaml", []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), "r.yaml:"+c.want) {
			t.Errorf("%s: got %.300v, want r.yaml:%s", c.name, err, c.want)
		}
	}
}
