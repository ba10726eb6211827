package gpu

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

type countingSampler struct {
	times  []time.Time
	closed bool
}

func (c *countingSampler) Sample(_ context.Context, at time.Time) (*Snapshot, error) {
	c.times = append(c.times, at)
	return &Snapshot{Time: at}, nil
}

func (c *countingSampler) Close() error { c.closed = true; return nil }

func TestPollSamplesAtOnceThenEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &countingSampler{}
		p := Poll(s, 5*time.Second)
		start := time.Now()
		for range 4 {
			if _, err := p.Next(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		for i, at := range s.times {
			if got, want := at.Sub(start), time.Duration(i)*5*time.Second; got != want {
				t.Errorf("sample %d at +%v, want +%v", i, got, want)
			}
		}
		if err := p.Close(); err != nil || !s.closed {
			t.Errorf("Close: err %v, sampler closed %v", err, s.closed)
		}
	})
}

func TestPollStopsWhenContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := Poll(&countingSampler{}, time.Hour)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if _, err := p.Next(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want context.DeadlineExceeded", err)
		}
	})
}

// listSource returns snapshots every step of data time, n of them.
type listSource struct {
	start time.Time
	step  time.Duration
	n, i  int
}

func (l *listSource) Next(context.Context) (*Snapshot, error) {
	if l.i == l.n {
		return nil, errors.New("end")
	}
	l.i++
	return &Snapshot{Time: l.start.Add(time.Duration(l.i-1) * l.step)}, nil
}

func (l *listSource) Close() error { return nil }

func TestPaceScalesDataTimeToWallTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		data := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
		src := Pace(&listSource{start: data, step: time.Minute, n: 5}, 60)
		wall := time.Now()
		for i := range 5 {
			s, err := src.Next(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got, want := time.Since(wall), time.Duration(i)*time.Second; got != want {
				t.Errorf("snapshot %d came after %v, want %v", i, got, want)
			}
			if got, want := s.Time, data.Add(time.Duration(i)*time.Minute); !got.Equal(want) {
				t.Errorf("snapshot %d time %v, want %v (pacing must not change data time)", i, got, want)
			}
		}
	})
}

func TestPaceZeroSpeedIsUnpaced(t *testing.T) {
	src := &listSource{step: time.Hour, n: 1}
	if got := Pace(src, 0); got != Source(src) {
		t.Errorf("Pace(src, 0) = %T, want the source itself", got)
	}
}

// TestPaceClock checks the paced source's clock: the wall clock before the
// first snapshot, then data time running at the speed from the first one.
func TestPaceClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		data := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
		p := Pace(&listSource{start: data, step: time.Minute, n: 5}, 60).(*Pacer)
		if got := p.Now(); !got.Equal(time.Now()) {
			t.Errorf("before the first snapshot: got %v, want the wall clock %v", got, time.Now())
		}
		for range 3 {
			if _, err := p.Next(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		// The third snapshot (data +2m) came at wall +2s.
		if got, want := p.Now(), data.Add(2*time.Minute); !got.Equal(want) {
			t.Errorf("at the third snapshot: got %v, want %v", got, want)
		}
		time.Sleep(500 * time.Millisecond)
		if got, want := p.Now(), data.Add(2*time.Minute+30*time.Second); !got.Equal(want) {
			t.Errorf("half a second later: got %v, want %v", got, want)
		}
	})
}

type fleetSampler struct{ hosts []string }

func (f *fleetSampler) SampleFleet(_ context.Context, at time.Time) ([]*Snapshot, error) {
	var out []*Snapshot
	for _, h := range f.hosts {
		out = append(out, &Snapshot{Time: at, Host: h})
	}
	return out, nil
}

func (f *fleetSampler) Close() error { return nil }

func TestPollFleetReturnsEveryHostOfATickThenWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := PollFleet(&fleetSampler{hosts: []string{"a", "b"}}, 30*time.Second)
		start := time.Now()
		for i, want := range []struct {
			host  string
			after time.Duration
		}{{"a", 0}, {"b", 0}, {"a", 30 * time.Second}, {"b", 30 * time.Second}} {
			s, err := p.Next(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if s.Host != want.host || s.Time.Sub(start) != want.after {
				t.Errorf("snapshot %d: %s at +%v, want %s at +%v", i, s.Host, s.Time.Sub(start), want.host, want.after)
			}
		}
	})
}
