package slack

import (
	"errors"
	"net/http"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/internal/blockkit"
)

// withBlocks makes one call that posts or updates a message of blocks
// with text (the notification text), the way the message degrades rather
// than goes missing: blocks that break Slack's limits (a gpuwatch bug) are
// not sent and the message goes as plain text, and when Slack refuses the
// blocks the call is made once more with the plain text. A notification
// then arrives without its layout instead of becoming a dead letter no one
// reads.
func (n *Notifier) withBlocks(op string, blocks []goslack.Block, text string, call func(blocks []goslack.Block, text string) error) error {
	text = blockkit.ClipEscaped(text, blockkit.MaxMessageText)
	plain := blockkit.ClipEscaped(blockkit.PlainText(blocks), blockkit.MaxMessageText)
	if plain == "" {
		plain = text
	}
	if err := blockkit.ValidateMessage(text, blocks); err != nil {
		n.log.Error("a Slack message breaks Slack's limits and goes as plain text (a gpuwatch bug: please report it)",
			"receiver", n.name, "call", op, "err", err)
		return call(nil, plain)
	}
	err := call(blocks, text)
	if len(blocks) == 0 || !refusedBlocks(err) {
		return err
	}
	n.log.Warn("Slack refused the message's blocks; sending it as plain text", "receiver", n.name, "call", op, "err", n.redact(err))
	return call(nil, plain)
}

// refusedBlocks reports whether Slack refused a message for its blocks or
// its size, so that the same message as plain text may go through. The Web
// API says so in its error; an incoming webhook answers 400
// (invalid_blocks, invalid_payload) in plain text.
func refusedBlocks(err error) bool {
	var apiErr goslack.SlackErrorResponse
	if errors.As(err, &apiErr) {
		switch apiErr.Err {
		case "invalid_blocks", "invalid_blocks_format", "msg_too_long", "invalid_arguments":
			return true
		}
		return false
	}
	var status goslack.StatusCodeError
	return errors.As(err, &status) && status.Code == http.StatusBadRequest
}
