package alertmanager

import (
	"context"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// maxBatch is how many alerts one re-send request carries at most.
const maxBatch = 64

// Run re-sends the firing alerts to every Alertmanager every
// resend_interval, starting at once (after a restart Alertmanager may
// have let them expire), until ctx ends. A re-send that fails is logged
// and made again at the next interval: Alertmanager keeps each alert for
// four intervals after its last push.
func (n *Notifier) Run(ctx context.Context) {
	tick := time.NewTicker(n.resend)
	defer tick.Stop()
	for {
		n.resendFiring(ctx)
		n.firing.flush(false)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// resendFiring pushes every firing alert with a fresh endsAt.
func (n *Notifier) resendFiring(ctx context.Context) {
	n.mu.Lock()
	defer n.mu.Unlock()
	alerts := n.firing.list()
	if len(alerts) == 0 {
		return
	}
	now := n.now()
	for i := range alerts {
		alerts[i].fireUntil(now, n.lifetime())
	}
	failed := make([]error, len(n.targets))
	for start := 0; start < len(alerts); start += maxBatch {
		body, err := encode(alerts[start:min(start+maxBatch, len(alerts))])
		if err != nil {
			n.log.Error("cannot encode firing alerts to re-send", "receiver", n.name, "err", err)
			return
		}
		for _, f := range n.pushAll(ctx, body, make([]bool, len(n.targets))) {
			if failed[f.target] == nil {
				failed[f.target] = notifier.RedactError(f.err, n.secrets()...)
			}
		}
	}
	if ctx.Err() != nil {
		return // stopping: the failures say nothing of the Alertmanagers
	}
	for i, t := range n.targets {
		switch {
		case failed[i] != nil:
			n.log.Warn("cannot re-send the firing alerts to an Alertmanager; trying again every resend_interval (it forgets an alert four intervals after its last push)",
				"receiver", n.name, "alertmanager", t.name, "alerts", len(alerts), "resend_interval", n.resend, "err", failed[i])
		case n.failing[i]:
			n.log.Info("re-sending the firing alerts to an Alertmanager works again", "receiver", n.name, "alertmanager", t.name, "alerts", len(alerts))
		}
		n.failing[i] = failed[i] != nil
	}
}
