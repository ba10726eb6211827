package prometheus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// repeated reads c over and over.
type repeated byte

func (c repeated) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(c)
	}
	return len(p), nil
}

// longString is a JSON string of n bytes of c, read as it is made.
func longString(c byte, n int64) io.Reader {
	return io.MultiReader(strings.NewReader(`"`), io.LimitReader(repeated(c), n), strings.NewReader(`"`))
}

func healthySeries(host string) string {
	return `{"metric":{"__name__":"gpuwatch_gpu_temperature_celsius","host":"` + host + `","gpu":"0","uuid":"GPU-` + host + `","instance":"` + host + `:9477","job":"gpuwatch"},"value":[1700000000,"90"]}`
}

// TestDecodeLeavesOutLongLabels: beside healthy series, one whose host
// is 33 KiB and one whose uuid is 30 MiB are left out, each described
// (its name, where it is from, the label too long and its size), while
// the answer is read in bounded memory: the 30 MiB are never held. A
// label gpuwatch does not read may be as long as it likes, and a key
// too long is none gpuwatch reads.
func TestDecodeLeavesOutLongLabels(t *testing.T) {
	const hostBytes, uuidBytes = 33 << 10, 30 << 20
	answer := func() io.Reader {
		return io.MultiReader(
			strings.NewReader(`{"status":"success","data":{"resultType":"vector","result":[`+healthySeries("a")+`,`),
			strings.NewReader(`{"metric":{"__name__":"gpuwatch_gpu_temperature_celsius","gpu":"0","host":`), longString('h', hostBytes),
			strings.NewReader(`,"instance":"evil:9477"},"value":[1700000000,"90"]},`),
			strings.NewReader(`{"metric":{"__name__":"gpuwatch_gpu_temperature_celsius","host":"c","gpu":"1","uuid":`), longString('u', uuidBytes),
			strings.NewReader(`},"value":[1700000000,"90"]},`),
			strings.NewReader(`{"metric":{"__name__":"gpuwatch_gpu_temperature_celsius","host":"b","gpu":"0","uuid":"GPU-b","pod_annotation":`), longString('p', uuidBytes),
			strings.NewReader(`,`), longString('k', 1<<20), strings.NewReader(`:"v"},"value":[1700000000,"90"]}`),
			strings.NewReader(`]}}`))
	}
	var kept []string
	each := func(ls *labelSet, samples []sample) error {
		kept = append(kept, ls.host)
		return nil
	}
	if _, err := decodeAnswer(answer(), maxAnswer, nil, newInterner(), nil, newMetricCache(), each); err != nil { // warm up: buffers, interned strings
		t.Fatal(err)
	}
	kept = nil
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a, err := decodeAnswer(answer(), maxAnswer, nil, newInterner(), nil, newMetricCache(), each)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(kept, " ") != "a b" {
		t.Errorf("series kept of hosts %q, want a and b", kept)
	}
	if took := after.TotalAlloc - before.TotalAlloc; took > 2<<20 {
		t.Errorf("reading an answer of %d MiB of labels allocated %d KiB, want under 2 MiB: the long values must not be held", (2*uuidBytes+hostBytes)>>20, took>>10)
	}
	want := []string{
		`gpuwatch_gpu_temperature_celsius{instance="evil:9477", gpu="0", host="` + strings.Repeat("h", maxQuoted) + `"… (` + strconv.Itoa(hostBytes) + ` bytes)}`,
		`gpuwatch_gpu_temperature_celsius{host="c", gpu="1", uuid="` + strings.Repeat("u", maxQuoted) + `"… (` + strconv.Itoa(uuidBytes) + ` bytes)}`,
	}
	if a.refusedCount != 2 || strings.Join(a.refused, "\n") != strings.Join(want, "\n") {
		t.Errorf("refused %d series:\n%s\nwant 2:\n%s", a.refusedCount, strings.Join(a.refused, "\n"), strings.Join(want, "\n"))
	}
}

// TestDecodeBounds: an answer past what gpuwatch reads fails with an
// error saying the limit: more series than MaxSeries, a series of more
// points than MaxPoints, a number of more digits than any has.
func TestDecodeBounds(t *testing.T) {
	series := io.MultiReader(strings.NewReader(`{"status":"success","data":{"resultType":"vector","result":[`),
		io.LimitReader(&seriesList{}, int64(MaxSeries+1)*int64(len(tinySeries)+1)-1), strings.NewReader(`]}}`))
	points := `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[` +
		strings.TrimSuffix(strings.Repeat(`[1,"1"],`, MaxPoints+2), ",") + `]}]}}`
	number := `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"` + strings.Repeat("1", 100) + `"]}]}}`
	for _, tc := range []struct {
		name string
		in   io.Reader
		want string
	}{
		{"series", series, "the answer has more than 500000 series, the most gpuwatch reads"},
		{"points", strings.NewReader(points), "a series of more than 11001 points"},
		{"number", strings.NewReader(number), "is not a number"},
	} {
		_, err := decodeAnswer(tc.in, maxAnswer, nil, newInterner(), nil, nil, func(*labelSet, []sample) error { return nil })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

const tinySeries = `{"metric":{},"value":[1,"1"]}`

// seriesList reads tinySeries, comma after comma, for ever.
type seriesList struct{ at int }

func (s *seriesList) Read(p []byte) (int, error) {
	const item = tinySeries + ","
	for i := range p {
		p[i] = item[s.at]
		s.at = (s.at + 1) % len(item)
	}
	return len(p), nil
}

// distinctGPUs reads an answer of n series, each of a GPU of its own, 8
// to a host, as it is made.
type distinctGPUs struct {
	n, next int
	buf     []byte
}

func (g *distinctGPUs) Read(p []byte) (int, error) {
	for len(g.buf) < len(p) && g.next <= g.n+1 {
		switch {
		case g.next == 0:
			g.buf = append(g.buf, `{"status":"success","data":{"resultType":"vector","result":[`...)
		case g.next == g.n+1:
			g.buf = append(g.buf, `]}}`...)
		default:
			i := g.next - 1
			if i > 0 {
				g.buf = append(g.buf, ',')
			}
			g.buf = fmt.Appendf(g.buf, `{"metric":{"__name__":"gpuwatch_gpu_temperature_celsius","host":"h%d","gpu":"%d","uuid":"GPU-%d"},"value":[1,"50"]}`, i/8, i%8, i)
		}
		g.next++
	}
	if len(g.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

type streamAPI struct{ body func() io.Reader }

func (s streamAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(s.body()), Request: r}, nil
}

// TestSampleFleetRefusesTooManyGPUs: an answer of a million series, each
// of a GPU of its own, fails the evaluation (a *gpu.SourceError saying
// the limit) once it names more than MaxGPUs GPUs, in bounded memory:
// what is allocated on the way is a fraction of what the million GPUs
// would take.
func TestSampleFleetRefusesTooManyGPUs(t *testing.T) {
	s, err := New(Options{URL: "http://prometheus:9090", Interval: time.Second, Schema: SchemaGPUWatch,
		Client: &http.Client{Transport: streamAPI{func() io.Reader { return &distinctGPUs{n: 1_000_000} }}}})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = s.q.SampleFleet(context.Background(), time.Unix(1, 0))
	runtime.ReadMemStats(&after)
	var serr *gpu.SourceError
	if !errors.As(err, &serr) || !strings.Contains(err.Error(), "the series name more than 20000 GPUs, the most a hub watches") {
		t.Fatalf("SampleFleet of a million GPUs: got %v, want a SourceError saying the limit", err)
	}
	if took := after.TotalAlloc - before.TotalAlloc; took > 128<<20 {
		t.Errorf("refusing a million GPUs allocated %d MiB, want under 128 MiB", took>>20)
	}
}
