package daemon

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/digest"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/people"
)

// personalPrefix names the personal digests' runs in the schedule and
// the store: "people:weekly", "people:daily". No configured digest may
// be named so (config checks it).
const personalPrefix = config.PersonalDigestPrefix

// personalWindows is how far back each personal digest looks.
var personalWindows = map[string]time.Duration{people.DigestWeekly: 7 * 24 * time.Hour, people.DigestDaily: 24 * time.Hour}

// personalDigests are the schedules of the personal digests, weekly and
// daily; none without a people: section whose digest has a receiver.
func (d *Daemon) personalDigests(cfg *config.Config) ([]digest.Digest, error) {
	if d.people == nil || cfg.People.Digest.Receiver == "" {
		return nil, nil
	}
	var out []digest.Digest
	for _, c := range []struct{ choice, spec string }{
		{people.DigestWeekly, cfg.People.Digest.Weekly}, {people.DigestDaily, cfg.People.Digest.Daily},
	} {
		s, err := digest.ParseSchedule(c.spec)
		if err != nil {
			return nil, fmt.Errorf("people.digest.%s: %w", c.choice, err)
		}
		out = append(out, digest.Digest{Name: personalPrefix + c.choice, Schedule: s, Window: personalWindows[c.choice]})
	}
	return out, nil
}

// personalChoice says which personal digest a run is of; false for a
// configured digest.
func personalChoice(name string) (string, bool) {
	return strings.CutPrefix(name, personalPrefix)
}

// personalOutbox makes the personal digests of run r: a direct message to
// everyone who used a GPU in its window and chose this digest (weekly
// when they said nothing, as the section's default says), with the
// picture of their window; and, weekly, each team's digest to its leads.
// An error means Slack could not be asked who is who: the run is tried
// again.
func (d *Daemon) personalOutbox(commit *notifier.Commit, r digest.Run, choice string) (map[string][][]byte, error) {
	d.mu.Lock()
	cfg := d.cfg
	gpus, users, _ := d.digests.rollups.Window(r.From, r.To)
	d.mu.Unlock()
	receiver := cfg.People.Digest.Receiver
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type theirs struct {
		person people.Person
		users  []string
	}
	byPerson := map[string]*theirs{}
	seen := map[string]bool{}
	for _, u := range users {
		if seen[u.User] {
			continue
		}
		seen[u.User] = true
		person, ok, err := d.people.OwnerOf(ctx, u.User)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if byPerson[person.ID] == nil {
			byPerson[person.ID] = &theirs{person: person}
		}
		byPerson[person.ID].users = append(byPerson[person.ID].users, u.User)
	}
	outbox := map[string][][]byte{}
	add := func(n *notifier.Notification) {
		raw, err := json.Marshal(n)
		if err != nil {
			d.logger.Error("cannot encode a personal digest", "digest", r.Name, "err", err)
			return
		}
		outbox[receiver] = append(outbox[receiver], raw)
	}
	for _, id := range slices.Sorted(maps.Keys(byPerson)) {
		t := byPerson[id]
		if d.people.DigestChoice(id) != choice {
			continue
		}
		o := digest.Options{Name: r.Name, From: r.From, To: r.To, Location: t.person.Location()}
		p := digest.BuildPersonal(gpus, users, t.person.Display(), t.users, o)
		if p == nil {
			continue
		}
		n, err := p.Notification(receiver, id, r.At)
		if err != nil {
			d.logger.Error("cannot render a personal digest", "digest", r.Name, "user", id, "err", err)
			continue
		}
		n.Digest.Charts = d.dayCharts(commit, r.Name+"/"+id, r.At, []*chart.Day{p.Picture(users)})
		add(n)
	}
	if choice != people.DigestWeekly {
		return outbox, nil
	}
	teams, err := d.people.Teams(ctx)
	if err != nil {
		return nil, err
	}
	for _, team := range teams {
		for _, n := range d.teamDigests(commit, r, receiver, cfg.Host, team, gpus, users) {
			add(n)
		}
	}
	return outbox, nil
}

// teamDigests are a team's digest, the usage of its members only, one to
// each lead; none when no member used a GPU.
func (d *Daemon) teamDigests(commit *notifier.Commit, r digest.Run, receiver, host string, team people.Team, gpus []digest.GPUHour, users []digest.UserHour) []*notifier.Notification {
	type slot struct {
		host string
		gpu  int
	}
	var theirs []digest.UserHour
	used := map[slot]bool{}
	for _, u := range users {
		if team.Counts(u.User) {
			theirs = append(theirs, u)
			used[slot{u.Host, u.GPU}] = true
		}
	}
	if len(theirs) == 0 {
		return nil
	}
	var onTheirs []digest.GPUHour
	for _, g := range gpus {
		if used[slot{g.Host, g.GPU}] {
			onTheirs = append(onTheirs, g)
		}
	}
	var out []*notifier.Notification
	for _, lead := range team.Leads {
		o := digest.Options{Name: r.Name + "/" + team.Name, Team: team.Name, Host: cmp.Or(hostOf(onTheirs), host), From: r.From, To: r.To,
			TopUsers: max(config.DefaultTopUsers, len(team.Members)), Location: lead.Location()}
		report := digest.Build(onTheirs, theirs, nil, o)
		n, err := report.Notification(receiver, r.At)
		if err != nil {
			d.logger.Error("cannot render a team's digest", "digest", r.Name, "team", team.Name, "err", err)
			continue
		}
		n.GroupKey += "/" + lead.ID
		n.Digest.To = lead.ID
		n.Digest.Charts = d.dayCharts(commit, r.Name+"/"+team.Name+"/"+lead.ID, r.At, digest.Pictures(onTheirs, theirs, o))
		out = append(out, n)
	}
	return out
}

// hostOf is the host of hours that are all of one host, else "".
func hostOf(gpus []digest.GPUHour) string {
	if len(gpus) == 0 {
		return ""
	}
	for _, g := range gpus {
		if g.Host != gpus[0].Host {
			return ""
		}
	}
	return gpus[0].Host
}
