package slackbot

import (
	"fmt"
	"slices"
	"strings"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/internal/plural"
)

// Limits of /gpu health: the GPUs listed with their reason, and lines per
// section well under Slack's 3,000 characters (a line is at most about
// 260).
const (
	maxHealthListed = 64
	healthLinesPer  = 10
)

// conditionEmoji marks a GPU's condition.
func conditionEmoji(c gpu.Condition) string {
	switch c {
	case gpu.ConditionDegraded:
		return "🟡"
	case gpu.ConditionNeedsReset:
		return "🟠"
	case gpu.ConditionNeedsService:
		return "🔴"
	}
	return "🟢"
}

// judged is a GPU and its verdict, and where it is.
type judged struct {
	host    string
	dev     *gpu.Device
	verdict gpu.Verdict
}

// health answers /gpu health: every GPU's condition in one word (ok,
// degraded, needs reset, needs service) with the reason, of one host or of
// the fleet. The GPUs that are not ok come first, worst first, each with
// its reasons; the ok ones are counted.
func (a *App) health(host string) *reply {
	f, r := a.hosts(host)
	if r != nil {
		return r
	}
	var all []judged
	counts := map[gpu.Condition]int{}
	unknown := 0
	for _, s := range f {
		for i := range s.Devices {
			d := &s.Devices[i]
			if d.MIG != nil {
				continue // a MIG instance's health is its GPU's
			}
			v := a.backend.Verdict(s.Host, d)
			all = append(all, judged{s.Host, d, v})
			counts[v.Condition]++
			if !v.Known {
				unknown++
			}
		}
	}
	where := f[0].Host
	if f.several() {
		where = plural.Count(len(f), "host")
	}
	var parts []string
	for c := gpu.ConditionNeedsService; ; c-- {
		if counts[c] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[c], c))
		}
		if c == gpu.ConditionOK {
			break
		}
	}
	title := fmt.Sprintf("🩺 GPU health on %s: %s", where, strings.Join(parts, ", "))
	blocks := []goslack.Block{header(title)}
	if len(all) == 0 {
		return message(title, append(blocks, section("No GPU reports now."))...)
	}
	sick := slices.DeleteFunc(slices.Clone(all), func(j judged) bool { return j.verdict.Condition == gpu.ConditionOK })
	slices.SortStableFunc(sick, func(x, y judged) int { return int(y.verdict.Condition) - int(x.verdict.Condition) })
	lines := make([]string, 0, min(len(sick), maxHealthListed)+1)
	for _, j := range sick[:min(len(sick), maxHealthListed)] {
		lines = append(lines, healthLine(j, f.several()))
	}
	if n := counts[gpu.ConditionOK]; n > 0 {
		lines = append(lines, fmt.Sprintf("🟢 %s ok", plural.Count(n, "GPU")))
	}
	for chunk := range slices.Chunk(lines, healthLinesPer) {
		blocks = append(blocks, section(strings.Join(chunk, "\n")))
	}
	footer := "ok · degraded (slower or with less margin) · needs reset (once its jobs have stopped) · needs service (drain it, call support). docs/health.md says what each reason means."
	if unknown > 0 {
		footer = fmt.Sprintf("%s give no health readings (a log without them, or a driver that does not say): ok there means nothing known is wrong. ", plural.Count(unknown, "GPU")) + footer
	}
	if len(sick) > maxHealthListed {
		footer = fmt.Sprintf("…and %d more GPUs not ok: `/gpu health &lt;host&gt;` lists one host's. ", len(sick)-maxHealthListed) + footer
	}
	return message(title, append(blocks, note(footer))...)
}

// healthLine is one GPU that is not ok: "🟠 *node3 GPU 3* · needs reset:
// XID 79: the GPU has fallen off the bus — reset the GPU or reboot the
// node".
func healthLine(j judged, several bool) string {
	reasons := blockkit.EscapeClip(strings.Join(j.verdict.Reasons, "; "), 220)
	return fmt.Sprintf("%s *%s* · %s: %s", conditionEmoji(j.verdict.Condition), where(several, j.host, j.dev.Index, j.dev.Label()), j.verdict.Condition, reasons)
}
