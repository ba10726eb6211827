package slack

import (
	"fmt"
	"strconv"
	"strings"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// The action IDs of the buttons on a firing alert's message. Each button's
// value is the alert's key (notifier.Alert.Key); the Slack app
// (package slackbot) answers the click. They live here, not in slackbot,
// so this package does not depend on the app.
const (
	ActionSilence1h   = "gpuwatch_silence_1h"
	ActionSilence24h  = "gpuwatch_silence_24h"
	ActionAcknowledge = "gpuwatch_ack"
)

// ActionsBlockPrefix starts the block ID of each alert's buttons; the
// alert's position in the message follows ("gpuwatch_actions_0").
const ActionsBlockPrefix = "gpuwatch_actions_"

// maxButtonValue is Slack's limit on a button's value.
const maxButtonValue = 2000

// actionsBlock is the row of buttons under a firing alert: silence it for
// an hour or a day, or acknowledge it (no more reminders); an acknowledged
// alert keeps the silence buttons. i is the alert's position in the
// message, which keeps block IDs unique.
func actionsBlock(a *notifier.Alert, i int) goslack.Block {
	value := a.Key
	if len(value) > maxButtonValue {
		value = "" // an absurd key: the app answers "unknown alert" rather than act on a cut one
	}
	buttons := []goslack.BlockElement{
		goslack.NewButtonBlockElement(ActionSilence1h, value, plain("Silence 1h")),
		goslack.NewButtonBlockElement(ActionSilence24h, value, plain("Silence 24h")),
	}
	if a.AcknowledgedBy == "" {
		buttons = append(buttons, goslack.NewButtonBlockElement(ActionAcknowledge, value, plain("Acknowledge")).WithStyle(goslack.StylePrimary))
	}
	return goslack.NewActionBlock(ActionsBlockPrefix+strconv.Itoa(i), buttons...)
}

// acknowledgedBlock takes the place of the buttons under an acknowledged
// alert, as the Slack app's answer to the click drew it: a message redrawn
// on a resolve keeps saying who acknowledged it.
func acknowledgedBlock(a *notifier.Alert) goslack.Block {
	return goslack.NewContextBlock("", mrkdwn("👀 Acknowledged by "+mention(a.AcknowledgedBy)))
}

// mention shows who acknowledged an alert as Slack shows a user: "<@U0123>"
// for a user ID, alone or after a name ("alice (U0123)", how the Slack app
// records a user); other text as it is.
func mention(by string) string {
	id := by
	if i := strings.LastIndex(by, " ("); i >= 0 && strings.HasSuffix(by, ")") {
		id = by[i+2 : len(by)-1]
	}
	if IsUserID(id) {
		return "<@" + id + ">"
	}
	return blockkit.EscapeClip(by, maxNameRunes)
}

// IsUserID reports whether s looks like a Slack user ID: U or W, then
// capital letters and digits ("U0123ABCD"). User IDs, unlike user names,
// never change.
func IsUserID(s string) bool {
	if len(s) < 2 || (s[0] != 'U' && s[0] != 'W') {
		return false
	}
	for _, c := range s[1:] {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// The action IDs of the owner's buttons, on an owner's direct message and
// (for the owner only: the Slack app checks who presses) on the channel
// message. Each button's value is the alert's key.
const (
	ActionStillUsing = "gpuwatch_still_using"
	ActionDone       = "gpuwatch_done"
	ActionNotMine    = "gpuwatch_not_mine"
	ActionWatching   = "gpuwatch_watching"
)

// OwnerBlockPrefix starts the block ID of each alert's owner buttons; the
// alert's position in the message follows ("gpuwatch_owner_0").
const OwnerBlockPrefix = "gpuwatch_owner_"

// OwnerAnswers maps each owner button to the answer it gives.
var OwnerAnswers = map[string]notifier.AnswerKind{
	ActionStillUsing: notifier.AnswerStillUsing,
	ActionDone:       notifier.AnswerDone,
	ActionNotMine:    notifier.AnswerNotMine,
	ActionWatching:   notifier.AnswerWatching,
}

// ownerActionsBlock is the row of the owner's buttons under a firing
// alert: for a GPU held idle "Still using it", "I'm done" and "Not mine";
// for anything else (near OOM, a leak) "Watching it" and "Not mine".
func ownerActionsBlock(a *notifier.Alert, i int) goslack.Block {
	value := a.Key
	if len(value) > maxButtonValue {
		value = ""
	}
	var buttons []goslack.BlockElement
	if a.Idle {
		buttons = append(buttons,
			goslack.NewButtonBlockElement(ActionStillUsing, value, plain("Still using it")).WithStyle(goslack.StylePrimary),
			goslack.NewButtonBlockElement(ActionDone, value, plain("I'm done")))
	} else {
		buttons = append(buttons, goslack.NewButtonBlockElement(ActionWatching, value, plain("Watching it")).WithStyle(goslack.StylePrimary))
	}
	buttons = append(buttons, goslack.NewButtonBlockElement(ActionNotMine, value, plain("Not mine")))
	return goslack.NewActionBlock(OwnerBlockPrefix+strconv.Itoa(i), buttons...)
}

// answerBlock takes the place of the owner's buttons once an owner
// answered.
func answerBlock(a *notifier.Alert) goslack.Block {
	return goslack.NewContextBlock("", mrkdwn("🙋 "+answerText(a.Answer)))
}

// answerText says an owner's answer, the owner @mentioned.
func answerText(ans *notifier.Answer) string {
	who := mention(ans.By)
	if IsUserID(ans.ByID) {
		who = "<@" + ans.ByID + ">"
	}
	return ans.Text(who, slackDate)
}

// clipMentions joins the owners as a message names them, within a
// field's room.
func clipMentions(owners []string) string {
	var b strings.Builder
	for i, o := range owners {
		if b.Len()+len(o) > maxFieldRunes*2 {
			fmt.Fprintf(&b, " and %d more", len(owners)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(o)
	}
	return b.String()
}
