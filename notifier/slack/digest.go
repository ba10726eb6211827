package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// notifyDigest posts a usage digest as one new message, in bot mode and
// with a webhook alike; a personal digest (Digest.To) as a direct message
// to its person. Digests are never updated, so no record is kept.
func (n *Notifier) notifyDigest(ctx context.Context, d *notifier.Digest) (bool, error) {
	if d == nil {
		return false, errors.New("slack: a digest notification without its digest (a gpuwatch bug: please report it)")
	}
	blocks, err := digestBlocks(d)
	if err != nil {
		return false, fmt.Errorf("slack: digest %q: %w", d.Name, err)
	}
	title := d.Title
	if title == "" {
		title = "gpuwatch digest " + d.Name
	}
	text := blockkit.Escape(title)
	if n.api == nil {
		if d.To != "" {
			return false, errors.New("slack: a personal digest needs a receiver with a channel and slack.bot_token, not a webhook")
		}
		return n.fail(ctx, "webhook", n.postWebhook(ctx, blocks, text))
	}
	to := strings.TrimSpace(n.cfg.Channel)
	if d.To != "" {
		// A personal digest: a direct message to its person.
		dm, err := n.openDM(ctx, d.To)
		if err != nil {
			return n.fail(ctx, "conversations.open", err)
		}
		to = dm
	}
	channel, ts, err := n.postIn(ctx, to, "", blocks, text)
	if err != nil {
		return n.fail(ctx, "chat.postMessage", err)
	}
	n.saveDigestMessage(d, channel, ts)
	return false, nil
}

// messageRef is where a message is: what a digest's pictures need to go
// in its thread.
type messageRef struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

// digestRecordKey is the record key of the digest message that carries
// picture id.
func digestRecordKey(id string) string { return "digest/" + id }

// saveDigestMessage records where a digest with pictures was posted, so
// they go in its thread. A store that refuses only costs the pictures.
func (n *Notifier) saveDigestMessage(d *notifier.Digest, channel, ts string) {
	if n.opts.Messages == nil || len(d.Charts) == 0 {
		return
	}
	b, err := json.Marshal(messageRef{Channel: channel, TS: ts})
	if err != nil {
		return
	}
	for _, id := range d.Charts {
		if err := n.opts.Messages.Put(n.recordKey(digestRecordKey(id)), b); err != nil {
			n.log.Warn("a digest's message could not be recorded: its pictures are not posted", "receiver", n.name, "err", n.redact(err))
		}
	}
}

// decodeJSON decodes b into v.
func decodeJSON(b []byte, v any) error { return json.Unmarshal(b, v) }

// digestBlocks is the digest's Block Kit: its own blocks when it has them
// (a JSON array, or an object with a "blocks" array), else a header with
// the title and its markdown in sections.
func digestBlocks(d *notifier.Digest) ([]goslack.Block, error) {
	if raw := bytes.TrimSpace(d.Blocks); len(raw) > 0 && string(raw) != "null" {
		if raw[0] == '{' {
			var wrapped struct {
				Blocks json.RawMessage `json:"blocks"`
			}
			if err := json.Unmarshal(raw, &wrapped); err != nil {
				return nil, fmt.Errorf("blocks are not Block Kit JSON: %w (a gpuwatch bug: please report it)", err)
			}
			raw = wrapped.Blocks
		}
		var blocks goslack.Blocks
		if err := json.Unmarshal(raw, &blocks); err != nil {
			return nil, fmt.Errorf("blocks are not Block Kit JSON: %w (a gpuwatch bug: please report it)", err)
		}
		if len(blocks.BlockSet) > 0 {
			return blocks.BlockSet, nil
		}
	}
	var blocks []goslack.Block
	if d.Title != "" {
		blocks = append(blocks, goslack.NewHeaderBlock(plain(blockkit.Clip(d.Title, blockkit.MaxHeaderText))))
	}
	body := d.Markdown
	if body == "" {
		body = d.Text
	}
	for _, part := range splitRunes(body, maxSectionRunes) {
		blocks = append(blocks, goslack.NewSectionBlock(mrkdwn(part), nil, nil))
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("the digest is empty: it has no title, blocks, markdown or text (a gpuwatch bug: please report it)")
	}
	return blocks, nil
}

// splitRunes cuts s into pieces of at most limit runes, at line ends where
// it can; "" gives none.
func splitRunes(s string, limit int) []string {
	var parts []string
	for s != "" {
		r := []rune(s)
		if len(r) <= limit {
			parts = append(parts, s)
			break
		}
		cut := string(r[:limit])
		if i := strings.LastIndexByte(cut, '\n'); i > 0 {
			cut = cut[:i]
		}
		parts = append(parts, cut)
		s = strings.TrimPrefix(s[len(cut):], "\n")
	}
	return parts
}
