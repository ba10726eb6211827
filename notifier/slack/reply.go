package slack

import (
	"context"
	"maps"
	"slices"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// A resolve updates the alert's message, then replies in its thread. A
// crash after the reply but before the record that says so is written
// would make the retry post the reply again; so the record says first
// that the reply is on its way (ReplyPending), and the reply carries
// metadata naming each alert and resolve it tells. A retry that finds a
// reply pending reads the thread (conversations.replies, which needs the
// channels:history scope, or groups:history in a private channel) and
// posts only when the reply is not there. Without the scope it posts, and
// the reply may show twice, as before.

// resolvedEvent is the metadata event type of a resolved reply.
const resolvedEvent = "gpuwatch_resolved"

// maxThreadPages bounds the pages of a thread read to find a reply.
const maxThreadPages = 5

// replyTokens name each alert a resolved reply tells, with its resolve.
func replyTokens(alerts []notifier.Alert) []any {
	out := make([]any, len(alerts))
	for i := range alerts {
		out[i] = alerts[i].Key + "@" + alerts[i].At.UTC().Format(time.RFC3339Nano)
	}
	return out
}

// postResolvedReply posts the resolved reply in rec's thread, with the
// metadata that finds it again, then writes rec without the pending mark
// of alerts, under keys.
func (n *Notifier) postResolvedReply(ctx context.Context, rec *record, alerts []notifier.Alert, keys []string, now time.Time) (bool, error) {
	meta := goslack.MsgOptionMetadata(goslack.SlackMetadata{EventType: resolvedEvent,
		EventPayload: map[string]any{"resolved": replyTokens(alerts)}})
	if _, _, err := n.postIn(ctx, rec.Channel, rec.TS, nil, resolvedReply(alerts, now), meta); err != nil && !messageGone(err) {
		return n.fail(ctx, "chat.postMessage (thread reply)", err)
	}
	n.replied(rec, alerts, keys)
	return false, nil
}

// finishResolvedReply ends a resolve an earlier try stopped in the middle
// of: its message says resolved, its reply may be in the thread. It posts
// the reply when the thread does not have it.
func (n *Notifier) finishResolvedReply(ctx context.Context, t *thread, now time.Time) (bool, error) {
	keys := alertKeys(t.alerts)
	for i := range t.rec.Alerts {
		if a := &t.rec.Alerts[i]; a.Status != notifier.StatusResolved && !slices.Contains(keys, a.Key) {
			keys = append(keys, a.Key)
		}
	}
	found, err := n.findResolvedReply(ctx, t.rec, t.alerts)
	switch {
	case err != nil:
		n.log.Warn("cannot read the alert's thread to see whether an earlier try posted its resolved reply; posting it, so it may show twice "+
			"(give the Slack app the channels:history scope, groups:history for a private channel)", "receiver", n.name, "err", n.redact(err))
	case found:
		n.replied(t.rec, t.alerts, keys)
		return false, nil
	}
	return n.postResolvedReply(ctx, t.rec, t.alerts, keys, now)
}

// replied writes rec, under keys, without the pending mark of alerts:
// their reply is in the thread.
func (n *Notifier) replied(rec *record, alerts []notifier.Alert, keys []string) {
	done := *rec
	done.ReplyPending = maps.Clone(rec.ReplyPending)
	for _, a := range alerts {
		delete(done.ReplyPending, a.Key)
	}
	if len(done.ReplyPending) == 0 {
		done.ReplyPending = nil
	}
	n.save(&done, keys)
}

// findResolvedReply reads rec's thread for a reply whose metadata tells
// every one of alerts resolved.
func (n *Notifier) findResolvedReply(ctx context.Context, rec *record, alerts []notifier.Alert) (bool, error) {
	want := replyTokens(alerts)
	return n.findInThread(ctx, rec.Channel, rec.TS, func(m *goslack.Message) bool {
		if m.Metadata.EventType != resolvedEvent {
			return false
		}
		told, _ := m.Metadata.EventPayload["resolved"].([]any)
		return !slices.ContainsFunc(want, func(w any) bool { return !slices.Contains(told, w) })
	})
}

// findInThread reads the thread of the message channel/ts, with its
// metadata, at most maxThreadPages pages of it (conversations.replies,
// which needs channels:history, or groups:history in a private channel),
// and reports whether a message of it is one match looks for.
func (n *Notifier) findInThread(ctx context.Context, channel, ts string, match func(*goslack.Message) bool) (bool, error) {
	params := &goslack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: ts, IncludeAllMetadata: true, Limit: 200}
	for range maxThreadPages {
		callCtx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
		msgs, more, cursor, err := n.api.GetConversationRepliesContext(callCtx, params)
		cancel()
		if err != nil {
			return false, err
		}
		for i := range msgs {
			if match(&msgs[i]) {
				return true, nil
			}
		}
		if !more || cursor == "" {
			return false, nil
		}
		params.Cursor = cursor
	}
	return false, nil
}
