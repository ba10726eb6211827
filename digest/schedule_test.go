package digest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func mustSchedule(t testing.TB, spec string) Schedule {
	t.Helper()
	s, err := ParseSchedule(spec)
	if err != nil {
		t.Fatalf("ParseSchedule(%q): %v", spec, err)
	}
	return s
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseSchedule(t *testing.T) {
	from := utc("2026-11-30T08:59:00Z") // a Monday
	tests := []struct {
		spec string
		next time.Time // the first run after from; zero: an error
		err  string    // part of the error
	}{
		{spec: "0 9 * * 1-5", next: utc("2026-11-30T09:00:00Z")},
		{spec: "@daily", next: utc("2026-12-01T00:00:00Z")},
		{spec: "@every 6h", next: utc("2026-11-30T14:59:00Z")},
		{spec: "CRON_TZ=Europe/Berlin 0 9 * * 1-5", next: utc("2026-12-01T08:00:00Z")},
		{spec: "  CRON_TZ=Asia/Tokyo @daily ", next: utc("2026-11-30T15:00:00Z")},
		{spec: "", err: "the schedule is empty"},
		{spec: "CRON_TZ=UTC", err: "needs the five fields after CRON_TZ=UTC, e.g. CRON_TZ=Europe/Berlin 0 9 * * 1-5"},
		{spec: "CRON_TZ=UTC   ", err: "needs the five fields after CRON_TZ=UTC"},
		{spec: "TZ=Europe/Berlin", err: "needs the five fields after CRON_TZ=Europe/Berlin"},
		{spec: "CRON_TZ=Nowhere/City 0 9 * * *", err: "provided bad location Nowhere/City"},
		{spec: "0 9 * *", err: "expected exactly 5 fields"},
		{spec: "61 * * * *", err: "above maximum"},
		{spec: "@every 0s", err: "@every needs a duration of at least 1s"},
		{spec: "@fortnightly", err: "unrecognized descriptor"},
	}
	for _, tt := range tests {
		s, err := ParseSchedule(tt.spec)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseSchedule(%q): got error %v, want one containing %q", tt.spec, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSchedule(%q): got error %v, want none", tt.spec, err)
			continue
		}
		if got := s.Next(from); !got.Equal(tt.next) {
			t.Errorf("ParseSchedule(%q).Next(%v): got %v, want %v", tt.spec, from, got.UTC(), tt.next)
		}
	}
}

// runs lists the scheduled times in (from, to].
func runs(s Schedule, from, to time.Time) []time.Time {
	var out []time.Time
	for t := s.Next(from); !t.IsZero() && !t.After(to); t = s.Next(t) {
		out = append(out, t.UTC())
	}
	return out
}

func TestScheduleAcrossDST(t *testing.T) {
	tests := []struct {
		name     string
		spec     string
		from, to time.Time
		want     []time.Time
	}{
		{
			name: "spring forward: 02:30 does not exist on 29 March; it runs at the change, 03:00 CEST",
			spec: "CRON_TZ=Europe/Berlin 30 2 * * *",
			from: utc("2026-03-27T12:00:00Z"), to: utc("2026-03-31T00:00:00Z"),
			want: []time.Time{utc("2026-03-28T01:30:00Z"), utc("2026-03-29T01:00:00Z"), utc("2026-03-30T00:30:00Z")},
		},
		{
			name: "fall back: 02:30 happens twice on 25 October; it runs once, the first time",
			spec: "CRON_TZ=Europe/Berlin 30 2 * * *",
			from: utc("2026-10-23T12:00:00Z"), to: utc("2026-10-27T00:00:00Z"),
			want: []time.Time{utc("2026-10-24T00:30:00Z"), utc("2026-10-25T00:30:00Z"), utc("2026-10-26T01:30:00Z")},
		},
		{
			name: "fall back: an hourly job runs every real hour",
			spec: "CRON_TZ=Europe/Berlin 0 * * * *",
			from: utc("2026-10-24T23:30:00Z"), to: utc("2026-10-25T02:00:00Z"),
			want: []time.Time{utc("2026-10-25T00:00:00Z"), utc("2026-10-25T01:00:00Z"), utc("2026-10-25T02:00:00Z")},
		},
		{
			name: "a 09:00 weekday job keeps 09:00 local across the change",
			spec: "CRON_TZ=Europe/Berlin 0 9 * * 1-5",
			from: utc("2026-10-22T12:00:00Z"), to: utc("2026-10-27T12:00:00Z"),
			want: []time.Time{utc("2026-10-23T07:00:00Z"), utc("2026-10-26T08:00:00Z"), utc("2026-10-27T08:00:00Z")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runs(mustSchedule(t, tt.spec), tt.from, tt.to)
			if len(got) != len(tt.want) {
				t.Fatalf("got runs %v, want %v", got, tt.want)
			}
			for i := range got {
				if !got[i].Equal(tt.want[i]) {
					t.Errorf("run %d: got %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestSchedulerDSTStepping steps a fixed clock every 10 minutes across both
// changes of 2026 and counts the 02:30 digests per local day.
func TestSchedulerDSTStepping(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no time zone data: %v", err)
	}
	for _, start := range []time.Time{utc("2026-03-27T12:00:00Z"), utc("2026-10-23T12:00:00Z")} {
		s := NewScheduler([]Digest{{Name: "night", Schedule: mustSchedule(t, "CRON_TZ=Europe/Berlin 30 2 * * *")}}, nil, start)
		perDay := map[string]int{}
		for now := start; now.Before(start.Add(96 * time.Hour)); now = now.Add(10 * time.Minute) {
			s.Fire(now, func(r Run) error {
				if r.Skipped {
					t.Errorf("at %v: got a skipped run %+v, want none", now, r)
				}
				perDay[r.At.In(berlin).Format("2006-01-02")]++
				return nil
			})
		}
		if len(perDay) != 4 {
			t.Errorf("from %v: got digests on %d days (%v), want 4", start, len(perDay), perDay)
		}
		for day, n := range perDay {
			if n != 1 {
				t.Errorf("%s: got %d digests, want 1", day, n)
			}
		}
	}
}

func TestSchedulerDue(t *testing.T) {
	daily := mustSchedule(t, "0 9 * * *")
	d1 := utc("2026-11-01T09:00:00Z")
	day := 24 * time.Hour
	tests := []struct {
		name   string
		digest Digest
		now    time.Time
		want   []Run
	}{
		{name: "not yet", digest: Digest{Name: "d", Schedule: daily}, now: d1.Add(day - time.Minute)},
		{name: "on time, window since the previous run", digest: Digest{Name: "d", Schedule: daily}, now: d1.Add(day),
			want: []Run{{Name: "d", At: d1.Add(day), From: d1, To: d1.Add(day)}}},
		{name: "late within catch_up", digest: Digest{Name: "d", Schedule: daily}, now: d1.Add(day + 59*time.Minute),
			want: []Run{{Name: "d", At: d1.Add(day), From: d1, To: d1.Add(day)}}},
		{name: "late beyond catch_up: skipped", digest: Digest{Name: "d", Schedule: daily}, now: d1.Add(day + time.Hour + time.Second),
			want: []Run{{Name: "d", At: d1.Add(day), Skipped: true}}},
		{name: "a longer catch_up", digest: Digest{Name: "d", Schedule: daily, CatchUp: 3 * time.Hour}, now: d1.Add(day + 2*time.Hour),
			want: []Run{{Name: "d", At: d1.Add(day), From: d1, To: d1.Add(day)}}},
		{name: "down for days: only the newest, within catch_up", digest: Digest{Name: "d", Schedule: daily}, now: d1.Add(3*day + 30*time.Minute),
			want: []Run{{Name: "d", At: d1.Add(3 * day), From: d1.Add(2 * day), To: d1.Add(3 * day), Missed: true}}},
		{name: "down for days, newest too late", digest: Digest{Name: "d", Schedule: daily}, now: d1.Add(3*day + 2*time.Hour),
			want: []Run{{Name: "d", At: d1.Add(3 * day), Skipped: true}}},
		{name: "a fixed window", digest: Digest{Name: "d", Schedule: mustSchedule(t, "0 */6 * * *"), Window: day}, now: d1.Add(3 * time.Hour),
			want: []Run{{Name: "d", At: d1.Add(3 * time.Hour), From: d1.Add(3*time.Hour - day), To: d1.Add(3 * time.Hour)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewScheduler([]Digest{tt.digest}, map[string]time.Time{"d": d1}, time.Time{})
			got := s.Due(tt.now)
			if len(got) != len(tt.want) {
				t.Fatalf("Due(%v): got %+v, want %+v", tt.now, got, tt.want)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.Name != w.Name || !g.At.Equal(w.At) || !g.From.Equal(w.From) || !g.To.Equal(w.To) || g.Skipped != w.Skipped || g.Missed != w.Missed {
					t.Errorf("Due(%v)[%d]: got %+v, want %+v", tt.now, i, g, w)
				}
				s.MarkSent(g.Name, g.At)
			}
			if again := s.Due(tt.now); len(again) != 0 {
				t.Errorf("Due(%v) after MarkSent: got %+v, want nothing (never twice)", tt.now, again)
			}
		})
	}
}

func TestSchedulerNewDigestDoesNotFireForThePast(t *testing.T) {
	since := utc("2026-11-30T09:30:00Z")
	s := NewScheduler([]Digest{{Name: "d", Schedule: mustSchedule(t, "0 9 * * *")}}, nil, since)
	if got := s.Due(since); len(got) != 0 {
		t.Errorf("Due at start: got %+v, want nothing (09:00 was before the digest existed)", got)
	}
	if got := s.Due(utc("2026-12-01T09:00:00Z")); len(got) != 1 {
		t.Errorf("Due next morning: got %+v, want one run", got)
	}
}

func TestPrevious(t *testing.T) {
	tests := []struct {
		spec string
		at   time.Time
		want time.Time
	}{
		{"0 9 * * 1-5", utc("2026-11-30T09:00:00Z"), utc("2026-11-27T09:00:00Z")}, // Monday → Friday
		{"*/5 * * * *", utc("2026-11-30T09:00:00Z"), utc("2026-11-30T08:55:00Z")},
		{"0 0 1 1 *", utc("2027-01-01T00:00:00Z"), utc("2026-01-01T00:00:00Z")},
	}
	for _, tt := range tests {
		if got := Previous(mustSchedule(t, tt.spec), tt.at); !got.Equal(tt.want) {
			t.Errorf("Previous(%q, %v): got %v, want %v", tt.spec, tt.at, got, tt.want)
		}
	}
}

func TestSchedulerRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now() // synctest's clock: 2000-01-01 00:00 UTC
		hourly := mustSchedule(t, "0 * * * *")
		halfPast := mustSchedule(t, "30 * * * *")
		last := map[string]time.Time{
			// Sent at 22:30; the 23:30 run was missed by 30 minutes
			// while gpuwatch was down: sent at start.
			"half": start.Add(-90 * time.Minute),
		}
		s := NewScheduler([]Digest{{Name: "hourly", Schedule: hourly}, {Name: "half", Schedule: halfPast}}, last, start)
		var (
			mu  sync.Mutex
			got []string
		)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.Run(ctx, time.Now, func(r Run) error {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, r.Name+"@"+r.At.Sub(start).String()+"/fired@"+time.Since(start).String())
				return nil
			})
		}()
		time.Sleep(2*time.Hour + time.Minute)
		synctest.Wait()
		cancel()
		<-done
		want := []string{
			"half@-30m0s/fired@0s",
			"half@30m0s/fired@30m0s",
			"hourly@1h0m0s/fired@1h0m0s",
			"half@1h30m0s/fired@1h30m0s",
			"hourly@2h0m0s/fired@2h0m0s",
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("got fires\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

func FuzzParseSchedule(f *testing.F) {
	for _, seed := range []string{"0 9 * * 1-5", "@daily", "@every 6h", "CRON_TZ=Europe/Berlin 30 2 * * *", "CRON_TZ=UTC", "TZ=", "@every -1s", "*/0 * * * *"} {
		f.Add(seed)
	}
	from := utc("2026-10-25T00:00:00Z")
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := ParseSchedule(spec)
		if err != nil {
			return
		}
		if next := s.Next(from); !next.IsZero() && !next.After(from) {
			t.Errorf("ParseSchedule(%q).Next(%v): got %v, want a later time", spec, from, next)
		}
	})
}

func BenchmarkSchedulerDue(b *testing.B) {
	d1 := utc("2026-11-01T09:00:00Z")
	s := NewScheduler([]Digest{
		{Name: "daily", Schedule: mustSchedule(b, "CRON_TZ=Europe/Berlin 0 9 * * 1-5")},
		{Name: "often", Schedule: mustSchedule(b, "@every 6h")},
	}, map[string]time.Time{"daily": d1, "often": d1}, time.Time{})
	now := d1.Add(30 * time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		s.Due(now)
	}
}

// TestFireRetriesARunThatWasNotWritten: a run whose fire failed (the store
// did not take it) is not marked sent and comes again; once written, never.
func TestFireRetriesARunThatWasNotWritten(t *testing.T) {
	start := utc("2026-11-30T08:00:00Z")
	s := NewScheduler([]Digest{{Name: "daily", Schedule: mustSchedule(t, "0 9 * * *")}}, nil, start)
	fail := true
	var tries []time.Time
	fire := func(r Run) error {
		tries = append(tries, r.At)
		if fail {
			return errors.New("disk full")
		}
		return nil
	}
	now := utc("2026-11-30T09:00:30Z")
	if s.Fire(now, fire) {
		t.Fatal("Fire reported every run written, want a failure")
	}
	fail = false
	if !s.Fire(now.Add(time.Minute), fire) {
		t.Fatal("Fire reported a failure on the retry")
	}
	s.Fire(now.Add(2*time.Minute), fire)
	if want := utc("2026-11-30T09:00:00Z"); len(tries) != 2 || !tries[0].Equal(want) || !tries[1].Equal(want) {
		t.Errorf("tries %v, want the 09:00 run twice (failed, then written) and not again", tries)
	}
}
