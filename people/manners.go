package people

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// The manners: what each person asked for and what they were sent, kept
// by Slack user ID.

// MaxMute is the longest /gpu mute-me.
const MaxMute = 7 * 24 * time.Hour

// Mute keeps alerts from reaching id by direct message or @mention until
// until (a zero time ends a mute).
func (p *People) Mute(id string, until time.Time) error {
	raw, _ := until.UTC().MarshalText()
	return p.put(muteKey(id), raw)
}

// MutedUntil is when id's mute ends; zero when id is not muted at now.
func (p *People) MutedUntil(id string, now time.Time) time.Time {
	raw, ok := p.get(muteKey(id))
	if !ok {
		return time.Time{}
	}
	var until time.Time
	if until.UnmarshalText(raw) != nil || !now.Before(until) {
		return time.Time{}
	}
	return until
}

// SetDigest records which personal digest id wants: weekly, daily or off.
func (p *People) SetDigest(id, choice string) error {
	if !slices.Contains([]string{DigestWeekly, DigestDaily, DigestOff}, choice) {
		return fmt.Errorf("%q is not weekly, daily or off", clip(choice))
	}
	return p.put(digestKey(id), []byte(choice))
}

// DigestChoice is the personal digest id gets: what they chose, else the
// section's default.
func (p *People) DigestChoice(id string) string {
	if raw, ok := p.get(digestKey(id)); ok {
		if c := string(raw); slices.Contains([]string{DigestWeekly, DigestDaily, DigestOff}, c) {
			return c
		}
	}
	return p.cfg.Digest.Default
}

// dayCount is how many direct messages a person got on a day of theirs.
type dayCount struct {
	Day   string `json:"day"` // "2026-11-29", in their zone
	Count int    `json:"count"`
}

// MayDisturb reports whether an alert may reach the person now, by direct
// message or @mention, and when not, why ("muted until 18:00", "quiet
// hours", "10 messages today"): a critical one always may, unless they
// muted alerts; a warning not in their quiet hours, nor past the daily
// limit.
func (p *People) MayDisturb(person Person, critical bool, now time.Time) (bool, string) {
	loc := person.Location()
	if until := p.MutedUntil(person.ID, now); !until.IsZero() {
		return false, "muted until " + until.In(loc).Format("Mon 15:04")
	}
	if critical {
		return true, ""
	}
	if p.quiet != nil && person.KnowsZone() && p.quiet.Holds(now.In(loc)) {
		return false, "quiet hours"
	}
	if c := p.sentOn(person, now); c.Count >= p.cfg.DailyLimit {
		return false, fmt.Sprintf("%d messages today", c.Count)
	}
	return true, ""
}

// Disturbed counts a direct message sent to the person now, toward the
// daily limit.
func (p *People) Disturbed(person Person, now time.Time) {
	c := p.sentOn(person, now)
	c.Count++
	if raw, err := json.Marshal(c); err == nil {
		p.put(dmsKey(person.ID), raw)
	}
}

// sentOn is the count of the person's day that now falls in.
func (p *People) sentOn(person Person, now time.Time) dayCount {
	day := now.In(person.Location()).Format(time.DateOnly)
	var c dayCount
	if raw, ok := p.get(dmsKey(person.ID)); ok && json.Unmarshal(raw, &c) == nil && c.Day == day {
		return c
	}
	return dayCount{Day: day}
}

func muteKey(id string) string   { return "mute/" + id }
func digestKey(id string) string { return "digest/" + id }
func dmsKey(id string) string    { return "dms/" + id }
