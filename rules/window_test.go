package rules

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// windowBase is an arbitrary, realistic epoch for window tests.
var windowBase = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// at returns windowBase plus d.
func windowAt(d time.Duration) time.Time { return windowBase.Add(d) }

// windowPoint is one Add call in a test table.
type windowPoint struct {
	at time.Duration
	v  float64
}

// fill returns a window of the given span after adding points in order.
func fillWindow(span time.Duration, points []windowPoint) *Window {
	w := NewWindow(span)
	for _, p := range points {
		w.Add(windowAt(p.at), p.v)
	}
	return w
}

// windowRef is a direct computation over the samples of a window: the
// two-pass least squares that Prometheus deriv() performs.
type windowRef struct {
	n              int
	avg, min, max  float64
	slope, mx, my  float64
	oldest, newest int64
	constant       bool
}

func windowReference(samples []windowSample) windowRef {
	r := windowRef{n: len(samples), min: math.Inf(1), max: math.Inf(-1)}
	if r.n == 0 {
		return r
	}
	r.oldest, r.newest = samples[0].t, samples[len(samples)-1].t
	origin := samples[0].t
	var sx, sy float64
	r.constant = true
	for _, s := range samples {
		sx += float64(s.t-origin) / 1e9
		sy += s.v
		r.min, r.max = math.Min(r.min, s.v), math.Max(r.max, s.v)
		r.constant = r.constant && s.v == samples[0].v
	}
	r.mx, r.my = sx/float64(r.n), sy/float64(r.n)
	var sxx, sxy float64
	for _, s := range samples {
		dx := float64(s.t-origin)/1e9 - r.mx
		sxx += dx * dx
		sxy += dx * (s.v - r.my)
	}
	r.avg = r.my
	r.slope = sxy / sxx
	if r.constant {
		r.slope, r.avg = 0, samples[0].v
	}
	r.mx += float64(origin) / 1e9
	return r
}

// windowClose reports whether got is within rel of want, relative to scale.
func windowClose(got, want, rel, scale float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) <= rel*math.Max(scale, math.Abs(want))
}

func TestWindowEvictionBoundary(t *testing.T) {
	const span = 10 * time.Second
	tests := []struct {
		name       string
		points     []windowPoint
		wantLen    int
		wantOldest time.Duration
	}{
		{"exactly span old is out", []windowPoint{{0, 1}, {span, 2}}, 1, span},
		{"one nanosecond younger is in", []windowPoint{{1, 1}, {span, 2}}, 2, 1},
		{"several out at once", []windowPoint{{0, 1}, {1 * time.Second, 2}, {2 * time.Second, 3}, {12 * time.Second, 4}}, 1, 12 * time.Second},
		{"boundary sample kept, older dropped", []windowPoint{{0, 1}, {2 * time.Second, 2}, {span + time.Second, 3}}, 2, 2 * time.Second},
		{"NaN evicts but is not stored", []windowPoint{{0, 1}, {5 * time.Second, 2}, {span, math.NaN()}}, 1, 5 * time.Second},
		{"Inf evicts but is not stored", []windowPoint{{0, 1}, {span + 5*time.Second, math.Inf(1)}}, 0, 0},
		{"gap longer than span empties", []windowPoint{{0, 1}, {1 * time.Second, 2}, {time.Hour, math.NaN()}}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := fillWindow(span, tt.points)
			if got := w.Len(); got != tt.wantLen {
				t.Fatalf("Len() = %d, want %d", got, tt.wantLen)
			}
			if tt.wantLen == 0 {
				return
			}
			if got := time.Duration(w.samples.front().t - windowBase.UnixNano()); got != tt.wantOldest {
				t.Errorf("oldest sample at %v, want %v", got, tt.wantOldest)
			}
		})
	}
}

func TestWindowReady(t *testing.T) {
	tests := []struct {
		name   string
		span   time.Duration
		points []windowPoint
		want   bool
	}{
		{"empty", 10 * time.Second, nil, false},
		{"one sample", 10 * time.Second, []windowPoint{{0, 1}}, false},
		{"two samples under half", 10 * time.Second, []windowPoint{{0, 1}, {5*time.Second - 1, 2}}, false},
		{"two samples at half", 10 * time.Second, []windowPoint{{0, 1}, {5 * time.Second, 2}}, true},
		{"two samples at one time", 10 * time.Second, []windowPoint{{0, 1}, {0, 2}}, false},
		{"many samples under half", 10 * time.Second, []windowPoint{{0, 1}, {time.Second, 2}, {2 * time.Second, 3}, {3 * time.Second, 4}}, false},
		{"spread over most of the span", 10 * time.Second, []windowPoint{{0, 1}, {9 * time.Second, 2}}, true},
		{"odd span rounds half up, below", 3, []windowPoint{{0, 1}, {1, 2}}, false},
		{"odd span rounds half up, at", 3, []windowPoint{{0, 1}, {2, 2}}, true},
		{"NaN does not count", 10 * time.Second, []windowPoint{{0, 1}, {6 * time.Second, math.NaN()}}, false},
		{"eviction keeps ready", 10 * time.Second, []windowPoint{{0, 1}, {6 * time.Second, 2}, {14 * time.Second, 3}}, true},
		{"eviction undoes ready", 10 * time.Second, []windowPoint{{0, 1}, {6 * time.Second, 2}, {17 * time.Second, 3}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := fillWindow(tt.span, tt.points)
			if got := w.Ready(); got != tt.want {
				t.Fatalf("Ready() = %v, want %v", got, tt.want)
			}
			if tt.want {
				return
			}
			queries := map[string]float64{
				"Avg": w.Avg(), "Min": w.Min(), "Max": w.Max(), "Slope": w.Slope(),
				"Predict": w.Predict(windowAt(time.Hour)),
			}
			for name, got := range queries {
				if !math.IsNaN(got) {
					t.Errorf("%s() = %v while not ready, want NaN", name, got)
				}
			}
		})
	}
}

// TestWindowMatchesBruteForce drives windows with random series (gaps,
// repeated times, times going backwards, repeated values, NaN and Inf) and
// compares every answer after every Add with a direct computation.
func TestWindowMatchesBruteForce(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		span := time.Duration(1+rng.IntN(20)) * time.Second
		if seed%7 == 0 {
			span = time.Duration(1 + rng.IntN(5)) // a few nanoseconds
		}
		w := NewWindow(span)
		// partial keeps the minimum, the maximum, both or neither, as
		// the engine makes windows for the functions its rules read,
		// until step partialAsked asks it for everything.
		kept := windowStats(seed % 4)
		partial := newWindowOf(span, kept)
		const partialAsked = 200
		var all []windowSample // every stored sample, never evicted
		var now int64
		hasNow := false
		ts := windowBase.UnixNano()
		for step := range 400 {
			switch r := rng.IntN(20); {
			case r == 0:
				ts += int64(span) + rng.Int64N(int64(span)) // gap: window empties
			case r == 1:
				ts -= rng.Int64N(int64(2 * time.Second)) // backwards: ignored unless equal
			case r < 4: // same time again
			default:
				ts += rng.Int64N(int64(span)/3 + 1)
			}
			v := float64(rng.IntN(6)) // few distinct values: many ties
			switch rng.IntN(25) {
			case 0:
				v = math.NaN()
			case 1:
				v = math.Inf(1 - 2*rng.IntN(2))
			case 2:
				v = 1e9 + rng.Float64()*1e3
			}
			w.Add(time.Unix(0, ts), v)
			partial.Add(time.Unix(0, ts), v)

			if !hasNow || ts >= now {
				now, hasNow = ts, true
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					all = append(all, windowSample{t: ts, v: v})
				}
			}
			var in []windowSample
			for _, s := range all {
				if s.t > now-int64(span) {
					in = append(in, s)
				}
			}
			checkWindowAgainstReference(t, seed, step, w, in)
			if step < partialAsked {
				checkKeptAgainstReference(t, seed, step, partial, kept, in)
			} else {
				checkWindowAgainstReference(t, seed, step, partial, in)
			}
			if t.Failed() {
				return
			}
		}
	}
}

func checkWindowAgainstReference(t *testing.T, seed uint64, step int, w *Window, in []windowSample) {
	t.Helper()
	ref := windowReference(in)
	if got := w.Len(); got != ref.n {
		t.Fatalf("seed %d step %d: Len() = %d, want %d", seed, step, got, ref.n)
	}
	if ref.n > 0 {
		gotT, gotV := w.Last()
		if gotT.UnixNano() != ref.newest || gotV != in[len(in)-1].v {
			t.Errorf("seed %d step %d: Last() = %v, %v, want %v, %v", seed, step,
				gotT.UnixNano(), gotV, ref.newest, in[len(in)-1].v)
		}
	}
	span := int64(w.Span())
	wantReady := ref.n >= 2 && 2*(ref.newest-ref.oldest) >= span
	if got := w.Ready(); got != wantReady {
		t.Fatalf("seed %d step %d: Ready() = %v, want %v (n=%d, spread %d, span %d)",
			seed, step, got, wantReady, ref.n, ref.newest-ref.oldest, span)
	}
	if !wantReady {
		return
	}
	if got := w.Min(); got != ref.min {
		t.Errorf("seed %d step %d: Min() = %v, want %v", seed, step, got, ref.min)
	}
	if got := w.Max(); got != ref.max {
		t.Errorf("seed %d step %d: Max() = %v, want %v", seed, step, got, ref.max)
	}
	scale := ref.max - ref.min
	if got := w.Avg(); !windowClose(got, ref.avg, 1e-9, scale) {
		t.Errorf("seed %d step %d: Avg() = %v, want %v", seed, step, got, ref.avg)
	}
	// The slope's natural scale is the value range over the time spread.
	slopeScale := scale / (float64(ref.newest-ref.oldest) / 1e9)
	if got := w.Slope(); !windowClose(got, ref.slope, 1e-9, slopeScale) {
		t.Errorf("seed %d step %d: Slope() = %v, want %v", seed, step, got, ref.slope)
	}
	if ref.constant && w.Slope() != 0 {
		t.Errorf("seed %d step %d: Slope() = %v for a constant series, want exactly 0", seed, step, w.Slope())
	}
}

// checkKeptAgainstReference checks the statistics kept, and only those,
// of a window that keeps no more than kept.
func checkKeptAgainstReference(t *testing.T, seed uint64, step int, w *Window, kept windowStats, in []windowSample) {
	t.Helper()
	ref := windowReference(in)
	if w.Len() != ref.n || w.Ready() != (ref.n >= 2 && 2*(ref.newest-ref.oldest) >= int64(w.Span())) {
		t.Fatalf("seed %d step %d: a window keeping %b holds %d samples (Ready %v), want %d", seed, step, kept, w.Len(), w.Ready(), ref.n)
	}
	if w.Ready() && kept&statMin != 0 && w.Min() != ref.min {
		t.Errorf("seed %d step %d: Min() = %v, want %v", seed, step, w.Min(), ref.min)
	}
	if w.Ready() && kept&statMax != 0 && w.Max() != ref.max {
		t.Errorf("seed %d step %d: Max() = %v, want %v", seed, step, w.Max(), ref.max)
	}
	if w.keeps != kept {
		t.Fatalf("seed %d step %d: the window keeps %b, want only %b", seed, step, w.keeps, kept)
	}
}

// TestWindowSlopeMatchesPrometheusDeriv uses hand-computed examples of what
// Prometheus deriv(m[1m]) and predict_linear(m[1m], d) return at 60 s. The
// window is left-open, so a sample exactly 1m old is not in it.
func TestWindowSlopeMatchesPrometheusDeriv(t *testing.T) {
	tests := []struct {
		name        string
		points      []windowPoint
		wantSlope   float64
		wantPredict map[time.Duration]float64 // at time → predicted value
	}{
		{
			// x = 15,30,45,60 (x̄ = 37.5), y = 3,2,6,8 (ȳ = 4.75):
			// Σdx·dy = 142.5, Σdx² = 1125, slope = 19/150;
			// line at 60 s = 4.75 + 22.5·19/150 = 7.6, at 120 s = 15.2.
			name: "scrape every 15s",
			points: []windowPoint{
				{0, 1}, {15 * time.Second, 3}, {30 * time.Second, 2},
				{45 * time.Second, 6}, {60 * time.Second, 8},
			},
			wantSlope:   19.0 / 150,
			wantPredict: map[time.Duration]float64{60 * time.Second: 7.6, 120 * time.Second: 15.2, 37500 * time.Millisecond: 4.75},
		},
		{
			name: "exact line",
			points: []windowPoint{
				{20 * time.Second, 110}, {40 * time.Second, 150}, {60 * time.Second, 190},
			},
			wantSlope:   2,
			wantPredict: map[time.Duration]float64{0: 70, 90 * time.Second: 250},
		},
		{
			name:        "constant",
			points:      []windowPoint{{10 * time.Second, 0.1}, {35 * time.Second, 0.1}, {60 * time.Second, 0.1}},
			wantSlope:   0,
			wantPredict: map[time.Duration]float64{time.Hour: 0.1},
		},
		{
			name:        "falling",
			points:      []windowPoint{{30 * time.Second, 10}, {60 * time.Second, 4}},
			wantSlope:   -0.2,
			wantPredict: map[time.Duration]float64{80 * time.Second: 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := fillWindow(time.Minute, tt.points)
			if got := w.Slope(); !windowClose(got, tt.wantSlope, 1e-12, 1e-12) {
				t.Errorf("Slope() = %v, want %v", got, tt.wantSlope)
			}
			for d, want := range tt.wantPredict {
				if got := w.Predict(windowAt(d)); !windowClose(got, want, 1e-12, 1e-12) {
					t.Errorf("Predict(+%v) = %v, want %v", d, got, want)
				}
			}
		})
	}
}

func TestWindowMonotoneDequesEqualValues(t *testing.T) {
	// A 3 s window with a sample every second holds the last three samples.
	tests := []struct {
		name     string
		values   []float64
		wantMin  []float64 // after each Add from the third on
		wantMax  []float64
		wantMinQ int // deque lengths at the end
		wantMaxQ int
	}{
		{"all equal", []float64{5, 5, 5, 5, 5}, []float64{5, 5, 5}, []float64{5, 5, 5}, 1, 1},
		{"alternating", []float64{3, 5, 3, 5, 3, 5}, []float64{3, 3, 3, 3}, []float64{5, 5, 5, 5}, 2, 1},
		{"pairs", []float64{1, 1, 2, 2, 1, 1, 3}, []float64{1, 1, 1, 1, 1}, []float64{2, 2, 2, 2, 3}, 2, 1},
		{"equal minimum leaves last", []float64{2, 0, 0, 4, 5, 6}, []float64{0, 0, 0, 4}, []float64{2, 4, 5, 6}, 3, 1},
		{"rising", []float64{1, 2, 3, 4, 5}, []float64{1, 2, 3}, []float64{3, 4, 5}, 3, 1},
		{"falling", []float64{5, 4, 3, 2, 1}, []float64{3, 2, 1}, []float64{5, 4, 3}, 1, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWindow(3 * time.Second)
			for i, v := range tt.values {
				w.Add(windowAt(time.Duration(i)*time.Second), v)
				if i < 2 {
					continue
				}
				if got, want := w.Min(), tt.wantMin[i-2]; got != want {
					t.Errorf("after value %d: Min() = %v, want %v", i, got, want)
				}
				if got, want := w.Max(), tt.wantMax[i-2]; got != want {
					t.Errorf("after value %d: Max() = %v, want %v", i, got, want)
				}
			}
			if got := w.minq.len(); got != tt.wantMinQ {
				t.Errorf("min deque holds %d, want %d", got, tt.wantMinQ)
			}
			if got := w.maxq.len(); got != tt.wantMaxQ {
				t.Errorf("max deque holds %d, want %d", got, tt.wantMaxQ)
			}
		})
	}
}

func TestWindowTimeNotAdvancing(t *testing.T) {
	tests := []struct {
		name     string
		points   []windowPoint
		wantLen  int
		wantLast windowPoint
	}{
		{"equal times accepted", []windowPoint{{time.Second, 1}, {time.Second, 2}, {time.Second, 3}}, 3, windowPoint{time.Second, 3}},
		{"earlier time ignored", []windowPoint{{5 * time.Second, 1}, {4 * time.Second, 2}}, 1, windowPoint{5 * time.Second, 1}},
		{"earlier than a NaN ignored", []windowPoint{{0, 1}, {5 * time.Second, math.NaN()}, {4 * time.Second, 2}}, 1, windowPoint{0, 1}},
		{"earlier time does not evict", []windowPoint{{0, 1}, {20 * time.Second, 2}, {0, 3}}, 1, windowPoint{20 * time.Second, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := fillWindow(10*time.Second, tt.points)
			if got := w.Len(); got != tt.wantLen {
				t.Errorf("Len() = %d, want %d", got, tt.wantLen)
			}
			gotT, gotV := w.Last()
			if !gotT.Equal(windowAt(tt.wantLast.at)) || gotV != tt.wantLast.v {
				t.Errorf("Last() = %v, %v, want %v, %v", gotT, gotV, windowAt(tt.wantLast.at), tt.wantLast.v)
			}
		})
	}
}

func TestWindowEmptyAndReset(t *testing.T) {
	w := NewWindow(time.Minute)
	if gotT, gotV := w.Last(); !gotT.IsZero() || !math.IsNaN(gotV) {
		t.Errorf("Last() on empty = %v, %v, want zero time, NaN", gotT, gotV)
	}
	for i := range 100 {
		w.Add(windowAt(time.Duration(i)*time.Second), float64(i))
	}
	if !w.Ready() {
		t.Fatalf("Ready() = false after 100 s of samples, want true")
	}
	w.Reset()
	if got := w.Len(); got != 0 || w.Ready() {
		t.Fatalf("after Reset: Len() = %d, Ready() = %v, want 0, false", got, w.Ready())
	}
	// Reset forgets the latest time: earlier samples are accepted again.
	w.Add(windowAt(0), 7)
	w.Add(windowAt(40*time.Second), 11)
	if got, want := w.Slope(), 0.1; !windowClose(got, want, 1e-12, 0) {
		t.Errorf("Slope() after Reset = %v, want %v", got, want)
	}
	if got, want := w.Avg(), 9.0; got != want {
		t.Errorf("Avg() after Reset = %v, want %v", got, want)
	}
}

func TestNewWindowNonPositiveSpan(t *testing.T) {
	for _, span := range []time.Duration{0, -time.Second} {
		w := NewWindow(span)
		if got := w.Span(); got != 0 {
			t.Errorf("NewWindow(%v).Span() = %v, want 0", span, got)
		}
		for i, v := range []float64{1, 2, 3} {
			w.Add(windowAt(time.Duration(i/2)*time.Second), v)
		}
		if got := w.Len(); got != 1 {
			t.Errorf("span %v: Len() = %d, want 1 (only the newest sample)", span, got)
		}
		if _, got := w.Last(); got != 3 {
			t.Errorf("span %v: Last() value = %v, want 3", span, got)
		}
		if w.Ready() {
			t.Errorf("span %v: Ready() = true, want false", span)
		}
	}
}

// windowMemorySeries returns n realistic GPU memory readings, one a second, in
// bytes: jobs that load 20–60 GiB, leak 200 MiB/min and restart, with MiB
// quantisation and noise, as nvidia-smi reports them.
func windowMemorySeries(n int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	const mib = 1 << 20
	out := make([]float64, n)
	base, leaked := 40*1024.0, 0.0
	for i := range out {
		if rng.IntN(20000) == 0 || base+leaked > 80*1024 {
			base, leaked = float64(20*1024+rng.IntN(40*1024)), 0
		}
		leaked += 200.0 / 60
		out[i] = math.Round(base+leaked+rng.NormFloat64()*30) * mib
	}
	return out
}

// TestWindowLongRunPrecision adds a million realistic memory readings and
// checks that the incrementally kept answers still match a direct two-pass
// computation to about 1e-9.
func TestWindowLongRunPrecision(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 200_000
	}
	values := windowMemorySeries(n, 42)
	for _, span := range []time.Duration{10 * time.Minute, 24 * time.Hour} {
		t.Run(span.String(), func(t *testing.T) {
			w := NewWindow(span)
			perSpan := int(span / time.Second)
			for i, v := range values {
				w.Add(windowAt(time.Duration(i)*time.Second), v)
				if i%(n/40) != n/40-1 {
					continue
				}
				if got, want := w.Ready(), 2*i >= perSpan; got != want {
					t.Fatalf("sample %d: Ready() = %v, want %v", i, got, want)
				}
				if !w.Ready() {
					continue
				}
				first := max(0, i-perSpan+1)
				in := make([]windowSample, 0, i-first+1)
				for j := first; j <= i; j++ {
					in = append(in, windowSample{t: windowAt(time.Duration(j) * time.Second).UnixNano(), v: values[j]})
				}
				ref := windowReference(in)
				if got := w.Slope(); !windowClose(got, ref.slope, 1e-9, 0) {
					t.Errorf("sample %d: Slope() = %v, want %v (relative error %.2g)",
						i, got, ref.slope, math.Abs(got-ref.slope)/math.Abs(ref.slope))
				}
				if got := w.Avg(); !windowClose(got, ref.avg, 1e-12, 0) {
					t.Errorf("sample %d: Avg() = %v, want %v", i, got, ref.avg)
				}
				now := windowAt(time.Duration(i) * time.Second)
				wantPredict := ref.my + ref.slope*(float64(now.Add(time.Hour).UnixNano())/1e9-ref.mx)
				if got := w.Predict(now.Add(time.Hour)); !windowClose(got, wantPredict, 1e-9, ref.max-ref.min) {
					t.Errorf("sample %d: Predict(+1h) = %v, want %v", i, got, wantPredict)
				}
			}
		})
	}
}

func TestWindowAddAllocatesNothingInSteadyState(t *testing.T) {
	w := NewWindow(time.Hour)
	values := windowMemorySeries(1<<14, 7)
	i := 0
	add := func() {
		w.Add(windowAt(time.Duration(i)*time.Second), values[i%len(values)])
		i++
	}
	for range 2 * 3600 {
		add()
	}
	if got := testing.AllocsPerRun(10000, add); got != 0 {
		t.Errorf("Add allocates %v times per call in steady state, want 0", got)
	}
}

func benchmarkWindowAdd(b *testing.B, span time.Duration) {
	values := windowMemorySeries(1<<16, 3)
	w := NewWindow(span)
	i := 0
	for ; i < 2*int(span/time.Second); i++ { // reach steady state
		w.Add(windowAt(time.Duration(i)*time.Second), values[i%len(values)])
	}
	var sink float64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.Add(windowAt(time.Duration(i)*time.Second), values[i&(len(values)-1)])
		sink += w.Slope() + w.Min() + w.Max()
		i++
	}
	if math.IsNaN(sink) {
		b.Fatal("window not ready in steady state")
	}
}

func BenchmarkWindowAdd1m(b *testing.B)  { benchmarkWindowAdd(b, time.Minute) }
func BenchmarkWindowAdd24h(b *testing.B) { benchmarkWindowAdd(b, 24*time.Hour) }
