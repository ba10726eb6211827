package prometheus

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/healthseries"
)

// sickHealth is an H100's health with every reading dcgm-exporter has:
// an uncorrectable error with its row remap pending, the power brake on,
// a PCIe link at x8, NVLink errors.
func sickHealth() gpu.Health {
	var h gpu.Health
	for r, v := range map[gpu.HealthReading]float64{
		gpu.ECCCorrectedVolatile: 12, gpu.ECCUncorrectedVolatile: 1, gpu.ECCCorrectedAggregate: 340, gpu.ECCUncorrectedAggregate: 2,
		gpu.RetiredPagesSBE: 0, gpu.RetiredPagesDBE: 1, gpu.RetiredPagesPending: 1,
		gpu.RowRemapCorrectable: 3, gpu.RowRemapUncorrectable: 1, gpu.RowRemapPending: 1, gpu.RowRemapFailed: 0,
		gpu.RecoveryActionReading: float64(gpu.RecoveryReset),
		gpu.ClockEventReasons:     float64(gpu.ClockEventHWSlowdown | gpu.ClockEventHWPowerBrake),
		gpu.PCIeLinkGen:           5, gpu.PCIeLinkGenMax: 5, gpu.PCIeLinkWidth: 8, gpu.PCIeLinkWidthMax: 16, gpu.PCIeReplays: 17,
		gpu.NVLinkCRCErrors: 42, gpu.NVLinkReplayErrors: 4, gpu.NVLinkRecoveryErrors: 1,
		gpu.FanSpeed: 61, gpu.SMClock: 1755, gpu.SMClockMax: 1980, gpu.MemClock: 2619, gpu.MemClockMax: 2619,
	} {
		h.Set(r, v)
	}
	return h
}

// addDCGMGPU adds what dcgm-exporter of generation gen exports of one
// H100 of host with health h, at 40 GiB of 80 used and 90 % busy.
func (f *fakePrometheus) addDCGMGPU(host string, gen healthseries.Generation, h gpu.Health) {
	labels := func(name string) map[string]string {
		return map[string]string{"__name__": name, "gpu": "0", "UUID": "GPU-" + host, "modelName": "NVIDIA H100 80GB HBM3",
			"hostname": host, "instance": host + ":9400", "job": "dcgm"}
	}
	always := func(v float64) func(time.Time) (float64, bool) {
		return func(time.Time) (float64, bool) { return v, true }
	}
	base := map[string]float64{"DCGM_FI_DEV_FB_USED": 40 << 10, "DCGM_FI_DEV_FB_FREE": 40 << 10, "DCGM_FI_DEV_GPU_UTIL": 90,
		"DCGM_FI_DEV_GPU_TEMP": 70, "DCGM_FI_DEV_POWER_USAGE": 350}
	if gen == healthseries.DCGM49 {
		base = map[string]float64{"DCGM_FI_DEV_FB_USED_BYTES": 40 << 30, "DCGM_FI_DEV_FB_FREE_BYTES": 40 << 30,
			"DCGM_FI_DEV_FB_CAPACITY_BYTES": 80 << 30, "DCGM_FI_DEV_GPU_UTIL_RATIO": 0.9, "DCGM_FI_DEV_GPU_TEMP_CELSIUS": 70,
			"DCGM_FI_DEV_BOARD_POWER_WATTS": 350}
	}
	for name, v := range base {
		f.add(labels(name), always(v))
	}
	for _, v := range healthseries.DCGMValues(&h, gen) {
		f.add(labels(v.Name), always(v.Value))
	}
	f.add(map[string]string{"__name__": "up", "instance": host + ":9400", "job": "dcgm"}, always(1))
}

// addAgentHealth adds a gpuwatch agent's health series of its GPU.
func (f *fakePrometheus) addAgentHealth(host string, index int, h gpu.Health) {
	for _, s := range healthseries.All() {
		v, ok := h.Get(s.Reading)
		if !ok {
			continue
		}
		f.add(map[string]string{"__name__": s.Name, "host": host, "gpu": strconv.Itoa(index), "uuid": fmt.Sprintf("GPU-%s-%d", host, index),
			"name": "NVIDIA H100 80GB HBM3", "instance": host + ":9477", "job": "gpuwatch"}, func(time.Time) (float64, bool) { return v * s.Scale, true })
	}
}

// TestHealthFromEverySchema: a hub reads the same health from a gpuwatch
// agent and from dcgm-exporter under both generations of its names, and
// nothing dcgm-exporter does not export (NVLink links down).
func TestHealthFromEverySchema(t *testing.T) {
	want := sickHealth()
	f := newFakePrometheus(t)
	f.addAgentGPU("agent", 0, at0.Add(-time.Hour))
	agentHealth := want
	agentHealth.Set(gpu.NVLinkLinks, 18)
	agentHealth.Set(gpu.NVLinkLinksDown, 1)
	f.addAgentHealth("agent", 0, agentHealth)
	f.addDCGMGPU("legacy", healthseries.DCGMLegacy, want)
	f.addDCGMGPU("renamed", healthseries.DCGM49, want)
	snaps, err := newSource(t, f, Options{}).q.SampleFleet(t.Context(), at0)
	if err != nil {
		t.Fatal(err)
	}
	if got := hostsOf(snaps); got != "agent,legacy,renamed" {
		t.Fatalf("hosts %s, want agent,legacy,renamed", got)
	}
	for _, s := range snaps {
		d := s.Devices[0]
		wantHealth := want
		if s.Host == "agent" {
			wantHealth = agentHealth
		}
		for _, r := range gpu.HealthReadings() {
			got, gok := d.Health.Get(r)
			w, wok := wantHealth.Get(r)
			if gok != wok || got != w {
				t.Errorf("%s: %s = %v (%v), want %v (%v)", s.Host, r, got, gok, w, wok)
			}
		}
		if s.Host != "agent" && (d.MemUsed != 40<<30 || d.MemTotal != 80<<30 || d.UtilGPU != 90 || d.TempC != 70 || d.PowerW != 350) {
			t.Errorf("%s: memory %d of %d, utilization %v, temperature %v, power %v; want 40 GiB of 80, 90, 70, 350",
				s.Host, d.MemUsed>>30, d.MemTotal>>30, d.UtilGPU, d.TempC, d.PowerW)
		}
	}
}

// TestXIDCountsAreEvents: dcgm-exporter's count of XIDs within a window
// gives one event per XID counted, including one that repeats the code
// before it, which its latest XID cannot tell; a count that falls (the
// exporter restarted) is a new baseline.
func TestXIDCountsAreEvents(t *testing.T) {
	f := newFakePrometheus(t)
	f.addDCGMGPU("d", healthseries.DCGMLegacy, gpu.Health{})
	// XID 13 twice at 1m, once at 5m, within an hour's window; the
	// exporter restarts at 9m (its count starts again), and one more XID
	// 13 comes at 11m.
	counts := []float64{0, 2, 2, 3, 3, 0, 1, 1}
	at := func(i int) time.Time { return at0.Add(time.Duration(i) * 2 * time.Minute) }
	f.add(map[string]string{"__name__": healthseries.DCGMXIDCount, "gpu": "0", "UUID": "GPU-d", "hostname": "d", "xid": "13",
		"window_size_in_ms": "3600000", "instance": "d:9400", "job": "dcgm"}, func(t time.Time) (float64, bool) {
		return counts[min(int(t.Sub(at0)/(2*time.Minute)), len(counts)-1)], true
	})
	f.add(map[string]string{"__name__": "DCGM_FI_DEV_XID_ERRORS", "gpu": "0", "UUID": "GPU-d", "hostname": "d", "instance": "d:9400", "job": "dcgm"},
		func(t time.Time) (float64, bool) { return 13, t.Sub(at0) >= 2*time.Minute })
	src := newSource(t, f, Options{Schema: SchemaDCGM})
	var got []int
	for i := range len(counts) {
		snaps, err := src.q.SampleFleet(t.Context(), at(i))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range snaps[0].Events {
			if ev.Kind == gpu.EventXID && ev.XID == 13 {
				n++
			}
		}
		got = append(got, n)
	}
	if want := []int{0, 2, 0, 1, 0, 0, 1, 0}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("XID 13 events by evaluation: got %v, want %v", got, want)
	}
}

// TestBackfillReadsTheHealthTheRulesNeed: a backfill reads a health
// reading over the span a rule's window needs, under every schema's names
// in one range query a round, and no reading nobody needs; dcgm-exporter
// 4.9's memory is read as the memory; the XIDs are read from the first
// step on, so that only those after it are events, in the backfill and
// in the first evaluation after it.
func TestBackfillReadsTheHealthTheRulesNeed(t *testing.T) {
	f := newFakePrometheus(t)
	sick := sickHealth()
	f.addAgentGPU("agent", 0, at0.Add(-time.Hour))
	f.addAgentHealth("agent", 0, sick)
	f.addDCGMGPU("renamed", healthseries.DCGM49, sick)
	// XID 79 thrice long ago, once more 3 minutes ago; dcgm-exporter
	// counts two XID 13 in its hour, from long ago.
	f.add(map[string]string{"__name__": gwXID, "host": "agent", "gpu": "0", "uuid": "GPU-agent-0", "xid": "79",
		"instance": "agent:9477", "job": "gpuwatch"}, func(t time.Time) (float64, bool) {
		if t.Before(at0.Add(-3 * time.Minute)) {
			return 3, true
		}
		return 4, true
	})
	f.add(map[string]string{"__name__": dcgmXIDCount, "gpu": "0", "UUID": "GPU-renamed", "hostname": "renamed", "xid": "13",
		"window_size_in_ms": "3600000", "instance": "renamed:9400", "job": "dcgm"}, func(time.Time) (float64, bool) { return 2, true })
	src := newSource(t, f, Options{Interval: time.Minute})
	throttle, width := ReadingHealth(gpu.ClockEventReasons), ReadingHealth(gpu.PCIeLinkWidth)
	past := Past{{Reading: ReadingMemory, Span: 10 * time.Minute}, {Reading: throttle, Span: 5 * time.Minute}, {Reading: width, Span: 5 * time.Minute}}

	var health []string
	for _, p := range src.q.plans(past) {
		if r := readings[p.families[0]]; r == throttle || r == width {
			health = append(health, fmt.Sprint(p.families))
		}
	}
	var want []string
	for _, name := range SchemaAuto.names() {
		if r := readings[name]; r == throttle || r == width {
			want = append(want, name)
		}
	}
	if len(health) != 1 || health[0] != fmt.Sprint(want) {
		t.Errorf("the health readings are read in %v, want one range query of %v", health, want)
	}

	type reading struct {
		host          string
		ago           time.Duration
		throttle, ecc bool
		memory        uint64
		xids          []uint64
	}
	var got []reading
	err := src.q.backfill(t.Context(), at0, past, func(s *gpu.Snapshot) {
		d := s.Devices[0]
		_, th := d.Health.Get(gpu.ClockEventReasons)
		_, ecc := d.Health.Get(gpu.ECCCorrectedVolatile)
		r := reading{host: s.Host, ago: at0.Sub(s.Time), throttle: th, ecc: ecc, memory: d.MemUsed >> 30}
		for _, ev := range s.Events {
			r.xids = append(r.xids, ev.XID)
		}
		got = append(got, r)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*11 {
		t.Fatalf("backfill warmed %d snapshots, want 22 (2 hosts, 11 steps): %v", len(got), got)
	}
	for _, r := range got {
		wantXIDs := "[]"
		if r.host == "agent" && r.ago == 3*time.Minute {
			wantXIDs = "[79]"
		}
		if r.throttle != (r.ago <= 5*time.Minute) || r.ecc || fmt.Sprint(r.xids) != wantXIDs {
			t.Errorf("%s %v ago: clock event reasons read %v, ECC read %v, XID events %v; want the reasons of the last 5m only, no ECC, XIDs %s",
				r.host, r.ago, r.throttle, r.ecc, r.xids, wantXIDs)
		}
		if r.host == "renamed" && r.memory != 40 {
			t.Errorf("renamed %v ago: %d GiB used, want dcgm-exporter 4.9's 40", r.ago, r.memory)
		}
	}
	snaps, err := src.q.SampleFleet(t.Context(), at0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		if len(s.Events) != 0 {
			t.Errorf("%s: the first evaluation after the backfill tells %v, want nothing new", s.Host, s.Events)
		}
	}
}
