package daemon

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/slackbot"
)

// SourceDownAlert is the alert gpuwatch raises of its own when its source
// does not answer (a hub's Prometheus is down or answers errors): not an
// alert about a GPU, so its GPU is -1 and its UUID empty.
const SourceDownAlert = "GPUWatchSourceDown"

// BucketSource holds, while the source does not answer, since when and
// why (key sourceDownKey), so a restart neither repeats nor forgets the
// alert.
const BucketSource = "source"

const sourceDownKey = "down"

// sourceDown is a source outage as the store keeps it.
type sourceDown struct {
	Since time.Time `json:"since"`
	Err   string    `json:"error"`
}

// sourceHealth follows whether the source answers and makes the
// transitions of SourceDownAlert: one firing at the first failure,
// reminders as the route says while it lasts, one resolve when the source
// answers again.
type sourceHealth struct {
	host string      // the daemon's own host
	down *sourceDown // nil while the source answers
}

// restoreSourceDown takes back an outage the last run left in the store.
func (d *Daemon) restoreSourceDown() error {
	raw, ok, err := d.db.Get(BucketSource, sourceDownKey)
	if err != nil || !ok {
		return err
	}
	var down sourceDown
	if err := json.Unmarshal(raw, &down); err != nil {
		d.setAside(BucketSource, sourceDownKey, fmt.Errorf("not a source outage: %w", err))
		return nil
	}
	d.health.down = &down
	return nil
}

// failed handles a source failure: the alert fires, or is reminded of,
// and the daemon goes on.
func (d *Daemon) sourceFailed(se *gpu.SourceError) {
	d.sampledAt.Store(d.opts.Wall().UnixNano()) // the loop runs: the alert tells what is wrong
	d.logger.Error("the source does not answer; no GPU is evaluated until it does", "alert", SourceDownAlert, "err", se.Err)
	d.commit(d.evaluateFailure(se))
}

func (d *Daemon) evaluateFailure(se *gpu.SourceError) *notifier.Commit {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := &d.health
	first := h.down == nil
	if first {
		h.down = &sourceDown{Since: se.At, Err: se.Err.Error()}
	}
	h.down.Err = se.Err.Error()
	t := h.transition(se.At, rules.StateFiring)
	t.Repeat = !first
	c := d.dispatcher.Dispatch(se.At, []rules.Transition{t})
	if first {
		raw, err := json.Marshal(h.down)
		if err == nil {
			c.PutRecord(BucketSource, sourceDownKey, raw)
		}
	}
	return c
}

// sourceAnswered is the resolve of an outage, when there is one, at the
// time of the first snapshot since. The caller holds d.mu.
func (d *Daemon) sourceAnswered(at time.Time) []rules.Transition {
	h := &d.health
	if h.down == nil {
		return nil
	}
	t := h.transition(at, rules.StateInactive)
	t.EndsAt = at
	h.down = nil
	return []rules.Transition{t}
}

// transition is the alert's transition at time at.
func (h *sourceHealth) transition(at time.Time, state rules.State) rules.Transition {
	summary := fmt.Sprintf("gpuwatch on %s cannot read its source: no GPU is watched until it answers", h.host)
	if state == rules.StateInactive {
		summary = fmt.Sprintf("gpuwatch on %s reads its source again", h.host)
	}
	return ownTransition(at, SourceDownAlert, h.host, state, h.down.Since, summary, h.down.Err)
}

// ownTransition is a transition of an alert gpuwatch raises of its own,
// about a host and no GPU: critical, GPU -1.
func ownTransition(at time.Time, alert, host string, state rules.State, since time.Time, summary, description string) rules.Transition {
	sev := rules.SeverityCritical
	return rules.Transition{
		At: at, Alert: alert, State: state, Severity: sev, Host: host, GPU: -1,
		Value: math.NaN(), Trend: math.NaN(), TimeToFull: time.Duration(math.MinInt64),
		StartsAt: since, Summary: summary, Description: description,
		Labels: map[string]string{"alert": alert, "severity": string(sev), "host": host},
	}
}

// ownAlerts are the alerts gpuwatch raises of its own that fire now, as
// active alerts: its source down, hosts down. The caller holds d.mu.
func (d *Daemon) ownAlerts() []slackbot.ActiveAlert {
	var out []slackbot.ActiveAlert
	if h := &d.health; h.down != nil {
		t := h.transition(h.down.Since, rules.StateFiring)
		out = append(out, d.ownActive(t, "down"))
	}
	for _, host := range slices.Sorted(maps.Keys(d.hostsDown)) {
		if hd := d.hostsDown[host]; hd.Fired {
			out = append(out, d.ownActive(hd.transition(host, hd.Since, rules.StateFiring), "down"))
		}
	}
	return out
}

// ownActive is a firing transition of an alert of gpuwatch's own as an
// active alert.
func (d *Daemon) ownActive(t rules.Transition, value string) slackbot.ActiveAlert {
	key := notifier.AlertKey(t.Host, t.Alert, "")
	by, _ := d.dispatcher.Acknowledged(key)
	return slackbot.ActiveAlert{
		Key: key, Host: t.Host, Name: t.Alert, Severity: string(t.Severity), State: rules.StateFiring.String(), GPU: -1,
		Since: t.StartsAt, Summary: t.Summary + ": " + t.Description, ValueText: value, Acknowledged: by,
	}
}
