package daemon

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/people"
	"github.com/gpuwatch/gpuwatch/slackbot"
)

// BucketPeople holds what the people: section learned from Slack (which
// user an email is, names, zones; hashed emails only) and what each person
// asked for (mute-me, their digest), by Slack user ID.
const BucketPeople = "people"

// newPeople builds who is who from the people: section; nil when it maps
// no one. Slack is asked through the bot, when there is one.
func (d *Daemon) newPeople(cfg *config.Config) *people.People {
	if !cfg.People.Mapped() {
		return nil
	}
	// People, and what Slack says of them, live by the wall clock, not the
	// simulation's.
	o := people.Options{Store: d.bucket(BucketPeople), Logger: d.logger.With("component", "people"), Now: d.opts.Wall}
	if d.bot != nil { // an interface holding a nil *slack.Bot would not be nil
		o.Directory = d.bot
	}
	return people.New(cfg.People, o)
}

// restoreOwned gives the dispatcher the alerts whose owners the last run
// told: pending escalations and snoozes go on.
func (d *Daemon) restoreOwned() error {
	owned, err := d.db.All(notifier.BucketOwned)
	if err != nil {
		return fmt.Errorf("load what owners were told: %w", err)
	}
	d.dispatcher.RestoreOwned(owned, d.setAside)
	return nil
}

// ownerDesk is what the Slack app does for the people: section, on the
// daemon: owners' answers, /gpu mine, mute-me and digest choices.
type ownerDesk struct{ d *Daemon }

var _ slackbot.Owners = ownerDesk{}

// Answer records an owner's answer to a firing alert, after checking
// that whoever pressed owns one of the alert's holders, and makes it
// durable: the outbox then writes it in the alert's messages.
func (o ownerDesk) Answer(ctx context.Context, alertKey string, kind notifier.AnswerKind, userID, userName, click string) (notifier.Answer, error) {
	d := o.d
	d.mu.Lock()
	alert, ok := d.dispatcher.Owned(alertKey)
	d.mu.Unlock()
	if !ok {
		return notifier.Answer{}, fmt.Errorf("alert %s is not firing, or its owners were not asked: there is nothing to answer", alertKey)
	}
	owners, _, err := d.people.Owners(ctx, alert.Processes)
	if err != nil {
		return notifier.Answer{}, fmt.Errorf("cannot tell who owns the job: %v", err)
	}
	i := slices.IndexFunc(owners, func(ow people.Owner) bool { return ow.Person.ID == userID })
	if i < 0 {
		ids := make([]string, len(owners))
		for j, ow := range owners {
			ids[j] = ow.Person.ID
		}
		return notifier.Answer{}, &slackbot.NotOwnerError{Owners: ids}
	}
	by := owners[i].Person
	if by.Name == "" {
		by.Name = userName
	}
	d.mu.Lock()
	c, ans, err := d.dispatcher.Answer(alertKey, notifier.Answer{Kind: kind, By: by.String(), ByID: userID, Click: click})
	d.mu.Unlock()
	if err != nil {
		return notifier.Answer{}, err
	}
	if c.Empty() {
		return ans, nil // the same press, sent again
	}
	if err := d.bounded(func() error { return d.commit(c) }); err != nil {
		return notifier.Answer{}, fmt.Errorf("save the answer (it is written with the next sample if the store takes it): %w", err)
	}
	d.logger.Info("an owner answered an alert", "alert", alertKey, "answer", string(ans.Kind), "by", userID)
	return ans, nil
}

// Mine lists the jobs of the user on every host now.
func (o ownerDesk) Mine(ctx context.Context, userID string) ([]slackbot.Job, error) {
	d := o.d
	firing := map[string][]string{} // host/uuid → alert names
	for _, a := range d.Alerts() {
		if a.State == "firing" {
			firing[a.Host+"/"+a.UUID] = append(firing[a.Host+"/"+a.UUID], a.Name)
		}
	}
	var jobs []slackbot.Job
	for _, snap := range d.Snapshots() {
		for i := range snap.Devices {
			dev := &snap.Devices[i]
			for j := range dev.Processes {
				p := &dev.Processes[j]
				person, _, ok, err := d.people.Resolve(ctx, people.IdentitiesOf(p))
				if err != nil {
					return nil, fmt.Errorf("cannot ask Slack who is who: %v", err)
				}
				if !ok || person.ID != userID {
					continue
				}
				jobs = addJob(jobs, snap.Host, dev, p)
			}
		}
	}
	d.mu.Lock()
	for i := range jobs {
		j := &jobs[i]
		j.HeldSince = d.engine.HeldSince(j.GPUUUID, j.GPU)
		j.Alerts = firing[j.Host+"/"+j.GPUUUID]
	}
	d.mu.Unlock()
	return jobs, nil
}

// addJob adds a process to the jobs, together with the others of its
// job on the same GPU.
func addJob(jobs []slackbot.Job, host string, dev *gpu.Device, p *gpu.Process) []slackbot.Job {
	who := p.Who()
	for i := range jobs {
		if j := &jobs[i]; j.Host == host && j.GPUUUID == dev.UUID && j.Who == who {
			j.MemUsed += p.MemUsed
			return jobs
		}
	}
	return append(jobs, slackbot.Job{Host: host, GPU: dev.Index, GPUName: dev.Name, GPUUUID: dev.UUID, MIG: dev.MIG, Who: who,
		Command: p.Command, MemUsed: p.MemUsed, Use: slackbot.UseOf(dev)})
}

// MuteMe keeps alerts from reaching the user for dur; 0 ends a mute.
func (o ownerDesk) MuteMe(userID string, dur time.Duration) (time.Time, error) {
	until := time.Time{}
	if dur > 0 {
		until = o.d.opts.Wall().Add(min(dur, people.MaxMute))
	}
	if err := o.d.people.Mute(userID, until); err != nil {
		return time.Time{}, err
	}
	o.d.logger.Info("a person muted alerts about their jobs", "user", userID, "until", until)
	return until, nil
}

// SetDigest records the personal digest the user chose.
func (o ownerDesk) SetDigest(userID, choice string) error {
	return o.d.people.SetDigest(userID, choice)
}
