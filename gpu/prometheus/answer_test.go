package prometheus

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestParseAnswerAgreesWithEncodingJSON decodes the recorded answers with
// the answer parser and with encoding/json: the same series, labels and
// values.
func TestParseAnswerAgreesWithEncodingJSON(t *testing.T) {
	for _, name := range []string{"dcgm.json", "gpuwatch.json"} {
		raw, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var want struct {
			Status string
			Data   struct {
				ResultType string
				Result     []struct {
					Metric map[string]string
					Value  [2]any
				}
			}
		}
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		got, err := parseAnswer(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.status != want.Status || got.resultType != want.Data.ResultType || len(got.series) != len(want.Data.Result) {
			t.Fatalf("%s: status %s, type %s, %d series; want %s, %s, %d", name, got.status, got.resultType, len(got.series),
				want.Status, want.Data.ResultType, len(want.Data.Result))
		}
		for i, w := range want.Data.Result {
			g := got.series[i]
			m := w.Metric
			ls := labelSet{name: m["__name__"], host: m["host"], hostname: m["Hostname"] + m["hostname"], instance: m["instance"], job: m["job"], gpu: m["gpu"],
				uuid: m["uuid"], uuidDCGM: m["UUID"], gpuInstance: m["GPU_I_ID"], gpuName: m["name"], modelName: m["modelName"],
				namespace: m["namespace"], pod: m["pod"], container: m["container"], xid: m["xid"], pid: m["pid"], user: m["user"], command: m["command"],
				profileDCGM: m["GPU_I_PROFILE"], parentUUID: m["parent_uuid"], migGI: m["gpu_instance"], migCI: m["compute_instance"], profile: m["profile"]}
			v, _ := strconv.ParseFloat(w.Value[1].(string), 64)
			ts := int64(w.Value[0].(float64) * 1000)
			if !g.labels.same(&ls) || len(g.samples) != 1 || g.samples[0].v != v || g.samples[0].t != ts {
				t.Errorf("%s series %d: got %+v %+v, want %+v %v at %d", name, i, g.labels, g.samples, ls, v, ts)
			}
		}
	}
}

func TestParseAnswerErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, `at byte 0: expected '{'`},
		{`{"status":"success","data":{"result":[{"metric":{"gpu":0}}]}}`, `at byte 55: expected a string`},
		{`{"status":"success","data":{"result":[{"metric":{"pci_bus_id":0}}]}}`, `label pci_bus_id has a value that is not a string`},
		{`{"status":"success","data":{"result":[{"value":[1,"many"]}]}}`, `the value "many" is not a number`},
		{`{"status":"success","data":{"result":[{"value":[1e300,"1"]}]}}`, `the time 1e+300 is out of range`},
		{`{"status":"success"} trailing`, `unexpected text after the answer`},
		{"{\"a\":\"\x01\"}", `a control character in a string`},
		{`{"a":"\q"}`, `a string with an invalid escape`},
		{`{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, `values nested more than 64 deep`},
	} {
		_, err := parseAnswer([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseAnswer(%.40q): got %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}

// FuzzParseValue checks that a sample's value reads as strconv reads it,
// whole numbers through the fast path included.
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{"0", "1", "85520809984", "999999999999999", "1000000000000000", "0.37", "-1", "+Inf", "NaN", "1e3", "007", "", "1_0", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := strconv.ParseFloat(s, 64)
		got, ok := parseValue([]byte(s))
		if ok != (err == nil) || ok && got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("parseValue(%q) = %v, %v; strconv: %v, %v", s, got, ok, want, err)
		}
	})
}
