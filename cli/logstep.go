package cli

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// probeSnapshots is how many snapshots of a log are read ahead to tell how
// often it was sampled.
const probeSnapshots = 64

// stepProbe reads the first snapshots of a log ahead to tell its step (how
// often it was sampled), then hands them out, and the rest of the log, in
// order: it is the log's gpu.Source.
type stepProbe struct {
	gpu.Source
	ahead []*gpu.Snapshot
	err   error // what ended the read-ahead early: io.EOF, or the log's error at that point
	step  time.Duration
	// burst is how many samples a log sampled in bursts has in each, about:
	// several within a second, then a pause of step; 0 for a log sampled
	// evenly.
	burst int
}

// probeStep reads up to probeSnapshots snapshots of src ahead. The step is
// the median time between consecutive snapshots (0 for fewer than two), so
// that a restart or a missed run does not count; for a log sampled in
// bursts (a quarter or more of the gaps under a second, the others ten
// times longer), the median of the gaps between bursts.
func probeStep(ctx context.Context, src gpu.Source) *stepProbe {
	p := &stepProbe{Source: src}
	for len(p.ahead) < probeSnapshots {
		s, err := src.Next(ctx)
		if err != nil {
			p.err = err
			break
		}
		p.ahead = append(p.ahead, s)
	}
	var gaps []time.Duration
	for i := 1; i < len(p.ahead); i++ {
		if gap := p.ahead[i].Time.Sub(p.ahead[i-1].Time); gap > 0 {
			gaps = append(gaps, gap)
		}
	}
	if len(gaps) == 0 {
		return p
	}
	slices.Sort(gaps)
	p.step = gaps[len(gaps)/2]
	short, _ := slices.BinarySearch(gaps, time.Second) // gaps under a second
	if long := len(gaps) - short; short > 0 && 4*short >= len(gaps) && long > 0 && gaps[short+long/2] >= 10*gaps[short/2] {
		p.burst = (len(gaps) + long/2) / long // samples a burst: the gaps within one, and the one after it
		// Burst to burst: the pause after one, and the gaps within it.
		p.step = gaps[short+long/2] + time.Duration(p.burst-1)*gaps[short/2]
	}
	return p
}

// sampling says how often a log was sampled: ", a sample every 30m", or
// ", in bursts of about 5 samples within a second, every 1m".
func (p *stepProbe) sampling() string {
	switch {
	case p.burst > 1:
		return fmt.Sprintf(", in bursts of about %d samples within a second, every %s", p.burst, formatDuration(p.step))
	case p.step > 0:
		return ", a sample every " + formatDuration(p.step)
	}
	return ""
}

// Next returns the snapshots read ahead, then the error that ended the
// read-ahead, then the source's next snapshots.
func (p *stepProbe) Next(ctx context.Context) (*gpu.Snapshot, error) {
	if len(p.ahead) > 0 {
		s := p.ahead[0]
		p.ahead = p.ahead[1:]
		return s, nil
	}
	if err := p.err; err != nil {
		p.err = nil
		return nil, err
	}
	return p.Source.Next(ctx)
}
