package notifier

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// BucketOwned holds, per alert key, the firing alerts whose owners were
// told: the receivers that told them, the owners' answer, and when the
// alert escalates or its owner is asked again. The record goes when the
// alert resolves.
const BucketOwned = "owned"

// owned is what the dispatcher keeps of an alert whose owners a route
// tells: it survives a restart, so neither an escalation nor a question
// asked again is lost, and none is made twice.
type owned struct {
	// Alert is the alert as it was last sent.
	Alert Alert `json:"alert"`
	// Receivers are the receivers told, with their routes' owners: block.
	Receivers map[string]*Owners `json:"receivers"`
	// EscalateAt is when the alert escalates unless an owner answers;
	// zero when it does not.
	EscalateAt time.Time `json:"escalate_at,omitzero"`
	// EscalateWhy says why.
	EscalateWhy string `json:"escalate_why,omitempty"`
	// Answer is the owners' latest answer; Clicks the button presses
	// already acted on, so a press Slack sends again acts once.
	Answer *Answer   `json:"answer,omitempty"`
	Clicks []string  `json:"clicks,omitempty"`
	Asked  time.Time `json:"asked,omitzero"` // when the owner was last asked again
}

// maxClicks is how many presses an alert remembers.
const maxClicks = 16

// RestoreOwned takes back the owned alerts a previous run left in the
// store (bucket BucketOwned). A record it cannot read goes to setAside.
func (d *Dispatcher) RestoreOwned(records map[string][]byte, setAside SetAsideFunc) {
	for key, raw := range records {
		var o owned
		if err := json.Unmarshal(raw, &o); err != nil || o.Alert.Key != key {
			setAside(BucketOwned, key, fmt.Errorf("not an alert whose owners were told: %v", err))
			continue
		}
		d.owned[key] = &o
	}
}

// own records that tg's route tells the owners of a firing alert, and
// when it escalates. The caller then sends it to tg.
func (d *Dispatcher) own(c *Commit, at time.Time, a *Alert, tg target) {
	o := d.owned[a.Key]
	if o == nil || !o.Alert.StartsAt.Equal(a.StartsAt) {
		o = &owned{Receivers: map[string]*Owners{}}
		d.owned[a.Key] = o
	}
	o.Alert = *a
	o.Alert.Answer = o.Answer
	o.Receivers[tg.receiver] = tg.owners
	if after, ok := tg.owners.escalates(a.Severity); ok && o.Answer == nil && !a.Repeat {
		if due := at.Add(after); o.EscalateAt.IsZero() || due.Before(o.EscalateAt) {
			o.EscalateAt, o.EscalateWhy = due, "no answer within "+shortText(after)
		}
	}
	d.saveOwned(c, a.Key)
}

// disown forgets an alert that resolved.
func (d *Dispatcher) disown(c *Commit, key string) {
	if _, ok := d.owned[key]; ok {
		delete(d.owned, key)
		c.DeleteRecord(BucketOwned, key)
	}
}

func (d *Dispatcher) saveOwned(c *Commit, key string) {
	raw, err := json.Marshal(d.owned[key])
	if err != nil {
		d.logger.Error("cannot encode what the owners of an alert were told", "alert", key, "err", err)
		return
	}
	c.PutRecord(BucketOwned, key, raw)
}

// Answered is the owners' latest answer to a firing alert; nil when none.
func (d *Dispatcher) Answered(alertKey string) *Answer {
	if o := d.owned[alertKey]; o != nil {
		return o.Answer
	}
	return nil
}

// Owned returns a firing alert whose owners a route tells, as it was
// last sent (with its processes: who holds the GPU); false when no route
// tells its owners, or it is not firing.
func (d *Dispatcher) Owned(alertKey string) (Alert, bool) {
	o := d.owned[alertKey]
	if o == nil || !d.fires(alertKey) {
		return Alert{}, false
	}
	return o.Alert, true
}

// Answer records an owner's answer to a firing alert whose owners were
// told, at the time of the latest evaluation: "still using it" snoozes
// it (no reminders, and the owner is asked again after the route's
// snooze); "done" and "watching it" stop its reminders and its
// escalation; "not mine" escalates it at once. Every receiver that told
// its owners gets the answer, to write in the alert's threads. A press
// already acted on (the same Click) changes nothing: the answer returned
// is the one recorded, and the commit is empty. The commit makes it
// durable.
func (d *Dispatcher) Answer(alertKey string, ans Answer) (*Commit, Answer, error) {
	o := d.owned[alertKey]
	if o == nil || !d.fires(alertKey) {
		return nil, Answer{}, fmt.Errorf("alert %s is not firing, or nobody was asked about it: there is nothing to answer", alertKey)
	}
	c := &Commit{}
	if ans.Click != "" && slices.Contains(o.Clicks, ans.Click) {
		if o.Answer != nil {
			return c, *o.Answer, nil
		}
		return c, ans, nil
	}
	at := d.lastAt
	if at.IsZero() || at.Before(o.Alert.At) {
		at = o.Alert.At
	}
	ans.At = at
	if ans.Kind == AnswerStillUsing {
		ans.Until = at.Add(o.snooze())
	}
	o.Answer = &ans
	o.Alert.Answer = &ans
	if ans.Click != "" {
		o.Clicks = append(o.Clicks, ans.Click)
		if len(o.Clicks) > maxClicks {
			o.Clicks = o.Clicks[len(o.Clicks)-maxClicks:]
		}
	}
	o.EscalateAt, o.EscalateWhy = time.Time{}, ""
	d.tellReceivers(c, at, o, &OwnerEvent{Kind: EventAnswer})
	if ans.Kind == AnswerNotMine {
		d.tellReceivers(c, at, o, &OwnerEvent{Kind: EventEscalate, Why: "<@" + ans.ByID + "> says it is not theirs"})
	}
	d.saveOwned(c, alertKey)
	return c, ans, nil
}

// snooze is how long "still using it" quiets the alert: the shortest of
// its receivers' routes.
func (o *owned) snooze() time.Duration {
	s := time.Duration(0)
	for _, ow := range o.Receivers {
		if ow != nil && ow.Snooze > 0 && (s == 0 || ow.Snooze < s) {
			s = ow.Snooze
		}
	}
	if s == 0 {
		s = DefaultSnooze
	}
	return s
}

// ownerTimers escalates the owned alerts whose owners did not answer in
// time and asks again the owners whose snooze is over, at time at.
func (d *Dispatcher) ownerTimers(c *Commit, at time.Time) {
	if len(d.owned) == 0 {
		return // no route tells owners: nothing waits
	}
	for _, key := range slices.Sorted(maps.Keys(d.owned)) {
		o := d.owned[key]
		if !d.fires(key) {
			continue
		}
		switch {
		case !o.EscalateAt.IsZero() && !at.Before(o.EscalateAt) && o.Answer == nil:
			d.tellReceivers(c, at, o, &OwnerEvent{Kind: EventEscalate, Why: o.EscalateWhy})
			o.EscalateAt, o.EscalateWhy = time.Time{}, ""
			d.saveOwned(c, key)
		case o.Answer != nil && o.Answer.Kind == AnswerStillUsing && !at.Before(o.Answer.Until):
			o.Answer, o.Alert.Answer, o.Asked = nil, nil, at
			d.tellReceivers(c, at, o, &OwnerEvent{Kind: EventAsk})
			for _, ow := range o.Receivers {
				if after, ok := ow.escalates(o.Alert.Severity); ok {
					if due := at.Add(after); o.EscalateAt.IsZero() || due.Before(o.EscalateAt) {
						o.EscalateAt, o.EscalateWhy = due, "no answer within "+shortText(after)
					}
				}
			}
			d.saveOwned(c, key)
		}
	}
}

// tellReceivers puts an owner event about o's alert in the outbox of
// every receiver that told its owners, at once: it waits for no group.
func (d *Dispatcher) tellReceivers(c *Commit, at time.Time, o *owned, ev *OwnerEvent) {
	for _, receiver := range slices.Sorted(maps.Keys(o.Receivers)) {
		n := &Notification{Receiver: receiver, GroupKey: receiver + "/" + o.Alert.Name + "/" + string(ev.Kind), Status: StatusFiring,
			Alerts: []Alert{o.Alert}, CreatedAt: at, Owners: o.Receivers[receiver], Event: ev}
		raw, err := json.Marshal(n)
		if err != nil {
			d.logger.Error("cannot encode an owner event", "alert", o.Alert.Key, "err", err)
			continue
		}
		if c.Outbox == nil {
			c.Outbox = map[string][][]byte{}
		}
		c.Outbox[receiver] = append(c.Outbox[receiver], raw)
	}
}

// shortText writes a duration as people do: "30m", "2h", "1h30m".
func shortText(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, sec := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	var b strings.Builder
	for _, p := range []struct {
		n    int
		unit string
	}{{h, "h"}, {m, "m"}, {sec, "s"}} {
		if p.n > 0 {
			fmt.Fprintf(&b, "%d%s", p.n, p.unit)
		}
	}
	if b.Len() == 0 {
		return "0s"
	}
	return b.String()
}
