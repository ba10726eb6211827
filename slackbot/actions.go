package slackbot

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/notifier"
	slacknotifier "github.com/gpuwatch/gpuwatch/notifier/slack"
)

// The action IDs of the buttons on alert messages, which notifier/slack
// posts: silence the alert for an hour or a day, or acknowledge it. Each
// button's value is the alert's key, "host/rule/uuid" (notifier.Alert.Key).
const (
	ActionSilence1h   = slacknotifier.ActionSilence1h   // "gpuwatch_silence_1h"
	ActionSilence24h  = slacknotifier.ActionSilence24h  // "gpuwatch_silence_24h"
	ActionAcknowledge = slacknotifier.ActionAcknowledge // "gpuwatch_ack"
)

// actionPrefix starts every gpuwatch action ID. A silence removes every
// such button of its alert from the message; an acknowledgement only the
// Acknowledge button, so the alert can still be silenced from it.
const actionPrefix = "gpuwatch_"

// action handles a click on an alert message's button: the function behind
// both POST /slack/actions and Socket Mode's interactive events. raw is the
// payload as sent, whose message blocks are kept as they are when the
// message is updated. The outcome goes to the payload's response_url: the
// updated message, or an ephemeral refusal or error.
func (a *App) action(ctx context.Context, cb *goslack.InteractionCallback, raw []byte) {
	if cb.Type != goslack.InteractionTypeBlockActions {
		a.log.Debug("slack interaction ignored", "type", string(cb.Type))
		return
	}
	var act *goslack.BlockAction
	for _, ba := range cb.ActionCallback.BlockActions {
		if ba != nil && strings.HasPrefix(ba.ActionID, actionPrefix) {
			act = ba
			break
		}
	}
	if act == nil {
		return
	}
	if kind, ok := ownerAction(act.ActionID); ok {
		// An owner answers from a direct message as well as from a
		// channel: who may is who owns the job, wherever they press.
		a.postLater(ctx, cb.ResponseURL, a.fit(a.ownerAnswer(ctx, cb, act, kind)))
		return
	}
	if r := a.buttonReply(cb, act, raw); r != nil {
		a.postLater(ctx, cb.ResponseURL, a.fit(r))
	}
}

// buttonReply does what the button says, if the user may, and returns what
// to post to response_url.
func (a *App) buttonReply(cb *goslack.InteractionCallback, act *goslack.BlockAction, raw []byte) *reply {
	channel := cb.Channel.ID
	if channel == "" {
		channel = cb.Container.ChannelID
	}
	if !a.answersIn(channel, cb.Channel.Name) {
		return notHere()
	}
	u := user{ID: cb.User.ID, Name: cb.User.Name}
	var line string
	used := func(actionID string) bool { return strings.HasPrefix(actionID, actionPrefix) }
	switch act.ActionID {
	case ActionSilence1h, ActionSilence24h:
		if !a.mayChange(u) {
			return a.refusal("silence alerts")
		}
		d := time.Hour
		if act.ActionID == ActionSilence24h {
			d = 24 * time.Hour
		}
		ms, err := keyMatchers(act.Value)
		if err != nil {
			return errorReply(err.Error())
		}
		if _, err := a.addSilence(ms, d, u, "silenced from the alert message in Slack"); err != nil {
			return errorReply("could not silence the alert: " + blockkit.EscapeClip(err.Error(), 300))
		}
		line = fmt.Sprintf("🔕 Silenced for %s by %s", span(d), u.mention())
	case ActionAcknowledge:
		if !a.mayChange(u) {
			return a.refusal("acknowledge alerts")
		}
		if _, err := keyMatchers(act.Value); err != nil {
			return errorReply(err.Error())
		}
		if err := a.backend.Acknowledge(act.Value, u.String()); err != nil {
			return errorReply("could not acknowledge the alert: " + blockkit.EscapeClip(err.Error(), 300))
		}
		line = "👀 Acknowledged by " + u.mention()
		used = func(actionID string) bool { return actionID == ActionAcknowledge }
	default:
		a.log.Debug("slack action ignored", "action_id", act.ActionID)
		return nil
	}
	blocks, err := updatedBlocks(raw, act.BlockID, line, used)
	if err != nil {
		a.log.Warn("slack action: the message is not updated", "err", err)
		return private(line + ".")
	}
	return &reply{ReplaceOriginal: true, Text: cb.Message.Text, Blocks: blocks}
}

// keyMatchers are the matchers of one alert, from its key "host/rule/uuid".
func keyMatchers(key string) (notifier.Matchers, error) {
	host, rest, ok1 := strings.Cut(key, "/")
	i := strings.LastIndexByte(rest, '/')
	if !ok1 || i < 0 || host == "" || rest[:i] == "" || rest[i+1:] == "" {
		return nil, fmt.Errorf("this button's alert key %q is not host/rule/uuid; silence the alert with /gpu silence", blockkit.EscapeClip(clipWord(key), 80))
	}
	var ms notifier.Matchers
	for _, l := range [][2]string{{"alert", rest[:i]}, {"uuid", rest[i+1:]}, {"host", host}} {
		m, err := notifier.NewMatcher(notifier.MatchEqual, l[0], l[1])
		if err != nil {
			return nil, fmt.Errorf("alert key %q: %w", blockkit.EscapeClip(clipWord(key), 80), err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// updatedBlocks are the original message's blocks, as sent, without the
// clicked alert's buttons that used says are done with (by action ID), and
// a context line after them saying what was done (blockID; a message may
// carry several alerts, each with its own buttons). When the clicked block
// is not found, every such button of the message goes and the line ends
// the message.
func updatedBlocks(raw []byte, blockID, line string, used func(actionID string) bool) ([]json.RawMessage, error) {
	var p struct {
		Message struct {
			Blocks []json.RawMessage `json:"blocks"`
		} `json:"message"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("read the message's blocks: %w", err)
	}
	done, err := json.Marshal(note(line))
	if err != nil {
		return nil, fmt.Errorf("encode the context line: %w", err)
	}
	found := false
	for _, b := range p.Message.Blocks {
		if id, _ := blockIDOf(b); blockID != "" && id == blockID {
			found = true
		}
	}
	var out []json.RawMessage
	for _, b := range p.Message.Blocks {
		id, err := blockIDOf(b)
		if err != nil {
			return nil, err
		}
		clicked := found && id == blockID
		if found && !clicked {
			out = append(out, b)
			continue
		}
		kept, err := withoutButtons(b, used)
		if err != nil {
			return nil, err
		}
		if kept != nil {
			out = append(out, kept)
		}
		if clicked {
			out = append(out, done)
		}
	}
	if !found {
		out = append(out, done)
	}
	if len(out) > maxBlocks {
		out = append(out[:maxBlocks-1], done)
	}
	return out, nil
}

// blockIDOf reads a block's block_id.
func blockIDOf(b json.RawMessage) (string, error) {
	var head struct {
		BlockID string `json:"block_id"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return "", fmt.Errorf("read a block of the message: %w", err)
	}
	return head.BlockID, nil
}

// withoutButtons returns an actions block without the elements whose
// action ID used picks, nil when none are left, and any other block
// unchanged.
func withoutButtons(b json.RawMessage, used func(actionID string) bool) (json.RawMessage, error) {
	var head struct {
		Type     string            `json:"type"`
		Elements []json.RawMessage `json:"elements"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("read a block of the message: %w", err)
	}
	if head.Type != "actions" {
		return b, nil
	}
	var kept []json.RawMessage
	for _, e := range head.Elements {
		var el struct {
			ActionID string `json:"action_id"`
		}
		if json.Unmarshal(e, &el) == nil && used(el.ActionID) {
			continue
		}
		kept = append(kept, e)
	}
	if len(kept) == 0 {
		return nil, nil
	}
	if len(kept) == len(head.Elements) {
		return b, nil
	}
	var block map[string]json.RawMessage
	if err := json.Unmarshal(b, &block); err != nil {
		return nil, fmt.Errorf("read a block of the message: %w", err)
	}
	elems, err := json.Marshal(kept)
	if err != nil {
		return nil, fmt.Errorf("encode a block's buttons: %w", err)
	}
	block["elements"] = elems
	return json.Marshal(block)
}
