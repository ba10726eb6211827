package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/people"
)

// People is what a receiver whose route tells owners asks of the people:
// section (a *people.People).
type People interface {
	// Owners are the persons behind an alert's processes, and the
	// holders that belong to no one.
	Owners(ctx context.Context, procs []gpu.Process) ([]people.Owner, []string, error)
	// Person is the Slack user an ID or email names (escalate_to).
	Person(ctx context.Context, who string) (people.Person, error)
	// MayDisturb says whether an alert may reach the person now, and
	// why not; Disturbed counts a direct message sent.
	MayDisturb(p people.Person, critical bool, now time.Time) (bool, string)
	Disturbed(p people.Person, now time.Time)
}

// ownerRecord is what a receiver keeps of the owners of one firing of an
// alert, beside the channel's record: who they are, whose direct message
// is where, whether the channel hears of it, and which steps are done, so
// that a retry after a failed call sends nothing twice.
type ownerRecord struct {
	StartsAt time.Time  `json:"starts_at"`
	Found    bool       `json:"found"` // the owners were looked up
	Owners   []ownerRef `json:"owners,omitempty"`
	Unmapped []string   `json:"unmapped,omitempty"`
	// Channel says the channel hears of the alert: no route held it
	// back, or it was escalated there.
	Channel   bool      `json:"channel,omitempty"`
	Escalated bool      `json:"escalated,omitempty"`
	Second    *ownerRef `json:"second,omitempty"` // escalate_to's direct message
	// Done are the steps done: "repeat@AT/U…", "resolved/U…",
	// "answer/CLICK/U…", "ask@AT/U…", "escalated/reply".
	Done map[string]bool `json:"done,omitempty"`
}

// ownerRef is one owner of an alert's holders and their direct message.
type ownerRef struct {
	Person people.Person `json:"person"`
	Holds  []string      `json:"holds,omitempty"`
	// Why says why the owner was not told ("quiet hours", "muted until
	// Mon 18:00"); "" when they were.
	Why string `json:"why,omitempty"`
	DM  string `json:"dm,omitempty"` // the direct message's conversation
	TS  string `json:"ts,omitempty"` // and the message
}

// dmed reports whether any owner got a direct message.
func (r *ownerRecord) dmed() bool {
	return slices.ContainsFunc(r.Owners, func(o ownerRef) bool { return o.TS != "" })
}

func (r *ownerRecord) done(step string) bool { return r.Done[step] }

func (r *ownerRecord) mark(step string) {
	if r.Done == nil {
		r.Done = map[string]bool{}
	}
	r.Done[step] = true
}

func ownerRecordKey(alertKey string) string { return "owners/" + alertKey }

// loadOwners returns the owner record of an alert, nil when there is
// none or it cannot be read (the alert is then treated as its channel
// message alone). The caller holds n.mu.
func (n *Notifier) loadOwners(alertKey string) *ownerRecord {
	if n.opts.Messages == nil {
		return nil
	}
	key := n.recordKey(ownerRecordKey(alertKey))
	b, ok := n.unsaved[key]
	if !ok {
		var err error
		if b, ok, err = n.opts.Messages.Get(key); err != nil {
			n.log.Warn("slack owner record not read", "receiver", n.name, "key", key, "err", n.redact(err))
			return nil
		}
	}
	if !ok {
		return nil
	}
	var r ownerRecord
	if err := json.Unmarshal(b, &r); err != nil {
		delete(n.unsaved, key)
		n.opts.Messages.SetAside(key, fmt.Errorf("not an owner record: %w", err))
		return nil
	}
	return &r
}

// saveOwners writes an owner record, as save writes a message record.
// The caller holds n.mu.
func (n *Notifier) saveOwners(alertKey string, r *ownerRecord) {
	if n.opts.Messages == nil {
		return
	}
	b, err := json.Marshal(r)
	if err != nil {
		n.log.Warn("slack owner record not encoded", "receiver", n.name, "err", err)
		return
	}
	n.unsaved[n.recordKey(ownerRecordKey(alertKey))] = b
	n.flushUnsaved()
}

// tellOwners tells the owners of each alert's holders what the route's
// owners: block says, and returns the alerts the channel hears of, each
// naming its owners. It stops at the first failed call; what it did is
// recorded, so the retry goes on from there. The caller holds n.mu.
func (n *Notifier) tellOwners(ctx context.Context, policy *notifier.Owners, alerts []notifier.Alert, now time.Time) ([]notifier.Alert, bool, error) {
	if n.opts.People == nil {
		return alerts, false, nil
	}
	var channel []notifier.Alert
	for _, a := range alerts {
		rec := n.loadOwners(a.Key)
		if rec != nil && !rec.StartsAt.Equal(a.StartsAt) {
			rec = nil // of an earlier firing
		}
		news := a.Status != notifier.StatusResolved && !a.Repeat
		switch {
		case rec == nil && !news:
			channel = append(channel, a) // announced before owners were told: the channel's alone
			continue
		case rec == nil:
			rec = &ownerRecord{StartsAt: a.StartsAt}
		}
		var retry bool
		var err error
		switch {
		case news:
			retry, err = n.announceToOwners(ctx, policy, &a, rec, now)
		case a.Status == notifier.StatusResolved:
			retry, err = n.resolveForOwners(ctx, &a, rec, now)
		default:
			retry, err = n.remindOwners(ctx, &a, rec, now)
		}
		if err != nil {
			return nil, retry, err
		}
		if rec.Channel {
			channel = append(channel, withOwners(a, rec, policy))
		}
	}
	return channel, false, nil
}

// withOwners is the alert as the channel message shows it: naming its
// owners, @mentioned where the route says so and they may be disturbed.
func withOwners(a notifier.Alert, rec *ownerRecord, policy *notifier.Owners) notifier.Alert {
	a.Owners = nil
	for _, o := range rec.Owners {
		if policy.Mention && o.Why == "" {
			a.Owners = append(a.Owners, o.Person.Mention())
		} else {
			a.Owners = append(a.Owners, blockkit.EscapeClip(o.Person.Display(), maxNameRunes))
		}
	}
	return a
}

// announceToOwners finds a firing alert's owners, sends each who may be
// disturbed a direct message (when the route says dm), and decides
// whether the channel hears of it now.
func (n *Notifier) announceToOwners(ctx context.Context, policy *notifier.Owners, a *notifier.Alert, rec *ownerRecord, now time.Time) (bool, error) {
	critical := a.Severity == "critical"
	wall := n.wall() // a person's day, quiet hours and mute go by the wall clock
	if !rec.Found {
		owners, unmapped, err := n.opts.People.Owners(ctx, a.Processes)
		if err != nil {
			return n.fail(ctx, "looking up the owners", err)
		}
		for _, o := range owners {
			ref := ownerRef{Person: o.Person, Holds: o.Holds}
			if ok, why := n.opts.People.MayDisturb(o.Person, critical, wall); !ok {
				ref.Why = why
			}
			rec.Owners = append(rec.Owners, ref)
		}
		rec.Found, rec.Unmapped = true, unmapped
		n.saveOwners(a.Key, rec)
	}
	if policy.DM {
		for i := range rec.Owners {
			o := &rec.Owners[i]
			if o.Why != "" || o.TS != "" {
				continue
			}
			if retry, err := n.dmOwner(ctx, a, o, now); err != nil {
				return retry, err
			}
			n.opts.People.Disturbed(o.Person, wall)
			n.saveOwners(a.Key, rec)
		}
	}
	if !rec.Channel && (!policy.Only || critical || !rec.dmed()) {
		rec.Channel = true
		n.saveOwners(a.Key, rec)
	}
	return false, nil
}

// wall is the wall clock, or the notifier's clock without one.
func (n *Notifier) wall() time.Time {
	if n.opts.Wall != nil {
		return n.opts.Wall()
	}
	return n.now()
}

// dmOwner sends an owner the alert, with their buttons, in a direct
// message, and records where.
func (n *Notifier) dmOwner(ctx context.Context, a *notifier.Alert, o *ownerRef, now time.Time) (bool, error) {
	if o.DM == "" {
		dm, err := n.openDM(ctx, o.Person.ID)
		if err != nil {
			return n.fail(ctx, "conversations.open", err)
		}
		o.DM = dm
	}
	blocks, text := ownerMessage(a, o, now)
	channel, ts, err := n.postIn(ctx, o.DM, "", blocks, text)
	if err != nil {
		return n.fail(ctx, "chat.postMessage (direct message)", err)
	}
	o.DM, o.TS = channel, ts
	return false, nil
}

// openDM opens (or finds) the bot's direct message conversation with a
// user: conversations.open, which needs the im:write scope.
func (n *Notifier) openDM(ctx context.Context, userID string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
	defer cancel()
	ch, _, _, err := n.api.OpenConversationContext(ctx, &goslack.OpenConversationParameters{Users: []string{userID}})
	if err != nil {
		return "", err
	}
	if ch == nil || ch.ID == "" {
		return "", errors.New("conversations.open answered no conversation")
	}
	return ch.ID, nil
}

// ownerMessage is an owner's direct message about an alert: what their
// job is doing, and their buttons while it fires.
func ownerMessage(a *notifier.Alert, o *ownerRef, now time.Time) ([]goslack.Block, string) {
	blocks, text := renderFor([]notifier.Alert{*a}, now, true)
	yours := "👋 This is about your job on the GPU"
	if len(o.Holds) > 0 {
		yours = "👋 This is about your " + blockkit.EscapeClip(strings.Join(o.Holds, ", "), maxTextRunes)
	}
	note := goslack.NewContextBlock("", mrkdwn(yours))
	blocks = slices.Insert(blocks, 1, goslack.Block(note))
	return blocks, text
}

// remindOwners replies in each owner's direct message that the alert
// still fires: its thread is the alert's thread, as in the channel.
func (n *Notifier) remindOwners(ctx context.Context, a *notifier.Alert, rec *ownerRecord, now time.Time) (bool, error) {
	for i := range rec.Owners {
		o := &rec.Owners[i]
		step := "repeat@" + a.At.UTC().Format(time.RFC3339Nano) + "/" + o.Person.ID
		if o.TS == "" || rec.done(step) || (a.Answer != nil && a.Answer.Kind == notifier.AnswerNotMine && a.Answer.ByID == o.Person.ID) {
			continue
		}
		if _, _, err := n.postIn(ctx, o.DM, o.TS, nil, repeatReply([]notifier.Alert{*a}, now)); err != nil && !messageGone(err) {
			return n.fail(ctx, "chat.postMessage (direct message thread)", err)
		}
		rec.mark(step)
		n.saveOwners(a.Key, rec)
	}
	return false, nil
}

// resolveForOwners marks each owner's direct message resolved and says so
// in its thread.
func (n *Notifier) resolveForOwners(ctx context.Context, a *notifier.Alert, rec *ownerRecord, now time.Time) (bool, error) {
	for _, o := range append(slices.Clone(rec.Owners), ptrOrNone(rec.Second)...) {
		step := "resolved/" + o.Person.ID
		if o.TS == "" || rec.done(step) {
			continue
		}
		blocks, text := ownerMessage(a, &o, now)
		if err := n.update(ctx, o.DM, o.TS, blocks, text); err != nil && !messageGone(err) {
			return n.fail(ctx, "chat.update (direct message)", err)
		}
		if _, _, err := n.postIn(ctx, o.DM, o.TS, nil, resolvedReply([]notifier.Alert{*a}, now)); err != nil && !messageGone(err) {
			return n.fail(ctx, "chat.postMessage (direct message thread)", err)
		}
		rec.mark(step)
		n.saveOwners(a.Key, rec)
	}
	return false, nil
}

func ptrOrNone(r *ownerRef) []ownerRef {
	if r == nil {
		return nil
	}
	return []ownerRef{*r}
}

// ownerEvent tells the news of an owner event (an answer, a question asked
// again, an escalation) in the alert's messages and threads. An event
// about a firing this receiver did not tell owners of does nothing.
func (n *Notifier) ownerEvent(ctx context.Context, m *notifier.Notification, now time.Time) (bool, error) {
	if len(m.Alerts) == 0 || m.Owners == nil {
		return false, nil
	}
	a := m.Alerts[0]
	rec := n.loadOwners(a.Key)
	if rec == nil || !rec.StartsAt.Equal(a.StartsAt) {
		return false, nil
	}
	switch m.Event.Kind {
	case notifier.EventAnswer:
		return n.tellAnswer(ctx, m.Owners, &a, rec, now)
	case notifier.EventAsk:
		return n.askAgain(ctx, &a, rec, m.CreatedAt, now)
	case notifier.EventEscalate:
		return n.escalate(ctx, m.Owners, &a, rec, m.Event.Why, now)
	}
	return false, nil
}

// tellAnswer redraws the alert's messages with an owner's answer in place
// of the owner's buttons, and writes it in each thread.
func (n *Notifier) tellAnswer(ctx context.Context, policy *notifier.Owners, a *notifier.Alert, rec *ownerRecord, now time.Time) (bool, error) {
	if a.Answer == nil {
		return false, nil
	}
	line := "🙋 " + answerText(a.Answer)
	for i := range rec.Owners {
		o := &rec.Owners[i]
		step := "answer/" + a.Answer.Click + "/" + o.Person.ID
		if o.TS == "" || rec.done(step) {
			continue
		}
		blocks, text := ownerMessage(a, o, now)
		if err := n.update(ctx, o.DM, o.TS, blocks, text); err != nil && !messageGone(err) {
			return n.fail(ctx, "chat.update (direct message)", err)
		}
		if _, _, err := n.postIn(ctx, o.DM, o.TS, nil, line); err != nil && !messageGone(err) {
			return n.fail(ctx, "chat.postMessage (direct message thread)", err)
		}
		rec.mark(step)
		n.saveOwners(a.Key, rec)
	}
	step := "answer/" + a.Answer.Click + "/channel"
	crec := n.load(a.Key)
	if !rec.Channel || rec.done(step) || crec == nil || crec.entry(a.Key) == nil || !crec.entry(a.Key).StartsAt.Equal(a.StartsAt) {
		return false, nil
	}
	updated := *crec
	updated.Alerts = slices.Clone(crec.Alerts)
	e := updated.entry(a.Key)
	e.Answer = a.Answer
	blocks, text := render(updated.Alerts, now)
	if err := n.update(ctx, updated.Channel, updated.TS, blocks, text); err != nil && !messageGone(err) {
		return n.fail(ctx, "chat.update", err)
	}
	n.save(&updated, alertKeys(updated.Alerts))
	if _, _, err := n.postIn(ctx, updated.Channel, updated.TS, nil, line); err != nil && !messageGone(err) {
		return n.fail(ctx, "chat.postMessage (thread reply)", err)
	}
	rec.mark(step)
	n.saveOwners(a.Key, rec)
	return false, nil
}

// askAgain asks each owner again, in their direct message's thread, once
// a snooze is over: the alert still fires.
func (n *Notifier) askAgain(ctx context.Context, a *notifier.Alert, rec *ownerRecord, asked, now time.Time) (bool, error) {
	for i := range rec.Owners {
		o := &rec.Owners[i]
		step := "ask@" + asked.UTC().Format(time.RFC3339Nano) + "/" + o.Person.ID
		if o.TS == "" || rec.done(step) {
			continue
		}
		blocks, text := ownerMessage(a, o, now)
		if err := n.update(ctx, o.DM, o.TS, blocks, text); err != nil && !messageGone(err) {
			return n.fail(ctx, "chat.update (direct message)", err)
		}
		question := fmt.Sprintf("⏰ Still using %s? %s still fires", blockkit.Escape(onHost(a)), blockkit.Escape(a.Name))
		ask := []goslack.Block{goslack.NewSectionBlock(mrkdwn(question), nil, nil), ownerActionsBlock(a, 0)}
		if _, _, err := n.postIn(ctx, o.DM, o.TS, ask, question); err != nil && !messageGone(err) {
			return n.fail(ctx, "chat.postMessage (direct message thread)", err)
		}
		rec.mark(step)
		n.saveOwners(a.Key, rec)
	}
	return false, nil
}

// escalate takes an alert nobody answered (or whose owner says it is not
// theirs) to the channel held back from, with a line saying why in its
// thread, or to the route's second person by direct message. An alert
// no owner got a direct message about is the channel's already.
func (n *Notifier) escalate(ctx context.Context, policy *notifier.Owners, a *notifier.Alert, rec *ownerRecord, why string, now time.Time) (bool, error) {
	if rec.Escalated || !rec.dmed() {
		return false, nil
	}
	line := "⏰ Escalated: " + why
	if policy.EscalateTo != "" {
		if rec.Second == nil {
			person, err := n.opts.People.Person(ctx, policy.EscalateTo)
			if err != nil {
				if errors.Is(err, people.ErrUnknown) {
					n.log.Warn("escalate_to names a person Slack does not know: the alert goes to the channel", "receiver", n.name)
					return n.escalateToChannel(ctx, policy, a, rec, line, now)
				}
				return n.fail(ctx, "looking up escalate_to", err)
			}
			rec.Second = &ownerRef{Person: person}
		}
		if rec.Second.TS == "" {
			dm, err := n.openDM(ctx, rec.Second.Person.ID)
			if err != nil {
				return n.fail(ctx, "conversations.open", err)
			}
			blocks, text := render([]notifier.Alert{withOwners(*a, rec, policy)}, now)
			blocks = slices.Insert(blocks, 1, goslack.Block(goslack.NewContextBlock("", mrkdwn(blockkit.ClipEscaped(line, maxTextRunes)))))
			channel, ts, err := n.postIn(ctx, dm, "", blocks, text)
			if err != nil {
				return n.fail(ctx, "chat.postMessage (direct message)", err)
			}
			rec.Second.DM, rec.Second.TS = channel, ts
		}
		rec.Escalated = true
		n.saveOwners(a.Key, rec)
		return false, nil
	}
	return n.escalateToChannel(ctx, policy, a, rec, line, now)
}

// escalateToChannel posts the alert in the channel, if it is not there
// yet, and why in its thread.
func (n *Notifier) escalateToChannel(ctx context.Context, policy *notifier.Owners, a *notifier.Alert, rec *ownerRecord, line string, now time.Time) (bool, error) {
	crec := n.load(a.Key)
	if crec == nil || crec.entry(a.Key) == nil || !crec.entry(a.Key).StartsAt.Equal(a.StartsAt) {
		rec.Channel = true
		n.saveOwners(a.Key, rec)
		if retry, err := n.postNew(ctx, []notifier.Alert{withOwners(*a, rec, policy)}, now); err != nil {
			return retry, err
		}
		crec = n.load(a.Key)
	}
	if !rec.done("escalated/reply") && crec != nil {
		if _, _, err := n.postIn(ctx, crec.Channel, crec.TS, nil, line); err != nil && !messageGone(err) {
			return n.fail(ctx, "chat.postMessage (thread reply)", err)
		}
	}
	rec.mark("escalated/reply")
	rec.Escalated = true
	n.saveOwners(a.Key, rec)
	return false, nil
}
