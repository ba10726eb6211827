package slackbot

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/internal/plural"
)

// command answers a slash command: the function behind both
// POST /slack/commands and Socket Mode's slash_commands.
func (a *App) command(ctx context.Context, sc goslack.SlashCommand) *reply {
	if !a.answersIn(sc.ChannelID, sc.ChannelName) {
		return notHere()
	}
	cmd, perr := ParseCommand(sc.Text)
	u := user{ID: sc.UserID, Name: sc.UserName}
	return a.withDeadline(ctx, sc.ResponseURL, func() *reply {
		r := a.answer(cmd, perr, u)
		if r.ResponseType == "" {
			r.ResponseType = ephemeral
			if cmd.Public {
				r.ResponseType = inChannel
			}
		}
		return a.fit(r)
	})
}

// answer runs a parsed command. Answers that only the user should see (a
// refusal, an error) set their response type; the others are public when
// the user asked.
func (a *App) answer(cmd Command, perr error, u user) *reply {
	switch cmd.Kind {
	case CmdStatus:
		return a.status()
	case CmdTop:
		return a.top()
	case CmdAlerts:
		return a.alerts()
	case CmdHistory:
		return a.history(cmd.GPU, cmd.Window)
	case CmdSilence:
		return a.silence(cmd, u)
	case CmdSilences:
		return a.silences()
	case CmdUnsilence:
		return a.unsilence(cmd.SilenceID, u)
	case CmdDigest:
		return a.digest(cmd.Window)
	}
	return help(perr)
}

// noSample is the answer before the first sample.
func noSample() *reply {
	return private("⏳ gpuwatch has not read the GPUs yet; try again in a few seconds.")
}

// status shows every GPU: memory, utilization, temperature, power, the top
// process and the GPU's active alerts.
func (a *App) status() *reply {
	snap := a.backend.Snapshot()
	if snap == nil {
		return noSample()
	}
	now := a.backend.Now()
	alerts := a.backend.Alerts()
	title := fmt.Sprintf("🖥 %s · %s", snap.Host, plural.Count(len(snap.Devices), "GPU"))
	blocks := []goslack.Block{
		header(title),
		note(fmt.Sprintf("Sampled %s (%s ago) · %s · `/gpu top`, `/gpu alerts`, `/gpu history &lt;gpu&gt;`",
			localTime(snap.Time), since(now, snap.Time), plural.Count(len(alerts), "active alert"))),
	}
	room := maxBlocks - len(blocks) - 1
	for i := range snap.Devices {
		if i == room {
			blocks = append(blocks, note(fmt.Sprintf("…and %d more GPUs", len(snap.Devices)-i)))
			break
		}
		blocks = append(blocks, section(deviceText(&snap.Devices[i], alerts, now)))
	}
	if len(snap.Devices) == 0 {
		blocks = append(blocks, section("This host reports no GPUs."))
	}
	return message(title, blocks...)
}

// deviceText is one GPU's lines in /gpu status.
func deviceText(d *gpu.Device, alerts []ActiveAlert, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*GPU %d* · %s\n", d.Index, blockkit.EscapeClip(d.Name, 80))
	if d.MemKnown() {
		pct := d.MemUsedPercent()
		fmt.Fprintf(&b, "`%s` %s / %s (%.0f%%)\n", meter(pct), gib(d.MemUsed), gib(d.MemTotal), pct)
	} else {
		b.WriteString("memory n/a\n")
	}
	power := reading(d.PowerW, "%.0f W")
	if !math.IsNaN(d.PowerLimitW) && d.PowerLimitW > 0 && !math.IsNaN(d.PowerW) {
		power = fmt.Sprintf("%.0f / %.0f W", d.PowerW, d.PowerLimitW)
	}
	fmt.Fprintf(&b, "util %s · %s · %s\n", reading(d.UtilGPU, "%.0f%%"), reading(d.TempC, "%.0f C"), power)
	if p := topProcess(d.Processes); p != nil {
		fmt.Fprintf(&b, "👤 %s: `%s` %s", blockkit.EscapeClip(p.User, 40), blockkit.EscapeClip(p.Command, 60), gib(p.MemUsed))
		if n := len(d.Processes) - 1; n > 0 {
			fmt.Fprintf(&b, " (+%d more)", n)
		}
		b.WriteByte('\n')
	} else {
		b.WriteString("no processes\n")
	}
	for i := range alerts {
		al := &alerts[i]
		if al.GPU == d.Index && (al.UUID == "" || d.UUID == "" || al.UUID == d.UUID) {
			fmt.Fprintf(&b, "%s *%s* %s %s\n", stateEmoji(al.State), blockkit.EscapeClip(al.Name, 80), al.State, since(now, al.Since))
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func topProcess(ps []gpu.Process) *gpu.Process {
	var top *gpu.Process
	for i := range ps {
		if top == nil || ps[i].MemUsed > top.MemUsed {
			top = &ps[i]
		}
	}
	return top
}

func stateEmoji(state string) string {
	if state == "firing" {
		return "🔥"
	}
	return "⏳"
}

// gpuProcess is a process and the GPU it runs on.
type gpuProcess struct {
	gpu int
	gpu.Process
}

// maxTopProcesses is how many processes /gpu top lists.
const maxTopProcesses = 40

// top lists the processes on every GPU by GPU memory, largest first.
func (a *App) top() *reply {
	snap := a.backend.Snapshot()
	if snap == nil {
		return noSample()
	}
	var ps []gpuProcess
	for _, d := range snap.Devices {
		for _, p := range d.Processes {
			ps = append(ps, gpuProcess{d.Index, p})
		}
	}
	slices.SortStableFunc(ps, func(x, y gpuProcess) int {
		if c := cmp.Compare(y.MemUsed, x.MemUsed); c != 0 {
			return c
		}
		return cmp.Compare(x.gpu, y.gpu)
	})
	title := fmt.Sprintf("👤 Processes on %s by GPU memory", snap.Host)
	blocks := []goslack.Block{header(title)}
	if len(ps) == 0 {
		return message(title, append(blocks, section("No compute processes on any GPU."))...)
	}
	var lines []string
	for _, p := range ps[:min(len(ps), maxTopProcesses)] {
		line := fmt.Sprintf("`GPU %d` *%s* %s · `%s` · pid %d", p.gpu, gib(p.MemUsed), blockkit.EscapeClip(p.User, 40), blockkit.EscapeClip(p.Command, 80), p.PID)
		if p.Container != "" {
			line += " · " + blockkit.EscapeClip(p.Container, 60)
		}
		lines = append(lines, line)
	}
	// Ten lines a section keeps each well under Slack's 3000 characters.
	for chunk := range slices.Chunk(lines, 10) {
		blocks = append(blocks, section(strings.Join(chunk, "\n")))
	}
	if len(ps) > maxTopProcesses {
		blocks = append(blocks, note(fmt.Sprintf("…and %d smaller processes", len(ps)-maxTopProcesses)))
	}
	return message(title, blocks...)
}

// alerts lists the firing and pending alerts.
func (a *App) alerts() *reply {
	now := a.backend.Now()
	alerts := a.backend.Alerts()
	firing := 0
	for i := range alerts {
		if alerts[i].State == "firing" {
			firing++
		}
	}
	title := fmt.Sprintf("🚨 %d firing, %d pending", firing, len(alerts)-firing)
	if len(alerts) == 0 {
		title = "✅ No alerts are firing or pending"
		return message(title, section(title))
	}
	blocks := []goslack.Block{header(title)}
	room := maxBlocks - len(blocks) - 1
	for i := range alerts {
		if i == room {
			blocks = append(blocks, note(fmt.Sprintf("…and %d more alerts", len(alerts)-i)))
			break
		}
		blocks = append(blocks, section(alertText(&alerts[i], now)))
	}
	return message(title, blocks...)
}

// alertText is one alert's lines in /gpu alerts.
func alertText(al *ActiveAlert, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s *%s* · GPU %d", stateEmoji(al.State), blockkit.EscapeClip(al.Name, 80), al.GPU)
	if al.Severity != "" {
		b.WriteString(" · " + blockkit.EscapeClip(al.Severity, 20))
	}
	fmt.Fprintf(&b, "\n%s since %s (%s)", al.State, localTime(al.Since), since(now, al.Since))
	if al.ValueText != "" {
		b.WriteString(" · value " + blockkit.EscapeClip(al.ValueText, 40))
	}
	if al.Summary != "" {
		b.WriteString("\n> " + blockkit.EscapeClip(al.Summary, 300))
	}
	if al.Acknowledged != "" {
		b.WriteString("\n👀 acknowledged by " + blockkit.EscapeClip(al.Acknowledged, 80))
	}
	return b.String()
}

// historyWidth is the most bars a sparkline has.
const historyWidth = 60

// history draws sparklines of a GPU's memory and utilization.
func (a *App) history(index int, window time.Duration) *reply {
	h, ok := a.backend.History(index, window)
	if !ok {
		known := "no GPUs are known yet"
		if snap := a.backend.Snapshot(); snap != nil && len(snap.Devices) > 0 {
			idx := make([]string, len(snap.Devices))
			for i, d := range snap.Devices {
				idx[i] = strconv.Itoa(d.Index)
			}
			known = "this host has GPUs " + strings.Join(idx, ", ")
		}
		return errorReply(fmt.Sprintf("GPU %d is unknown: %s.", index, known))
	}
	title := fmt.Sprintf("📈 GPU %d · last %s", index, span(window))
	mem, util := downsample(h.MemoryUsed, historyWidth), downsample(h.Utilization, historyWidth)
	text := fmt.Sprintf("*Memory* `%s` %s\n*Utilization* `%s` %s",
		spark(mem), seriesSummary(h.MemoryUsed), spark(util), seriesSummary(h.Utilization))
	points := max(len(h.MemoryUsed), len(h.Utilization))
	start := h.End.Add(-h.Step * time.Duration(max(0, points-1)))
	return message(title, header(title), section(text),
		note(fmt.Sprintf("%d points from %s to %s · bars from 0 to 100%%", points, localTime(start), localTime(h.End))))
}

// seriesSummary is "now 76% · max 90%" of a percent series, or "no data".
func seriesSummary(vs []float64) string {
	last, peak, seen := math.NaN(), math.Inf(-1), false
	for _, v := range vs {
		if !math.IsNaN(v) {
			last, peak, seen = v, math.Max(peak, v), true
		}
	}
	if !seen {
		return "no data"
	}
	return fmt.Sprintf("now %.0f%% · max %.0f%%", last, peak)
}

// helpText lists the commands.
const helpText = "*gpuwatch* answers `/gpu` with the GPUs of this host:\n" +
	"• `/gpu` or `/gpu status`: every GPU's memory, utilization, temperature, power, top process and alerts\n" +
	"• `/gpu top`: processes by GPU memory, with user, command and container\n" +
	"• `/gpu alerts`: firing and pending alerts, since when, who acknowledged them\n" +
	"• `/gpu history &lt;gpu&gt; [window]`: sparklines of memory and utilization (window 1h by default, up to 24h)\n" +
	"• `/gpu silence &lt;alert|gpu N|all&gt; &lt;duration&gt; [reason]`: mute alerts, e.g. `/gpu silence GPUHot 2h fan repair`\n" +
	"• `/gpu silences`: the silences; `/gpu unsilence &lt;id&gt;` ends one\n" +
	"• `/gpu digest [window]`: the usage digest: per GPU and per user, idle holders, alerts, energy (window 24h by default, up to 35d)\n" +
	"Add `public` to any command to answer in the channel instead of only to you."

// help is the list of commands, after a line saying what was not
// understood when there was something.
func help(perr error) *reply {
	blocks := []goslack.Block{section(helpText)}
	text := "gpuwatch /gpu commands"
	if perr != nil {
		text = "🤔 I did not understand that: " + blockkit.EscapeClip(perr.Error(), 500)
		blocks = append([]goslack.Block{section(text)}, blocks...)
	}
	r := message(text, blocks...)
	if perr != nil {
		r.ResponseType = ephemeral
	}
	return r
}
