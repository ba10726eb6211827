package prometheus

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// FuzzSelector: any text parses or is refused with an error; what parses
// prints as a selector that parses to the same.
func FuzzSelector(f *testing.F) {
	for _, s := range []string{`{cluster="a"}`, `{a=~'x.*', b!="\"", c!~` + "`y`}", `{`, `{a="\u00e9\x00"}`, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		sel, err := ParseSelector(text)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "selector at column ") {
				t.Errorf("error %q does not say where", err)
			}
			return
		}
		again, err := ParseSelector(sel.String())
		if err != nil || again.String() != sel.String() {
			t.Errorf("%q parsed as %s, which parses as %s (%v)", text, sel, again, err)
		}
	})
}

// FuzzAnswer feeds any bytes as the answer to an instant query, twice
// (the second evaluation compares with the first), to the answer parser
// and the snapshot builder: the parser decodes or refuses, and what it
// decodes becomes snapshots that keep the Source contract. Nothing panics.
func FuzzAnswer(f *testing.F) {
	for _, name := range []string{"dcgm.json", "gpuwatch.json"} {
		raw, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		var answer struct {
			Data struct {
				Result []json.RawMessage `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &answer); err != nil {
			f.Fatal(err)
		}
		// A few series of each: the fuzzer is slow on large inputs.
		for i := 0; i+6 <= len(answer.Data.Result); i += 24 {
			seed, err := json.Marshal(answer.Data.Result[i : i+6])
			if err != nil {
				f.Fatal(err)
			}
			f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":` + string(seed) + `}}`))
		}
	}
	f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"gpuwatch_gpu_memory_used_bytes","host":"a","gpu":"0"},"value":[1,"NaN"]}]},"warnings":["partial"]}`))
	f.Add([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"DCGM_FI_DEV_XID_ERRORS","Hostname":"a\u00e9","gpu":"0","UUID":"x"},"values":[[1,"+Inf"],[2.5,"79"]]}]}}`))
	f.Add([]byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`))
	f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"DCGM_FI_DEV_FB_USED","Hostname":"a","gpu":"0","UUID":"x",` +
		`"namespace":"ml","pod":"p","owner":"alice","app_kubernetes_io_name":"-bad"},"value":[1,"7"]},` +
		`{"metric":{"__name__":"gpuwatch_gpu_process_memory_bytes","host":"a","gpu":"0","pid":"7","label_owner":"bob"},"value":[1,"7"]}]}}`))
	// The pod labels a hub maps owners by, as dcgm-exporter names them.
	podKeys := []string{"app.kubernetes.io/name", "owner"}
	podNames := []string{"app_kubernetes_io_name", "owner", "label_app_kubernetes_io_name", "label_owner"}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := decodeAnswer(bytes.NewReader(data), int64(len(data)), nil, newInterner(), podNames, nil, nil)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "the answer is not Prometheus's JSON: at byte ") && !strings.Contains(err.Error(), "more than the") {
				t.Errorf("error %q does not say where", err)
			}
			return
		}
		sameLabelsAsJSON(t, data, a, podNames)
		sameLabelsCached(t, data, a, podNames)
		var points []point
		for i := range a.series {
			for _, s := range a.series[i].samples {
				points = append(points, point{labels: &a.series[i].labels, value: s.v})
			}
		}
		b := newBuilder(SchemaAuto, time.Minute, podKeys)
		for i := range 2 {
			at := at0.Add(time.Duration(i) * time.Minute)
			e := b.start(at)
			for _, p := range points {
				e.add(p.labels, p.value)
			}
			snaps, _ := e.finish(true)
			checkSnapshots(t, at, snaps)
		}
	})
}

// sameLabelsAsJSON checks, for an answer encoding/json reads the same
// way, that each series' labels gpuwatch keeps are what encoding/json
// reads: escapes, quotes within values, and the previous series' values
// reused.
func sameLabelsAsJSON(t *testing.T, data []byte, a *answer, podNames []string) {
	t.Helper()
	// Generic values: encoding/json matches a struct's fields whatever
	// their case, a map's keys exactly, as Prometheus's answer is read.
	var want map[string]any
	once := func(key string) bool { return bytes.Count(data, []byte(`"`+key+`"`)) == 1 }
	if json.Unmarshal(data, &want) != nil || !once("data") || !once("result") ||
		bytes.Count(data, []byte(`"metric"`)) != len(a.series) {
		return // not comparable: invalid JSON, or a key twice that each reads its own way
	}
	dataObj, _ := want["data"].(map[string]any)
	result, _ := dataObj["result"].([]any)
	if len(result) != len(a.series) {
		return
	}
	for i, r := range result {
		series, _ := r.(map[string]any)
		metric, _ := series["metric"].(map[string]any)
		got := a.series[i].labels
		for name, value := range metric {
			if f := got.field([]byte(name)); f != nil && *f != value {
				t.Fatalf("series %d, label %q: got %q, encoding/json reads %q", i, name, *f, value)
			}
			if j := slices.Index(podNames, name); j >= 0 && got.podLabels[j] != value {
				t.Fatalf("series %d, pod label %q: got %q, encoding/json reads %q", i, name, got.podLabels[j], value)
			}
		}
	}
}

func checkSnapshots(t *testing.T, at time.Time, snaps []*gpu.Snapshot) {
	t.Helper()
	if !slices.IsSortedFunc(snaps, func(a, b *gpu.Snapshot) int { return strings.Compare(a.Host, b.Host) }) {
		t.Fatalf("hosts not sorted: %s", hostsOf(snaps))
	}
	for _, s := range snaps {
		if !s.Time.Equal(at) || s.Host == "" {
			t.Fatalf("snapshot of %q at %v, want a host at %v", s.Host, s.Time, at)
		}
		for i, d := range s.Devices {
			if d.MemUsed > d.MemTotal {
				t.Fatalf("%s GPU %d: memory used %d > total %d", s.Host, d.Index, d.MemUsed, d.MemTotal)
			}
			if i > 0 && d.Index < s.Devices[i-1].Index {
				t.Fatalf("%s: GPU %d after %d", s.Host, d.Index, s.Devices[i-1].Index)
			}
			for _, p := range d.Processes {
				for k, v := range p.PodLabels.All() {
					if !gpu.IsPodLabelKey(k) || v == "" || !gpu.IsPodLabelValue(v) {
						t.Fatalf("%s GPU %d: pod labels %q hold %q=%q, no label", s.Host, d.Index, p.PodLabels, k, v)
					}
				}
			}
		}
	}
}

// sameLabelsCached checks that an answer decoded through a metricCache,
// twice (the second time from the cache), gives each series the labels
// decoded without it.
func sameLabelsCached(t *testing.T, data []byte, want *answer, podNames []string) {
	t.Helper()
	c := newMetricCache()
	for pass := range 2 {
		var got []labelSet
		_, err := decodeAnswer(bytes.NewReader(data), int64(len(data)), nil, newInterner(), podNames, c, func(ls *labelSet, _ []sample) error {
			got = append(got, *ls)
			return nil
		})
		if err != nil {
			t.Fatalf("pass %d: the answer decodes without the cache, not with it: %v", pass, err)
		}
		if len(got) != len(want.series) {
			t.Fatalf("pass %d: %d series with the cache, %d without", pass, len(got), len(want.series))
		}
		for i := range got {
			if !got[i].same(&want.series[i].labels) {
				t.Fatalf("pass %d, series %d: labels %+v with the cache, %+v without", pass, i, got[i], want.series[i].labels)
			}
		}
	}
}
