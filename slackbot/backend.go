// Package slackbot is gpuwatch's Slack app: the /gpu slash command, the
// buttons on alert messages, request signing, and Socket Mode for servers
// without a public URL. It asks the running gpuwatch for what it shows and
// does through the Backend interface; the daemon implements it.
package slackbot

import (
	"context"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/history"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// Backend is what the Slack app needs from the running gpuwatch: one host
// or, on a hub, a fleet. Every method is safe to call from any goroutine
// and returns quickly (no I/O beyond the local store), History aside.
type Backend interface {
	// Snapshots are the latest sample of every host, sorted by host; empty
	// before the first. A host whose GPUs all stopped reporting has a
	// snapshot without devices.
	Snapshots() []*gpu.Snapshot
	// Alerts are the pending and firing alerts, firing first, then by
	// host and GPU.
	Alerts() []ActiveAlert
	// History reads the memory, utilization and temperature of the GPUs
	// a query asks for (what is kept of its window, 24h at least): the
	// one call that may take a moment, when a hub asks its Prometheus.
	History(ctx context.Context, q history.Query) ([]chart.GPUHistory, error)
	// Silences lists the silences: active, pending, expired.
	Silences() []notifier.Silence
	// AddSilence adds a silence (the ID is assigned).
	AddSilence(s notifier.Silence) (notifier.Silence, error)
	// ExpireSilence ends a silence now.
	ExpireSilence(id string) error
	// Acknowledge stops the reminders of a firing alert (its key, as in
	// notifier.Alert.Key), recording who acknowledged it.
	Acknowledge(alertKey, by string) error
	// Digest is the usage digest of the window that ends now: its title
	// and its Slack Block Kit blocks, as a JSON array.
	Digest(window time.Duration) (title string, blocks []byte, err error)
	// Now is the wall clock (silences start now; "since" durations).
	Now() time.Time
	// Verdict is the health of GPU d of host (one of Snapshots'): its
	// condition and why, from its readings and its recent XID errors.
	Verdict(host string, d *gpu.Device) gpu.Verdict
}

// ActiveAlert is a pending or firing alert, as /gpu alerts shows it.
type ActiveAlert struct {
	Key          string // notifier.AlertKey: host/rule/uuid
	Host         string // the host of the alert's GPU
	Name         string
	Severity     string
	State        string // "pending" or "firing"
	GPU          int
	UUID         string       // the GPU's, or the MIG instance's
	MIG          *gpu.MIG     // the MIG instance; nil for a whole GPU
	Process      *gpu.Process // the process of a rule that runs per process; nil for one on the GPU
	Since        time.Time    // pending since, or firing since
	ValueText    string
	Summary      string
	Acknowledged string // who acknowledged it; "" if nobody
	// Answer is what its owner answered ("alice (U0123) is still using
	// it · asked again at Mon 16:00 UTC"); "" if nobody did.
	Answer string
	// Silenced is the silence that mutes it now (its notifications are
	// not sent); nil when none does.
	Silenced *notifier.Silence
}

// Subject names what the alert is about: "GPU 3", "GPU 0 · MIG 3
// (1g.10gb)", "GPU 1, pid 4242" for a rule that runs per process.
func (al *ActiveAlert) Subject() string {
	label := gpu.Label(al.GPU, al.MIG)
	if al.Process != nil {
		label += ", " + al.Process.Holder()
	}
	return label
}

// stateText is the alert's state as answers write it: "pending",
// "firing", or "silenced" for a firing alert a silence mutes.
func (al *ActiveAlert) stateText() string {
	if al.Silenced != nil && al.State == "firing" {
		return "silenced"
	}
	return al.State
}
