package daemon

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/digest"
	"github.com/gpuwatch/gpuwatch/people"
)

// TestPersonalDigestSchedules runs the personal digests' schedules on the
// scheduler's timers, in a bubble whose clock the test moves: over eight
// days the weekly digest comes once, on Monday at 09:00, over the week
// before, and the daily one every morning, over the day before.
func TestPersonalDigestSchedules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := &config.Config{People: people.Config{Email: "{user}@example.org", Digest: people.DigestConfig{Receiver: "team"}}}
		cfg.People.ApplyDefaults()
		d := &Daemon{people: people.New(cfg.People, people.Options{})}
		list, err := d.personalDigests(cfg)
		if err != nil || len(list) != 2 {
			t.Fatalf("personal digests: %v, %v; want weekly and daily", list, err)
		}
		start := time.Now() // the bubble's: Saturday 1 January 2000, midnight UTC
		s := digest.NewScheduler(list, nil, start)
		var mu sync.Mutex
		fired := map[string][]digest.Run{}
		ctx, cancel := context.WithCancel(t.Context())
		go s.Run(ctx, time.Now, func(r digest.Run) error {
			mu.Lock()
			defer mu.Unlock()
			fired[r.Name] = append(fired[r.Name], r)
			return nil
		})
		time.Sleep(8 * 24 * time.Hour)
		cancel()
		synctest.Wait()
		weekly, daily := fired["people:weekly"], fired["people:daily"]
		if len(weekly) != 1 || weekly[0].At.Weekday() != time.Monday || weekly[0].At.Hour() != 9 || weekly[0].To.Sub(weekly[0].From) != 7*24*time.Hour {
			t.Errorf("weekly: %+v, want one run, Monday 09:00, over 7 days", weekly)
		}
		if len(daily) != 8 {
			t.Fatalf("daily: %d runs, want one a morning for 8 days", len(daily))
		}
		for _, r := range daily {
			if r.At.Hour() != 9 || r.To.Sub(r.From) != 24*time.Hour {
				t.Errorf("daily: %+v, want 09:00 over a day", r)
			}
		}
		for _, runs := range fired {
			for _, r := range runs {
				if choice, ok := personalChoice(r.Name); !ok || (choice != people.DigestWeekly && choice != people.DigestDaily) {
					t.Errorf("a run %q that is no personal digest", r.Name)
				}
			}
		}
	})
}
