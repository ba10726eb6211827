package digest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule says when a digest is due: Next returns the first scheduled
// time after t.
type Schedule interface {
	Next(t time.Time) time.Time
}

// ParseSchedule parses a cron schedule: five fields ("0 9 * * 1-5"), a
// descriptor ("@daily", "@every 6h"), either after an optional
// "CRON_TZ=Zone " prefix. A time of day that a daylight-saving change skips
// runs once, at the change; one that a change repeats runs once, the
// first time.
func ParseSchedule(spec string) (s Schedule, err error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("the schedule is empty: write five cron fields (0 9 * * 1-5), a descriptor (@daily, @every 6h), optionally after CRON_TZ=Zone")
	}
	if zone, ok := strings.CutPrefix(spec, "CRON_TZ="); ok || strings.HasPrefix(spec, "TZ=") {
		if !ok {
			zone = strings.TrimPrefix(spec, "TZ=")
		}
		if i := strings.IndexAny(zone, " \t"); i < 0 || strings.TrimSpace(zone[i:]) == "" {
			return nil, fmt.Errorf("schedule %q needs the five fields after CRON_TZ=%s, e.g. CRON_TZ=Europe/Berlin 0 9 * * 1-5", spec, strings.TrimSpace(zone))
		}
	}
	defer func() {
		// robfig/cron panics on some malformed specs; a config value must
		// never take gpuwatch down.
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("schedule %q is not a valid cron schedule (%v): write five fields (0 9 * * 1-5) or a descriptor (@daily, @every 6h), optionally after CRON_TZ=Zone", spec, r)
		}
	}()
	// The five standard fields, descriptors and a CRON_TZ= (or TZ=) prefix.
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	parsed, err := parser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %v: write five fields (minute hour day-of-month month day-of-week, e.g. 0 9 * * 1-5) or a descriptor (@daily, @every 6h), optionally after CRON_TZ=Zone", spec, err)
	}
	if _, ok := parsed.(cron.ConstantDelaySchedule); ok {
		// robfig/cron rounds a zero or negative @every up to 1s.
		_, every, _ := strings.Cut(spec, "@every ")
		if d, err := time.ParseDuration(strings.TrimSpace(every)); err != nil || d < time.Second {
			return nil, fmt.Errorf("schedule %q: @every needs a duration of at least 1s, e.g. @every 6h", spec)
		}
	}
	if cs, ok := parsed.(*cron.SpecSchedule); ok && cs.Hour&starBit == 0 {
		// Fixed hours: guard against daylight-saving changes. Wildcard
		// hours keep robfig's behaviour: every real hour runs.
		return wallClock{cs}, nil
	}
	return parsed, nil
}

// starBit is robfig/cron's mark of a "*" field.
const starBit = 1 << 63

// wallClock is a schedule at fixed local times of day that runs once per
// matching local time across daylight-saving changes: robfig/cron skips a
// time the spring change skips, and runs a time the autumn change repeats
// twice.
type wallClock struct{ spec *cron.SpecSchedule }

// Next returns the first run after t.
func (w wallClock) Next(t time.Time) time.Time {
	for range 4 { // at most a repeated time or two per change
		next := w.spec.Next(t)
		if next.IsZero() {
			return next
		}
		if skipped, ok := w.skippedRun(t, next); ok {
			return skipped
		}
		if !w.repeated(next) {
			return next
		}
		t = next
	}
	return w.spec.Next(t)
}

// repeated reports whether next is the second occurrence of its local wall
// time (the autumn change's repeated hour) whose first occurrence also
// matched the schedule.
func (w wallClock) repeated(next time.Time) bool {
	loc := w.spec.Location
	_, offNow := next.In(loc).Zone()
	for _, back := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
		earlier := next.Add(-back).In(loc)
		_, offEarlier := earlier.Zone()
		if offEarlier-offNow == int(back.Seconds()) {
			return true // the same wall time, back earlier, in the earlier offset
		}
	}
	return false
}

// skippedRun finds a run robfig/cron skipped between after and next: a
// matching wall time in the gap of a spring change. Such a run happens at
// the change.
func (w wallClock) skippedRun(after, next time.Time) (time.Time, bool) {
	loc := w.spec.Location
	_, offA := after.In(loc).Zone()
	_, offB := next.In(loc).Zone()
	if offB <= offA {
		return time.Time{}, false
	}
	// Find the change: the first second with the later offset.
	lo, hi := after, next
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if _, off := mid.In(loc).Zone(); off == offA {
			lo = mid
		} else {
			hi = mid
		}
	}
	change := hi
	if !change.After(after) {
		return time.Time{}, false
	}
	gapStart := change.In(time.FixedZone("", offA)) // the first wall time the change skips
	wall := time.Date(gapStart.Year(), gapStart.Month(), gapStart.Day(), gapStart.Hour(), gapStart.Minute(), 0, 0, time.UTC)
	for m := 0; m < (offB-offA)/60; m++ {
		if w.matches(wall.Add(time.Duration(m) * time.Minute)) {
			return change, true
		}
	}
	return time.Time{}, false
}

// matches reports whether the wall time (its fields read as is) matches
// the schedule's fields.
func (w wallClock) matches(t time.Time) bool {
	s := w.spec
	bit := func(field uint64, v int) bool { return field&(1<<uint(v)) != 0 }
	if !bit(s.Minute, t.Minute()) || !bit(s.Hour, t.Hour()) || !bit(s.Month, int(t.Month())) {
		return false
	}
	dom, dow := bit(s.Dom, t.Day()), bit(s.Dow, int(t.Weekday()))
	if s.Dom&starBit != 0 || s.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// Digest is one scheduled digest as the Scheduler sees it.
type Digest struct {
	Name     string
	Schedule Schedule
	// Window is how far back a digest looks; zero: since the previous
	// scheduled time.
	Window time.Duration
	// CatchUp is how late a run may still be sent (after gpuwatch was
	// down); zero means DefaultCatchUp.
	CatchUp time.Duration
}

// DefaultCatchUp is how late a missed digest may still be sent.
const DefaultCatchUp = time.Hour

// Run is one digest to send: its scheduled time At and the window [From, To)
// it reports on.
type Run struct {
	Name     string
	At       time.Time
	From, To time.Time
	// Skipped is set on a run missed by more than its catch_up: it is not
	// to be sent, only logged (From and To are zero).
	Skipped bool
	// Missed is set when older scheduled runs since the last one sent
	// were passed over: only the newest is sent.
	Missed bool
}

// Scheduler decides which digests are due. It holds when each digest was
// last sent (its scheduled time); it never reads the clock except in Run.
type Scheduler struct {
	fire    sync.Mutex // one Fire at a time: a run is sent once
	mu      sync.Mutex
	digests []Digest
	last    map[string]time.Time
}

// NewScheduler returns a scheduler of digests, last sent at the times of
// last (by name). A digest not in last counts as sent at since: its first
// run is its first scheduled time after since, so a new digest does not
// fire for the past.
func NewScheduler(digests []Digest, last map[string]time.Time, since time.Time) *Scheduler {
	s := &Scheduler{digests: make([]Digest, len(digests)), last: make(map[string]time.Time, len(digests))}
	for i, d := range digests {
		if d.CatchUp <= 0 {
			d.CatchUp = DefaultCatchUp
		}
		s.digests[i] = d
		t, ok := last[d.Name]
		if !ok {
			t = since
		}
		s.last[d.Name] = t
	}
	return s
}

// Due returns, in the order of the digests, the runs due at now: for each
// digest the newest scheduled time at or before now and after the last
// sent one. A run later than its catch_up comes back Skipped. Older missed
// runs are never sent (only the newest is), and a run once marked sent
// never comes back.
func (s *Scheduler) Due(now time.Time) []Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	var runs []Run
	for i := range s.digests {
		if r, ok := s.due(&s.digests[i], now); ok {
			runs = append(runs, r)
		}
	}
	return runs
}

// maxSteps bounds a walk over scheduled times.
const maxSteps = 100_000

func (s *Scheduler) due(d *Digest, now time.Time) (Run, bool) {
	start := s.last[d.Name]
	horizon := now.Add(-d.CatchUp)
	missed := false
	if first := d.Schedule.Next(start); !first.IsZero() && first.Before(horizon) {
		// Runs older than catch_up: passed over; walk only the recent
		// stretch (an outage of a minutely schedule is long).
		missed, start = true, horizon.Add(-time.Nanosecond)
	}
	var at time.Time
	n := 0
	for t := d.Schedule.Next(start); !t.IsZero() && !t.After(now) && n < maxSteps; t = d.Schedule.Next(t) {
		at, n = t, n+1
	}
	switch {
	case n == 0 && missed:
		return Run{Name: d.Name, At: Previous(d.Schedule, horizon), Skipped: true}, true
	case n == 0:
		return Run{}, false
	}
	r := Run{Name: d.Name, At: at, To: at, Missed: missed || n > 1}
	if d.Window > 0 {
		r.From = at.Add(-d.Window)
	} else {
		r.From = Previous(d.Schedule, at)
	}
	return r, true
}

// Previous returns the scheduled time before at (cron schedules only look
// forward, so it searches back in growing steps, up to about two years).
func Previous(s Schedule, at time.Time) time.Time {
	for back := time.Hour; back <= 2*366*24*time.Hour; back *= 2 {
		t := s.Next(at.Add(-back))
		if t.IsZero() || !t.Before(at) {
			continue
		}
		for n := 0; n < maxSteps; n++ {
			next := s.Next(t)
			if next.IsZero() || !next.Before(at) {
				break
			}
			t = next
		}
		return t
	}
	return at.Add(-24 * time.Hour) // a schedule that runs once in years
}

// MarkSent records that the digest name ran (was sent or skipped) for its
// scheduled time at.
func (s *Scheduler) MarkSent(name string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at.After(s.last[name]) {
		s.last[name] = at
	}
}

// LastSent returns the scheduled time the digest name last ran for.
func (s *Scheduler) LastSent(name string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.last[name]
	return t, ok
}

// Fire calls fire for every run due at now and marks each run sent once
// fire made it durable (returned nil), so a run is never sent twice and a
// run that could not be written is tried again. It reports whether every
// run was made durable.
func (s *Scheduler) Fire(now time.Time, fire func(Run) error) bool {
	s.fire.Lock()
	defer s.fire.Unlock()
	ok := true
	for _, r := range s.Due(now) {
		if err := fire(r); err != nil {
			ok = false
			continue
		}
		s.MarkSent(r.Name, r.At)
	}
	return ok
}

// NextAt returns the earliest scheduled time after now, zero without
// digests.
func (s *Scheduler) NextAt(now time.Time) time.Time {
	var next time.Time
	for _, d := range s.digests { // digests never change: no lock needed
		if t := d.Schedule.Next(now); !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// RetryFailed is how soon Run tries again a run that could not be written.
const RetryFailed = time.Minute

// Run fires the digests as they come due until ctx ends: it checks at
// once (a digest missed while gpuwatch was down), then sleeps on a timer
// until the next scheduled time. clock is the wall clock (time.Now; a test's
// clock); fire runs on Run's goroutine.
func (s *Scheduler) Run(ctx context.Context, clock func() time.Time, fire func(Run) error) {
	for {
		now := clock()
		durable := s.Fire(now, fire)
		next := s.NextAt(now)
		if !durable && (next.IsZero() || next.Sub(now) > RetryFailed) {
			next = now.Add(RetryFailed) // the store failed: try again soon
		}
		if next.IsZero() {
			<-ctx.Done()
			return
		}
		// Look again at least every minute: the clock may not be the wall
		// clock (a paced simulation's runs faster) or may jump.
		timer := time.NewTimer(min(next.Sub(now), time.Minute))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}
