package slackbot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/notifier"
	slacknotifier "github.com/gpuwatch/gpuwatch/notifier/slack"
)

// Owners is what the app does for the people: section (package people):
// owners answering alerts about their jobs, /gpu mine, /gpu mute-me and
// /gpu digest weekly|daily|off. The daemon implements it; without a
// people: section the app has none and says so.
type Owners interface {
	// Answer records an owner's answer to a firing alert (by its key)
	// from a button press, which click identifies: a press Slack sends
	// again acts once. It fails with a *NotOwnerError when the user owns
	// none of the alert's holders.
	Answer(ctx context.Context, alertKey string, kind notifier.AnswerKind, userID, userName, click string) (notifier.Answer, error)
	// Mine lists the user's jobs on every host now.
	Mine(ctx context.Context, userID string) ([]Job, error)
	// MuteMe keeps alerts from reaching the user by direct message or
	// @mention for d (0 ends a mute), and returns until when.
	MuteMe(userID string, d time.Duration) (time.Time, error)
	// SetDigest records the personal digest the user chose: weekly,
	// daily or off.
	SetDigest(userID, choice string) error
}

// NotOwnerError says who may answer an alert: its owners.
type NotOwnerError struct {
	Owners []string // Slack user IDs; empty when gpuwatch knows none
}

func (e *NotOwnerError) Error() string {
	m := mentions(e.Owners)
	if len(m) == 0 {
		return "gpuwatch knows no owner of this alert's job: acknowledge or silence it instead"
	}
	return "only the owner of the job can answer this: " + strings.Join(m, ", ")
}

// mentions are the users as Slack mentions them; what is not a user ID
// is left out, so nothing else reaches mrkdwn unescaped.
func mentions(ids []string) []string {
	var out []string
	for _, id := range ids {
		if slacknotifier.IsUserID(id) {
			out = append(out, "<@"+id+">")
		}
	}
	return out
}

// Job is one of a user's processes on a GPU, as /gpu mine lists them.
type Job struct {
	Host    string
	GPU     int
	GPUName string
	GPUUUID string
	// MIG is the MIG instance the job runs on; nil on a whole GPU.
	MIG *gpu.MIG
	// Who names the job: "job 4242 (alice)", "alice".
	Who     string
	Command string
	MemUsed uint64
	// Use is what the GPU is doing: busy, idle-held (see UseOf).
	Use string
	// HeldSince is when the job took the GPU; zero when unknown.
	HeldSince time.Time
	// Alerts are the alerts firing on the GPU.
	Alerts []string
}

// personal reports whether a command is about the user alone, so the
// app answers it anywhere (a direct message with the app too).
func (c Command) personal() bool {
	switch c.Kind {
	case CmdMine, CmdMuteMe, CmdDigestChoice:
		return true
	}
	return false
}

// noPeople answers a personal command without a people: section.
func noPeople() *reply {
	return private("🙏 gpuwatch does not know who is who here: its config has no people: section (see docs/people.md).")
}

// mine lists the user's jobs now.
func (a *App) mine(ctx context.Context, u user) *reply {
	if a.owners == nil {
		return noPeople()
	}
	jobs, err := a.owners.Mine(ctx, u.ID)
	if err != nil {
		return errorReply("could not find your jobs: " + blockkit.EscapeClip(err.Error(), 300))
	}
	if len(jobs) == 0 {
		return private("🟢 You hold no GPU now.")
	}
	now := a.backend.Now()
	var b strings.Builder
	for i, j := range jobs {
		if i == maxMineJobs {
			fmt.Fprintf(&b, "\n… and %d more", len(jobs)-maxMineJobs)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s `%s` *%s* %s", useEmoji(j.Use), where(true, j.Host, j.GPU, gpu.Label(j.GPU, j.MIG)), gib(j.MemUsed), blockkit.EscapeClip(j.Who, 80))
		if j.Command != "" {
			fmt.Fprintf(&b, " · `%s`", blockkit.EscapeClip(j.Command, 80))
		}
		fmt.Fprintf(&b, " · %s", strings.ReplaceAll(j.Use, "-", " "))
		if !j.HeldSince.IsZero() {
			fmt.Fprintf(&b, " %s", since(now, j.HeldSince))
		}
		for _, al := range j.Alerts {
			fmt.Fprintf(&b, " · 🔥 %s", blockkit.EscapeClip(al, 80))
		}
	}
	title := fmt.Sprintf("Your jobs: %d on the GPUs", len(jobs))
	return message(title, header(title), section(b.String()))
}

// maxMineJobs is how many jobs /gpu mine lists.
const maxMineJobs = 40

// useEmoji is a GPU's use at a glance.
func useEmoji(use string) string {
	switch use {
	case "busy":
		return "🟢"
	case "idle-held":
		return "🟠"
	}
	return "⚪"
}

// muteMe mutes (or unmutes) alerts to the user.
func (a *App) muteMe(u user, d time.Duration) *reply {
	if a.owners == nil {
		return noPeople()
	}
	until, err := a.owners.MuteMe(u.ID, d)
	if err != nil {
		return errorReply("could not mute you: " + blockkit.EscapeClip(err.Error(), 300))
	}
	if d == 0 {
		return private("🔔 Alerts about your jobs reach you again.")
	}
	return private(fmt.Sprintf("🔕 No alerts about your jobs reach you by direct message or @mention until %s; the channel still gets them. `/gpu mute-me off` ends it.", slackTime(until)))
}

// digestChoice records the user's personal digest.
func (a *App) digestChoice(u user, choice string) *reply {
	if a.owners == nil {
		return noPeople()
	}
	if err := a.owners.SetDigest(u.ID, choice); err != nil {
		return errorReply("could not save your choice: " + blockkit.EscapeClip(err.Error(), 300))
	}
	if choice == "off" {
		return private("📭 No more personal digests; `/gpu digest weekly` brings them back.")
	}
	return private(fmt.Sprintf("📬 You get your personal digest %s.", choice))
}

// slackTime writes a time each reader sees in their own zone.
func slackTime(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", t.Unix(), t.UTC().Format("2006-01-02 15:04 UTC"))
}

// ownerAnswer handles a press of an owner's button: the answer is
// recorded (the outbox then writes it in the alert's messages and
// threads), and the one who pressed is told, privately.
func (a *App) ownerAnswer(ctx context.Context, cb *goslack.InteractionCallback, act *goslack.BlockAction, kind notifier.AnswerKind) *reply {
	if a.owners == nil {
		return noPeople()
	}
	if _, err := keyMatchers(act.Value); err != nil {
		return errorReply(err.Error())
	}
	click := act.ActionTs
	if click == "" {
		click = cb.ActionTs
	}
	ans, err := a.owners.Answer(ctx, act.Value, kind, cb.User.ID, cb.User.Name, click)
	var notOwner *NotOwnerError
	switch {
	case errors.As(err, &notOwner):
		return private("🙏 " + notOwner.Error()) // mentions of user IDs alone
	case err != nil:
		return errorReply("could not record your answer: " + blockkit.EscapeClip(err.Error(), 300))
	}
	var text string
	switch ans.Kind {
	case notifier.AnswerStillUsing:
		text = "✅ Noted: you still use it; no reminders until you are asked again, " + slackTime(ans.Until) + "."
	case notifier.AnswerDone:
		text = "✅ Noted: you are done; the alert resolves when the memory frees."
	case notifier.AnswerNotMine:
		text = "✅ Noted: it is not yours; the channel hears of it."
	default:
		text = "✅ Noted: you are watching it; no more reminders."
	}
	return private(text)
}

// ownerAction is the answer an owner's button gives; false for another
// button.
func ownerAction(actionID string) (notifier.AnswerKind, bool) {
	kind, ok := slacknotifier.OwnerAnswers[actionID]
	return kind, ok
}
