package gpu

import (
	"strings"
	"testing"
)

func TestPodLabelsOf(t *testing.T) {
	keys := []string{"app.kubernetes.io/name", "owner", "team"}
	tests := []struct {
		values []string
		want   PodLabels
	}{
		{[]string{"llama", "alice", "nlp"}, "app.kubernetes.io/name=llama,owner=alice,team=nlp"},
		{[]string{"", "alice", ""}, "owner=alice"},
		{[]string{"", "", ""}, ""},
		// Outside input that is no label value is left out: it could
		// hold the separators.
		{[]string{"a,b=c", "alice", strings.Repeat("x", 64)}, "owner=alice"},
		{[]string{"-x", "alice bob", "nlp"}, "team=nlp"},
	}
	for _, tt := range tests {
		got := PodLabelsOf(keys, tt.values)
		if got != tt.want {
			t.Errorf("PodLabelsOf(%q) = %q, want %q", tt.values, got, tt.want)
		}
		for i, k := range keys {
			v, ok := got.Get(k)
			if want := tt.values[i]; ok != strings.Contains(string(tt.want), k+"=") || (ok && v != want) {
				t.Errorf("%q.Get(%q) = %q, %v", got, k, v, ok)
			}
		}
	}
	if _, ok := PodLabels("owner=alice").Get("own"); ok {
		t.Errorf("Get of a key's prefix found a label")
	}
	var n int
	for range PodLabels("").All() {
		n++
	}
	if n != 0 {
		t.Errorf("no labels yield %d", n)
	}
}

func TestIsPodLabelKey(t *testing.T) {
	for key, want := range map[string]bool{
		"owner": true, "app.kubernetes.io/name": true, "example.org/owner": true, "Owner_2": true, "1x": true,
		"": false, "/owner": false, "example.org/": false, "Example.org/owner": false, "a/b/c": false,
		"-owner": false, "owner-": false, "own er": false, "own,er": false, "own=er": false, "{owner}": false,
		strings.Repeat("o", 63): true, strings.Repeat("o", 64): false,
	} {
		if got := IsPodLabelKey(key); got != want {
			t.Errorf("IsPodLabelKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestPodLabelSeriesName(t *testing.T) {
	for key, want := range map[string]string{
		"owner": "owner", "app.kubernetes.io/name": "app_kubernetes_io_name", "example.org/cost-center": "example_org_cost_center",
	} {
		if got := PodLabelSeriesName(key); got != want {
			t.Errorf("PodLabelSeriesName(%q) = %q, want %q", key, got, want)
		}
		if got := PodLabelExportName(key); got != "label_"+want {
			t.Errorf("PodLabelExportName(%q) = %q, want label_%s", key, got, want)
		}
	}
}
