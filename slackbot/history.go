package slackbot

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/history"
	slacknotifier "github.com/gpuwatch/gpuwatch/notifier/slack"
)

// Uploader puts pictures in Slack conversations (slacknotifier.Bot).
type Uploader interface {
	// MayUpload reports whether Slack lets the app upload (files:write).
	MayUpload() bool
	// Upload shares a picture; slacknotifier.ErrNoFilesScope when Slack
	// refuses for want of files:write.
	Upload(ctx context.Context, f slacknotifier.File) (id string, err error)
}

// Zones tells the time zone Slack has for a user (slacknotifier.Bot,
// with users:read).
type Zones interface {
	UserZone(ctx context.Context, userID string) (*time.Location, bool)
}

// historyWidth is the most bars a sparkline of one GPU has; of several,
// historyWidthMany.
const (
	historyWidth     = 60
	historyWidthMany = 40
	// maxTextGPUs is how many GPUs the text answer lists.
	maxTextGPUs = 16
)

// history answers /gpu history: a chart of the memory, utilization and
// temperature of one GPU, or of every GPU of a host, over the window,
// uploaded where the answer may be seen (the channel when the user said
// public, a direct message with the app); else, or when Slack takes no
// picture, the same as sparklines.
func (a *App) history(ctx context.Context, cmd Command, by asker) *reply {
	f := a.fleet()
	if len(f) == 0 {
		return noSample()
	}
	host, index := cmd.Host, cmd.GPU
	if cmd.HostOrGPU != "" {
		if picked, err := f.pick(cmd.HostOrGPU); err == nil {
			host, index = picked[0].Host, AllGPUs // a host named like a GPU
		}
	}
	var snap *gpu.Snapshot
	switch {
	case host != "":
		picked, err := f.pick(host)
		if err != nil {
			return errorReply(err.Error() + ".")
		}
		snap = picked[0]
	case f.several() && index == AllGPUs:
		return errorReply(fmt.Sprintf("Say which host: write `/gpu history &lt;host&gt;` or `/gpu history &lt;host&gt; &lt;gpu&gt;`; %s.", f.names()))
	case f.several():
		return errorReply(fmt.Sprintf("Say which host's GPU %d: write `/gpu history &lt;host&gt; %d`; %s.", index, index, f.names()))
	default:
		snap = f[0]
	}
	if index != AllGPUs && !slices.ContainsFunc(snap.Devices, func(d gpu.Device) bool { return d.Index == index }) {
		return errorReply(fmt.Sprintf("GPU %d is unknown: %s.", index, knownGPUs(snap, host != "" || f.several())))
	}
	to := snap.Time.Truncate(time.Minute)
	from := to.Add(-cmd.Window)
	gpus, err := a.backend.History(ctx, history.Query{Host: snap.Host, GPU: index, From: from, To: to})
	if err != nil {
		a.log.Warn("cannot read the history for /gpu history", "err", err)
		return errorReply("gpuwatch could not read the history; the log says why.")
	}
	if len(gpus) == 0 {
		return errorReply(fmt.Sprintf("gpuwatch has no history of %s yet.", hostName(snap.Host)))
	}
	title := historyTitle(snap.Host, index, cmd.Window)
	posted, why := a.postChart(ctx, &chart.History{Title: title, From: from, To: to, GPUs: gpus}, cmd, by)
	if posted {
		return private("📈 " + title + ": the chart is posted here.")
	}
	return historyText(title, gpus, why)
}

// historyTitle names what the answer shows: "node1 GPU 0 · last 6h",
// "node1 · last 6h". Plain text (a header, a picture's title).
func historyTitle(host string, index int, window time.Duration) string {
	if index == AllGPUs {
		return fmt.Sprintf("%s · last %s", host, span(window))
	}
	return fmt.Sprintf("%s GPU %d · last %s", host, index, span(window))
}

// knownGPUs says which GPUs a host has, for an error.
func knownGPUs(snap *gpu.Snapshot, named bool) string {
	if len(snap.Devices) == 0 {
		return "no GPUs are known yet"
	}
	idx := make([]string, len(snap.Devices))
	for i, d := range snap.Devices {
		idx[i] = strconv.Itoa(d.Index)
	}
	if named {
		return hostName(snap.Host) + " has GPUs " + strings.Join(idx, ", ")
	}
	return "this host has GPUs " + strings.Join(idx, ", ")
}

// noFilesScope is why an answer comes without its picture when the app
// may not upload.
const noFilesScope = "Charts need the Slack app's files:write scope."

// postChart draws h in the asker's zone and uploads it to the
// conversation of the command, when the answer may be seen there. When
// it does not, why says why for the text answer ("" without an uploader:
// pictures are not part of this setup).
func (a *App) postChart(ctx context.Context, h *chart.History, cmd Command, by asker) (posted bool, why string) {
	switch {
	case a.uploader == nil:
		return false, ""
	case !a.uploader.MayUpload():
		return false, noFilesScope
	case !cmd.Public && !strings.HasPrefix(by.channel, "D"):
		// A picture cannot be shown to one person in a channel.
		return false, "For the chart, add `public` to post it here, or ask in a direct message with gpuwatch."
	}
	loc := a.zone(ctx, by.user.ID)
	png, err := h.PNG(loc)
	if a.drawn != nil {
		a.drawn()
	}
	if err != nil {
		a.log.Error("cannot draw the chart of /gpu history", "err", err)
		return false, "gpuwatch could not draw the chart; the log says why."
	}
	comment := "📈 " + h.Title
	if cmd.Public {
		comment += ", asked by " + by.user.mention()
	}
	_, err = a.uploader.Upload(ctx, slacknotifier.File{
		Channel: by.channel, Name: "gpuwatch-history.png", Title: h.Title, Comment: comment, PNG: png,
	})
	var apiErr goslack.SlackErrorResponse
	switch {
	case err == nil:
		return true, ""
	case errors.Is(err, slacknotifier.ErrNoFilesScope):
		return false, noFilesScope
	case errors.As(err, &apiErr) && (apiErr.Err == "not_in_channel" || apiErr.Err == "channel_not_found"):
		return false, "gpuwatch could not post the chart here: invite it to the channel (`/invite @gpuwatch`) for charts."
	}
	a.log.Warn("cannot upload the chart of /gpu history; answering with text", "err", redactURL(err, ""))
	return false, "gpuwatch could not post the chart; the log says why."
}

// zone is the time zone of a user's charts: theirs, when Slack tells it,
// else the host's (the picture names it).
func (a *App) zone(ctx context.Context, userID string) *time.Location {
	if a.zones != nil {
		if loc, ok := a.zones.UserZone(ctx, userID); ok {
			return loc
		}
	}
	return a.location
}

// historyText is the answer without a picture: sparklines of memory and
// utilization, and the temperature, per GPU; why (when not "") says why
// there is no picture.
func historyText(title string, gpus []chart.GPUHistory, why string) *reply {
	blocks := []goslack.Block{header("📈 " + title)}
	width := historyWidth
	if len(gpus) > 1 {
		width = historyWidthMany
	}
	shown := gpus[:min(len(gpus), maxTextGPUs)]
	for _, g := range shown {
		mem, util := g.MemoryPercent.Values, g.Utilization.Values
		text := fmt.Sprintf("*Memory* `%s` %s\n*Utilization* `%s` %s\n*Temperature* %s",
			spark(downsample(mem, width)), seriesSummary(mem, "%.0f%%"),
			spark(downsample(util, width)), seriesSummary(util, "%.0f%%"),
			seriesSummary(g.Temperature.Values, "%.0f °C"))
		if len(gpus) > 1 {
			text = fmt.Sprintf("*GPU %d*\n", g.Index) + text
		}
		blocks = append(blocks, section(text))
	}
	s := shown[0].MemoryPercent
	last := s.At(max(0, len(s.Values)-1))
	line := fmt.Sprintf("%s to %s · bars from 0 to 100%%", localTime(s.Start), localTime(last))
	if len(gpus) > len(shown) {
		line += fmt.Sprintf(" · the first %d of %d GPUs", len(shown), len(gpus))
	}
	if why != "" {
		line += " · " + why
	}
	blocks = append(blocks, note(line))
	return message("📈 "+title, blocks...)
}

// seriesSummary is "now 76% · max 90%" of a series, or "no data".
func seriesSummary(vs []float64, format string) string {
	last, peak, seen := math.NaN(), math.Inf(-1), false
	for _, v := range vs {
		if !math.IsNaN(v) {
			last, peak, seen = v, math.Max(peak, v), true
		}
	}
	if !seen {
		return "no data"
	}
	return "now " + fmt.Sprintf(format, last) + " · max " + fmt.Sprintf(format, peak)
}
