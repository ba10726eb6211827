package slackbot

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/internal/plural"
	"github.com/gpuwatch/gpuwatch/rules"
)

// command answers a slash command: the function behind both
// POST /slack/commands and Socket Mode's slash_commands.
func (a *App) command(ctx context.Context, sc goslack.SlashCommand) *reply {
	cmd, perr := ParseCommand(sc.Text)
	if !a.answersIn(sc.ChannelID, sc.ChannelName) && !cmd.personal() {
		return notHere()
	}
	by := asker{user: user{ID: sc.UserID, Name: sc.UserName}, channel: sc.ChannelID}
	return a.withDeadline(ctx, sc.ResponseURL, func() *reply {
		r := a.answer(ctx, cmd, perr, by)
		if r.ResponseType == "" {
			r.ResponseType = ephemeral
			if cmd.Public {
				r.ResponseType = inChannel
			}
		}
		return a.fit(r)
	})
}

// asker is who sent a command, and where.
type asker struct {
	user    user
	channel string // the conversation's ID: C…, G…, D…
}

// answer runs a parsed command. Answers that only the user should see (a
// refusal, an error) set their response type; the others are public when
// the user asked.
func (a *App) answer(ctx context.Context, cmd Command, perr error, by asker) *reply {
	u := by.user
	switch cmd.Kind {
	case CmdStatus:
		return a.status(cmd.Host)
	case CmdTop:
		return a.top(cmd.Host)
	case CmdAlerts:
		return a.alerts(cmd.Host)
	case CmdFree:
		return a.free(cmd.Host)
	case CmdHealth:
		return a.health(cmd.Host)
	case CmdHistory:
		return a.history(ctx, cmd, by)
	case CmdSilence:
		return a.silence(cmd, u)
	case CmdSilences:
		return a.silences()
	case CmdUnsilence:
		return a.unsilence(cmd.SilenceID, u)
	case CmdDigest:
		return a.digest(cmd.Window)
	case CmdMine:
		return a.mine(ctx, u)
	case CmdMuteMe:
		return a.muteMe(u, cmd.Duration)
	case CmdDigestChoice:
		return a.digestChoice(u, cmd.Choice)
	}
	if perr != nil {
		return notUnderstood(perr)
	}
	return help()
}

// noSample is the answer before the first sample.
func noSample() *reply {
	return private("⏳ gpuwatch has not read the GPUs yet; try again in a few seconds.")
}

// hosts returns the snapshots a command about host covers, or the answer
// to give instead: before the first sample, or for an unknown host.
func (a *App) hosts(host string) (fleet, *reply) {
	f := a.fleet()
	if len(f) == 0 {
		return nil, noSample()
	}
	picked, err := f.pick(host)
	if err != nil {
		return nil, errorReply(err.Error() + ".")
	}
	return picked, nil
}

// status shows one host's GPUs or, for a fleet, one line per host.
func (a *App) status(host string) *reply {
	f, r := a.hosts(host)
	if r != nil {
		return r
	}
	if f.several() {
		return a.fleetStatus(f)
	}
	return a.hostStatus(f[0])
}

// hostStatus shows every GPU of a host: memory, utilization, temperature,
// power, the top process and the GPU's active alerts.
func (a *App) hostStatus(snap *gpu.Snapshot) *reply {
	now := a.backend.Now()
	alerts := alertsOn(a.backend.Alerts(), snap.Host)
	gpus, instances := countGPUs(snap.Devices)
	title := fmt.Sprintf("🖥 %s · %s", snap.Host, plural.Count(gpus, "GPU"))
	if instances > 0 {
		title += " · " + plural.Count(instances, "MIG instance")
	}
	blocks := []goslack.Block{
		header(title),
		note(fmt.Sprintf("Sampled %s (%s ago) · %s · `/gpu top`, `/gpu alerts`, `/gpu history &lt;gpu&gt;`",
			localTime(snap.Time), since(now, snap.Time), plural.Count(len(alerts), "active alert"))),
	}
	room := maxBlocks - len(blocks) - 1
	shown := 0
	for i := 0; i < len(snap.Devices); {
		if shown == room {
			blocks = append(blocks, note(fmt.Sprintf("…and %d more GPUs", countWhole(snap.Devices[i:]))))
			break
		}
		// A GPU split into MIG instances is one section with its
		// instances under it.
		n := 1 + countInstancesAfter(snap.Devices, i)
		blocks = append(blocks, section(deviceText(snap.Host, snap.Devices[i:i+n], alerts, now)))
		i += n
		shown++
	}
	switch {
	case snap.Down != "":
		blocks = append(blocks, section("⚠️ This host is down: "+blockkit.EscapeClip(snap.Down, 300)))
	case len(snap.Devices) == 0:
		blocks = append(blocks, section("This host reports no GPUs."))
	}
	return message(title, blocks...)
}

// Limits of /gpu status for a fleet: a line per host, and lines per
// section well under Slack's 3,000 characters (a line is at most about
// 170).
const (
	maxStatusHosts   = 200
	statusHostsBlock = 15
)

// staleAfter is how far behind the fleet's newest sample a host's may be
// before its line says how old it is.
const staleAfter = time.Minute

// fleetStatus shows one line per host: its GPUs busy, idle-held and free,
// and its alerts.
func (a *App) fleetStatus(f fleet) *reply {
	now := a.backend.Now()
	alerts := a.backend.Alerts()
	newest := f[0].Time
	var total uses
	for _, s := range f {
		total.add(s)
		if s.Time.After(newest) {
			newest = s.Time
		}
	}
	title := fmt.Sprintf("🖥 %s · %s", plural.Count(len(f), "host"), plural.Count(f.gpuCount(), "GPU"))
	blocks := []goslack.Block{
		header(title),
		note(fmt.Sprintf("Sampled %s (%s ago) · %s%s · `/gpu status &lt;host&gt;` shows one, `/gpu free` lists the free GPUs",
			localTime(newest), since(now, newest), total, countAlerts(alerts))),
	}
	lines := make([]string, 0, min(len(f), maxStatusHosts))
	for _, s := range f[:min(len(f), maxStatusHosts)] {
		lines = append(lines, hostLine(s, alertsOn(alerts, s.Host), newest, now))
	}
	lines = append(lines, elsewhere(f, alerts)...)
	for chunk := range slices.Chunk(lines, statusHostsBlock) {
		blocks = append(blocks, section(strings.Join(chunk, "\n")))
	}
	if len(f) > maxStatusHosts {
		blocks = append(blocks, note(fmt.Sprintf("…and %d more hosts: `/gpu status &lt;host&gt;` shows any of them", len(f)-maxStatusHosts)))
	}
	return message(title, blocks...)
}

// hostLine is one host's line in /gpu status for a fleet: "*node1* · 8
// GPUs: 5 busy, 1 idle-held, 2 free · 🔥 2 firing".
func hostLine(s *gpu.Snapshot, alerts []ActiveAlert, newest, now time.Time) string {
	line := "*" + hostName(s.Host) + "* · "
	switch {
	case s.Down != "":
		line += "⚠️ down: " + blockkit.EscapeClip(s.Down, 120)
	case len(s.Devices) == 0:
		line += "⚠️ no GPU reports"
	default:
		var u uses
		u.add(s)
		line += plural.Count(len(s.Devices), "GPU") + ": " + u.String()
	}
	line += countAlerts(alerts).String()
	if newest.Sub(s.Time) > staleAfter {
		line += " · last sample " + since(now, s.Time) + " ago"
	}
	return line
}

// elsewhere are the lines of the hosts that have alerts and no snapshot
// (the hub's own, whose source is down): "*hub* · 🔥 1 firing:
// GPUWatchSourceDown".
func elsewhere(f fleet, alerts []ActiveAlert) []string {
	byHost := map[string][]ActiveAlert{}
	var hosts []string
	for _, al := range alerts {
		if al.Host == "" || slices.ContainsFunc(f, func(s *gpu.Snapshot) bool { return s.Host == al.Host }) {
			continue
		}
		if byHost[al.Host] == nil {
			hosts = append(hosts, al.Host)
		}
		byHost[al.Host] = append(byHost[al.Host], al)
	}
	slices.Sort(hosts)
	lines := make([]string, 0, min(len(hosts), maxNamedHosts))
	for _, h := range hosts[:min(len(hosts), maxNamedHosts)] {
		names := make([]string, 0, len(byHost[h]))
		for _, al := range byHost[h] {
			if !slices.Contains(names, al.Name) {
				names = append(names, al.Name)
			}
		}
		lines = append(lines, fmt.Sprintf("*%s* · no GPU of its own%s: %s", hostName(h), countAlerts(byHost[h]),
			blockkit.EscapeClip(strings.Join(names, ", "), 200)))
	}
	if n := len(hosts) - len(lines); n > 0 {
		lines = append(lines, fmt.Sprintf("…and %d more hosts with alerts and no GPU: `/gpu alerts` lists them", n))
	}
	return lines
}

// deviceText is one GPU's lines in /gpu status: devs[0], and, for a GPU
// split into MIG instances, its instances devs[1:] under it.
func deviceText(host string, devs []gpu.Device, alerts []ActiveAlert, now time.Time) string {
	var b strings.Builder
	d := &devs[0]
	fmt.Fprintf(&b, "*%s* · %s\n", d.Label(), blockkit.EscapeClip(d.Name, 80))
	switch {
	case d.MIGEnabled:
		fmt.Fprintf(&b, "MIG: %s\n", plural.Count(len(devs)-1, "instance"))
	case d.MemKnown():
		pct := d.MemUsedPercent()
		fmt.Fprintf(&b, "`%s` %s / %s (%.0f%%)\n", meter(pct), gib(d.MemUsed), gib(d.MemTotal), pct)
	default:
		b.WriteString("memory n/a\n")
	}
	power := reading(d.PowerW, "%.0f W")
	if !math.IsNaN(d.PowerLimitW) && d.PowerLimitW > 0 && !math.IsNaN(d.PowerW) {
		power = fmt.Sprintf("%.0f / %.0f W", d.PowerW, d.PowerLimitW)
	}
	if d.MIGEnabled {
		fmt.Fprintf(&b, "%s · %s\n", reading(d.TempC, "%.0f C"), power)
	} else {
		fmt.Fprintf(&b, "util %s · %s · %s\n", reading(d.UtilGPU, "%.0f%%"), reading(d.TempC, "%.0f C"), power)
		processLine(&b, d)
	}
	alertLines(&b, host, d, alerts, now)
	for i := range devs[1:] {
		instanceText(&b, host, &devs[1+i], alerts, now)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// instanceText is a MIG instance's lines under its GPU in /gpu status:
// "↳ *MIG 3 (1g.10gb)* `▓▓░░` 2.0 / 9.5 GiB (21%) · util n/a", its top
// process and its alerts.
func instanceText(b *strings.Builder, host string, d *gpu.Device, alerts []ActiveAlert, now time.Time) {
	fmt.Fprintf(b, "↳ *%s*", strings.TrimPrefix(d.Label(), gpu.Label(d.Index, nil)+" · "))
	if d.MemKnown() {
		pct := d.MemUsedPercent()
		fmt.Fprintf(b, " `%s` %s / %s (%.0f%%)", meter(pct), gib(d.MemUsed), gib(d.MemTotal), pct)
	} else {
		b.WriteString(" memory n/a")
	}
	fmt.Fprintf(b, " · util %s\n", reading(d.UtilGPU, "%.0f%%"))
	b.WriteString("    ")
	processLine(b, d)
	alertLines(b, host, d, alerts, now)
}

// processLine is the device's top process, or that it runs none.
func processLine(b *strings.Builder, d *gpu.Device) {
	if p := topProcess(d.Processes); p != nil {
		fmt.Fprintf(b, "👤 %s: `%s` %s", blockkit.EscapeClip(p.Who(), 60), blockkit.EscapeClip(p.Command, 60), gib(p.MemUsed))
		if n := len(d.Processes) - 1; n > 0 {
			fmt.Fprintf(b, " (+%d more)", n)
		}
		b.WriteByte('\n')
	} else {
		b.WriteString("no processes\n")
	}
}

// alertLines are the device's alerts, one a line.
func alertLines(b *strings.Builder, host string, d *gpu.Device, alerts []ActiveAlert, now time.Time) {
	for i := range alerts {
		if al := &alerts[i]; onDevice(al, host, d) {
			name := al.Name
			if al.Process != nil {
				name += " (" + al.Process.Holder() + ")"
			}
			fmt.Fprintf(b, "%s *%s* %s %s\n", alertEmoji(al), blockkit.EscapeClip(name, 100), al.stateText(), since(now, al.Since))
		}
	}
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

// alertEmoji is an alert's state at a glance: firing, silenced or pending.
func alertEmoji(al *ActiveAlert) string {
	switch {
	case al.Silenced != nil:
		return "🔕"
	case al.State == "firing":
		return "🔥"
	}
	return "⏳"
}

// where names a GPU in mrkdwn: "GPU 3", "GPU 0 · MIG 3 (1g.10gb)" (label,
// gpu.Label), or "node1 GPU 3" in a fleet. An alert about no one GPU
// (GPU -1: the source is down) is "node1", or "gpuwatch" on one host.
func where(several bool, host string, index int, label string) string {
	switch {
	case index < 0 && several:
		return hostName(host)
	case index < 0:
		return "gpuwatch"
	case several:
		return hostName(host) + " " + label
	}
	return label
}

// gpuProcess is a process and the GPU it runs on; unnamed: a GPU that is
// held but whose source names no process (dcgm-exporter outside
// Kubernetes), its memory in use.
type gpuProcess struct {
	host    string
	gpu     int
	label   string // the GPU's, gpu.Label
	unnamed bool
	gpu.Process
}

// maxTopProcesses is how many processes /gpu top lists.
const maxTopProcesses = 40

// top lists the processes on every GPU (of one host, or of the fleet) by
// GPU memory, largest first: each with its holder (a process, or a pod
// when the source names pods), and the GPUs held by processes the source
// does not name.
func (a *App) top(host string) *reply {
	f, r := a.hosts(host)
	if r != nil {
		return r
	}
	var ps []gpuProcess
	for _, s := range f {
		for i := range s.Devices {
			d := &s.Devices[i]
			for _, p := range d.Processes {
				ps = append(ps, gpuProcess{host: s.Host, gpu: d.Index, label: d.Label(), Process: p})
			}
			if len(d.Processes) == 0 && d.RunsJobs() && rules.Held(d) {
				ps = append(ps, gpuProcess{host: s.Host, gpu: d.Index, label: d.Label(), unnamed: true, Process: gpu.Process{MemUsed: d.MemUsed}})
			}
		}
	}
	slices.SortStableFunc(ps, func(x, y gpuProcess) int {
		return cmp.Or(cmp.Compare(y.MemUsed, x.MemUsed), cmp.Compare(x.host, y.host), cmp.Compare(x.gpu, y.gpu))
	})
	on := f[0].Host
	if f.several() {
		on = plural.Count(len(f), "host")
	}
	title := fmt.Sprintf("👤 Processes on %s by GPU memory", on)
	blocks := []goslack.Block{header(title)}
	if len(ps) == 0 {
		return message(title, append(blocks, section("No compute processes on any GPU."))...)
	}
	var lines []string
	for _, p := range ps[:min(len(ps), maxTopProcesses)] {
		lines = append(lines, topLine(p, f.several()))
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

// topLine is one line of /gpu top: "`node1/0` *61.0 GiB* alice ·
// `python train.py` · pid 4242 · docker:3f2a", "`node1/0` *61.0 GiB* pod
// ml/train-0, container trainer", "`node1/0` *61.0 GiB* held · the source
// names no process" (dcgm-exporter outside Kubernetes; an agent that cannot
// see the processes of other PID namespaces).
func topLine(p gpuProcess, several bool) string {
	line := fmt.Sprintf("`%s` *%s* ", where(several, p.host, p.gpu, p.label), gib(p.MemUsed))
	if p.unnamed {
		return line + "held · the source names no process"
	}
	if _, _, _, pod := p.Pod(); pod {
		return line + blockkit.EscapeClip(p.Holder(), 160)
	}
	line += fmt.Sprintf("%s · `%s`", blockkit.EscapeClip(p.Who(), 60), blockkit.EscapeClip(p.Command, 80))
	if _, isJob := p.SlurmJob(); isJob && p.PID > 0 {
		line += fmt.Sprintf(" · pid %d", p.PID) // the job is named first
	} else if h := p.Holder(); h != "" && !isJob {
		line += " · " + h
	}
	if p.Container != "" {
		line += " · " + blockkit.EscapeClip(p.Container, 60)
	}
	return line
}

// alerts lists the firing and pending alerts, of one host or of all.
func (a *App) alerts(host string) *reply {
	now := a.backend.Now()
	alerts := a.backend.Alerts()
	f := a.fleet()
	on := ""
	if host != "" {
		picked, err := f.pick(host)
		if err != nil {
			return errorReply(err.Error() + ".")
		}
		alerts = alertsOn(alerts, picked[0].Host)
		on = " on " + picked[0].Host
	}
	// A fleet's alerts say their host; so do alerts from a host that has
	// no snapshot (one whose series are gone).
	several := f.several() || slices.ContainsFunc(alerts, func(al ActiveAlert) bool {
		return al.Host != "" && (len(f) == 0 || al.Host != f[0].Host)
	})
	c := countAlerts(alerts)
	title := fmt.Sprintf("🚨 %d firing, %d pending%s", c.firing, c.pending, on)
	if c.silenced > 0 {
		title = fmt.Sprintf("🚨 %d firing, %d silenced, %d pending%s", c.firing, c.silenced, c.pending, on)
	}
	if len(alerts) == 0 {
		title = "✅ No alerts are firing or pending" + on
		return message(title, section(title))
	}
	blocks := []goslack.Block{header(title)}
	room := maxBlocks - len(blocks) - 1
	for i := range alerts {
		if i == room {
			blocks = append(blocks, note(fmt.Sprintf("…and %d more alerts", len(alerts)-i)))
			break
		}
		blocks = append(blocks, section(alertText(&alerts[i], several, now)))
	}
	return message(title, blocks...)
}

// alertText is one alert's lines in /gpu alerts.
func alertText(al *ActiveAlert, several bool, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s *%s* · %s", alertEmoji(al), blockkit.EscapeClip(al.Name, 80), where(several, al.Host, al.GPU, al.Subject()))
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
	if al.Answer != "" {
		b.WriteString("\n🙋 " + blockkit.EscapeClip(al.Answer, 200))
	}
	if al.Acknowledged != "" {
		b.WriteString("\n👀 acknowledged by " + blockkit.EscapeClip(al.Acknowledged, 80))
	}
	if s := al.Silenced; s != nil {
		fmt.Fprintf(&b, "\n🔕 silenced until %s by %s", localTime(s.EndsAt), blockkit.EscapeClip(orSomeone(s.CreatedBy), 80))
		if s.Comment != "" {
			b.WriteString(": " + blockkit.EscapeClip(s.Comment, 200))
		}
		fmt.Fprintf(&b, " · `/gpu unsilence %s` ends it", blockkit.EscapeClip(s.ID, 64))
	}
	return b.String()
}

// orSomeone is who made a silence, or "someone" when it does not say.
func orSomeone(by string) string {
	if by == "" {
		return "someone"
	}
	return by
}

// commandHelp is each /gpu command: how to write it and what it answers,
// in the order /gpu help lists them. A command not understood is answered
// with its own line, not the whole list.
var commandHelp = []struct{ verb, usage, about string }{
	{"status", "`/gpu` or `/gpu status`", "every GPU's memory, utilization, temperature, power, top process and alerts; in a fleet, one line per host (GPUs busy, idle-held, free, alerts), and `/gpu status &lt;host&gt;` shows one host's GPUs"},
	{"free", "`/gpu free [host]`", "the GPUs no one holds now (no process, under 1 GiB in use), with model and free memory"},
	{"health", "`/gpu health [host]`", "every GPU's health in one word (ok, degraded, needs reset, needs service) and why: ECC errors, row remapping, hardware slowdowns, PCIe and NVLink, recent XIDs by what they mean"},
	{"top", "`/gpu top [host]`", "processes by GPU memory, with user, command and container"},
	{"alerts", "`/gpu alerts [host]`", "firing, silenced and pending alerts, since when, who acknowledged or silenced them"},
	{"history", "`/gpu history [host] [gpu] [window]`", "a chart of memory, utilization and temperature of one GPU, or of every GPU of a host (window 6h by default, up to 24h; the host is needed in a fleet); posted in a direct message with gpuwatch or, with `public`, in the channel, else as sparklines"},
	{"silence", "`/gpu silence &lt;alert|gpu N|all&gt; &lt;duration&gt; [reason]`", "mute alerts, e.g. `/gpu silence GPUHot 2h fan repair`; `on &lt;host&gt;` after what to silence mutes one host's, e.g. `/gpu silence gpu 2 on node3 1h`"},
	{"silences", "`/gpu silences`", "the silences; `/gpu unsilence &lt;id&gt;` ends one"},
	{"unsilence", "`/gpu unsilence &lt;id&gt;`", "ends a silence (`/gpu silences` lists them)"},
	{"digest", "`/gpu digest [window]`", "the usage digest: per GPU and per user, idle holders, alerts, energy (window 24h by default, up to 35d); `/gpu digest weekly|daily|off` chooses your personal digest"},
	{"mine", "`/gpu mine`", "your jobs now, on every host: GPU, memory, busy or idle, and their alerts"},
	{"mute-me", "`/gpu mute-me [duration]`", "no alerts about your jobs by direct message or @mention for a while (8h by default, up to 7d; `off` ends it)"},
}

// helpText lists the commands.
func helpText() string {
	var b strings.Builder
	b.WriteString("*gpuwatch* answers `/gpu` with the GPUs of this host, or of every host of a fleet:\n")
	for _, c := range commandHelp {
		if c.verb == "unsilence" { // said with silences
			continue
		}
		fmt.Fprintf(&b, "• %s: %s\n", c.usage, c.about)
	}
	b.WriteString("Add `public` to any command to answer in the channel instead of only to you.")
	return b.String()
}

// help is the list of commands (/gpu help).
func help() *reply {
	return message("gpuwatch /gpu commands", section(helpText()))
}

// notUnderstood answers a command that was not understood with one line:
// what was wrong and how to write the command typed (perr says both), or,
// for a word that is no command, the closest one.
func notUnderstood(perr error) *reply {
	text := "🤔 " + blockkit.EscapeClip(perr.Error(), 500)
	if !strings.Contains(text, "/gpu help") {
		text += " · `/gpu help` lists every command"
	}
	r := message(text, section(text))
	r.ResponseType = ephemeral
	return r
}
