package slack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// ChartWait is how long an upload waits for the message it belongs in
// (the alert's, the digest's) before it gives up on the picture: the
// text's delivery failed for good, or took that long.
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
// retry never posts a picture twice.
type ChartUploader struct {
	n      *Notifier
	charts notifier.Charts
	// refused is set once Slack says the app lacks files:write: pictures
	// are dropped, after one warning, until a restart.
	refused atomic.Bool
}

// ChartUploader returns the uploader of n's pictures, drawn by charts;
// nil for a webhook receiver, which cannot upload, and without a message
// store, which finds the messages pictures belong in.
func (n *Notifier) ChartUploader(charts notifier.Charts) *ChartUploader {
	if n.api == nil || n.opts.Messages == nil {
		return nil
	}
	return &ChartUploader{n: n, charts: charts}
}

// Notify uploads the pictures of m's alerts (or digest) that were not
// uploaded yet.
func (u *ChartUploader) Notify(ctx context.Context, m *notifier.Notification) (bool, error) {
	if m == nil || u.refused.Load() {
		return false, nil
	}
	if m.Digest != nil {
		for _, id := range m.Digest.Charts {
			if retry, err := u.upload(ctx, id, digestRecordKey(id), m.CreatedAt, "", "Usage: "+m.Digest.Title); err != nil {
				return retry, err
			}
		}
		return false, nil
	}
	for _, a := range alertsOf(m) {
		if a.Chart == "" {
			continue
		}
		if retry, err := u.upload(ctx, a.Chart, a.Key, a.At, a.StartsAt.String(), chartComment(&a)); err != nil {
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
		return fmt.Sprintf("GPU %d of %s", a.GPU, a.Host)
	}
	return a.Host
}

// upload posts chart id in the thread of the message recorded under key
// (an alert key, whose record must be of the firing that started at
// startsAt, or a digest's key). at is when the chart was made: past
// ChartWait without the message, the picture is given up.
func (u *ChartUploader) upload(ctx context.Context, id, key string, at time.Time, startsAt, comment string) (bool, error) {
	n := u.n
	doneKey := n.name + "/chart/" + id
	if _, done, err := n.opts.Messages.Get(doneKey); err == nil && done {
		return false, nil
	}
	channel, ts, ok := u.message(key, startsAt)
	if !ok {
		if now := n.now(); !now.IsZero() && now.Sub(at) > ChartWait {
			n.log.Warn("a chart is dropped: its message was never posted", "chart", id, "key", key)
			return false, nil
		}
		return true, errMessageNotYet
	}
	png, err := u.charts.ChartPNG(id)
	if err != nil {
		n.log.Warn("a chart could not be drawn; the message goes without it", "chart", id, "err", err)
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 3*n.opts.Timeout)
	defer cancel()
	file, err := n.api.UploadFileContext(ctx, goslack.UploadFileParameters{
		Reader: bytes.NewReader(png), FileSize: len(png), Filename: "gpuwatch-" + id + ".png",
		Title: comment, AltTxt: comment, Channel: channel, ThreadTimestamp: ts,
	})
	if err != nil {
		if missingFilesScope(err) {
			u.refused.Store(true)
			n.log.Warn("Slack refuses chart uploads: give the Slack app the files:write scope and reinstall it; alerts go without charts until a restart")
			return false, nil
		}
		return n.fail(ctx, "chart upload", err)
	}
	if err := n.opts.Messages.Put(doneKey, []byte(file.ID)); err != nil {
		n.log.Warn("a chart upload could not be recorded: a retry may post it again", "chart", id, "err", n.redact(err))
	}
	return false, nil
}

// message finds the channel and ts of the message recorded under key.
func (u *ChartUploader) message(key, startsAt string) (channel, ts string, ok bool) {
	n := u.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if startsAt == "" {
		b, found, err := n.opts.Messages.Get(n.recordKey(key))
		if err != nil || !found {
			return "", "", false
		}
		var ref messageRef
		if decodeJSON(b, &ref) != nil || ref.Channel == "" || ref.TS == "" {
			return "", "", false
		}
		return ref.Channel, ref.TS, true
	}
	rec := n.load(key)
	if rec == nil {
		return "", "", false
	}
	if e := rec.entry(key); e == nil || e.StartsAt.String() != startsAt {
		return "", "", false // the record is of an earlier firing
	}
	return rec.Channel, rec.TS, true
}

// missingFilesScope reports whether Slack refused an upload for want of
// the files:write scope.
func missingFilesScope(err error) bool {
	var apiErr goslack.SlackErrorResponse
	return errors.As(err, &apiErr) && (apiErr.Err == "missing_scope" || apiErr.Err == "not_allowed_token_type")
}

// FilesScope is the scope the Slack app needs to upload charts.
const FilesScope = "files:write"

// CheckScope asks Slack which scopes the bot token has (auth.test's
// X-OAuth-Scopes). Without files:write it logs one warning and turns
// uploads off: alerts go as text alone. It reports whether uploads stay
// on; when Slack does not answer or does not say, they do, and an upload
// Slack refuses turns them off then.
func (u *ChartUploader) CheckScope(ctx context.Context) bool {
	n := u.n
	ctx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.apiURL+"auth.test", http.NoBody)
	if err != nil {
		return true
	}
	req.Header.Set("Authorization", "Bearer "+n.opts.BotToken)
	resp, err := n.opts.HTTPClient.Do(req)
	if err != nil {
		return true
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	header := resp.Header.Get("X-OAuth-Scopes")
	if resp.StatusCode != http.StatusOK || header == "" {
		return true
	}
	scopes := strings.Split(header, ",")
	for i := range scopes {
		scopes[i] = strings.TrimSpace(scopes[i])
	}
	if slices.Contains(scopes, FilesScope) {
		return true
	}
	u.refused.Store(true)
	n.log.Warn("the Slack app lacks the files:write scope: alerts go without charts; add the scope (deploy/slack-app-manifest.yaml lists it) and reinstall the app")
	return false
}

// Disable turns uploads off: another receiver's CheckScope found the
// shared bot token lacks files:write and said so.
func (u *ChartUploader) Disable() { u.refused.Store(true) }
