// Package console is the notifier that prints alerts for a person reading a
// terminal: one block per transition with what is wrong, where, how bad,
// the trend, and the processes and users behind it.
package console

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/rules"
)

// Notifier writes transitions to a writer.
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

// Notify prints each transition. Writing to a terminal is never worth a
// retry, so retry is always false.
func (n *Notifier) Notify(_ context.Context, ts ...rules.Transition) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var b strings.Builder
	for i := range ts {
		Format(&b, &ts[i], n.location)
	}
	_, err := io.WriteString(n.w, b.String())
	return false, err
}

// Format writes one transition in the console's layout:
//
//	2026-11-29 09:41:05  FIRING   GPUMemoryLeak [critical] host gpu0 (NVIDIA H100 80GB HBM3)
//	    GPU 0 memory grows 1.5 GiB/min: full in 12m
//	    value 61.2 GiB · trend +1.5 GiB/min · full in 12m0s
//	    pid 4242 alice  60.1 GiB  python train.py --model llama-7b  (docker:3f2a9c1b7e4d)
func Format(b *strings.Builder, t *rules.Transition, loc *time.Location) {
	head := "FIRING  "
	switch {
	case t.Resolved():
		head = "RESOLVED"
	case t.Repeat:
		head = "STILL FIRING"
	}
	fmt.Fprintf(b, "%s  %s %s [%s] %s gpu%d (%s)\n", t.At.In(loc).Format("2006-01-02 15:04:05"),
		head, t.Alert, t.Severity, t.Host, t.GPU, t.GPUName)
	if t.Summary != "" {
		fmt.Fprintf(b, "    %s\n", t.Summary)
	}
	if t.Resolved() {
		fmt.Fprintf(b, "    resolved after %s · last value %s\n", t.EndsAt.Sub(t.StartsAt).Round(time.Second), t.ValueText)
		return
	}
	facts := []string{"value " + t.ValueText}
	if t.TrendText != "" {
		facts = append(facts, "trend "+t.TrendText)
	}
	if t.HasTimeToFull() && t.TimeToFull != time.Duration(math.MaxInt64) {
		facts = append(facts, "full in "+t.TimeToFull.Round(time.Second).String())
	}
	fmt.Fprintf(b, "    %s\n", strings.Join(facts, " · "))
	for i, p := range t.Processes {
		if i == 3 {
			fmt.Fprintf(b, "    … and %d more processes\n", len(t.Processes)-3)
			break
		}
		fmt.Fprintf(b, "    pid %d %s  %s  %s", p.PID, orDash(p.User), formatBytes(p.MemUsed), orDash(p.Command))
		if p.Container != "" {
			fmt.Fprintf(b, "  (%s)", p.Container)
		}
		b.WriteByte('\n')
	}
}

func formatBytes(v uint64) string {
	return rules.Dimension{Base: rules.Bytes}.Format(float64(v))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
