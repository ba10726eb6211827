package notifier

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/rules"
)

// Buckets the dispatcher keeps its decisions in, through a Commit.
const (
	// BucketGroups holds notifications waiting for their group_wait.
	BucketGroups = "groups"
	// BucketSent holds, per receiver and alert, when the receiver was last
	// told the alert fires; present means the receiver knows it fires.
	BucketSent = "sent"
	// BucketAcks holds, per alert key, who acknowledged the firing alert
	// and when; the record goes when the alert resolves.
	BucketAcks = "acks"
)

// Commit is what one snapshot changed: notifications to put in receivers'
// outboxes and records to put or delete, written in one transaction so a
// crash keeps all of it or none.
type Commit struct {
	Outbox map[string][][]byte          // receiver → encoded notifications, in order
	Put    map[string]map[string][]byte // bucket → key → value
	Delete map[string][]string          // bucket → keys
}

// Empty reports whether the commit changes nothing.
func (c *Commit) Empty() bool {
	return len(c.Outbox) == 0 && len(c.Put) == 0 && len(c.Delete) == 0
}

// PutRecord adds a record to write.
func (c *Commit) PutRecord(bucket, key string, value []byte) {
	if c.Put == nil {
		c.Put = map[string]map[string][]byte{}
	}
	if c.Put[bucket] == nil {
		c.Put[bucket] = map[string][]byte{}
	}
	c.Put[bucket][key] = value
	if dels := c.Delete[bucket]; len(dels) > 0 {
		c.Delete[bucket] = slices.DeleteFunc(dels, func(k string) bool { return k == key })
	}
}

// DeleteRecord adds a record to delete.
func (c *Commit) DeleteRecord(bucket, key string) {
	if c.Delete == nil {
		c.Delete = map[string][]string{}
	}
	c.Delete[bucket] = append(c.Delete[bucket], key)
	delete(c.Put[bucket], key)
}

// Absorb takes an earlier commit that could not be written into c, so both
// are written together: the earlier notifications go first in each outbox,
// and where both commits touch a record, c's (the later) change wins.
func (c *Commit) Absorb(earlier *Commit) {
	for receiver, payloads := range earlier.Outbox {
		if c.Outbox == nil {
			c.Outbox = map[string][][]byte{}
		}
		c.Outbox[receiver] = append(slices.Clone(payloads), c.Outbox[receiver]...)
	}
	for bucket, kv := range earlier.Put {
		for key, value := range kv {
			if _, put := c.Put[bucket][key]; !put && !slices.Contains(c.Delete[bucket], key) {
				c.PutRecord(bucket, key, value)
			}
		}
	}
	for bucket, keys := range earlier.Delete {
		for _, key := range keys {
			if _, put := c.Put[bucket][key]; !put && !slices.Contains(c.Delete[bucket], key) {
				c.DeleteRecord(bucket, key)
			}
		}
	}
}

// Muter says whether silences mute an alert at a time.
type Muter interface {
	Mutes(labels map[string]string, at time.Time) (id string, muted bool)
}

// Dispatcher turns the engine's transitions into notifications: it routes
// each alert to its receivers, drops what silences mute, holds alerts of one
// rule for the route's group_wait so they travel as one notification, lets
// reminders through only as often as each receiver's route says, and tells a
// receiver that an alert resolved only if it was told that it fired.
//
// It works in the snapshots' time, which Dispatch receives: it reads no
// clock. It is used by the sampling loop alone.
type Dispatcher struct {
	route    *Route
	silences Muter
	logger   *slog.Logger
	groups   map[string]*Notification // by group key, waiting for group_wait
	due      map[string]time.Time     // group key → when it goes out
	sent     map[string]time.Time     // receiver/alert key → last told it fires
	firing   map[string]bool          // alert key → fires, as the transitions said
	acks     map[string]Ack           // alert key → who acknowledged it
	owned    map[string]*owned        // alert key → what its owners were told
	lastAt   time.Time                // the latest Dispatch's time
	charts   func(t *rules.Transition) string
}

// SetCharts makes Dispatch name each alert's picture: charts returns the
// chart of a transition, "" for none.
func (d *Dispatcher) SetCharts(charts func(t *rules.Transition) string) { d.charts = charts }

// Ack records who acknowledged a firing alert, and when. An acknowledged
// alert gets no more reminders, for any receiver, until it resolves.
type Ack struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// NewDispatcher makes a dispatcher for a route tree.
func NewDispatcher(route *Route, silences Muter, logger *slog.Logger) *Dispatcher {
	return &Dispatcher{route: route, silences: silences, logger: logger,
		groups: map[string]*Notification{}, due: map[string]time.Time{}, sent: map[string]time.Time{},
		firing: map[string]bool{}, acks: map[string]Ack{}, owned: map[string]*owned{}}
}

// SetRoute replaces the route tree (a config reload).
func (d *Dispatcher) SetRoute(r *Route) { d.route = r }

// SetAsideFunc takes a stored record that cannot be read out of the way
// (the daemon moves it to the store's set-aside list, keeping its bytes)
// and says so; what reads the store goes on without it.
type SetAsideFunc func(bucket, key string, why error)

// Restore takes back what a previous run left in the store (buckets
// BucketGroups and BucketSent): groups still waiting and which receivers
// know which alerts fire. A record it cannot read goes to setAside.
func (d *Dispatcher) Restore(groups, sent map[string][]byte, setAside SetAsideFunc) {
	for key, raw := range groups {
		var g struct {
			Due          time.Time    `json:"due"`
			Notification Notification `json:"notification"`
		}
		if err := json.Unmarshal(raw, &g); err != nil {
			setAside(BucketGroups, key, fmt.Errorf("not a waiting group: %w", err))
			continue
		}
		d.groups[key], d.due[key] = &g.Notification, g.Due
	}
	for key, raw := range sent {
		var at time.Time
		if err := at.UnmarshalText(raw); err != nil {
			setAside(BucketSent, key, fmt.Errorf("not a time: %w", err))
			continue
		}
		d.sent[key] = at
	}
}

// RestoreAcks takes back the acknowledgements a previous run left in the
// store (bucket BucketAcks). A record it cannot read goes to setAside.
func (d *Dispatcher) RestoreAcks(acks map[string][]byte, setAside SetAsideFunc) {
	for key, raw := range acks {
		var a Ack
		if err := json.Unmarshal(raw, &a); err != nil {
			setAside(BucketAcks, key, fmt.Errorf("not an acknowledgement: %w", err))
			continue
		}
		d.acks[key] = a
	}
}

// Acknowledge records that by acknowledged the firing alert alertKey at
// time at: it gets no more reminders (those waiting for their group_wait
// are dropped) until it resolves. The returned commit makes that durable.
// It is an error to acknowledge an alert that is not firing.
func (d *Dispatcher) Acknowledge(alertKey, by string, at time.Time) (*Commit, error) {
	if !d.fires(alertKey) {
		return nil, fmt.Errorf("alert %s is not firing: only a firing alert can be acknowledged (see /gpu alerts)", alertKey)
	}
	c := &Commit{}
	ack := Ack{By: by, At: at}
	raw, err := json.Marshal(ack)
	if err != nil {
		return nil, fmt.Errorf("encode the acknowledgement of %s: %w", alertKey, err)
	}
	d.acks[alertKey] = ack
	c.PutRecord(BucketAcks, alertKey, raw)
	for key, g := range d.groups {
		if !strings.HasSuffix(key, "/repeat") {
			continue
		}
		g.Alerts = slices.DeleteFunc(g.Alerts, func(a Alert) bool { return a.Key == alertKey })
		if len(g.Alerts) > 0 {
			d.saveGroup(c, key)
			continue
		}
		delete(d.groups, key)
		delete(d.due, key)
		c.DeleteRecord(BucketGroups, key)
	}
	return c, nil
}

// Acknowledged reports who acknowledged the alert, if anyone did.
func (d *Dispatcher) Acknowledged(alertKey string) (by string, ok bool) {
	a, ok := d.acks[alertKey]
	return a.By, ok
}

// fires reports whether the alert fires, as far as the dispatcher knows:
// a firing transition went through it, or (after a restart) a receiver
// was told so.
func (d *Dispatcher) fires(alertKey string) bool {
	if d.firing[alertKey] {
		return true
	}
	for key := range d.sent {
		if strings.HasSuffix(key, "/"+alertKey) {
			return true
		}
	}
	return false
}

// target is where one alert goes: a receiver with its route's timing.
type target struct {
	receiver       string
	groupWait      time.Duration
	repeatInterval time.Duration
	owners         *Owners // how the route tells the alert's owners; nil: it does not
}

// targets are the receivers the routes (or the rule's own receivers) send
// an alert to. A rule's repeat_interval replaces the routes': the engine
// reminds at the rule's pace, and each reminder must get through.
func (d *Dispatcher) targets(t *rules.Transition) []target {
	var out []target
	if t.Rule != nil && len(t.Rule.Receivers) > 0 {
		for _, name := range t.Rule.Receivers {
			out = append(out, target{name, d.route.GroupWait, d.route.RepeatInterval, d.route.Owners})
		}
	} else {
		for _, r := range d.route.Match(t.Labels) {
			out = append(out, target{r.Receiver, r.GroupWait, r.RepeatInterval, r.Owners})
		}
	}
	if t.Rule != nil && t.Rule.RepeatInterval > 0 {
		for i := range out {
			out[i].repeatInterval = t.Rule.RepeatInterval
		}
	}
	return out
}

// told returns the receivers that were told the alert fires: they, and
// only they, hear that it resolved, even when a reload has routed the
// alert elsewhere since. Each keeps its route's timing where the alert
// still goes to it, the root's otherwise.
func (d *Dispatcher) told(alertKey string, routed []target) []target {
	var out []target
	for key := range d.sent {
		receiver, ok := strings.CutSuffix(key, "/"+alertKey)
		if !ok {
			continue
		}
		tg := target{receiver, d.route.GroupWait, d.route.RepeatInterval, d.route.Owners}
		if i := slices.IndexFunc(routed, func(r target) bool { return r.receiver == receiver }); i >= 0 {
			tg = routed[i]
		}
		out = append(out, tg)
	}
	slices.SortFunc(out, func(a, b target) int { return strings.Compare(a.receiver, b.receiver) })
	return out
}

// RepeatInterval is the shortest repeat interval of the routes an alert
// with these labels takes: the engine reminds at that pace, and Dispatch
// passes each receiver only its own.
func (d *Dispatcher) RepeatInterval(labels map[string]string) time.Duration {
	var shortest time.Duration
	for _, r := range d.route.Match(labels) {
		if r.RepeatInterval > 0 && (shortest == 0 || r.RepeatInterval < shortest) {
			shortest = r.RepeatInterval // 0 is "never" and does not pace the others
		}
	}
	return shortest
}

// Dispatch handles the transitions of the snapshot at time at and returns
// what must be made durable before anything is delivered: notifications for
// the outboxes (groups whose group_wait is over) and the dispatcher's own
// records. Call it at every snapshot, with or without transitions, so
// waiting groups go out on time.
func (d *Dispatcher) Dispatch(at time.Time, ts []rules.Transition) *Commit {
	c := &Commit{}
	if at.After(d.lastAt) {
		d.lastAt = at
	}
	for i := range ts {
		t := &ts[i]
		alert := FromTransition(t)
		alert.AcknowledgedBy = d.acks[alert.Key].By
		if o := d.owned[alert.Key]; o != nil && o.Alert.StartsAt.Equal(alert.StartsAt) {
			alert.Answer = o.Answer
		}
		if d.charts != nil {
			alert.Chart = d.charts(t)
		}
		d.clampClock(&alert)
		targets := d.targets(t)
		if alert.Status == StatusResolved {
			targets = d.told(alert.Key, targets)
			delete(d.firing, alert.Key)
			if _, acked := d.acks[alert.Key]; acked {
				delete(d.acks, alert.Key)
				c.DeleteRecord(BucketAcks, alert.Key)
			}
		} else {
			d.firing[alert.Key] = true
			if _, acked := d.acks[alert.Key]; acked && alert.Repeat {
				continue // acknowledged: no more reminders, for anyone
			}
			if alert.Repeat && alert.Answer.Quiets() {
				continue // its owner answered: no more reminders until asked again
			}
		}
		for _, tg := range targets {
			d.route1(c, at, &alert, tg)
		}
		if alert.Status == StatusResolved {
			d.disown(c, alert.Key)
		}
	}
	d.flush(c, at, false)
	d.ownerTimers(c, at)
	return c
}

// clampClock keeps a resolved alert from ending before it started: a clock
// set back across a restart makes the restored firing time later than the
// resolve. Receivers get an alert that lasted no time, and the log says why.
func (d *Dispatcher) clampClock(a *Alert) {
	if a.Status != StatusResolved || !a.EndsAt.Before(a.StartsAt) {
		return
	}
	d.logger.Warn("the clock went back: an alert resolves before it fired; its end is set to its start",
		"alert", a.Name, "gpu", a.GPU, "starts_at", a.StartsAt, "ends_at", a.EndsAt, "behind_by", a.StartsAt.Sub(a.EndsAt))
	a.EndsAt = a.StartsAt
	if a.At.Before(a.StartsAt) {
		a.At = a.StartsAt
	}
}

func (d *Dispatcher) route1(c *Commit, at time.Time, a *Alert, tg target) {
	sentKey := tg.receiver + "/" + a.Key
	lastSent, told := d.sent[sentKey]
	if a.Status == StatusResolved {
		if !told {
			return // it never heard the alert fire (silenced, or another route)
		}
		delete(d.sent, sentKey)
		c.DeleteRecord(BucketSent, sentKey)
		// Its firing (or reminder) may still wait for group_wait: it goes
		// out now, and the resolve right behind it, never before it.
		if d.flushAlert(c, tg.receiver, a.Key) {
			d.emit(c, d.add(c, at, *a, tg))
			return
		}
		d.add(c, at, *a, tg)
		return
	}
	if id, muted := d.silences.Mutes(a.Labels, at); muted {
		d.logger.Debug("alert silenced", "alert", a.Name, "gpu", a.GPU, "receiver", tg.receiver, "silence", id)
		return
	}
	if told && a.Repeat && (tg.repeatInterval <= 0 || at.Sub(lastSent) < tg.repeatInterval) {
		return // this receiver's route repeats less often
	}
	if !told {
		a.Repeat = false // a reminder to someone who never heard of it is news
	}
	d.sent[sentKey] = at
	stamp, _ := at.MarshalText()
	c.PutRecord(BucketSent, sentKey, stamp)
	if tg.owners != nil {
		d.own(c, at, a, tg)
	}
	d.add(c, at, *a, tg)
}

// add puts an alert in its group, one per receiver, rule and status, and
// returns the group's key.
func (d *Dispatcher) add(c *Commit, at time.Time, a Alert, tg target) string {
	kind := string(a.Status)
	if a.Repeat {
		kind = "repeat"
	}
	key := tg.receiver + "/" + a.Name + "/" + kind
	g, ok := d.groups[key]
	if !ok {
		g = &Notification{Receiver: tg.receiver, GroupKey: key, Status: a.Status, CreatedAt: at, Owners: tg.owners}
		d.groups[key], d.due[key] = g, at.Add(tg.groupWait)
	}
	g.Alerts = slices.DeleteFunc(g.Alerts, func(old Alert) bool { return old.Key == a.Key })
	g.Alerts = append(g.Alerts, a)
	d.saveGroup(c, key)
	return key
}

func (d *Dispatcher) saveGroup(c *Commit, key string) {
	raw, err := json.Marshal(struct {
		Due          time.Time     `json:"due"`
		Notification *Notification `json:"notification"`
	}{d.due[key], d.groups[key]})
	if err != nil {
		d.logger.Error("cannot encode a waiting notification", "group", key, "err", err)
		return
	}
	c.PutRecord(BucketGroups, key, raw)
}

// flush moves groups that are due (all of them with force) to the outbox.
func (d *Dispatcher) flush(c *Commit, at time.Time, force bool) {
	keys := make([]string, 0, len(d.groups))
	for key := range d.groups {
		if force || !at.Before(d.due[key]) {
			keys = append(keys, key)
		}
	}
	// Oldest first, so notifications keep the order they were made in.
	slices.SortFunc(keys, func(a, b string) int {
		if c := d.groups[a].CreatedAt.Compare(d.groups[b].CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for _, key := range keys {
		d.emit(c, key)
	}
}

// flushAlert moves the receiver's groups that hold the alert to the
// outbox, oldest first, and reports whether there were any. Other groups
// keep waiting: only this alert's order is at stake.
func (d *Dispatcher) flushAlert(c *Commit, receiver, alertKey string) bool {
	var keys []string
	for key, g := range d.groups {
		if g.Receiver == receiver && slices.ContainsFunc(g.Alerts, func(a Alert) bool { return a.Key == alertKey }) {
			keys = append(keys, key)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return d.groups[a].CreatedAt.Compare(d.groups[b].CreatedAt) })
	for _, key := range keys {
		d.emit(c, key)
	}
	return len(keys) > 0
}

func (d *Dispatcher) emit(c *Commit, key string) {
	g := d.groups[key]
	delete(d.groups, key)
	delete(d.due, key)
	c.DeleteRecord(BucketGroups, key)
	raw, err := json.Marshal(g)
	if err != nil {
		d.logger.Error("cannot encode a notification", "group", key, "err", err)
		return
	}
	if c.Outbox == nil {
		c.Outbox = map[string][][]byte{}
	}
	c.Outbox[g.Receiver] = append(c.Outbox[g.Receiver], raw)
}
