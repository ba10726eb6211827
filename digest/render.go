package digest

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/internal/plural"
	"github.com/gpuwatch/gpuwatch/rules"
)

// Slack's limits on blocks.
const (
	maxBlocks      = 50
	maxSectionText = 3000
	maxHeaderText  = 150
)

// style is how one output form marks up a line: bold headings, bullets and
// monospace, and what it does to text that comes from outside (user, GPU
// and alert names), which must not be read as markup.
type style struct {
	bold   func(string) string
	code   func(string) string
	text   func(string) string
	bullet string
}

func same(s string) string { return s }

// plainStyle is for the console, markdownStyle for chat webhooks and
// mrkdwnStyle for Slack, where a user named "<!channel>" must not ping
// anyone.
func plainStyle() style { return style{bold: same, code: same, text: same, bullet: "  "} }

func markdownStyle() style { return style{bold: wrap("**"), code: wrap("`"), text: same, bullet: "- "} }

func mrkdwnStyle() style {
	return style{bold: wrap("*"), code: wrap("`"), text: blockkit.Escape, bullet: "• "}
}

func wrap(mark string) func(string) string {
	return func(s string) string { return mark + s + mark }
}

// section is one titled part of a report: its heading and its lines.
type section struct {
	heading string
	lines   []string
}

// sections lays out the report in reading order: host one-liners, GPUs
// (a fleet's hosts), their health, top users, idle holders, alerts.
func (r *Report) sections(st style) []section {
	host := []string{r.hostLine()}
	if e := r.energyLine(); e != "" {
		host = append(host, e)
	}
	if c := r.samplingLine(); c != "" {
		host = append(host, c)
	}
	out := []section{{lines: host}}

	machines := r.gpusSection(st)
	users := make([]string, len(r.Users))
	for i := range r.Users {
		users[i] = r.userLine(&r.Users[i], st)
	}
	idle := make([]string, len(r.IdleHolders))
	for i := range r.IdleHolders {
		idle[i] = r.idleLine(&r.IdleHolders[i], st)
	}
	idle = append(idle, r.idleGPULines(st)...)
	underused := make([]string, len(r.Underused))
	for i := range r.Underused {
		underused[i] = r.underusedLine(&r.Underused[i], st)
	}
	alerts := make([]string, len(r.Alerts))
	for i := range r.Alerts {
		alerts[i] = alertLine(&r.Alerts[i], st)
	}
	alertsHeading := "Alerts"
	still := 0
	for _, a := range r.Alerts {
		still += a.StillFiring
	}
	switch {
	case r.AlertsFired > 0 && still > 0:
		alertsHeading = fmt.Sprintf("Alerts (%d fired, %d still firing)", r.AlertsFired, still)
	case r.AlertsFired > 0:
		alertsHeading = fmt.Sprintf("Alerts (%d fired)", r.AlertsFired)
	case still > 0:
		alertsHeading = fmt.Sprintf("Alerts (%d still firing)", still)
	}
	out = append(out, machines)
	if len(r.Health) > 0 {
		out = append(out, r.healthSection(st))
	}
	return append(out,
		list("Top users", users, r.OtherUsers, "No processes attributed to users in this window."),
		list("Held idle", idle, r.OtherIdle, "Nobody held a GPU idle for "+duration(MinIdleHeld.Seconds())+" or more."),
		list("Held at low utilization", underused, 0, fmt.Sprintf("No GPU was held busy under %d%% utilization for %s or more.",
			LowUtilPercent, duration(MinUnderused.Seconds()))),
		list(alertsHeading, alerts, 0, "No alerts fired."))
}

// gpusSection lists each GPU or, for a fleet, each host.
func (r *Report) gpusSection(st style) section {
	if !r.Fleet() {
		gpus := make([]string, len(r.GPUs))
		for i := range r.GPUs {
			gpus[i] = r.gpuLine(&r.GPUs[i], st)
		}
		return list("GPUs", gpus, 0, "No GPU data in this window.")
	}
	hosts := make([]string, 0, min(len(r.Hosts), MaxHostLines))
	for i := range r.Hosts[:min(len(r.Hosts), MaxHostLines)] {
		hosts = append(hosts, r.hostReportLine(&r.Hosts[i], st))
	}
	return list("Hosts", hosts, len(r.Hosts)-len(hosts), "No GPU data in this window.")
}

// hostReportLine is one host of a fleet: "node1 8 GPUs ▁▂▃ avg 41%; busy
// 150.0h, held idle 20.0h; 45.2 kWh".
func (r *Report) hostReportLine(h *HostReport, st style) string {
	var b strings.Builder
	b.WriteString(st.bold(st.text(h.Host)) + " " + plural.Count(h.GPUs, "GPU"))
	if h.Sparkline != "" {
		b.WriteString(" " + st.code(h.Sparkline))
	}
	if h.UtilNotLogged {
		b.WriteString(" " + notLogged("utilization"))
	} else {
		fmt.Fprintf(&b, " avg %s; busy %s, held idle %s", percent(h.AvgUtil), busyTime(h.BusyHours), busyTime(h.IdleHeldHours))
	}
	if h.EnergyKWh > 0 {
		b.WriteString("; " + kwh(h.EnergyKWh))
		if r.Priced {
			b.WriteString(" (" + r.money(h.Cost) + ")")
		}
	}
	return b.String()
}

// gpuName names a GPU in a line: "GPU 2", "GPU 0 · MIG 3 (1g.10gb)", or
// "node1 GPU 2" in a fleet.
func (r *Report) gpuName(host string, index int, m *gpu.MIG, st style) string {
	if r.Fleet() {
		return st.text(host) + " " + gpu.Label(index, m)
	}
	return gpu.Label(index, m)
}

// underusedLine: "GPU 2: alice's python train.py held it 3h at 18% average
// utilization — starved by its input pipeline, or too small for this GPU".
func (r *Report) underusedLine(u *Underused, st style) string {
	who := "its job"
	switch {
	case u.User != "" && u.Command != "":
		who = st.text(u.User) + "'s " + st.code(st.text(blockkit.Clip(u.Command, 80)))
	case u.User != "":
		who = st.text(u.User)
	}
	return fmt.Sprintf("%s: %s held it %s at %s average utilization — starved by its input pipeline, or too small for this GPU",
		st.bold(r.gpuName(u.Host, u.GPU, u.MIG, st)), who, duration(u.Hours*3600), percent(u.AvgUtil))
}

// list is a titled section of lines, counting the others left out, or
// saying none when there is nothing to list.
func list(heading string, lines []string, others int, none string) section {
	switch {
	case len(lines) == 0:
		lines = []string{none}
	case others > 0:
		lines = append(lines, fmt.Sprintf("and %d more", others))
	}
	return section{heading: heading, lines: lines}
}

func (r *Report) hostLine() string {
	whole, instances := 0, 0
	for i := range r.GPUs {
		if r.GPUs[i].MIG != nil {
			instances++
		} else {
			whole++
		}
	}
	gpus := plural.Count(whole, "GPU")
	if instances > 0 {
		gpus += " (" + plural.Count(instances, "MIG instance") + ")"
	}
	if r.Fleet() {
		gpus = plural.Count(len(r.Hosts), "host") + ", " + gpus
	}
	switch {
	case r.UtilNotLogged:
		// Busy and idle need the utilization: not known, not none.
		return fmt.Sprintf("%s, %s covered: %s", gpus, gpuTime(r.CoveredHours), r.utilMissing())
	case r.MemNotLogged:
		return fmt.Sprintf("%s, %s covered: average utilization %s, busy %s of the time; %s, so held idle is not known",
			gpus, gpuTime(r.CoveredHours), percent(r.AvgUtil), percent(100*r.BusyShare), notLogged("memory"))
	}
	return fmt.Sprintf("%s, %s covered: average utilization %s, busy %s of the time, held idle %s (%s)",
		gpus, gpuTime(r.CoveredHours), percent(r.AvgUtil), percent(100*r.BusyShare),
		percent(100*r.IdleShare), gpuTime(r.IdleHeldHours))
}

// notLogged says that a log does not record a reading, where a number
// would read as none of it.
func notLogged(what string) string { return what + " not logged" }

// samplingLine says how a log's samples were counted: "Sampled every 30m:
// each sample stands for the time since the one before, up to 1h30m
// (longer gaps are not covered).", or how a log sampled in bursts was:
// "Sampled in bursts of about 5 samples within a second, every 1m."
func (r *Report) samplingLine() string {
	var b strings.Builder
	switch {
	case r.BurstSamples > 1:
		fmt.Fprintf(&b, "Sampled in bursts of about %d samples within a second, every %s", r.BurstSamples, duration(r.StepSeconds))
	case r.MaxGapSeconds > 0:
		fmt.Fprintf(&b, "Sampled every %s", duration(r.StepSeconds))
	default:
		return ""
	}
	if r.MaxGapSeconds > 0 {
		fmt.Fprintf(&b, ": each sample stands for the time since the one before, up to %s (longer gaps are not covered)", duration(r.MaxGapSeconds))
	}
	return b.String() + "."
}

func (r *Report) energyLine() string {
	if r.EnergyKWh <= 0 {
		return ""
	}
	line := "Energy " + kwh(r.EnergyKWh)
	if r.Priced {
		line += ", cost " + r.money(r.Cost)
	}
	return line
}

// gpuLine is one GPU's line; a MIG instance's, under its GPU's, starts
// "↳ MIG 3 (1g.10gb)", and a GPU split into instances says the card's
// readings only: temperature and energy.
func (r *Report) gpuLine(g *GPUReport, st style) string {
	var b strings.Builder
	if g.MIG != nil {
		b.WriteString("↳ " + st.bold(strings.TrimPrefix(gpu.Label(g.GPU, g.MIG), gpu.Label(g.GPU, nil)+" · ")))
	} else {
		b.WriteString(st.bold(gpu.Label(g.GPU, nil)))
		if g.Name != "" {
			b.WriteString(" " + st.text(g.Name))
		}
	}
	if g.MIGEnabled {
		b.WriteString(" in MIG mode: its use is its instances'")
	} else {
		r.gpuUse(&b, g, st)
	}
	if g.PeakTemp != 0 { // 0: the data has no temperature, which must not read as a cold GPU
		fmt.Fprintf(&b, "; peak %.0f C", g.PeakTemp)
	}
	if g.EnergyKWh > 0 {
		b.WriteString("; " + kwh(g.EnergyKWh))
		if r.Priced {
			b.WriteString(" (" + r.money(g.Cost) + ")")
		}
	}
	return b.String()
}

// gpuUse writes a GPU's use: its utilization, memory, busy and held idle
// time, saying what its data does not have.
func (r *Report) gpuUse(b *strings.Builder, g *GPUReport, st style) {
	if g.Sparkline != "" && !g.UtilNotLogged {
		b.WriteString(" " + st.code(g.Sparkline))
	}
	switch {
	case g.UtilNotLogged && g.MIG != nil:
		b.WriteString(" utilization not measured") // a GPU before Hopper measures no instance's
	case g.UtilNotLogged:
		b.WriteString(" " + notLogged("utilization"))
	default:
		fmt.Fprintf(b, " avg %s, peak %s", percent(g.AvgUtil), percent(g.PeakUtil))
	}
	if g.MemNotLogged {
		b.WriteString("; " + notLogged("memory"))
	} else {
		b.WriteString("; memory peak " + formatBytes(g.PeakMem))
		if g.MemTotal > 0 {
			b.WriteString(" of " + formatBytes(g.MemTotal))
		}
	}
	switch {
	case g.UtilNotLogged: // busy and held idle need the utilization
	case g.MemNotLogged:
		fmt.Fprintf(b, "; busy %s", busyTime(g.BusyHours)) // held idle needs the memory
	default:
		fmt.Fprintf(b, "; busy %s, held idle %s", busyTime(g.BusyHours), busyTime(g.IdleHeldHours))
	}
}

// utilMissing says that the report's GPUs had no utilization: "not
// measured" of MIG instances (a GPU before Hopper measures none), "not
// logged" of a log without it.
func (r *Report) utilMissing() string {
	if slices.ContainsFunc(r.GPUs, func(g GPUReport) bool { return g.MIG != nil }) {
		return "utilization not measured"
	}
	return notLogged("utilization")
}

// maxUserHosts is how many hosts a user's line names; the others are
// counted.
const maxUserHosts = 3

func (r *Report) userLine(u *UserReport, st style) string {
	who := st.bold(st.text(u.User))
	if len(u.Jobs) > 0 {
		who += " (" + jobList(u.Jobs) + ")"
	}
	head := fmt.Sprintf("%s %s, %s GiB-hours on ", who, gpuTime(u.GPUHours), hours(u.GiBHours))
	if !r.Fleet() {
		if len(u.Hosts) == 1 {
			return head + gpuList(u.Hosts[0].GPUs, u.Hosts[0].Labels)
		}
		return head + gpuList(u.GPUs, nil)
	}
	var on []string
	for _, h := range u.Hosts[:min(len(u.Hosts), maxUserHosts)] {
		on = append(on, st.text(h.Host)+" "+gpuList(h.GPUs, h.Labels))
	}
	if n := len(u.Hosts) - maxUserHosts; n > 0 {
		on = append(on, "and "+plural.Count(n, "more host"))
	}
	return head + strings.Join(on, "; ")
}

// gpuList is "GPU 0" or "GPUs 0, 1"; with MIG instances among the GPUs
// (labels, gpu.Label, in indexes' order), their labels: "GPU 0 · MIG 3
// (1g.10gb), GPU 1".
func gpuList(indexes []int, labels []string) string {
	if len(labels) == len(indexes) && slices.ContainsFunc(labels, func(l string) bool { return strings.Contains(l, "· MIG") }) {
		return strings.Join(labels, ", ")
	}
	gpus := make([]string, len(indexes))
	for i, g := range indexes {
		gpus[i] = strconv.Itoa(g)
	}
	label := "GPU "
	if len(gpus) > 1 {
		label = "GPUs "
	}
	return label + strings.Join(gpus, ", ")
}

func (r *Report) idleLine(h *IdleHolder, st style) string {
	who := st.bold(st.text(h.User))
	if h.Job != "" {
		// "job 4242 (alice)", as alerts name a Slurm job.
		p := gpu.Process{Job: h.Job, User: h.User}
		who = st.bold(st.text(p.Who()))
	}
	return fmt.Sprintf("%s held %s on %s idle for %s", who, formatBytes(h.MaxBytes), r.gpuName(h.Host, h.GPU, h.MIG, st),
		duration(h.Seconds))
}

// maxJobsNamed is how many jobs a user's line names.
const maxJobsNamed = 3

// jobList names Slurm jobs: "job 4242", "jobs 4242, 4250 and 2 more".
func jobList(jobs []string) string {
	var ids []string
	for _, j := range jobs {
		if id, ok := (&gpu.Process{Job: j}).SlurmJob(); ok {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	label := "job "
	if len(ids) > 1 {
		label = "jobs "
	}
	text := label + strings.Join(ids[:min(len(ids), maxJobsNamed)], ", ")
	if n := len(ids) - maxJobsNamed; n > 0 {
		text += fmt.Sprintf(" and %d more", n)
	}
	return text
}

// idleGPULines name the GPUs held idle that no holder accounts for: the
// data names no processes (an nvidia-smi log has none), so the GPU is all
// a digest can name.
func (r *Report) idleGPULines(st style) []string {
	var lines []string
	for i := range r.GPUs {
		g := &r.GPUs[i]
		named := slices.ContainsFunc(r.IdleHolders, func(h IdleHolder) bool {
			return h.Host == g.Host && h.GPU == g.GPU && instanceOf(h.MIG) == instanceOf(g.MIG)
		})
		if named || g.IdleHeldHours*3600 < MinIdleHeld.Seconds() {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s was held idle for %s (memory held, utilization under %d%% for %s or more); the data names no processes to say by whom",
			st.bold(r.gpuName(g.Host, g.GPU, g.MIG, st)), duration(g.IdleHeldHours*3600), BusyPercent, duration(IdleWindow.Seconds())))
	}
	return lines
}

func alertLine(a *AlertReport, st style) string {
	name := st.bold(st.text(a.Alert))
	switch {
	case a.Fired == 0:
		return fmt.Sprintf("%s still firing, for %s", name, duration(a.LongestSeconds))
	case a.StillFiring > 0:
		return fmt.Sprintf("%s fired %s, the longest for %s (%d still firing)", name, plural.Count(a.Fired, "time"), duration(a.LongestSeconds), a.StillFiring)
	}
	return fmt.Sprintf("%s fired %s, the longest for %s", name, plural.Count(a.Fired, "time"), duration(a.LongestSeconds))
}

// Text renders the report as plain text for the console.
func (r *Report) Text() string {
	return r.render(plainStyle(), r.Title()+"\n")
}

// Markdown renders the report as markdown for chat webhooks.
func (r *Report) Markdown() string {
	return r.render(markdownStyle(), "## "+r.Title()+"\n")
}

func (r *Report) render(st style, title string) string {
	var b strings.Builder
	b.Grow(2048)
	b.WriteString(title)
	for i, s := range r.sections(st) {
		if i > 0 {
			b.WriteString("\n" + st.bold(s.heading) + "\n")
		}
		for _, l := range s.lines {
			if i > 0 {
				b.WriteString(st.bullet)
			}
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// Blocks renders the report as Slack Block Kit blocks (at most 50), as the
// JSON array of a message's "blocks".
func (r *Report) Blocks() ([]byte, error) {
	blocks := []goslack.Block{
		goslack.NewHeaderBlock(goslack.NewTextBlockObject(goslack.PlainTextType, cut(r.Title(), maxHeaderText), false, false)),
	}
	for i, s := range r.sections(mrkdwnStyle()) {
		if i == 1 {
			blocks = append(blocks, goslack.NewDividerBlock())
		}
		for _, text := range chunks(s, i > 0) {
			blocks = append(blocks, mrkdwn(text))
		}
	}
	if len(blocks) > maxBlocks {
		blocks = append(blocks[:maxBlocks-1], mrkdwn("_The rest does not fit in one message._"))
	}
	out, err := json.Marshal(blocks)
	if err != nil {
		return nil, fmt.Errorf("encode digest %q as Slack blocks: %w", r.Name, err)
	}
	return out, nil
}

func mrkdwn(text string) goslack.Block {
	return goslack.NewSectionBlock(goslack.NewTextBlockObject(goslack.MarkdownType, text, false, false), nil, nil)
}

// chunks splits a section into texts that each fit in one section block,
// the heading leading the first.
func chunks(s section, titled bool) []string {
	var out []string
	var b strings.Builder
	if titled {
		b.WriteString(mrkdwnStyle().bold(s.heading))
	}
	for _, l := range s.lines {
		if titled {
			l = mrkdwnStyle().bullet + l
		}
		l = blockkit.ClipEscaped(l, maxSectionText-1)
		if b.Len() > 0 && b.Len()+1+len(l) > maxSectionText {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	}
	return append(out, b.String())
}

// cut shortens s to at most n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const more = "…"
	end := n - len(more)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + more
}

func percent(p float64) string { return strconv.FormatFloat(math.Round(p), 'f', 0, 64) + "%" }

// hours writes a number of hours with one decimal, or none from 100 on;
// under a tenth, with two significant digits, so that a short window's
// hours do not read as none beside the share they make up.
func hours(h float64) string {
	switch {
	case h >= 100:
		return strconv.FormatFloat(h, 'f', 0, 64)
	case h >= 0.1 || h == 0:
		return strconv.FormatFloat(h, 'f', 1, 64)
	}
	return strconv.FormatFloat(h, 'g', 2, 64)
}

// busyTime writes a number of hours as a time: "1.6h" from an hour on,
// "12m" or "45s" below, "0h" for none, so that 2 minutes of 2 busy do not
// read "busy 0.0h" beside "busy 100% of the time".
func busyTime(h float64) string {
	switch {
	case h == 0:
		return "0h"
	case h >= 1:
		return hours(h) + "h"
	}
	return duration(h * 3600)
}

// gpuTime writes GPU-hours, in GPU-minutes under an hour: "4.0
// GPU-hours", "12 GPU-minutes", "under a GPU-minute".
func gpuTime(h float64) string {
	switch {
	case h >= 1 || h == 0:
		return hours(h) + " GPU-hours"
	case h*60 < 0.5:
		return "under a GPU-minute"
	}
	return plural.Count(int(math.Round(h*60)), "GPU-minute")
}

func kwh(e float64) string {
	if e < 10 {
		return strconv.FormatFloat(e, 'f', 2, 64) + " kWh"
	}
	return strconv.FormatFloat(e, 'f', 1, 64) + " kWh"
}

func (r *Report) money(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	if r.Currency != "" {
		s += " " + r.Currency
	}
	return s
}

// formatBytes writes a size in binary units as alerts and gpuwatch status
// do: "79.6 GiB", "1.5 GiB", "512 MiB".
func formatBytes(v uint64) string { return rules.Dimension{Base: rules.Bytes}.Format(float64(v)) }

// duration writes seconds as "45s", "12m", "5h12m" or "2d5h".
func duration(secs float64) string {
	d := time.Duration(math.Round(secs)) * time.Second
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}
