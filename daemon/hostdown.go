package daemon

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/rules"
)

// HostDownAlert is the alert a hub raises of its own for a host of the
// fleet whose exporter Prometheus cannot scrape: one alert for the host,
// not one per GPU (its GPU is -1). Its GPUs are not judged while it is
// down; when it reports again, a GPU it no longer reports is missing.
const HostDownAlert = "GPUHostDown"

// hostDownPrefix starts the keys under which BucketSource keeps the
// hosts that are down, so a restart neither repeats nor forgets their
// alerts.
const hostDownPrefix = "host/"

// hostDown is a host that is down, as the store keeps it.
type hostDown struct {
	Since time.Time `json:"since"`
	Why   string    `json:"why"`
	Fired bool      `json:"fired"`
}

func (h *hostDown) transition(host string, at time.Time, state rules.State) rules.Transition {
	summary := fmt.Sprintf("host %s is down: none of its GPUs is watched until it reports", host)
	if state == rules.StateInactive {
		summary = fmt.Sprintf("host %s reports again", host)
	}
	return ownTransition(at, HostDownAlert, host, state, h.Since, summary, h.Why)
}

// restoreHostsDown takes back the hosts the last run left down.
func (d *Daemon) restoreHostsDown() error {
	all, err := d.db.All(BucketSource)
	if err != nil {
		return err
	}
	for key, raw := range all {
		host, ok := strings.CutPrefix(key, hostDownPrefix)
		if !ok {
			continue
		}
		var hd hostDown
		if err := json.Unmarshal(raw, &hd); err != nil {
			d.logger.Warn("dropping an unreadable saved host outage", "host", host, "err", err)
			continue
		}
		d.hostsDown[host] = &hd
	}
	return nil
}

// hostIsDown handles the snapshot of a host that is down: its GPUs are
// not evaluated (none is lost for it), and HostDownAlert fires once the
// host has been down for source.prometheus.host_down_for, then reminds as
// the route says. It returns the transitions and the host's record to
// keep. The caller holds d.mu.
func (d *Daemon) hostIsDown(snap *gpu.Snapshot) ([]rules.Transition, []byte) {
	hd := d.hostsDown[snap.Host]
	if hd == nil {
		hd = &hostDown{Since: snap.Time}
		d.hostsDown[snap.Host] = hd
		d.logger.Warn("a host is down: its GPUs are not judged until it reports", "host", snap.Host, "why", snap.Down)
	}
	hd.Why = snap.Down
	var ts []rules.Transition
	if hd.Fired || snap.Time.Sub(hd.Since) >= d.cfg.Source.Prometheus.HostDownFor {
		t := hd.transition(snap.Host, snap.Time, rules.StateFiring)
		t.Repeat = hd.Fired
		hd.Fired = true
		ts = append(ts, t)
	}
	raw, _ := json.Marshal(hd) // a struct of a time, a string and a bool
	return ts, raw
}

// hostAnswered is the resolve of a host's HostDownAlert when it fired,
// at the time of the host's first snapshot since it is up. The caller
// holds d.mu and deletes the record when the host was down.
func (d *Daemon) hostAnswered(snap *gpu.Snapshot) (ts []rules.Transition, wasDown bool) {
	hd := d.hostsDown[snap.Host]
	if hd == nil {
		return nil, false
	}
	delete(d.hostsDown, snap.Host)
	d.logger.Info("a host reports again", "host", snap.Host, "down_for", snap.Time.Sub(hd.Since))
	if !hd.Fired {
		return nil, true
	}
	t := hd.transition(snap.Host, snap.Time, rules.StateInactive)
	t.EndsAt = snap.Time
	return []rules.Transition{t}, true
}
