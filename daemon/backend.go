package daemon

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/history"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/slackbot"
)

// The daemon is what the Slack app asks and acts through, and a history
// of its GPUs.
var (
	_ slackbot.Backend = (*Daemon)(nil)
	_ history.Source   = (*Daemon)(nil)
)

// Digest is the usage digest of the window that ends now, for /gpu
// digest: its title and its Slack blocks.
func (d *Daemon) Digest(window time.Duration) (string, []byte, error) {
	r, err := d.UsageReport("", window)
	if err != nil {
		return "", nil, err
	}
	blocks, err := r.Blocks()
	if err != nil {
		return "", nil, fmt.Errorf("render the digest's blocks: %w", err)
	}
	return r.Title(), blocks, nil
}

// Snapshot is the latest sample of the GPUs; nil before the first.
func (d *Daemon) Snapshot() *gpu.Snapshot { return d.last.Load() }

// Alerts are the pending and firing alerts: firing first, then by host,
// GPU and rule.
func (d *Daemon) Alerts() []slackbot.ActiveAlert {
	d.mu.Lock()
	defer d.mu.Unlock()
	active := d.engine.Active()
	now := d.opts.Now()
	out := make([]slackbot.ActiveAlert, 0, len(active))
	for i := range active {
		a := &active[i]
		al := slackbot.ActiveAlert{
			Key: notifier.AlertKey(a.Host, a.Rule.Name, a.SeriesID()), Host: a.Host, Name: a.Rule.Name, Severity: string(a.Rule.Severity),
			State: a.State.String(), GPU: a.GPU, UUID: a.UUID, MIG: a.MIG, Process: a.Process, Since: a.ActiveAt, Summary: a.Summary,
		}
		if a.State != rules.StateFiring || al.Summary == "" {
			al.Summary = pendingSummary(a, d.fleet.of(a.Host))
		}
		al.ValueText = a.Rule.ValueText(&a.Alert)
		if a.State == rules.StateFiring {
			al.Since = a.FiredAt
			al.Acknowledged, _ = d.dispatcher.Acknowledged(al.Key)
			if ans := d.dispatcher.Answered(al.Key); ans != nil {
				al.Answer = ans.Text(ans.By, nil)
			}
		}
		al.Silenced = d.silencing(a.Labels(), now)
		out = append(out, al)
	}
	for _, a := range d.ownAlerts() {
		a.Silenced = d.silencing(map[string]string{"alert": a.Name, "severity": a.Severity, "host": a.Host}, now)
		out = append(out, a)
	}
	slices.SortStableFunc(out, func(a, b slackbot.ActiveAlert) int {
		return cmp.Or(cmp.Compare(stateRank(a.State), stateRank(b.State)), cmp.Compare(a.Host, b.Host), cmp.Compare(a.GPU, b.GPU),
			cmp.Compare(a.Subject(), b.Subject()), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// silencing is the silence that mutes an alert with these labels at now;
// nil when none does.
func (d *Daemon) silencing(labels map[string]string, now time.Time) *notifier.Silence {
	if sil, ok := d.silences.MutedBy(labels, now); ok {
		return &sil
	}
	return nil
}

// pendingSummary is the summary of an alert that has not fired yet (the
// engine renders a rule's summary when its alert fires): the rule's
// template on the latest snapshot of the alert's host.
func pendingSummary(a *rules.AlertState, snap *gpu.Snapshot) string {
	data := rules.TemplateData{Alert: a.Rule.Name, GPU: a.GPU, UUID: a.UUID, Label: a.Label(), MIG: a.MIG, Value: a.Value,
		Severity: string(a.Rule.Severity), Labels: a.Rule.Labels, Host: a.Host, TrueFor: a.TrueFor()}
	if a.Process != nil {
		data.Process = *a.Process
	}
	data.ValueText = a.Rule.ValueText(&a.Alert)
	if snap != nil {
		for i := range snap.Devices {
			if dev := &snap.Devices[i]; dev.UUID == a.UUID && dev.Index == a.GPU {
				data.Name, data.Processes = dev.Name, dev.Processes
			}
		}
	}
	var b strings.Builder
	if a.Rule.Summary != nil && a.Rule.Summary.Execute(&b, &data) == nil && strings.TrimSpace(b.String()) != "" {
		return strings.TrimSpace(b.String())
	}
	return fmt.Sprintf("%s on %s: %s", a.Rule.Name, a.Label(), data.ValueText)
}

// stateRank puts firing alerts before pending ones.
func stateRank(state string) int {
	if state == rules.StateFiring.String() {
		return 0
	}
	return 1
}

// History is the memory, utilization and temperature of the GPUs q asks
// for: on a hub from its Prometheus, which keeps more than a restart
// forgets, else (or when Prometheus fails) from the day the daemon keeps.
// It makes the daemon a history.Source.
func (d *Daemon) History(ctx context.Context, q history.Query) ([]chart.GPUHistory, error) {
	if p := d.fleetHistory.Load(); p != nil {
		got, err := p.History(ctx, q)
		if err == nil {
			return got, nil
		}
		d.logger.Warn("cannot read the fleet's history from Prometheus; answering from the day gpuwatch keeps", "err", err)
	}
	return d.history.GPUs(q), nil
}

// Silences lists every silence: active, pending, expired.
func (d *Daemon) Silences() []notifier.Silence { return d.silences.List(d.opts.Now()) }

// silenceWarnings say what a new silence's matchers on the alert name
// match no rule of: such a silence mutes nothing until a rule of that name
// comes (a typo, or the wrong case).
func (d *Daemon) silenceWarnings(ms notifier.Matchers) []string {
	d.mu.Lock()
	names := make([]string, 0, len(d.cfg.Rules))
	for _, r := range d.cfg.Rules {
		names = append(names, r.Name)
	}
	d.mu.Unlock()
	var out []string
	for _, m := range ms {
		if m.Name != "alert" || m.Type == notifier.MatchNotEqual || m.Type == notifier.MatchNotRegexp {
			continue
		}
		if !slices.ContainsFunc(names, func(n string) bool { return m.Matches(map[string]string{"alert": n}) }) {
			out = append(out, fmt.Sprintf("no rule is named %s, so the silence mutes nothing until one is (names are case-sensitive); the rules are %s",
				m.String(), strings.Join(names, ", ")))
		}
	}
	return out
}

// AddSilence adds and persists a silence, giving it an ID. When the store
// does not take it within Options.WriteWait it fails with ErrStoreStalled.
func (d *Daemon) AddSilence(s notifier.Silence) (notifier.Silence, error) {
	var added notifier.Silence
	err := d.bounded(func() (err error) {
		added, err = d.silences.Add(s, d.opts.Now())
		return err
	})
	if err != nil {
		return notifier.Silence{}, err
	}
	d.logger.Info("silence added", "id", added.ID, "matchers", added.Matchers.String(), "until", added.EndsAt, "by", added.CreatedBy)
	return added, nil
}

// ExpireSilence ends a silence now. When the store does not take it
// within Options.WriteWait it fails with ErrStoreStalled.
func (d *Daemon) ExpireSilence(id string) error {
	if err := d.bounded(func() error { return d.silences.Expire(id, d.opts.Now()) }); err != nil {
		return err
	}
	d.logger.Info("silence expired", "id", id)
	return nil
}

// Acknowledge stops the reminders of a firing alert, recording who
// acknowledged it, durably; the acknowledgement ends when the alert
// resolves. When the store does not take it within Options.WriteWait it
// fails with ErrStoreStalled.
func (d *Daemon) Acknowledge(alertKey, by string) error {
	d.mu.Lock()
	firing := slices.ContainsFunc(d.engine.Active(), func(a rules.AlertState) bool {
		return a.State == rules.StateFiring && notifier.AlertKey(a.Host, a.Rule.Name, a.UUID) == alertKey
	})
	if slices.ContainsFunc(d.ownAlerts(), func(a slackbot.ActiveAlert) bool { return a.Key == alertKey }) {
		firing = true
	}
	if !firing {
		d.mu.Unlock()
		return fmt.Errorf("alert %s is not firing: only a firing alert can be acknowledged (see /gpu alerts)", alertKey)
	}
	c, err := d.dispatcher.Acknowledge(alertKey, by, d.opts.Now())
	d.mu.Unlock()
	if err != nil {
		return err
	}
	if err := d.bounded(func() error { return d.commit(c) }); err != nil {
		return fmt.Errorf("save the acknowledgement of %s (it is written with the next sample if the store takes it): %w", alertKey, err)
	}
	d.logger.Info("alert acknowledged", "alert", alertKey, "by", by)
	return nil
}

// acknowledged tells who acknowledged a firing alert, for receivers that
// redraw its message from another goroutine.
func (d *Daemon) acknowledged(alertKey string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dispatcher.Acknowledged(alertKey)
}

// Now is the wall clock.
func (d *Daemon) Now() time.Time { return d.opts.Now() }

// restoreAcks gives the dispatcher the acknowledgements the last run left.
func (d *Daemon) restoreAcks() error {
	acks, err := d.db.All(notifier.BucketAcks)
	if err != nil {
		return fmt.Errorf("load acknowledgements: %w", err)
	}
	d.dispatcher.RestoreAcks(acks, d.setAside)
	return nil
}

// Verdict is the health of GPU dev of host: its condition in one word and
// why, from its readings and the XID errors it reported lately (at the
// time of the host's latest snapshot).
func (d *Daemon) Verdict(host string, dev *gpu.Device) gpu.Verdict {
	now := d.opts.Now()
	if s := d.fleet.of(host); s != nil {
		now = s.Time
	}
	return gpu.Assess(dev, d.recentXIDs.Of(host, dev, now))
}
