package slack

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// How much of a message each part may take, within Slack's limits
// (package blockkit) with room to spare. Every budget counts escaped text:
// user text is escaped first and clipped after.
const (
	maxAlertsInFull = 9    // 5 to 7 blocks each (with buttons and a divider), plus a header and a tail, within Slack's 50
	maxProcesses    = 3    // per GPU
	maxTextRunes    = 600  // a summary or description
	maxNameRunes    = 100  // a GPU's model or a host name
	maxSectionRunes = 2900 // a section's text
	maxFieldRunes   = 200  // a field's value
	maxLineRunes    = 1000 // one alert's line in a thread reply or the notification text
	maxFallback     = 5    // alerts named in the notification text
)

// standardLabel reports whether every alert has the label, shown elsewhere
// in the message; the others (team=ml) are worth a line.
func standardLabel(name string) bool {
	switch name {
	case "alert", "severity", "host", "gpu", "uuid":
		return true
	}
	return false
}

// severityEmoji is the severity at a glance.
func severityEmoji(severity string) string {
	switch severity {
	case "critical":
		return "🔴"
	case "warning":
		return "🟠"
	case "info":
		return "🔵"
	}
	return "⚪"
}

func statusEmoji(a *notifier.Alert) string {
	if a.Status == notifier.StatusResolved {
		return "✅"
	}
	return severityEmoji(a.Severity)
}

// render lays out one message about alerts (of one rule, on one or more
// GPUs) for a channel: the Block Kit blocks and the plain-text fallback
// Slack shows in notifications. now fills in durations the alerts' own
// times do not give.
func render(alerts []notifier.Alert, now time.Time) ([]goslack.Block, string) {
	return renderFor(alerts, now, false)
}

// renderFor is render for a channel, or for an owner's direct message:
// there the owner's buttons take the place of the channel's.
func renderFor(alerts []notifier.Alert, now time.Time, owner bool) ([]goslack.Block, string) {
	blocks := []goslack.Block{goslack.NewHeaderBlock(plain(blockkit.Clip(header(alerts), blockkit.MaxHeaderText)))}
	for i := range alerts {
		var part []goslack.Block
		if i > 0 {
			part = append(part, goslack.NewDividerBlock())
		}
		a := &alerts[i]
		part = append(part, alertBlocks(a, now)...)
		firing := a.Status != notifier.StatusResolved
		switch {
		case firing && owner && a.Answer == nil:
			part = append(part, ownerActionsBlock(a, i))
		case firing && !owner:
			part = append(part, actionsBlock(a, i))
			if len(a.Owners) > 0 && a.Answer == nil {
				part = append(part, ownerActionsBlock(a, i))
			}
		}
		if a.Answer != nil && firing {
			part = append(part, answerBlock(a))
		}
		if a.AcknowledgedBy != "" {
			part = append(part, acknowledgedBlock(a))
		}
		// The rest as a summary, when the next alert would not fit.
		if i == maxAlertsInFull || len(blocks)+len(part) > blockkit.MaxBlocks-1 {
			blocks = append(blocks, goslack.NewSectionBlock(mrkdwn(blockkit.ClipEscaped(moreAlerts(alerts[i:]), maxSectionRunes)), nil, nil))
			break
		}
		blocks = append(blocks, part...)
	}
	return blocks, fallback(alerts, now)
}

// header names the rule, where and how bad: "🔴 GPUMemoryLeak on node1 ·
// critical".
func header(alerts []notifier.Alert) string {
	if len(alerts) == 0 {
		return "gpuwatch"
	}
	var hosts []string
	firing, repeats := -1, 0
	for i := range alerts {
		if !slices.Contains(hosts, alerts[i].Host) {
			hosts = append(hosts, alerts[i].Host)
		}
		if alerts[i].Status != notifier.StatusResolved {
			if firing < 0 {
				firing = i
			}
			if alerts[i].Repeat {
				repeats++
			}
		}
	}
	where := strings.Join(hosts, ", ")
	if len(hosts) > 3 {
		where = fmt.Sprintf("%s and %d more hosts", strings.Join(hosts[:3], ", "), len(hosts)-3)
	}
	if firing < 0 {
		return fmt.Sprintf("✅ Resolved: %s on %s", alerts[0].Name, where)
	}
	a := &alerts[firing]
	still := ""
	if repeats == len(alerts) {
		still = "Still firing: "
	}
	h := fmt.Sprintf("%s %s%s on %s · %s", severityEmoji(a.Severity), still, a.Name, where, a.Severity)
	resolved := 0
	for i := range alerts {
		if alerts[i].Status == notifier.StatusResolved {
			resolved++
		}
	}
	if resolved > 0 {
		h += fmt.Sprintf(" · %d of %d resolved", resolved, len(alerts))
	}
	return h
}

// alertBlocks is one GPU's part of a message: what and where, how bad,
// since when, who holds the GPU, and the last 30 minutes.
func alertBlocks(a *notifier.Alert, now time.Time) []goslack.Block {
	var text strings.Builder
	if a.OnGPU() {
		fmt.Fprintf(&text, "*%s · %s* on `%s`\n", blockkit.EscapeClip(a.Subject(), maxNameRunes), blockkit.EscapeClip(a.GPUName, maxNameRunes), blockkit.EscapeClip(a.Host, maxNameRunes))
	} else {
		fmt.Fprintf(&text, "*%s* on `%s`\n", blockkit.EscapeClip(a.Name, maxNameRunes), blockkit.EscapeClip(a.Host, maxNameRunes))
	}
	fmt.Fprintf(&text, "%s %s", statusEmoji(a), statusLine(a, now))
	if a.Summary != "" {
		fmt.Fprintf(&text, "\n%s", blockkit.EscapeClip(a.Summary, maxTextRunes))
	}
	if a.Description != "" {
		fmt.Fprintf(&text, "\n_%s_", blockkit.EscapeClip(a.Description, maxTextRunes))
	}
	if a.Status == notifier.StatusResolved && a.Exit != nil {
		fmt.Fprintf(&text, "\n%s", blockkit.EscapeClip(a.Exit.Text, maxTextRunes))
	}
	if a.Status == notifier.StatusResolved && a.FiringSummary != "" {
		// The message was the firing's: it still says what it was about.
		fmt.Fprintf(&text, "\n_Fired: %s_", blockkit.EscapeClip(a.FiringSummary, maxTextRunes))
	}
	blocks := []goslack.Block{goslack.NewSectionBlock(mrkdwn(text.String()), facts(a, now), nil)}
	if p := processes(a); p != "" {
		if len(a.Owners) > 0 {
			p += "\n👤 Owner: " + clipMentions(a.Owners)
		}
		blocks = append(blocks, goslack.NewSectionBlock(mrkdwn(p), nil, nil))
	}
	var context []goslack.MixedElement
	if line := Sparkline(a.History); line != "" {
		s := fmt.Sprintf("last 30 min `%s`", line)
		if lo, hi, ok := historyRange(a.History); ok {
			s += fmt.Sprintf(" %s – %s", formatValue(lo, a.HistoryUnit), formatValue(hi, a.HistoryUnit))
		}
		context = append(context, mrkdwn(s))
	}
	if extra := extraLabels(a.Labels); extra != "" || a.UUID != "" {
		context = append(context, mrkdwn(blockkit.EscapeClip(strings.TrimSpace(a.UUID+" "+extra), maxTextRunes)))
	}
	if len(context) > 0 {
		blocks = append(blocks, goslack.NewContextBlock("", context...))
	}
	return blocks
}

// statusLine says how bad and for how long: "*critical* · firing for 18m",
// "*resolved* after 18m5s".
func statusLine(a *notifier.Alert, now time.Time) string {
	switch {
	case a.Status == notifier.StatusResolved:
		if d, ok := resolvedAfter(a, now); ok {
			return "*resolved* after " + shortDuration(d)
		}
		return "*resolved*"
	case a.Repeat:
		if d, ok := firingFor(a, now); ok {
			return fmt.Sprintf("*%s* · still firing after %s", blockkit.EscapeClip(a.Severity, maxNameRunes), shortDuration(d))
		}
		return fmt.Sprintf("*%s* · still firing", blockkit.EscapeClip(a.Severity, maxNameRunes))
	}
	if d, ok := firingFor(a, now); ok && d >= time.Second {
		return fmt.Sprintf("*%s* · firing for %s", blockkit.EscapeClip(a.Severity, maxNameRunes), shortDuration(d))
	}
	return fmt.Sprintf("*%s* · firing", blockkit.EscapeClip(a.Severity, maxNameRunes))
}

// facts are the numbers, as Slack's two-column fields.
func facts(a *notifier.Alert, now time.Time) []*goslack.TextBlockObject {
	var fields []*goslack.TextBlockObject
	add := func(label, value string) {
		if value != "" {
			fields = append(fields, mrkdwn(fmt.Sprintf("*%s*\n%s", label, blockkit.EscapeClip(value, maxFieldRunes))))
		}
	}
	// A resolve's summary says what is true now: its numbers would repeat it.
	firing := a.Status != notifier.StatusResolved
	fullAt := ""
	if firing && a.TimeToFull.Known() && a.TimeToFull >= 0 {
		fullAt = slackDate(a.At.Add(time.Duration(float64(a.TimeToFull) * float64(time.Second))))
	}
	if firing && a.ValueText != "" {
		value := blockkit.EscapeClip(a.ValueText, maxFieldRunes)
		switch {
		case a.ValueEarlier():
			value += fmt.Sprintf(" at %s (now %s)", slackDate(a.ValueAt), blockkit.EscapeClip(a.NowText, maxFieldRunes))
		case fullAt != "" && a.ValueIsTimeToFull():
			value += " (" + fullAt + ")" // the time to full: said once
			fullAt = ""
		}
		fields = append(fields, mrkdwn("*Value*\n"+value))
	}
	if firing {
		add("Trend", a.TrendText)
	}
	if fullAt != "" {
		full := time.Duration(float64(a.TimeToFull) * float64(time.Second))
		fields = append(fields, mrkdwn(fmt.Sprintf("*Full in*\n%s (%s)", shortDuration(full), fullAt)))
	}
	if !a.LastReport.IsZero() {
		fields = append(fields, mrkdwn("*Last report*\n"+slackDate(a.LastReport)))
	}
	if !a.StartsAt.IsZero() {
		since := slackDate(a.StartsAt)
		if d, ok := firingFor(a, now); ok && d >= time.Second && a.Status != notifier.StatusResolved {
			since += " (" + shortDuration(d) + ")"
		}
		fields = append(fields, mrkdwn("*Since*\n"+since))
	}
	if a.Status == notifier.StatusResolved {
		end := a.EndsAt
		if end.IsZero() {
			end = a.At
		}
		if !end.IsZero() {
			fields = append(fields, mrkdwn("*Resolved*\n"+slackDate(end)))
		}
	}
	return fields
}

// processes lists the largest processes on the GPU with who runs them.
func processes(a *notifier.Alert) string {
	if len(a.Processes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("*Top processes*")
	for i, p := range a.Processes {
		if i == maxProcesses {
			fmt.Fprintf(&b, "\n… and %d more", len(a.Processes)-maxProcesses)
			break
		}
		who := p.Who()
		if who == "" {
			who = "?"
		}
		fmt.Fprintf(&b, "\n• *%s* · %s", blockkit.EscapeClip(who, 64), formatBytes(float64(p.MemUsed)))
		h := p.Holder()
		if _, isJob := p.SlurmJob(); isJob {
			h = "" // the job is named first
			if p.PID > 0 {
				h = fmt.Sprintf("pid %d", p.PID)
			}
		}
		if h != "" {
			fmt.Fprintf(&b, " · %s", blockkit.EscapeClip(h, 160))
		}
		if p.Command != "" {
			fmt.Fprintf(&b, " · `%s`", blockkit.EscapeClip(p.Command, 120))
		}
		if _, _, _, pod := p.Pod(); p.Container != "" && !pod {
			fmt.Fprintf(&b, " · %s", blockkit.EscapeClip(p.Container, 120))
		}
	}
	return b.String()
}

// extraLabels writes the rule's own labels, sorted: "team=ml".
func extraLabels(labels map[string]string) string {
	var keys []string
	for k := range labels {
		if !standardLabel(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, " ")
}

// onHost is where an alert is, "GPU 0 (NVIDIA H100) on node1", or
// "node1" for an alert not about a GPU.
func onHost(a *notifier.Alert) string {
	if !a.OnGPU() {
		return a.Host
	}
	if a.Process != nil {
		return a.GPUText() + ", " + a.Process.Holder() + " on " + a.Host
	}
	return a.GPUText() + " on " + a.Host
}

// moreAlerts sums up the alerts a message has no room for.
func moreAlerts(alerts []notifier.Alert) string {
	var b strings.Builder
	fmt.Fprintf(&b, "… and %d more:", len(alerts))
	for i := range alerts {
		a := &alerts[i]
		where := "`" + blockkit.EscapeClip(a.Host, maxNameRunes) + "`"
		if a.OnGPU() {
			where = blockkit.EscapeClip(a.Subject(), maxNameRunes) + " on " + where
		}
		fmt.Fprintf(&b, "\n%s %s · %s", statusEmoji(a), where, blockkit.EscapeClip(a.ValueText, maxNameRunes))
	}
	return b.String()
}

// fallback is the message's plain text, shown in notifications and by
// clients without Block Kit: one line per alert.
func fallback(alerts []notifier.Alert, now time.Time) string {
	var lines []string
	for i := range alerts {
		if i == maxFallback {
			lines = append(lines, fmt.Sprintf("… and %d more", len(alerts)-maxFallback))
			break
		}
		a := &alerts[i]
		line := strings.TrimSpace(fmt.Sprintf("%s %s [%s] on %s %s", statusEmoji(a), a.Name, a.Severity, a.Host, a.Subject()))
		switch {
		case a.Status == notifier.StatusResolved:
			line += ": resolved"
			if d, ok := resolvedAfter(a, now); ok {
				line += " after " + shortDuration(d)
			}
		case a.Repeat:
			line += ": still firing"
		}
		if a.Summary != "" {
			line += ": " + a.Summary
		}
		lines = append(lines, blockkit.EscapeClip(line, maxLineRunes))
	}
	return strings.Join(lines, "\n")
}

// repeatReply is the thread reply for alerts still firing: "still firing:
// value …, trend …".
func repeatReply(alerts []notifier.Alert, now time.Time) string {
	lines := make([]string, 0, len(alerts))
	for i := range alerts {
		a := &alerts[i]
		line := severityEmoji(a.Severity) + " still firing"
		if d, ok := firingFor(a, now); ok {
			line += " after " + shortDuration(d)
		}
		line += fmt.Sprintf(": %s · value %s", onHost(a), a.ValueText)
		if a.ValueEarlier() {
			line += fmt.Sprintf(" at %s (now %s)", slackDate(a.ValueAt), a.NowText)
		}
		if a.TrendText != "" {
			line += ", trend " + a.TrendText
		}
		if a.TimeToFull.Known() && a.TimeToFull >= 0 && !a.ValueIsTimeToFull() {
			line += ", full in " + shortDuration(time.Duration(float64(a.TimeToFull)*float64(time.Second)))
		}
		if len(a.Processes) > 0 && a.Processes[0].User != "" {
			line += ", top process " + a.Processes[0].User
		}
		lines = append(lines, blockkit.EscapeClip(line, maxLineRunes))
	}
	return strings.Join(lines, "\n")
}

// resolvedReply is the thread reply for alerts that resolved: "✅ GPUHot
// resolved after 18m5s: GPU 0 on node1: temperature is 79 C now, under
// 80 C" (what is true now), and the job that exited if one did.
func resolvedReply(alerts []notifier.Alert, now time.Time) string {
	lines := make([]string, 0, len(alerts))
	for i := range alerts {
		a := &alerts[i]
		line := "✅ " + a.Name + " resolved"
		if d, ok := resolvedAfter(a, now); ok {
			line += " after " + shortDuration(d)
		}
		what := a.Summary
		if what == "" {
			what = onHost(a)
		}
		line += ": " + what
		if a.Exit != nil {
			line += " · " + a.Exit.Text
		}
		lines = append(lines, blockkit.EscapeClip(line, maxLineRunes))
	}
	return strings.Join(lines, "\n")
}

// firingFor is how long a firing alert has fired, at its transition (or
// now when the alert does not say).
func firingFor(a *notifier.Alert, now time.Time) (time.Duration, bool) {
	return elapsed(a.StartsAt, a.At, now)
}

// resolvedAfter is how long a resolved alert fired.
func resolvedAfter(a *notifier.Alert, now time.Time) (time.Duration, bool) {
	return elapsed(a.StartsAt, a.EndsAt, a.At, now)
}

// elapsed is the time from start to the first end that is known.
func elapsed(start time.Time, ends ...time.Time) (time.Duration, bool) {
	for _, end := range ends {
		if end.IsZero() {
			continue
		}
		if start.IsZero() || end.Before(start) {
			return 0, false
		}
		return end.Sub(start), true
	}
	return 0, false
}

func plain(s string) *goslack.TextBlockObject {
	return goslack.NewTextBlockObject(goslack.PlainTextType, s, true, false)
}

func mrkdwn(s string) *goslack.TextBlockObject {
	return goslack.NewTextBlockObject(goslack.MarkdownType, s, false, false)
}
