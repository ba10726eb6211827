package digest

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/notifier"
)

const gib = 1 << 30

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func hour(i int) time.Time { return t0.Add(time.Duration(i) * time.Hour) }

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestBuildGPUMath(t *testing.T) {
	gpus := []GPUHour{
		{Hour: hour(0), GPU: 0, UUID: "GPU-a", Name: "A100", Seconds: 3600, UtilSeconds: 1800, UtilMax: 80, MemMax: 10 * gib,
			MemTotal: 40 * gib, BusySeconds: 3000, IdleHeldSeconds: 600, TempMax: 70, EnergyJoules: 3.6e6},
		{Hour: hour(1), GPU: 0, UUID: "GPU-a", Name: "A100", Seconds: 1800, UtilSeconds: 1800, UtilMax: 100, MemMax: 30 * gib,
			MemTotal: 40 * gib, BusySeconds: 1800, TempMax: 85, EnergyJoules: 1.8e6},
		{Hour: hour(0), GPU: 1, UUID: "GPU-b", Name: "A100", Seconds: 3600, UtilMax: 0, MemMax: 20 * gib, MemTotal: 40 * gib,
			IdleHeldSeconds: 3600, TempMax: 40, EnergyJoules: 0.36e6},
		{Hour: hour(1), GPU: 1, UUID: "GPU-b", Name: "A100", Seconds: 3600, UtilMax: math.NaN(), TempMax: math.Inf(1)},
	}
	r := Build(gpus, nil, nil, Options{PricePerKWh: 0.30, Currency: "EUR"})
	if len(r.GPUs) != 2 {
		t.Fatalf("got %d GPUs, want 2", len(r.GPUs))
	}
	g0, g1 := r.GPUs[0], r.GPUs[1]
	tests := []struct {
		name      string
		got, want float64
	}{
		// 3600 util-seconds over 5400 s, not the unweighted mean 75%.
		{"GPU 0 average utilization", g0.AvgUtil, 100 * 3600.0 / 5400},
		{"GPU 0 peak utilization", g0.PeakUtil, 100},
		{"GPU 0 covered hours", g0.CoveredHours, 1.5},
		{"GPU 0 busy hours", g0.BusyHours, 4800.0 / 3600},
		{"GPU 0 idle-held hours", g0.IdleHeldHours, 600.0 / 3600},
		{"GPU 0 peak temperature", g0.PeakTemp, 85},
		{"GPU 0 energy kWh", g0.EnergyKWh, 5.4e6 / 3.6e6},
		{"GPU 0 cost", g0.Cost, 1.5 * 0.30},
		{"GPU 1 average utilization", g1.AvgUtil, 0},
		{"GPU 1 peak utilization (NaN ignored)", g1.PeakUtil, 0},
		{"GPU 1 peak temperature (Inf ignored)", g1.PeakTemp, 40},
		{"GPU 1 energy kWh", g1.EnergyKWh, 0.1},
		{"host covered hours", r.CoveredHours, 12600.0 / 3600},
		{"host average utilization", r.AvgUtil, 100 * 3600.0 / 12600},
		{"host busy share", r.BusyShare, 4800.0 / 12600},
		{"host idle share", r.IdleShare, 4200.0 / 12600},
		{"host idle-held hours", r.IdleHeldHours, 4200.0 / 3600},
		{"host energy kWh", r.EnergyKWh, 1.6},
		{"host cost", r.Cost, 1.6 * 0.30},
	}
	for _, tt := range tests {
		if !near(tt.got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if g0.PeakMem != 30*gib || g0.MemTotal != 40*gib {
		t.Errorf("GPU 0 memory: got peak %d of %d, want %d of %d", g0.PeakMem, g0.MemTotal, 30*gib, 40*gib)
	}
	if !r.Priced || r.From != hour(0) || r.To != hour(2) {
		t.Errorf("got priced %v, window %v – %v; want true, %v – %v (the span of the hours)", r.Priced, r.From, r.To, hour(0), hour(2))
	}
	if _, err := json.Marshal(r); err != nil {
		t.Errorf("a report with NaN and Inf peaks in its hours does not encode as JSON: %v", err)
	}
}

func TestBuildUnpricedHasNoCost(t *testing.T) {
	r := Build([]GPUHour{{Hour: hour(0), Seconds: 3600, EnergyJoules: 3.6e6}}, nil, nil, Options{})
	if r.Priced || r.Cost != 0 || r.GPUs[0].Cost != 0 {
		t.Errorf("got priced %v, cost %v and %v; want false, 0, 0", r.Priced, r.Cost, r.GPUs[0].Cost)
	}
	if strings.Contains(r.Text(), "cost") {
		t.Errorf("an unpriced report mentions cost:\n%s", r.Text())
	}
}

func TestBuildUsers(t *testing.T) {
	var users []UserHour
	for i := range 3 {
		users = append(users,
			UserHour{Hour: hour(i), User: "alice", GPU: 1, UUID: "GPU-b", GPUSeconds: 3600, ByteSeconds: 20 * gib * 3600,
				IdleHeldSeconds: 3600, IdleHeldMax: 20 * gib},
			UserHour{Hour: hour(i), User: "bob", GPU: 0, GPUSeconds: 1800, ByteSeconds: 4 * gib * 3600},
			UserHour{Hour: hour(i), User: "bob", GPU: 2, GPUSeconds: 1800, ByteSeconds: 4 * gib * 3600,
				IdleHeldSeconds: 600, IdleHeldMax: 2 * gib},
			UserHour{Hour: hour(i), User: "", GPU: 0, GPUSeconds: 100},
			UserHour{Hour: hour(i), User: "dave", GPU: 3, GPUSeconds: 50, IdleHeldSeconds: 60, IdleHeldMax: 8 * gib},
		)
	}
	r := Build(nil, users, nil, Options{TopUsers: 2})
	want := []UserReport{
		{User: "alice", GPUHours: 3, GiBHours: 60, GPUs: []int{1}},
		{User: "bob", GPUHours: 3, GiBHours: 24, GPUs: []int{0, 2}},
	}
	if len(r.Users) != len(want) {
		t.Fatalf("got %d users %+v, want %d (TopUsers 2)", len(r.Users), r.Users, len(want))
	}
	for i, w := range want {
		g := r.Users[i]
		if g.User != w.User || !near(g.GPUHours, w.GPUHours) || !near(g.GiBHours, w.GiBHours) || !slices.Equal(g.GPUs, w.GPUs) {
			t.Errorf("user %d: got %+v, want %+v", i, g, w)
		}
	}
	if r.OtherUsers != 2 {
		t.Errorf("got %d other users, want 2 (dave and the unknown user)", r.OtherUsers)
	}
	// dave's 3 minutes are under MinIdleHeld; alice's 3h come before bob's 30m.
	wantIdle := []IdleHolder{
		{User: "alice", GPU: 1, UUID: "GPU-b", Seconds: 3 * 3600, MaxBytes: 20 * gib},
		{User: "bob", GPU: 2, Seconds: 1800, MaxBytes: 2 * gib},
	}
	if !slices.Equal(r.IdleHolders, wantIdle) {
		t.Errorf("got idle holders %+v, want %+v", r.IdleHolders, wantIdle)
	}
	if got := Build(nil, users, nil, Options{TopUsers: 10}).Users; len(got) != 4 || got[2].User != unknownUser {
		t.Errorf("got users %+v, want 4 with %q third (above dave's 3 minutes)", got, unknownUser)
	}
}

func TestBuildAlerts(t *testing.T) {
	alerts := []AlertHour{
		{Hour: hour(0), Alert: "GPUMemoryHigh", Fired: 2, LongestSeconds: 600},
		{Hour: hour(3), Alert: "GPUHeldIdle", Fired: 1, LongestSeconds: 7200},
		{Hour: hour(5), Alert: "GPUMemoryHigh", Fired: 1, LongestSeconds: 900},
		{Hour: hour(6), Alert: "GPUHot", Fired: 0},
	}
	r := Build(nil, nil, alerts, Options{})
	want := []AlertReport{{Alert: "GPUMemoryHigh", Fired: 3, LongestSeconds: 900}, {Alert: "GPUHeldIdle", Fired: 1, LongestSeconds: 7200}}
	if !slices.Equal(r.Alerts, want) || r.AlertsFired != 4 {
		t.Errorf("got alerts %+v (%d fired), want %+v (4 fired)", r.Alerts, r.AlertsFired, want)
	}
}

// TestBuildStillFiring is the morning digest that missed the alert that
// fired all night: alerts still firing at the end of the window count, as
// still firing, for as long as they have fired.
func TestBuildStillFiring(t *testing.T) {
	alerts := []AlertHour{{Hour: hour(1), Alert: "GPUHot", Fired: 1, LongestSeconds: 600}}
	firing := []FiringAlert{
		{Alert: "GPUHot", Since: hour(2)},                  // fired in the window: 22h to its end
		{Alert: "GPUIdleButHeld", Since: hour(-30)},        // fired before the window, still firing
		{Alert: "GPUMemoryLeak", Since: hour(24).Add(1)},   // after the window: not in it
		{Alert: "GPUIdleButHeld", Since: hour(23).Add(30)}, // another GPU, in the window
	}
	r := Build(nil, nil, alerts, Options{From: hour(0), To: hour(24), Firing: firing})
	want := []AlertReport{
		{Alert: "GPUHot", Fired: 2, StillFiring: 1, LongestSeconds: 22 * 3600},
		{Alert: "GPUIdleButHeld", Fired: 1, StillFiring: 2, LongestSeconds: 54 * 3600},
	}
	if !slices.Equal(r.Alerts, want) || r.AlertsFired != 3 {
		t.Errorf("got alerts %+v (%d fired), want %+v (3 fired)", r.Alerts, r.AlertsFired, want)
	}
	text := r.Text()
	for _, line := range []string{"Alerts (3 fired, 3 still firing)", "GPUHot fired 2 times, the longest for 22h00m (1 still firing)",
		"GPUIdleButHeld fired 1 time, the longest for 2d6h (2 still firing)"} {
		if !strings.Contains(text, line) {
			t.Errorf("text: want %q in\n%s", line, text)
		}
	}
	r = Build(nil, nil, nil, Options{From: hour(0), To: hour(24), Firing: firing[1:2]})
	if text := r.Text(); !strings.Contains(text, "Alerts (1 still firing)") || !strings.Contains(text, "GPUIdleButHeld still firing, for 2d6h") {
		t.Errorf("an alert firing since before the window: got\n%s", text)
	}
}

// TestIdleGPUWithoutUsers is the digest that said "held idle 1.7h" for a
// GPU and then that nobody held one idle: a log names no processes, so
// the digest names the GPU.
func TestIdleGPUWithoutUsers(t *testing.T) {
	gpus := []GPUHour{
		{Hour: hour(0), GPU: 0, Seconds: 3600, UtilSeconds: 3000, BusySeconds: 3600},
		{Hour: hour(0), GPU: 1, Seconds: 3600, IdleHeldSeconds: 3600, MemMax: 20 * gib},
		{Hour: hour(1), GPU: 1, Seconds: 3600, IdleHeldSeconds: 2520, MemMax: 20 * gib},
		{Hour: hour(1), GPU: 2, Seconds: 3600, IdleHeldSeconds: 120},
	}
	text := Build(gpus, nil, nil, Options{}).Text()
	if want := "GPU 1 was held idle for 1h42m (memory held, utilization under 5% for 5m or more); the data names no processes to say by whom"; !strings.Contains(text, want) {
		t.Errorf("want %q in\n%s", want, text)
	}
	if strings.Contains(text, "Nobody held a GPU idle") || strings.Contains(text, "GPU 2 was held idle") {
		t.Errorf("want GPU 1 alone under Held idle:\n%s", text)
	}
}

func TestSparkline(t *testing.T) {
	tests := []struct {
		name  string
		hours []GPUHour
		from  time.Time
		to    time.Time
		want  string
	}{
		{"fixed scale, gap for a missing hour", []GPUHour{
			{Hour: hour(0), Seconds: 3600, UtilSeconds: 0},
			{Hour: hour(1), Seconds: 3600, UtilSeconds: 1800},
			{Hour: hour(3), Seconds: 1800, UtilSeconds: 1800},
		}, hour(0), hour(4), "▁▅ █"},
		{"window starting mid-hour", []GPUHour{{Hour: hour(0), Seconds: 3600, UtilSeconds: 3600}},
			hour(0).Add(30 * time.Minute), hour(2), "█"},
		{"hours outside the window are not drawn", []GPUHour{{Hour: hour(-5), Seconds: 3600, UtilSeconds: 3600}},
			hour(0), hour(2), ""},
		// A day's digest of the first two hours recorded draws those two,
		// not 22 blank columns before them.
		{"no blank columns for hours without data", []GPUHour{
			{Hour: hour(22), Seconds: 3600, UtilSeconds: 3600},
			{Hour: hour(23), Seconds: 1800, UtilSeconds: 0},
		}, hour(0), hour(24), "█▁"},
	}
	for _, tt := range tests {
		r := Build(tt.hours, nil, nil, Options{From: tt.from, To: tt.to})
		if got := r.GPUs[0].Sparkline; got != tt.want {
			t.Errorf("%s: got sparkline %q, want %q", tt.name, got, tt.want)
		}
	}
	month := sampleHours(30*24, 1, 0)
	r := Build(month.gpus, nil, nil, Options{From: hour(0), To: hour(30 * 24)})
	if n := utf8.RuneCountInString(r.GPUs[0].Sparkline); n > SparkWidth || n < SparkWidth/2 {
		t.Errorf("30 days: got a sparkline of %d characters, want between %d and %d", n, SparkWidth/2, SparkWidth)
	}
}

func TestTitle(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	tests := []struct {
		o    Options
		want string
	}{
		{Options{Host: "node1", From: hour(0), To: hour(24), Location: cet}, "GPU usage on node1, Mon 30 Nov 10:00 – Tue 1 Dec 10:00"},
		{Options{From: hour(0), To: hour(24)}, "GPU usage, Mon 30 Nov 09:00 – Tue 1 Dec 09:00"},
	}
	for _, tt := range tests {
		if got := Build(nil, nil, nil, tt.o).Title(); got != tt.want {
			t.Errorf("got title %q, want %q", got, tt.want)
		}
	}
}

func TestNotification(t *testing.T) {
	h := sampleHours(24, 2, 3)
	r := Build(h.gpus, h.users, h.alerts, Options{Name: "daily", Host: "node1", From: hour(0), To: hour(24)})
	at := hour(24)
	n, err := r.Notification("team-slack", at)
	if err != nil {
		t.Fatalf("Notification: %v", err)
	}
	if n.Status != notifier.StatusDigest || n.Receiver != "team-slack" || !n.CreatedAt.Equal(at) || len(n.Alerts) != 0 {
		t.Errorf("got status %q, receiver %q, created %v, %d alerts; want %q, team-slack, %v, 0",
			n.Status, n.Receiver, n.CreatedAt, len(n.Alerts), notifier.StatusDigest, at)
	}
	d := n.Digest
	if d == nil {
		t.Fatal("got no Digest")
	}
	if d.Name != "daily" || d.Title != r.Title() || d.Text != r.Text() || d.Markdown != r.Markdown() {
		t.Errorf("got digest %q titled %q, want daily titled %q with the report's text and markdown", d.Name, d.Title, r.Title())
	}
	var blocks []map[string]any
	if err := json.Unmarshal(d.Blocks, &blocks); err != nil || len(blocks) == 0 {
		t.Errorf("blocks: got %d blocks, error %v; want a JSON array of blocks", len(blocks), err)
	}
	var back Report
	if err := json.Unmarshal(d.Data, &back); err != nil {
		t.Fatalf("data is not the report as JSON: %v", err)
	}
	if back.Host != "node1" || len(back.GPUs) != 2 || len(back.Users) != len(r.Users) || !near(back.EnergyKWh, r.EnergyKWh) {
		t.Errorf("data: got host %q, %d GPUs, %d users, %v kWh; want node1, 2, %d, %v",
			back.Host, len(back.GPUs), len(back.Users), back.EnergyKWh, len(r.Users), r.EnergyKWh)
	}
}

// rollups is a fixed set of hours.
type rollups struct {
	gpus   []GPUHour
	users  []UserHour
	alerts []AlertHour
}

// sampleHours makes n hours from t0 for the given GPUs, two users per GPU
// out of nusers (0: none), and alerts: a hand-made, repeatable week of a
// shared server. GPU 1 sits held but idle in its second half.
func sampleHours(n, ngpus, nusers int) rollups {
	var h rollups
	for i := range n {
		for g := range ngpus {
			frac := float64((i+3*g)%12) / 11
			idle := g == 1 && i >= n/2
			if idle {
				frac = 0
			}
			if g == 1 && i == 5 {
				continue // a gap: gpuwatch was down
			}
			gh := GPUHour{Hour: hour(i), GPU: g, UUID: "GPU-" + string(rune('a'+g)), Name: "NVIDIA A100-SXM4-40GB", Host: "node1",
				Samples: 720, Seconds: 3600, UtilSeconds: 3600 * frac, UtilMax: math.Min(100, 100*frac+7),
				MemMax: uint64(10+g*5+i%7) * gib, MemTotal: 40 * gib, TempMax: 45 + 40*frac, EnergyJoules: 3600 * (60 + 340*frac)}
			if idle {
				gh.MemMax = 20 * gib
			}
			if frac*100 >= BusyPercent {
				gh.BusySeconds = 3600
			} else if gh.MemMax >= HeldBytes {
				gh.IdleHeldSeconds = 3600
			}
			h.gpus = append(h.gpus, gh)
			if nusers == 0 {
				continue
			}
			for k := range 2 {
				u := UserHour{Hour: hour(i), User: "user" + string(rune('a'+(g*2+k+i/24)%nusers)), GPU: g, UUID: gh.UUID,
					GPUSeconds: 1800, ByteSeconds: float64(gh.MemMax) / 2 * 3600}
				if gh.IdleHeldSeconds > 0 && k == 0 {
					u.IdleHeldSeconds, u.IdleHeldMax = 3600, gh.MemMax
				}
				h.users = append(h.users, u)
			}
		}
		if i%7 == 3 {
			h.alerts = append(h.alerts, AlertHour{Hour: hour(i), Alert: "GPUMemoryHigh", Fired: 1, LongestSeconds: float64(300 * (i%5 + 1))})
		}
		if i == n/2 {
			h.alerts = append(h.alerts, AlertHour{Hour: hour(i), Alert: "GPUHeldIdle", Fired: 1, LongestSeconds: float64(3600 * (n - i))})
		}
	}
	return h
}
