package gpu

import (
	"context"
	"sync"
	"time"
)

// Poller turns a Sampler (or a FleetSampler) into a Source: it samples at
// once, then on every tick of its interval, passing the tick's time down as
// the snapshots' time. It is the only place a live source reads the clock.
type Poller struct {
	sample   func(ctx context.Context, at time.Time) ([]*Snapshot, error)
	close    func() error
	interval time.Duration
	ticker   *time.Ticker
	queue    []*Snapshot // the rest of a fleet's sample, one host per Next
}

// Poll returns a Source that samples s every interval.
func Poll(s Sampler, interval time.Duration) *Poller {
	one := func(ctx context.Context, at time.Time) ([]*Snapshot, error) {
		snap, err := s.Sample(ctx, at)
		if err != nil {
			return nil, err
		}
		return []*Snapshot{snap}, nil
	}
	return &Poller{sample: one, close: s.Close, interval: interval}
}

// PollFleet returns a Source that samples every host of s every interval
// and returns their snapshots one at a time, in the order s gave them.
func PollFleet(s FleetSampler, interval time.Duration) *Poller {
	return &Poller{sample: s.SampleFleet, close: s.Close, interval: interval}
}

// Next returns the next host's snapshot of the last sample or, when they
// are all taken, waits for the next tick (the first call returns at once)
// and samples.
func (p *Poller) Next(ctx context.Context) (*Snapshot, error) {
	for len(p.queue) == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		at := time.Now()
		if p.ticker == nil {
			p.ticker = time.NewTicker(p.interval)
		} else {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case at = <-p.ticker.C:
			}
		}
		snaps, err := p.sample(ctx, at)
		if err != nil {
			return nil, err
		}
		p.queue = snaps
	}
	s := p.queue[0]
	p.queue[0] = nil
	p.queue = p.queue[1:]
	return s, nil
}

// Buffered is how many snapshots of the last sample Next returns at once,
// without sampling: the rest of a fleet's hosts.
func (p *Poller) Buffered() int { return len(p.queue) }

// Close stops the ticker and closes the sampler.
func (p *Poller) Close() error {
	if p.ticker != nil {
		p.ticker.Stop()
	}
	return p.close()
}

// Pacer slows a Source that runs in its own time (a simulation, a replay)
// down to speed × real time: with speed 60, an hour of snapshots takes a
// minute. The snapshots keep their own times, and Now tells the time of the
// data that corresponds to the wall clock now, so what a running gpuwatch
// stamps with "now" (silences, acknowledgements) agrees with its snapshots.
type Pacer struct {
	src   Source
	speed float64
	mu    sync.Mutex // guards the anchors: Now is called from other goroutines
	// wallStart and dataStart anchor the pacing at the first snapshot.
	wallStart time.Time
	dataStart time.Time
}

// Pace returns src paced at speed; speed ≤ 0 returns src unchanged.
func Pace(src Source, speed float64) Source {
	if speed <= 0 {
		return src
	}
	return &Pacer{src: src, speed: speed}
}

// Next returns the next snapshot once its time, scaled by the speed, has come.
func (p *Pacer) Next(ctx context.Context) (*Snapshot, error) {
	s, err := p.src.Next(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	p.mu.Lock()
	if p.wallStart.IsZero() {
		p.wallStart, p.dataStart = now, s.Time
		p.mu.Unlock()
		return s, nil
	}
	due := p.wallStart.Add(time.Duration(float64(s.Time.Sub(p.dataStart)) / p.speed))
	p.mu.Unlock()
	if wait := due.Sub(now); wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
	return s, nil
}

// Now is the data's time at this wall-clock instant: the wall clock itself
// before the first snapshot, then the first snapshot's time plus the wall
// time since, times the speed. At speed 1 a source that starts now keeps
// to the wall clock.
func (p *Pacer) Now() time.Time {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wallStart.IsZero() {
		return now
	}
	return p.dataStart.Add(time.Duration(float64(now.Sub(p.wallStart)) * p.speed))
}

// Close closes the paced source.
func (p *Pacer) Close() error { return p.src.Close() }
