package slackbot

import (
	"unicode/utf8"

	goslack "github.com/slack-go/slack"
)

// Slack's limits on a message.
const (
	maxSectionText = 3000 // characters in a section's text
	maxHeaderText  = 150  // characters in a header
	maxBlocks      = 50   // blocks in a message
)

// cut shortens s to n characters, marking the cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// section is a block of mrkdwn text.
func section(text string) goslack.Block {
	return goslack.NewSectionBlock(goslack.NewTextBlockObject(goslack.MarkdownType, cut(text, maxSectionText), false, false), nil, nil)
}

// header is a block of large plain text.
func header(text string) goslack.Block {
	return goslack.NewHeaderBlock(goslack.NewTextBlockObject(goslack.PlainTextType, cut(text, maxHeaderText), true, false))
}

// note is a context block: small grey mrkdwn text.
func note(text string) goslack.Block {
	return goslack.NewContextBlock("", goslack.NewTextBlockObject(goslack.MarkdownType, cut(text, maxSectionText), false, false))
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
