package prometheus

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// TestFilingAgreesWithReadingAfresh: a hub that files each series under
// the GPU it went to at the last evaluation (the metric cache's label
// sets, labelSet.filed), in the build it keeps for it, makes the same
// snapshots, events included, as one that reads every answer's labels
// afresh, looks every GPU up and makes every GPU's build anew, over
// evaluations whose answers change as fleets do: GPUs that go and come
// back (their builds let go and made anew), hosts that swap places in the
// answer, a label that changes, a host scraped through another target,
// XID counters that rise, GPUs lost.
func TestFilingAgreesWithReadingAfresh(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 33))
			var answer string
			api := &memoryAPI{instant: func() []byte { return []byte(answer) }}
			open := func(cached bool) *Source {
				src, err := New(Options{URL: "http://prometheus:9090", Schema: SchemaGPUWatch, Interval: 30 * time.Second, Client: &http.Client{Transport: api}})
				if err != nil {
					t.Fatal(err)
				}
				if !cached {
					src.q.metrics = nil
				}
				return src
			}
			cached, afresh := open(true), open(false)
			f := newChangingFleet(r)
			at := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
			for step := range 40 {
				at = at.Add(30 * time.Second)
				answer = f.next(r, at)
				got, gerr := cached.q.SampleFleet(t.Context(), at)
				afresh.q.build.retire(func(*deviceBuild) bool { return true }) // every GPU's build made anew
				want, werr := afresh.q.SampleFleet(t.Context(), at)
				if g, w := fmt.Sprintf("%+v %v", deref(got), gerr), fmt.Sprintf("%+v %v", deref(want), werr); g != w {
					t.Fatalf("step %d:\nfiled:  %s\nafresh: %s\nanswer: %s", step, g, w, answer)
				}
			}
		})
	}
}

// changingFleet is a fleet whose answers change from one evaluation to
// the next.
type changingFleet struct {
	hosts   []string
	present [][]bool   // by host and GPU
	users   [][]string // by host and GPU
	xids    [][]int    // by host and GPU: the count of XID 79
	lost    [][]bool
	job     []string // by host: the job scraping it
}

func newChangingFleet(r *rand.Rand) *changingFleet {
	f := &changingFleet{}
	for h := range 2 + r.IntN(8) {
		f.hosts = append(f.hosts, fmt.Sprintf("node%02d", h))
		n := 1 + r.IntN(4)
		f.present = append(f.present, make([]bool, n))
		f.users = append(f.users, make([]string, n))
		f.xids = append(f.xids, make([]int, n))
		f.lost = append(f.lost, make([]bool, n))
		f.job = append(f.job, "gpuwatch")
		for g := range n {
			f.present[h][g], f.users[h][g] = true, fmt.Sprintf("user%d", r.IntN(5))
		}
	}
	return f
}

// next changes the fleet a little and writes its answer at time at.
func (f *changingFleet) next(r *rand.Rand, at time.Time) string {
	if r.IntN(4) == 0 { // two hosts swap places in the answer
		i, j := r.IntN(len(f.hosts)), r.IntN(len(f.hosts))
		f.hosts[i], f.hosts[j] = f.hosts[j], f.hosts[i]
		f.present[i], f.present[j] = f.present[j], f.present[i]
		f.users[i], f.users[j] = f.users[j], f.users[i]
		f.xids[i], f.xids[j] = f.xids[j], f.xids[i]
		f.lost[i], f.lost[j] = f.lost[j], f.lost[i]
		f.job[i], f.job[j] = f.job[j], f.job[i]
	}
	for h := range f.hosts {
		if r.IntN(10) == 0 {
			f.job[h] = []string{"gpuwatch", "gpuwatch-b"}[r.IntN(2)]
		}
		for g := range f.present[h] {
			switch r.IntN(12) {
			case 0:
				f.present[h][g] = !f.present[h][g]
			case 1:
				f.users[h][g] = fmt.Sprintf("user%d", r.IntN(5))
			case 2:
				f.xids[h][g] += 1 + r.IntN(2)
			case 3:
				f.lost[h][g] = !f.lost[h][g]
			}
		}
	}
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	ts := fmt.Sprintf("%.3f", float64(at.UnixMilli())/1000)
	n := 0
	item := func() {
		if n++; n > 1 {
			b.WriteByte(',')
		}
	}
	write := func(name, extra string, h, g int, value string) {
		item()
		fmt.Fprintf(&b, `{"metric":{"__name__":%q,"gpu":"%d","host":%q,"instance":"%s:9477","job":%q,"uuid":"GPU-%s-%d"%s},"value":[%s,%q]}`,
			name, g, f.hosts[h], f.hosts[h], f.job[h], f.hosts[h], g, extra, ts, value)
	}
	lost := func(h, g int) string {
		if f.lost[h][g] {
			return "1"
		}
		return "0"
	}
	families := []struct {
		name  string
		value func(h, g int) string
	}{
		{"gpuwatch_gpu_info", func(int, int) string { return "1" }},
		{"gpuwatch_gpu_lost", lost},
		{"gpuwatch_gpu_memory_used_bytes", func(h, g int) string { return fmt.Sprint(r.IntN(80) << 30) }},
		{"gpuwatch_gpu_memory_total_bytes", func(int, int) string { return fmt.Sprint(80 << 30) }},
		{"gpuwatch_gpu_utilization_ratio", func(int, int) string { return fmt.Sprintf("%.2f", r.Float64()) }},
		{"gpuwatch_gpu_temperature_celsius", func(int, int) string { return fmt.Sprint(30 + r.IntN(60)) }},
	}
	for _, fam := range families {
		for h := range f.hosts {
			for g, ok := range f.present[h] {
				if ok {
					write(fam.name, `,"name":"NVIDIA H100"`, h, g, fam.value(h, g))
				}
			}
		}
	}
	for h := range f.hosts {
		for g, ok := range f.present[h] {
			if ok {
				write("gpuwatch_gpu_user_memory_bytes", fmt.Sprintf(`,"user":%q`, f.users[h][g]), h, g, fmt.Sprint(1<<30))
			}
			if ok && f.xids[h][g] > 0 {
				write("gpuwatch_gpu_xid_errors_total", `,"xid":"79"`, h, g, fmt.Sprint(f.xids[h][g]))
			}
		}
		item()
		fmt.Fprintf(&b, `{"metric":{"__name__":"up","instance":"%s:9477","job":%q},"value":[%s,"1"]}`, f.hosts[h], f.job[h], ts)
	}
	b.WriteString(`]}}`)
	return b.String()
}

// deref is the snapshots themselves, to print.
func deref(snaps []*gpu.Snapshot) []gpu.Snapshot {
	out := make([]gpu.Snapshot, len(snaps))
	for i, s := range snaps {
		out[i] = *s
	}
	return out
}
