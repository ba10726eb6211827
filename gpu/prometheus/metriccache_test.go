package prometheus

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestMetricCache: answers decoded through the cache give each series the
// labels decoded without it, when their series are the same as the last
// answer's, when a label keeps its length but not its value, when a
// series comes or goes, and when a label value holds braces, quotes and
// escapes.
func TestMetricCache(t *testing.T) {
	series := func(users ...string) string {
		var b strings.Builder
		b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
		for i, u := range users {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"metric":{"__name__":"gpuwatch_gpu_user_memory_bytes","gpu":"%d","host":"a","user":%s},"value":[1,"%d"]}`, i, u, i)
		}
		b.WriteString(`]}}`)
		return b.String()
	}
	c := newMetricCache()
	for _, answer := range []string{
		series(`"alice"`, `"bob"`, `"carol"`),
		series(`"alice"`, `"bob"`, `"carol"`),
		series(`"alice"`, `"rob"`, `"carol"`),           // the same length, another value
		series(`"alice"`, `"carol"`),                    // a series gone
		series(`"alice"`, `"dave"`, `"carol"`, `"eve"`), // series come
		series(`"a}\"\\\u00e9"`, `"b{"`, `"carol"`),     // braces, quotes, escapes
		series(`"a}\"\\\u00e9"`, `"b{"`, `"carol"`),
	} {
		want, err := parseAnswer([]byte(answer))
		if err != nil {
			t.Fatal(err)
		}
		var got []labelSet
		if _, err := decodeAnswer(strings.NewReader(answer), int64(len(answer)), nil, newInterner(), nil, c, func(ls *labelSet, _ []sample) error {
			got = append(got, *ls)
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", answer, err)
		}
		if len(got) != len(want.series) {
			t.Fatalf("%s: %d series, want %d", answer, len(got), len(want.series))
		}
		for i := range got {
			if got[i] != want.series[i].labels {
				t.Errorf("%s: series %d: %+v, want %+v", answer, i, got[i].user, want.series[i].labels.user)
			}
		}
	}
}

// TestMetricCacheReadsInPieces: an answer that arrives a few bytes a read
// decodes as one that arrives whole, from the cache or not.
func TestMetricCacheReadsInPieces(t *testing.T) {
	answer := []byte(`{"status":"success","data":{"resultType":"vector","result":[` +
		`{"metric":{"__name__":"gpuwatch_gpu_info","gpu":"0","host":"a","uuid":"GPU-0"},"value":[1,"1"]},` +
		`{"metric":{"__name__":"gpuwatch_gpu_info","gpu":"1","host":"a","uuid":"GPU-1"},"value":[1,"1"]}]}}`)
	want, err := parseAnswer(answer)
	if err != nil {
		t.Fatal(err)
	}
	c := newMetricCache()
	for pass := range 2 {
		var got []labelSet
		buf := make([]byte, 0, 8)
		if _, err := decodeAnswer(&trickle{r: bytes.NewReader(answer)}, int64(len(answer)), &buf, newInterner(), nil, c, func(ls *labelSet, _ []sample) error {
			got = append(got, *ls)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != want.series[i].labels {
				t.Errorf("pass %d, series %d: %+v, want %+v", pass, i, got[i], want.series[i].labels)
			}
		}
	}
}

// trickle reads three bytes at a time.
type trickle struct{ r *bytes.Reader }

func (t *trickle) Read(p []byte) (int, error) { return t.r.Read(p[:min(len(p), 3)]) }
