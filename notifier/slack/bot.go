package slack

import (
	"context"
	"errors"
	"maps"
	"strings"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// thread is the alerts of one notification that belong to one earlier
// message: the message's record and the alerts, in notification order.
type thread struct {
	rec    *record
	alerts []notifier.Alert
}

// plan sorts a notification's alerts by what each needs: a new message,
// a reply in the thread of its message (repeats), an update of its message
// (resolved), or nothing (done by an earlier try of this notification).
type plan struct {
	fresh    []notifier.Alert
	repeats  []*thread
	resolves []*thread
	// replies are resolves whose message an earlier try updated, and
	// whose thread reply it may or may not have posted.
	replies []*thread
	index   map[string]*thread // "R|channel|ts", "U|…" or "P|…" → thread
}

func (p *plan) add(kind string, rec *record, a notifier.Alert) {
	key := kind + "|" + rec.Channel + "|" + rec.TS
	t, ok := p.index[key]
	if !ok {
		t = &thread{rec: rec}
		p.index[key] = t
		switch kind {
		case "R":
			p.repeats = append(p.repeats, t)
		case "U":
			p.resolves = append(p.resolves, t)
		default:
			p.replies = append(p.replies, t)
		}
	}
	t.alerts = append(t.alerts, a)
}

// notifyBot delivers through the Web API. It holds the notifier's lock:
// a record is read, the message changed and the record written back, and
// two notifications about one message must not interleave.
func (n *Notifier) notifyBot(ctx context.Context, m *notifier.Notification) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.unsaved) > 0 {
		n.flushUnsaved()
	}
	now := n.now()
	n.delivering = m.ID
	if m.Event != nil {
		return n.ownerEvent(ctx, m, now)
	}
	alerts := alertsOf(m)
	if m.Owners != nil {
		var retry bool
		var err error
		if alerts, retry, err = n.tellOwners(ctx, m.Owners, alerts, now); err != nil {
			return retry, err
		}
	}
	p := n.plan(m, alerts)
	if len(p.fresh) > 0 {
		if retry, err := n.postNew(ctx, p.fresh, now); err != nil {
			return retry, err
		}
	}
	for _, t := range p.repeats {
		if retry, err := n.replyRepeat(ctx, t, now); err != nil {
			return retry, err
		}
	}
	for _, t := range p.resolves {
		if retry, err := n.resolve(ctx, t, now); err != nil {
			return retry, err
		}
	}
	for _, t := range p.replies {
		if retry, err := n.finishResolvedReply(ctx, t, now); err != nil {
			return retry, err
		}
	}
	return false, nil
}

// plan sorts the alerts of m the channel hears of (all of them, unless a
// route holds some back for their owners).
func (n *Notifier) plan(m *notifier.Notification, alerts []notifier.Alert) *plan {
	p := &plan{index: map[string]*thread{}}
	for _, a := range alerts {
		rec := n.load(a.Key)
		if rec != nil && m.ID != 0 && m.ID < rec.Through {
			continue // delivered before, and a later notification since
		}
		var entry *notifier.Alert
		if rec != nil {
			entry = rec.entry(a.Key)
		}
		// The record is about this firing of the alert, not an earlier one.
		same := entry != nil && entry.StartsAt.Equal(a.StartsAt)
		switch {
		case a.Status == notifier.StatusResolved && same && entry.Status == notifier.StatusResolved:
			// Resolved by an earlier try, which may have stopped before it
			// knew its thread reply was posted.
			if at, ok := rec.ReplyPending[a.Key]; ok && at.Equal(a.At) {
				p.add("P", rec, a)
			}
		case a.Status == notifier.StatusResolved && same:
			p.add("U", rec, a)
		case a.Status == notifier.StatusResolved:
			p.fresh = append(p.fresh, a)
		case same && entry.Status == notifier.StatusResolved:
			// The firing (or a reminder) delivered again after its resolve,
			// as after a crash before the outbox recorded both: the
			// message tells the end already.
		case same && !a.Repeat:
			// Announced by an earlier try.
		case same:
			if at, ok := rec.Replied[a.Key]; ok && !a.At.IsZero() && at.Equal(a.At) {
				continue // replied by an earlier try
			}
			p.add("R", rec, a)
		default:
			p.fresh = append(p.fresh, a)
		}
	}
	return p
}

// postNew posts a new channel message about alerts and records it.
func (n *Notifier) postNew(ctx context.Context, alerts []notifier.Alert, now time.Time) (bool, error) {
	blocks, text := render(alerts, now)
	channel, ts, err := n.post(ctx, "", blocks, text)
	if err != nil {
		return n.fail(ctx, "chat.postMessage", err)
	}
	n.save(&record{Channel: channel, TS: ts, Alerts: alerts}, alertKeys(alerts))
	return false, nil
}

// replyRepeat replies in the thread of the message that announced the
// alerts: they are still firing. A message that is gone gets a new one.
func (n *Notifier) replyRepeat(ctx context.Context, t *thread, now time.Time) (bool, error) {
	reply := repeatReply(t.alerts, now)
	_, _, err := n.postIn(ctx, t.rec.Channel, t.rec.TS, nil, reply)
	if messageGone(err) {
		return n.postNew(ctx, t.alerts, now)
	}
	if err != nil {
		return n.fail(ctx, "chat.postMessage (thread reply)", err)
	}
	rec := *t.rec
	rec.Replied = make(map[string]time.Time, len(t.rec.Replied)+len(t.alerts))
	for k, v := range t.rec.Replied {
		rec.Replied[k] = v
	}
	for _, a := range t.alerts {
		rec.Replied[a.Key] = a.At
	}
	n.save(&rec, alertKeys(t.alerts))
	return false, nil
}

// resolve updates the message that announced the alerts, with them marked
// resolved and its other alerts as they were, and replies in its thread.
// A message that is gone (deleted, too old to edit) gets a new one.
func (n *Notifier) resolve(ctx context.Context, t *thread, now time.Time) (bool, error) {
	rec := &record{Channel: t.rec.Channel, TS: t.rec.TS, Replied: t.rec.Replied, Through: t.rec.Through,
		Alerts: append([]notifier.Alert(nil), t.rec.Alerts...)}
	keys := alertKeys(t.alerts)
	for _, a := range t.alerts {
		if e := rec.entry(a.Key); e != nil {
			*e = a
		} else {
			rec.Alerts = append(rec.Alerts, a)
		}
	}
	// The alerts still firing in the message need the new picture too,
	// with whoever acknowledged them since it was posted.
	for i := range rec.Alerts {
		a := &rec.Alerts[i]
		if a.Status == notifier.StatusResolved {
			continue
		}
		keys = append(keys, a.Key)
		if n.opts.Acknowledged != nil && a.AcknowledgedBy == "" {
			a.AcknowledgedBy, _ = n.opts.Acknowledged(a.Key)
		}
	}
	blocks, text := render(rec.Alerts, now)
	err := n.update(ctx, rec.Channel, rec.TS, blocks, text)
	if messageGone(err) {
		return n.postNew(ctx, t.alerts, now)
	}
	if err != nil {
		return n.fail(ctx, "chat.update", err)
	}
	// The message says resolved: keep that, and that its reply is on its
	// way, before posting the reply, so that a retry after a crash looks
	// for the reply instead of posting it twice.
	rec.ReplyPending = maps.Clone(rec.ReplyPending)
	if rec.ReplyPending == nil {
		rec.ReplyPending = map[string]time.Time{}
	}
	for _, a := range t.alerts {
		rec.ReplyPending[a.Key] = a.At
	}
	n.save(rec, keys)
	return n.postResolvedReply(ctx, rec, t.alerts, keys, now)
}

// post posts a message to the configured channel; see postIn.
func (n *Notifier) post(ctx context.Context, threadTS string, blocks []goslack.Block, text string) (string, string, error) {
	return n.postIn(ctx, strings.TrimSpace(n.cfg.Channel), threadTS, blocks, text)
}

// postIn posts a message with chat.postMessage, in a thread when threadTS
// is set, each call within its own timeout; as plain text when its blocks
// cannot go (see withBlocks). It returns the channel ID and ts.
func (n *Notifier) postIn(ctx context.Context, channel, threadTS string, blocks []goslack.Block, text string, extra ...goslack.MsgOption) (string, string, error) {
	var gotChannel, ts string
	err := n.withBlocks("chat.postMessage", blocks, text, func(blocks []goslack.Block, text string) error {
		ctx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
		defer cancel()
		opts := []goslack.MsgOption{goslack.MsgOptionText(text, false)}
		if len(blocks) > 0 {
			opts = append(opts, goslack.MsgOptionBlocks(blocks...))
		}
		if threadTS != "" {
			opts = append(opts, goslack.MsgOptionTS(threadTS))
		}
		if n.cfg.Username != "" {
			opts = append(opts, goslack.MsgOptionUsername(n.cfg.Username))
		}
		opts = append(opts, extra...)
		var err error
		gotChannel, ts, err = n.api.PostMessageContext(ctx, channel, opts...)
		return err
	})
	return gotChannel, ts, err
}

// update changes a message with chat.update, each call within its own
// timeout; as plain text (see withBlocks) its old blocks are cleared.
func (n *Notifier) update(ctx context.Context, channel, ts string, blocks []goslack.Block, text string) error {
	return n.withBlocks("chat.update", blocks, text, func(blocks []goslack.Block, text string) error {
		ctx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
		defer cancel()
		_, _, _, err := n.api.UpdateMessageContext(ctx, channel, ts, goslack.MsgOptionText(text, false), goslack.MsgOptionBlocks(blocks...))
		return err
	})
}

// messageGone reports whether Slack says the message to update or reply
// to no longer exists or can no longer be edited.
func messageGone(err error) bool {
	var apiErr goslack.SlackErrorResponse
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.Err {
	case "message_not_found", "thread_not_found", "cant_update_message", "edit_window_closed":
		return true
	}
	return false
}

func alertKeys(alerts []notifier.Alert) []string {
	keys := make([]string, len(alerts))
	for i := range alerts {
		keys[i] = alerts[i].Key
	}
	return keys
}
