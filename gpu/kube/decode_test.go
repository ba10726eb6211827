package kube_test

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/kube"
)

func TestDecodePods(t *testing.T) {
	list := `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"48213"},"items":[
	 {"metadata":{"name":"train-0","namespace":"ml","uid":"5E3C2A1B-7D4F-4A8E-9B0C-1D2E3F4A5B6C","labels":{"owner":"alice","team":"nlp"}}},
	 {"metadata":{"name":"etcd-node-1","namespace":"kube-system","uid":"0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
	   "annotations":{"kubernetes.io/config.mirror":"6d9c2c3a0b4e5f60718293a4b5c6d7e8","kubernetes.io/config.hash":"6d9c2c3a0b4e5f60718293a4b5c6d7e8"}}},
	 {"metadata":{"name":"odd-labels","namespace":"ml","uid":"11111111-2222-4333-8444-555555555555",
	   "labels":{"owner":"not a label value; rm -rf /","team":"` + strings.Repeat("x", 64) + `"}}},
	 {"metadata":{"name":"Not_A_Name","namespace":"ml","uid":"22222222-2222-4333-8444-555555555555"}},
	 {"metadata":{"name":"no-uid","namespace":"ml"}},
	 {"metadata":{"name":"empty-owner","namespace":"ml","uid":"33333333-2222-4333-8444-555555555555","labels":{"owner":"","team":"cv"}}}
	]}`
	got, err := kube.DecodePods(strings.NewReader(list), []string{"owner", "team"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]kube.Pod{
		"5e3c2a1b-7d4f-4a8e-9b0c-1d2e3f4a5b6c": {Namespace: "ml", Name: "train-0", Labels: "owner=alice,team=nlp"},
		"0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b": {Namespace: "kube-system", Name: "etcd-node-1"},
		// A static pod's processes run under its manifest's UID.
		"6d9c2c3a0b4e5f60718293a4b5c6d7e8":     {Namespace: "kube-system", Name: "etcd-node-1"},
		"11111111-2222-4333-8444-555555555555": {Namespace: "ml", Name: "odd-labels"},
		"33333333-2222-4333-8444-555555555555": {Namespace: "ml", Name: "empty-owner", Labels: "team=cv"},
	}
	if len(got) != len(want) {
		t.Errorf("DecodePods gave %d pods, want %d: %+v", len(got), len(want), got)
	}
	for uid, w := range want {
		if got[uid] != w {
			t.Errorf("pod %s = %+v, want %+v", uid, got[uid], w)
		}
	}
}

func TestDecodePodsRefuses(t *testing.T) {
	tests := []struct {
		name string
		body io.Reader
		want string
	}{
		{"not JSON", strings.NewReader("<html>502 Bad Gateway</html>"), "not JSON"},
		{"items not a list", strings.NewReader(`{"items":{"a":1}}`), "not JSON"},
		{"too large", io.MultiReader(strings.NewReader(`{"items":[{"metadata":{"name":"`), endless{}), "larger than the 2 MiB"},
	}
	for _, tt := range tests {
		if _, err := kube.DecodePodsAtMost(tt.body, []string{"owner"}, 2<<20); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: DecodePods error %v, want one that says %q", tt.name, err, tt.want)
		}
	}
}

// endless reads as letters without end.
type endless struct{}

func (endless) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = 'a'
	}
	return len(b), nil
}

func TestDecodePodsKeepsAtMostMaxPods(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range kube.MaxPods + 10 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metadata":{"name":"p-%d","namespace":"ml","uid":"%08d-2222-4333-8444-555555555555"}}`, i, i)
	}
	b.WriteString(`]}`)
	got, err := kube.DecodePods(strings.NewReader(b.String()), nil)
	if err != nil || len(got) != kube.MaxPods {
		t.Errorf("DecodePods of %d pods: %d kept, %v; want %d", kube.MaxPods+10, len(got), err, kube.MaxPods)
	}
}

// FuzzDecodePods reads any answer as a list of pods: an error, or pods
// whose namespaces and names are DNS names and whose labels are of the
// keys asked for, with label values.
func FuzzDecodePods(f *testing.F) {
	f.Add(`{"items":[{"metadata":{"name":"a","namespace":"b","uid":"u","labels":{"owner":"alice"}}}]}`)
	f.Add(`{"items":[{"metadata":{"name":"a","namespace":"b","uid":"u","labels":{"owner":"al,ice=x"},"annotations":{"kubernetes.io/config.mirror":"m"}}}]}`)
	f.Add(`{"items":null}`)
	f.Add(`{"kind":"Status","message":"Unauthorized"}`)
	keys := []string{"example.org/team", "owner"}
	f.Fuzz(func(t *testing.T, body string) {
		pods, err := kube.DecodePods(strings.NewReader(body), keys)
		if err != nil {
			return
		}
		for uid, p := range pods {
			if uid == "" || uid != strings.ToLower(uid) || !gpu.IsDNSSubdomain(p.Namespace) || !gpu.IsDNSSubdomain(p.Name) {
				t.Errorf("pod %q: %+v", uid, p)
			}
			for k, v := range p.Labels.All() {
				if (k != keys[0] && k != keys[1]) || v == "" || !gpu.IsPodLabelValue(v) {
					t.Errorf("pod %q has label %q=%q, which is not asked for or no label value", uid, k, v)
				}
			}
		}
	})
}
