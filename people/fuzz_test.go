package people_test

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/people"
)

// FuzzMapping maps a process of any user, container, job and account
// through a section of any email pattern and mapping: it never panics,
// whom it finds is someone Slack knows (by the ID a mapping names, or the
// user of an email that is an email), and a Check that finds no problem
// means every mapping is used as written.
func FuzzMapping(f *testing.F) {
	f.Add("alice", "", "", "", "{user}@example.org", "alice", "U0ALICE")
	f.Add("1000", "k8s:vision/jupyter-0/c0ffee", "", "", "", "vision", "dave@example.org")
	f.Add("erin", "", "slurm:4242", "physics", "{user}@{user}.org", "physics", "pi@example.org")
	f.Add("a b", "k8s:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/x", "slurm:", "x;y", "@{user}", "", "")
	f.Add("ÿ@", "k8s://", "slurm:1", "", "{user}", "ÿ@", "W1")
	f.Fuzz(func(t *testing.T, user, container, job, account, pattern, key, value string) {
		cfg := people.Config{
			Users:         map[string]string{key: value},
			Namespaces:    map[string]string{key: value},
			SlurmAccounts: map[string]string{key: value},
			Email:         pattern,
		}
		dir := workspace()
		p := people.New(cfg, people.Options{Directory: dir, Now: func() time.Time { return t0 }})
		proc := gpu.Process{PID: 1, User: user, Container: container, Job: job, Account: account}
		owners, unmapped, err := p.Owners(context.Background(), []gpu.Process{proc})
		if err != nil {
			t.Fatalf("Owners: %v", err)
		}
		if len(owners)+len(unmapped) > 1 {
			t.Errorf("one process: got owners %+v and unmapped %q", owners, unmapped)
		}
		for _, o := range owners {
			target, terr := people.ParseTarget(value)
			switch {
			case o.Via == "people.email":
				email, ok := people.EmailOf(pattern, user)
				if !ok || dir.emails[email] != o.Person.ID {
					t.Errorf("by the pattern %q: %+v, which is not the user of %q", pattern, o.Person, email)
				}
			case terr != nil:
				t.Errorf("mapped by %s to %q, which names no one: %+v", o.Via, value, o.Person)
			case target.ID != "" && o.Person.ID != target.ID:
				t.Errorf("mapped to %s: got %+v", target.ID, o.Person)
			case target.Email != "" && dir.emails[target.Email] != o.Person.ID:
				t.Errorf("mapped to an email: got %+v, not its user", o.Person)
			}
		}
		for _, id := range people.IdentitiesOf(&proc) {
			if id.Name == "" {
				t.Errorf("an identity without a name: %+v", id)
			}
			back, err := people.ParseIdentity(id.String())
			if err != nil || back != id {
				t.Errorf("identity %q does not read back: %+v, %v", id, back, err)
			}
		}
		if email, ok := people.EmailOf(pattern, user); ok && (!utf8.ValidString(email) || strings.Count(email, "@") != 1) {
			t.Errorf("EmailOf(%q, %q) = %q, not an email", pattern, user, email)
		}
		for _, pr := range cfg.Check(func(string) (bool, bool) { return true, true }, func(string) error { return nil }) {
			// A mapping's problem names the setting, never the value (an
			// email, perhaps).
			if len(pr.Path) == 2 && pr.Path[1] == key && len(value) >= 6 && !strings.Contains("people."+pr.Path[0]+"."+key, value) &&
				strings.Contains(pr.Msg, value) {
				t.Errorf("a problem quotes the mapping's value %q: %s", value, pr.Msg)
			}
		}
	})
}

// FuzzQuietHours reads any text as quiet hours: an error, or a span whose
// ends are times of day.
func FuzzQuietHours(f *testing.F) {
	for _, s := range []string{"22:00-07:00", "12:00-13:00", "24:00-01:00", "-", "1:1-2:2", " 22:00 - 07:00 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := people.ParseQuietHours(s)
		if err != nil {
			return
		}
		if q.From < 0 || q.From >= 24*time.Hour || q.To < 0 || q.To >= 24*time.Hour || q.From == q.To {
			t.Errorf("ParseQuietHours(%q) = %+v, not a span of the day", s, q)
		}
	})
}
