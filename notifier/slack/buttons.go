package slack

import (
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
