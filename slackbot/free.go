package slackbot

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/internal/plural"
)

// Limits of /gpu free: the GPUs listed, and lines per section well under
// Slack's 3,000 characters (a line is at most about 220).
const (
	maxFreeListed = 96
	freeLinesPer  = 12
)

// freeGPU is a GPU no one holds, and where it is.
type freeGPU struct {
	host string
	dev  *gpu.Device
}

// free lists the GPUs no one holds now, of one host or of the fleet: no
// process and under 1 GiB of memory in use (rules.Held). The largest GPUs
// come first, then by host and index; each says its model and free memory,
// and the alerts it has.
func (a *App) free(host string) *reply {
	f, r := a.hosts(host)
	if r != nil {
		return r
	}
	alerts := a.backend.Alerts()
	var found []freeGPU
	hosts := map[string]bool{}
	for _, s := range f {
		for i := range s.Devices {
			if d := &s.Devices[i]; useOf(d) == useFree {
				found = append(found, freeGPU{s.Host, d})
				hosts[s.Host] = true
			}
		}
	}
	slices.SortStableFunc(found, func(x, y freeGPU) int {
		return cmp.Or(cmp.Compare(y.dev.MemTotal, x.dev.MemTotal), cmp.Compare(x.host, y.host), cmp.Compare(x.dev.Index, y.dev.Index))
	})
	total := f.gpuCount()
	var title string
	switch {
	case f.several():
		title = fmt.Sprintf("🟢 %s free on %d of %s", plural.Count(len(found), "GPU"), len(hosts), plural.Count(len(f), "host"))
	default:
		title = fmt.Sprintf("🟢 %d of %s free on %s", len(found), plural.Count(total, "GPU"), f[0].Host)
	}
	blocks := []goslack.Block{header(title)}
	if len(found) == 0 {
		text := fmt.Sprintf("No GPU is free now: all %s are held (a process, or 1 GiB of memory or more in use).", plural.Count(total, "GPU"))
		if total == 0 {
			text = "No GPU reports now."
		}
		return message(title, append(blocks, section(text))...)
	}
	lines := make([]string, 0, min(len(found), maxFreeListed))
	for _, g := range found[:min(len(found), maxFreeListed)] {
		lines = append(lines, freeLine(g, f.several(), alerts))
	}
	for chunk := range slices.Chunk(lines, freeLinesPer) {
		blocks = append(blocks, section(strings.Join(chunk, "\n")))
	}
	footer := "Free: no process and under 1 GiB of memory in use. `/gpu status` shows the rest."
	if len(found) > maxFreeListed {
		footer = fmt.Sprintf("…and %d more free GPUs: `/gpu free &lt;host&gt;` lists one host's. ", len(found)-maxFreeListed) + footer
	}
	return message(title, append(blocks, note(footer))...)
}

// freeLine is one free GPU: "*node2 GPU 3* · NVIDIA H100 80GB HBM3 · 79.6
// GiB free of 80.0 GiB", with its alerts.
func freeLine(g freeGPU, several bool, alerts []ActiveAlert) string {
	d := g.dev
	line := fmt.Sprintf("*%s* · %s", where(several, g.host, d.Index, d.Label()), blockkit.EscapeClip(d.Name, 60))
	if d.MemKnown() {
		line += fmt.Sprintf(" · %s free of %s", gib(d.MemTotal-min(d.MemUsed, d.MemTotal)), gib(d.MemTotal))
	} else {
		line += " · memory n/a"
	}
	var names []string
	for i := range alerts {
		if al := &alerts[i]; onDevice(al, g.host, d) {
			names = append(names, alertEmoji(al)+" "+blockkit.EscapeClip(al.Name, 40))
		}
	}
	switch {
	case len(names) == 1:
		line += " · " + names[0]
	case len(names) > 1:
		line += fmt.Sprintf(" · %s (+%d more)", names[0], len(names)-1)
	}
	return line
}
