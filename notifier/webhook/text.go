package webhook

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/rules"
)

// The text people read in chat formats (discord, teams, feishu, dingtalk,
// wecom) is built here, once, as markdown every one of them renders: bold,
// "- " lists and line breaks. A style says how the target breaks lines and
// how it escapes text that comes from the GPU (commands, user names).

// style is one chat's markdown dialect.
type style struct {
	br     string              // line break
	escape func(string) string // for text we do not control; nil: none
}

func (s style) esc(v string) string {
	if s.escape == nil {
		return v
	}
	return s.escape(v)
}

// maxProcesses is how many processes a message lists.
const maxProcesses = 3

// maxTextAlerts is how many alerts one chat message details; the rest are
// counted.
const maxTextAlerts = 10

// severityMark shows the severity at a glance.
func severityMark(a *notifier.Alert) string {
	if a.Status == notifier.StatusResolved {
		return "✅"
	}
	switch a.Severity {
	case "critical":
		return "🔴"
	case "warning":
		return "🟠"
	}
	return "🔵"
}

// statusWord is FIRING, STILL FIRING or RESOLVED.
func statusWord(a *notifier.Alert) string {
	switch {
	case a.Status == notifier.StatusResolved:
		return "RESOLVED"
	case a.Repeat:
		return "STILL FIRING"
	}
	return "FIRING"
}

// headline is a notification's one-line title: "🔴 FIRING GPUMemoryLeak
// on node1 GPU 0 (NVIDIA H100 80GB HBM3)", or "… on 3 GPUs of node1".
func headline(m *notifier.Notification) string {
	a := &m.Alerts[0]
	where := strings.TrimSpace(a.Host + " " + a.GPUText())
	if a.Process != nil {
		where += ", " + a.Process.Holder()
	}
	if len(m.Alerts) > 1 {
		hosts := distinct(m.Alerts, func(a *notifier.Alert) string { return a.Host })
		where = fmt.Sprintf("%d GPUs of %s", len(m.Alerts), strings.Join(hosts, ", "))
	}
	return fmt.Sprintf("%s %s %s on %s", severityMark(a), statusWord(a), a.Name, where)
}

// alertTitle names one alert: "[critical] GPUMemoryLeak · node1 GPU 0".
func alertTitle(a *notifier.Alert) string {
	title := fmt.Sprintf("%s %s [%s] %s · %s", severityMark(a), statusWord(a), a.Severity, a.Name, a.Host)
	if a.OnGPU() {
		title += " " + a.Subject()
	}
	return title
}

// alertText is what a person needs to act on one alert: what is wrong,
// where, how bad and where it is going, since when, and who is behind it.
func alertText(a *notifier.Alert, s style) string {
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	if a.Summary != "" {
		add("**%s**", s.esc(a.Summary))
	} else {
		add("**%s**", s.esc(a.Name))
	}
	if a.OnGPU() {
		add("**Severity:** %s · **Host:** %s · **%s** (%s)", s.esc(a.Severity), s.esc(a.Host), s.esc(a.Subject()), s.esc(a.GPUName))
	} else {
		add("**Severity:** %s · **Host:** %s", s.esc(a.Severity), s.esc(a.Host))
	}
	if a.Status == notifier.StatusResolved {
		add("**Resolved** after %s (fired %s, resolved %s)", formatDuration(a.EndsAt.Sub(a.StartsAt).Seconds()),
			formatTime(a.StartsAt), formatTime(a.EndsAt))
		if a.Exit != nil {
			add("%s", s.esc(a.Exit.Text))
		}
		if a.FiringSummary != "" {
			add("**Fired:** %s", s.esc(a.FiringSummary))
		}
	} else {
		value := "**Value:** " + s.esc(orNA(a.ValueText))
		if a.ValueEarlier() {
			value += fmt.Sprintf(" at %s (now %s)", formatTime(a.ValueAt), s.esc(a.NowText))
		}
		facts := []string{value}
		if a.TrendText != "" {
			facts = append(facts, "**Trend:** "+s.esc(a.TrendText))
		}
		if a.TimeToFull.Known() {
			around := formatTime(a.At.Add(time.Duration(float64(a.TimeToFull) * float64(time.Second))))
			if a.ValueIsTimeToFull() && !a.ValueEarlier() {
				facts[0] += " (full around " + around + ")" // the value is the time to full: said once
			} else {
				facts = append(facts, fmt.Sprintf("**Full in:** %s (around %s)", formatDuration(float64(a.TimeToFull)), around))
			}
		}
		if !a.LastReport.IsZero() {
			facts = append(facts, "**Last report:** "+formatTime(a.LastReport))
		}
		add("%s", strings.Join(facts, " · "))
		since := "**Since:** " + formatTime(a.StartsAt)
		if d := a.At.Sub(a.StartsAt); d >= time.Minute {
			since += " (firing for " + formatDuration(d.Seconds()) + ")"
		}
		add("%s", since)
	}
	if a.Description != "" {
		add("%s", s.esc(a.Description))
	}
	if len(a.Processes) > 0 {
		add("**Top processes:**")
		for i, p := range a.Processes {
			if i == maxProcesses {
				add("- … and %d more", len(a.Processes)-maxProcesses)
				break
			}
			_, isJob := p.SlurmJob()
			parts := []string{s.esc(orNA(p.Who())), s.esc(shorten(orNA(p.Command), 80))}
			_, _, _, pod := p.Pod()
			if pod {
				parts = parts[:1]
			}
			if p.Container != "" && !pod {
				parts = append(parts, s.esc(p.Container))
			}
			parts = append(parts, formatBytes(float64(p.MemUsed)))
			switch h := p.Holder(); {
			case isJob && p.PID > 0:
				parts = append(parts, fmt.Sprintf("pid %d", p.PID)) // the job is named first
			case h != "" && !isJob:
				parts = append(parts, s.esc(h))
			}
			add("- %s", strings.Join(parts, " · "))
		}
	}
	return strings.Join(lines, s.br)
}

// notificationText details every alert of m (up to maxTextAlerts),
// separated by a blank line.
func notificationText(m *notifier.Notification, s style) string {
	var parts []string
	for i := range m.Alerts {
		if i == maxTextAlerts {
			parts = append(parts, fmt.Sprintf("… and %d more alerts", len(m.Alerts)-maxTextAlerts))
			break
		}
		text := alertText(&m.Alerts[i], s)
		if len(m.Alerts) > 1 {
			text = "**" + alertTitle(&m.Alerts[i]) + "**" + s.br + text
		}
		parts = append(parts, text)
	}
	return strings.Join(parts, s.br+s.br)
}

func distinct(alerts []notifier.Alert, key func(*notifier.Alert) string) []string {
	var out []string
	seen := map[string]bool{}
	for i := range alerts {
		k := key(&alerts[i])
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}

// shorten cuts s to at most n runes, marking the cut.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut;
// chat targets refuse messages over their limit. Invalid UTF-8 is replaced
// first, as JSON encoding would, so the limit holds for what is sent.
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	const mark = "\n…"
	cut := n - len(mark)
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// formatTime shows a time to people, in UTC.
func formatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// formatDuration shows seconds as the two largest units: "45s", "12m",
// "1h30m", "2d4h"; "n/a" when unknown.
func formatDuration(secs float64) string {
	if math.IsNaN(secs) || math.IsInf(secs, 0) {
		return "n/a"
	}
	sign := ""
	if secs < 0 {
		sign, secs = "-", -secs
	}
	total := int64(math.Round(secs))
	units := []struct {
		name string
		size int64
	}{{"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}}
	var b strings.Builder
	b.WriteString(sign)
	shown := 0
	for _, u := range units {
		if q := total / u.size; q > 0 && shown < 2 {
			fmt.Fprintf(&b, "%d%s", q, u.name)
			total -= q * u.size
			shown++
		} else if shown > 0 {
			break
		}
	}
	if shown == 0 {
		return "0s"
	}
	return b.String()
}

// formatBytes writes a size as every gpuwatch message does: "61 GiB".
func formatBytes(v float64) string { return rules.Dimension{Base: rules.Bytes}.Format(v) }

// formatPercent shows a percentage to one decimal: "95.3%".
func formatPercent(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0") + "%"
}
