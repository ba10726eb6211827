// Package console is the notifier that prints alerts for a person reading a
// terminal: one block per alert with what is wrong, where, how bad, the
// trend, and the processes and users behind it. A usage digest prints as
// its title, underlined, and its plain text.
package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/rules"
)

// Notifier writes notifications to a writer.
type Notifier struct {
	mu       sync.Mutex
	w        io.Writer
	location *time.Location
}

// New returns a console notifier writing to w, showing times in loc (nil: UTC).
func New(w io.Writer, loc *time.Location) *Notifier {
	if loc == nil {
		loc = time.UTC
	}
	return &Notifier{w: w, location: loc}
}

// Notify prints each alert of the notification, or its digest. Writing to
// a terminal is never worth a retry, so retry is always false.
func (n *Notifier) Notify(_ context.Context, m *notifier.Notification) (bool, error) {
	if m.Digest != nil || m.Status == notifier.StatusDigest {
		return false, n.PrintDigest(m.Digest)
	}
	return false, n.Print(m.Alerts...)
}

// PrintDigest writes a digest: its title, a rule under it, its text and a
// blank line.
func (n *Notifier) PrintDigest(d *notifier.Digest) error {
	if d == nil {
		return errors.New("console: a digest notification without its digest (a gpuwatch bug: please report it)")
	}
	var b strings.Builder
	title := d.Title
	if title == "" {
		title = "gpuwatch digest " + d.Name
	}
	fmt.Fprintf(&b, "%s\n%s\n", title, strings.Repeat("=", utf8.RuneCountInString(title)))
	if text := strings.TrimRight(d.Text, "\n"); text != "" {
		b.WriteString(text + "\n")
	}
	b.WriteByte('\n')
	n.mu.Lock()
	defer n.mu.Unlock()
	_, err := io.WriteString(n.w, b.String())
	return err
}

// Print writes alerts in the console's layout.
func (n *Notifier) Print(alerts ...notifier.Alert) error {
	var b strings.Builder
	for i := range alerts {
		Format(&b, &alerts[i], n.location)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	_, err := io.WriteString(n.w, b.String())
	return err
}

// Format writes one alert in the console's layout:
//
//	2026-11-29 09:41:05 UTC  FIRING   GPUMemoryLeak [critical] host GPU 0 (NVIDIA H100 80GB HBM3)
//	    GPU 0 memory keeps growing: 1.5 GiB/min over the last 30 minutes
//	    value 1.5 GiB/min · full in 12m0s (around 09:53)
//	    pid 4242 alice  60.1 GiB  python train.py --model llama-7b  (docker:3f2a9c1b7e4d)
//
// A resolve says what is true now (its summary), the job that exited if
// one did, and how long the alert fired.
func Format(b *strings.Builder, a *notifier.Alert, loc *time.Location) {
	head := "FIRING  "
	switch {
	case a.Status == notifier.StatusResolved:
		head = "RESOLVED"
	case a.Repeat:
		head = "STILL FIRING"
	}
	fmt.Fprintf(b, "%s  %s %s [%s] %s", a.At.In(loc).Format(TimeLayout), head, a.Name, a.Severity, a.Host)
	if a.OnGPU() {
		b.WriteString(" " + a.GPUText()) // without the model for a log without the name column
	}
	if a.Process != nil {
		b.WriteString(", " + a.Process.Holder())
	}
	b.WriteByte('\n')
	if a.Summary != "" {
		fmt.Fprintf(b, "    %s\n", a.Summary)
	}
	if a.Status == notifier.StatusResolved {
		if a.Exit != nil {
			fmt.Fprintf(b, "    %s\n", a.Exit.Text)
		}
		fmt.Fprintf(b, "    resolved after %s\n", a.EndsAt.Sub(a.StartsAt).Round(time.Second))
		return
	}
	value := "value " + a.ValueText
	if a.ValueEarlier() {
		value += fmt.Sprintf(" at %s (now %s)", a.ValueAt.In(loc).Format("15:04:05"), a.NowText)
	}
	facts := []string{value}
	if a.TrendText != "" {
		facts = append(facts, "trend "+a.TrendText)
	}
	if a.TimeToFull.Known() {
		full := time.Duration(float64(a.TimeToFull) * float64(time.Second))
		around := a.At.Add(full).In(loc).Format("15:04")
		if a.ValueIsTimeToFull() && !a.ValueEarlier() {
			facts[0] += " (full around " + around + ")"
		} else {
			facts = append(facts, fmt.Sprintf("full in %s (around %s)", full.Round(time.Second), around))
		}
	}
	if !a.LastReport.IsZero() {
		facts = append(facts, "no report since "+a.LastReport.In(loc).Format("15:04:05"))
	}
	fmt.Fprintf(b, "    %s\n", strings.Join(facts, " · "))
	if !a.LastReport.IsZero() && len(a.Processes) > 0 {
		fmt.Fprintf(b, "    last known processes:\n")
	}
	for i, p := range a.Processes {
		if i == 3 {
			fmt.Fprintf(b, "    … and %d more processes\n", len(a.Processes)-3)
			break
		}
		if _, isJob := p.SlurmJob(); isJob {
			// "job 4242 (alice) pid 5150": the job first, as people know it.
			holder := p.Who()
			if p.PID > 0 {
				holder += fmt.Sprintf(" pid %d", p.PID)
			}
			fmt.Fprintf(b, "    %s  %s  %s", holder, formatBytes(p.MemUsed), orDash(p.Command))
		} else {
			fmt.Fprintf(b, "    %s %s  %s  %s", orDash(p.Holder()), orDash(p.Owner()), formatBytes(p.MemUsed), orDash(p.Command))
		}
		if _, _, _, pod := p.Pod(); p.Container != "" && !pod {
			fmt.Fprintf(b, "  (%s)", p.Container)
		}
		b.WriteByte('\n')
	}
}

// TimeLayout is how the console writes a time: with its zone, so a line
// read elsewhere (a log shipped to another machine, a paste in Slack)
// still says when.
const TimeLayout = "2006-01-02 15:04:05 MST"

func formatBytes(v uint64) string {
	return rules.Dimension{Base: rules.Bytes}.Format(float64(v))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
