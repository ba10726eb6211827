package slackbot

import (
	"encoding/json"
	"fmt"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/internal/blockkit"
)

// maxBlocks is Slack's limit on the blocks of a message.
const maxBlocks = blockkit.MaxBlocks

// section is a block of mrkdwn text.
func section(text string) goslack.Block {
	return goslack.NewSectionBlock(goslack.NewTextBlockObject(goslack.MarkdownType, blockkit.ClipEscaped(text, blockkit.MaxText), false, false), nil, nil)
}

// header is a block of large plain text.
func header(text string) goslack.Block {
	return goslack.NewHeaderBlock(goslack.NewTextBlockObject(goslack.PlainTextType, blockkit.Clip(text, blockkit.MaxHeaderText), true, false))
}

// note is a context block: small grey mrkdwn text.
func note(text string) goslack.Block {
	return goslack.NewContextBlock("", goslack.NewTextBlockObject(goslack.MarkdownType, blockkit.ClipEscaped(text, blockkit.MaxText), false, false))
}

// message is a reply of blocks with text as the notification fallback.
func message(text string, blocks ...goslack.Block) *reply {
	return &reply{Text: text, Blocks: blocks}
}

// private is a one-section answer only the user sees.
func private(text string) *reply {
	r := message(text, section(text))
	r.ResponseType = ephemeral
	return r
}

// errorReply is an ephemeral answer saying what went wrong.
func errorReply(text string) *reply { return private("⚠️ " + text) }

// fit checks a reply against Slack's limits before it goes out. A reply
// that breaks them (a gpuwatch bug) goes as its plain text, so the user
// gets the answer rather than nothing.
func (a *App) fit(r *reply) *reply {
	if r == nil {
		return nil
	}
	blocks, err := replyBlocks(r)
	if err == nil {
		err = blockkit.ValidateMessage(r.Text, blocks)
	}
	if err == nil {
		return r
	}
	a.log.Error("a Slack answer breaks Slack's limits and goes as plain text (a gpuwatch bug: please report it)", "err", err)
	return r.plain(blocks)
}

// replyBlocks reads a reply's blocks, built as blocks or kept as JSON.
func replyBlocks(r *reply) ([]goslack.Block, error) {
	switch b := r.Blocks.(type) {
	case nil:
		return nil, nil
	case []goslack.Block:
		return b, nil
	}
	raw, err := json.Marshal(r.Blocks)
	if err != nil {
		return nil, fmt.Errorf("encode the answer's blocks: %w", err)
	}
	var blocks goslack.Blocks
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("the answer's blocks are not Block Kit: %w", err)
	}
	return blocks.BlockSet, nil
}

// plain is the reply as text alone: the text of its blocks.
func (r *reply) plain(blocks []goslack.Block) *reply {
	text := blockkit.PlainText(blocks)
	if text == "" {
		text = r.Text
	}
	return &reply{ResponseType: r.ResponseType, ReplaceOriginal: r.ReplaceOriginal,
		Text: blockkit.ClipEscaped(text, blockkit.MaxMessageText)}
}
