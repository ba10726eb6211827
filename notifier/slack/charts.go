package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// ChartWait is how long, on the wall clock, an upload waits for the
// message it belongs in (the alert's, the digest's) before it gives up on
// the picture: the text's delivery failed for good, or took that long.
const ChartWait = time.Hour

// errMessageNotYet says the message a picture belongs in is not posted
// yet: the upload is tried again after it.
var errMessageNotYet = errors.New("the message the chart belongs in is not posted yet")

// ChartUploader posts the pictures of the notifications a bot-mode
// receiver delivered, each in the thread of its message, with Slack's
// upload flow (files.getUploadURLExternal, the bytes, then
// files.completeUploadExternal). It is a notifier.Notifier of its own, fed
// by its own outbox, so a message never waits for its picture and a
// failing upload delays only pictures. An upload done is recorded: a
// retry never posts a picture twice. The share itself is recorded as in
// doubt before files.completeUploadExternal: when its answer is lost (a
// timeout, a crash) after Slack shared the file, the retry looks for the
// file in the thread (conversations.replies, the scope the resolved
// replies need) and shares it again only when it is not there; without
// the scope it shares it again, and the picture may show twice.
type ChartUploader struct {
	n      *Notifier
	charts notifier.Charts
	bot    *Bot
	mu     sync.Mutex
	// waiting is when each chart first found its message not yet posted,
	// by chart ID, on the wall clock (not the alert's time, which a
	// replayed log puts days back).
	waiting map[string]time.Time
}

// ChartUploader returns the uploader of n's pictures, drawn by charts and
// uploaded by bot, which knows whether the app may; nil for a webhook
// receiver, which cannot upload, and without a message store, which finds
// the messages pictures belong in.
func (n *Notifier) ChartUploader(charts notifier.Charts, bot *Bot) *ChartUploader {
	if n.api == nil || n.opts.Messages == nil || bot == nil {
		return nil
	}
	return &ChartUploader{n: n, charts: charts, bot: bot, waiting: map[string]time.Time{}}
}

// Notify uploads the pictures of m's alerts (or digest) that were not
// uploaded yet.
func (u *ChartUploader) Notify(ctx context.Context, m *notifier.Notification) (bool, error) {
	if m == nil || !u.bot.MayUpload() {
		return false, nil
	}
	if m.Digest != nil {
		for _, id := range m.Digest.Charts {
			if retry, err := u.upload(ctx, id, digestRecordKey(id), time.Time{}, "Usage: "+m.Digest.Title, false); err != nil {
				return retry, err
			}
		}
		return false, nil
	}
	for _, a := range alertsOf(m) {
		if a.Chart == "" {
			continue
		}
		if retry, err := u.upload(ctx, a.Chart, a.Key, a.StartsAt, chartComment(&a), a.Status == notifier.StatusResolved); err != nil {
			return retry, err
		}
	}
	return false, nil
}

// chartComment is the line above an alert's picture.
func chartComment(a *notifier.Alert) string {
	if a.Status == notifier.StatusResolved {
		return fmt.Sprintf("How %s on %s ended", a.Name, where(a))
	}
	return fmt.Sprintf("%s on %s", a.Name, where(a))
}

func where(a *notifier.Alert) string {
	if a.OnGPU() {
		return a.Subject() + " of " + a.Host
	}
	return a.Host
}

// upload posts chart id in the thread of the message recorded under key
// (an alert key, whose record must be of the firing that started at
// startsAt, or a digest's key, startsAt zero). The picture of a resolve
// waits for the message that tells the resolve: the alert's message
// updated, or a new one when that was deleted. Past ChartWait without
// the message, or when the alert's message is already of a later firing
// (a replayed log outruns the pictures), the picture is given up.
func (u *ChartUploader) upload(ctx context.Context, id, key string, startsAt time.Time, comment string, resolved bool) (bool, error) {
	n := u.n
	doneKey := n.name + "/chart/" + id
	// The owners' direct messages get the picture too; an alert held back
	// from the channel for its owners, only they.
	dms, heldBack := u.ownerThreads(key, startsAt)
	for _, dm := range dms {
		if retry, err := u.put(ctx, id, doneKey+"/"+dm.Person.ID, dm.DM, dm.TS, comment); err != nil {
			return retry, err
		}
	}
	if heldBack {
		return false, nil
	}
	if _, done, err := n.opts.Messages.Get(doneKey); err == nil && done {
		return false, nil
	}
	channel, ts, state := u.message(key, startsAt, resolved)
	if state != messageNotYet {
		u.mu.Lock()
		delete(u.waiting, id)
		u.mu.Unlock()
	}
	switch {
	case state == messageReplaced:
		n.log.Info("a chart is dropped: its alert fired again since, and the message is of the later firing", "chart", id, "key", key)
		return false, nil
	case state == messageNotYet:
		if u.waitedTooLong(id) {
			n.log.Warn("a chart is dropped: its message was never posted", "chart", id, "key", key, "waited", ChartWait)
			return false, nil
		}
		return true, errMessageNotYet
	}
	return u.put(ctx, id, doneKey, channel, ts, comment)
}

// ownerThreads are the direct messages of the owners of the firing of an
// alert that started at startsAt, and whether the channel has no message
// about it (held back for them); none for a digest, or before the owners
// were looked up.
func (u *ChartUploader) ownerThreads(key string, startsAt time.Time) ([]ownerRef, bool) {
	if startsAt.IsZero() {
		return nil, false
	}
	n := u.n
	n.mu.Lock()
	defer n.mu.Unlock()
	rec := n.loadOwners(key)
	if rec == nil || !rec.StartsAt.Equal(startsAt) || !rec.Found {
		return nil, false
	}
	var dms []ownerRef
	for _, o := range rec.Owners {
		if o.TS != "" {
			dms = append(dms, o)
		}
	}
	return dms, !rec.Channel && len(dms) > 0
}

// put uploads chart id in the thread of channel and ts, unless doneKey
// says it was, and records it under doneKey.
func (u *ChartUploader) put(ctx context.Context, id, doneKey, channel, ts, comment string) (bool, error) {
	n := u.n
	if _, done, err := n.opts.Messages.Get(doneKey); err == nil && done {
		return false, nil
	}
	png, err := u.charts.ChartPNG(id)
	if err != nil {
		n.log.Warn("a chart could not be drawn; the message goes without it", "chart", id, "err", err)
		return false, nil
	}
	ctx = withRetryAfterNote(ctx)
	// One share in doubt per place: the channel's is the chart's, an
	// owner's direct message's has the owner after it, as doneKey has.
	sharingKey := n.name + "/chart-sharing/" + strings.TrimPrefix(doneKey, n.name+"/chart/")
	if u.sharedBefore(ctx, id, sharingKey, doneKey) {
		return false, nil
	}
	file, err := u.bot.Upload(ctx, File{
		Channel: channel, ThreadTS: ts, Name: "gpuwatch-" + id + ".png", Title: comment, PNG: png,
		BeforeShare: func(fileID string) error {
			b, err := json.Marshal(sharing{File: fileID, Channel: channel, TS: ts})
			if err == nil {
				err = n.opts.Messages.Put(sharingKey, b)
			}
			if err != nil {
				n.log.Warn("a chart's share could not be recorded before it was made: if Slack's answer is lost, a retry may post it again",
					"chart", id, "err", n.redact(err))
			}
			return nil
		},
	})
	switch {
	case errors.Is(err, ErrNoFilesScope):
		return false, nil // the Bot said why, once
	case err != nil:
		return n.fail(ctx, "chart upload", err)
	}
	u.shared(id, file, sharingKey, doneKey)
	return false, nil
}

// sharing is what is recorded, under "receiver/chart-sharing/ID" (and
// ".../ID/USER" for an owner's direct message), just
// before a chart is shared: the file and the thread it goes to.
type sharing struct {
	File    string `json:"file"`
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

// sharedBefore reports whether an earlier try shared chart id while its
// answer was lost: the file it recorded before the share is in the
// thread. A share found is recorded as done.
func (u *ChartUploader) sharedBefore(ctx context.Context, id, sharingKey, doneKey string) bool {
	n := u.n
	b, found, err := n.opts.Messages.Get(sharingKey)
	var s sharing
	if err != nil || !found || decodeJSON(b, &s) != nil || s.File == "" {
		return false
	}
	shared, err := n.findInThread(ctx, s.Channel, s.TS, func(m *goslack.Message) bool {
		return slices.ContainsFunc(m.Files, func(f goslack.File) bool { return f.ID == s.File })
	})
	if err != nil {
		n.log.Warn("cannot read the thread to see whether an earlier try shared a chart; sharing it again, so it may show twice "+
			"(give the Slack app the channels:history scope, groups:history for a private channel)", "chart", id, "err", n.redact(err))
		return false
	}
	if shared {
		u.shared(id, s.File, sharingKey, doneKey)
	}
	return shared
}

// shared records chart id as shared, as file.
func (u *ChartUploader) shared(id, file, sharingKey, doneKey string) {
	n := u.n
	if err := n.opts.Messages.Put(doneKey, []byte(file)); err != nil {
		n.log.Warn("a chart upload could not be recorded: a retry may post it again", "chart", id, "err", n.redact(err))
		return
	}
	if err := n.opts.Messages.Delete(sharingKey); err != nil {
		n.log.Warn("a chart's share, done, could not be unmarked as in doubt", "chart", id, "err", n.redact(err))
	}
}

// waitedTooLong reports whether chart id has waited ChartWait for its
// message since it first found it missing (without a clock, never).
func (u *ChartUploader) waitedTooLong(id string) bool {
	if u.n.opts.Wall == nil {
		return false
	}
	now := u.n.opts.Wall()
	u.mu.Lock()
	defer u.mu.Unlock()
	first, ok := u.waiting[id]
	if !ok {
		u.waiting[id] = now
		return false
	}
	if now.Sub(first) <= ChartWait {
		return false
	}
	delete(u.waiting, id)
	return true
}

// messageState is where the message a picture belongs in stands.
type messageState int

const (
	messagePosted   messageState = iota
	messageNotYet                // not posted yet: wait
	messageReplaced              // the alert's record is of a later firing: it never comes
)

// message finds the channel and ts of the message recorded under key:
// an alert's, of the firing that started at startsAt (and, for the
// picture of a resolve, once it tells the resolve), or (startsAt zero) a
// digest's.
func (u *ChartUploader) message(key string, startsAt time.Time, resolved bool) (channel, ts string, state messageState) {
	n := u.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if startsAt.IsZero() {
		b, found, err := n.opts.Messages.Get(n.recordKey(key))
		if err != nil || !found {
			return "", "", messageNotYet
		}
		var ref messageRef
		if decodeJSON(b, &ref) != nil || ref.Channel == "" || ref.TS == "" {
			return "", "", messageNotYet
		}
		return ref.Channel, ref.TS, messagePosted
	}
	rec := n.load(key)
	if rec == nil {
		return "", "", messageNotYet
	}
	switch e := rec.entry(key); {
	case e == nil || e.StartsAt.Before(startsAt):
		return "", "", messageNotYet // the record is of an earlier firing
	case e.StartsAt.After(startsAt):
		return "", "", messageReplaced
	case resolved && e.Status != notifier.StatusResolved:
		// The resolve is not delivered yet: it updates this message, or
		// posts a new one when this one was deleted.
		return "", "", messageNotYet
	}
	return rec.Channel, rec.TS, messagePosted
}
