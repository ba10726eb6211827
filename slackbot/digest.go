package slackbot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/blockkit"
)

// digest answers /gpu digest: the usage digest of the window, as the
// backend renders it for Slack.
func (a *App) digest(window time.Duration) *reply {
	title, blocks, err := a.backend.Digest(window)
	if err != nil {
		return errorReply(fmt.Sprintf("No digest of the last %s: %s.", span(window), blockkit.EscapeClip(err.Error(), 500)))
	}
	if title == "" {
		title = "📊 GPU usage · last " + span(window)
	}
	raw, err := digestBlocks(blocks)
	if err != nil {
		return errorReply(fmt.Sprintf("The digest of the last %s could not be shown: %s (a gpuwatch bug: please report it).",
			span(window), err))
	}
	if raw == nil {
		return message(title, header(title), section("No usage was recorded in this window."))
	}
	return &reply{Text: blockkit.EscapeClip(title, blockkit.MaxMessageText), Blocks: raw}
}

// digestBlocks checks that blocks are a JSON array of at most Slack's 50
// blocks; nil when there are none.
func digestBlocks(blocks []byte) (json.RawMessage, error) {
	blocks = bytes.TrimSpace(blocks)
	if len(blocks) == 0 || string(blocks) == "null" {
		return nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(blocks, &list); err != nil {
		return nil, fmt.Errorf("its blocks are not a JSON array: %w", err)
	}
	switch {
	case len(list) == 0:
		return nil, nil
	case len(list) > maxBlocks:
		return nil, fmt.Errorf("it has %d blocks, more than Slack's %d", len(list), maxBlocks)
	}
	return json.RawMessage(blocks), nil
}
