package slackbot

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/internal/plural"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// targetMatchers are the matchers of /gpu silence's target: alert="X",
// gpu="N", or alert=~".+" for everything; and host="H" for one host.
func targetMatchers(t SilenceTarget) (notifier.Matchers, error) {
	var m *notifier.Matcher
	var err error
	switch {
	case t.All:
		m, err = notifier.NewMatcher(notifier.MatchRegexp, "alert", ".+")
	case t.Alert != "":
		m, err = notifier.NewMatcher(notifier.MatchEqual, "alert", t.Alert)
	default:
		m, err = notifier.NewMatcher(notifier.MatchEqual, "gpu", strconv.Itoa(t.GPU))
	}
	if err != nil {
		return nil, err
	}
	ms := notifier.Matchers{m}
	if t.Host != "" {
		h, err := notifier.NewMatcher(notifier.MatchEqual, "host", t.Host)
		if err != nil {
			return nil, err
		}
		ms = append(ms, h)
	}
	return ms, nil
}

// fleetTarget checks a silence's target against the hosts there are: in a
// fleet, a GPU index is on every host, so the command must say which; a
// host is named as the fleet spells it. The note says when the host does
// not report now (the silence still mutes it when it does).
func (a *App) fleetTarget(t SilenceTarget, d time.Duration) (SilenceTarget, string, *reply) {
	f := a.fleet()
	if t.Host == "" {
		if t.IsGPU() && f.several() {
			return t, "", errorReply(fmt.Sprintf("There is a GPU %d on each of the %d hosts: say which host's, e.g. `/gpu silence gpu %d on %s %s`.",
				t.GPU, len(f), t.GPU, hostName(f[0].Host), span(d)))
		}
		return t, "", nil
	}
	picked, err := f.pick(t.Host)
	if err != nil {
		return t, fmt.Sprintf("No host called %s reports now; the silence mutes it if it does.", hostName(t.Host)), nil
	}
	t.Host = picked[0].Host
	return t, "", nil
}

// addSilence records a silence from now for d, made by u.
func (a *App) addSilence(ms notifier.Matchers, d time.Duration, u user, comment string) (notifier.Silence, error) {
	now := a.backend.Now()
	return a.backend.AddSilence(notifier.Silence{
		Matchers: ms, StartsAt: now, EndsAt: now.Add(d), CreatedBy: u.String(), Comment: comment,
	})
}

// silence answers /gpu silence: admins only.
func (a *App) silence(cmd Command, u user) *reply {
	if !a.mayChange(u) {
		return a.refusal("silence alerts")
	}
	target, hostNote, r := a.fleetTarget(cmd.Target, cmd.Duration)
	if r != nil {
		return r
	}
	cmd.Target = target
	ms, err := targetMatchers(cmd.Target)
	if err != nil {
		return errorReply("could not build the silence: " + blockkit.EscapeClip(err.Error(), 300))
	}
	comment := cmd.Reason
	if comment == "" {
		comment = "silenced with /gpu silence in Slack"
	}
	s, err := a.addSilence(ms, cmd.Duration, u, comment)
	if err != nil {
		return errorReply("could not add the silence: " + blockkit.EscapeClip(err.Error(), 300))
	}
	text := fmt.Sprintf("🔕 %s silenced *%s* for %s, until %s. ID `%s`: `/gpu unsilence %s` ends it.",
		u.mention(), blockkit.EscapeClip(cmd.Target.String(), 130), span(cmd.Duration), localTime(s.EndsAt), blockkit.EscapeClip(s.ID, 64), blockkit.EscapeClip(s.ID, 64))
	if cmd.Reason != "" {
		text += "\n> " + blockkit.EscapeClip(cmd.Reason, maxReason)
	}
	blocks := []goslack.Block{section(text)}
	if name := cmd.Target.Alert; name != "" && !a.alertActive(name) {
		blocks = append(blocks, note(fmt.Sprintf("No alert called %s is pending or firing now; the silence mutes it if it fires. Alert names are case-sensitive.", blockkit.EscapeClip(name, 130))))
	}
	if hostNote != "" {
		blocks = append(blocks, note(hostNote))
	}
	return message(text, blocks...)
}

func (a *App) alertActive(name string) bool {
	for _, al := range a.backend.Alerts() {
		if al.Name == name {
			return true
		}
	}
	return false
}

// maxListedSilences is how many silences /gpu silences shows.
const maxListedSilences = 40

// silences lists the active and pending silences.
func (a *App) silences() *reply {
	now := a.backend.Now()
	var lines []string
	expired := 0
	for _, s := range a.backend.Silences() {
		var state string
		switch {
		case s.Active(now):
			state = fmt.Sprintf("🔕 until %s (%s left)", localTime(s.EndsAt), since(s.EndsAt, now))
		case now.Before(s.StartsAt):
			state = fmt.Sprintf("⏲ from %s to %s", localTime(s.StartsAt), localTime(s.EndsAt))
		default:
			expired++
			continue
		}
		line := fmt.Sprintf("`%s` %s %s · by %s", blockkit.EscapeClip(s.ID, 64), blockkit.EscapeClip(s.Matchers.String(), 300), state, blockkit.EscapeClip(s.CreatedBy, 80))
		if s.Comment != "" {
			line += " · " + blockkit.EscapeClip(s.Comment, 200)
		}
		lines = append(lines, line)
	}
	title := "🔕 " + plural.Count(len(lines), "silence")
	if len(lines) == 0 {
		title = "🔔 No silences are active or pending"
	}
	blocks := []goslack.Block{header(title)}
	shown := lines[:min(len(lines), maxListedSilences)]
	for i := 0; i < len(shown); i += 8 {
		blocks = append(blocks, section(strings.Join(shown[i:min(i+8, len(shown))], "\n")))
	}
	footer := "`/gpu unsilence &lt;id&gt;` ends one."
	if len(lines) > len(shown) {
		footer = fmt.Sprintf("…and %d more. ", len(lines)-len(shown)) + footer
	}
	if expired > 0 {
		footer += fmt.Sprintf(" %s not shown.", plural.Count(expired, "expired silence"))
	}
	return message(title, append(blocks, note(footer))...)
}

// unsilence answers /gpu unsilence: admins only.
func (a *App) unsilence(id string, u user) *reply {
	if !a.mayChange(u) {
		return a.refusal("end silences")
	}
	err := a.backend.ExpireSilence(id)
	switch {
	case errors.Is(err, notifier.ErrSilenceNotFound):
		return errorReply(fmt.Sprintf("No silence has ID `%s`; `/gpu silences` lists them.", blockkit.EscapeClip(id, 64)))
	case errors.Is(err, notifier.ErrSilenceExpired):
		return errorReply(fmt.Sprintf("Silence `%s` has already ended.", blockkit.EscapeClip(id, 64)))
	case err != nil:
		return errorReply("could not end the silence: " + blockkit.EscapeClip(err.Error(), 300))
	}
	text := fmt.Sprintf("🔔 %s ended silence `%s`.", u.mention(), blockkit.EscapeClip(id, 64))
	return message(text, section(text))
}
