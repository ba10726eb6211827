package people_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/people"
)

// directory plays Slack: users by ID with their emails, and what it was
// asked.
type directory struct {
	mu     sync.Mutex
	users  map[string]people.Person // by ID
	emails map[string]string        // email → ID
	fail   error                    // every call fails with it when set
	asked  []string
}

func (d *directory) LookupByEmail(_ context.Context, email string) (people.Person, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked = append(d.asked, "email:"+email)
	if d.fail != nil {
		return people.Person{}, d.fail
	}
	id, ok := d.emails[email]
	if !ok {
		return people.Person{}, people.ErrUnknown
	}
	return d.users[id], nil
}

func (d *directory) UserInfo(_ context.Context, id string) (people.Person, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked = append(d.asked, "info:"+id)
	if d.fail != nil {
		return people.Person{}, d.fail
	}
	p, ok := d.users[id]
	if !ok {
		return people.Person{}, people.ErrUnknown
	}
	return p, nil
}

func (d *directory) calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.asked...)
}

// memStore is a Store in memory.
type memStore struct {
	mu sync.Mutex
	kv map[string][]byte
}

func (s *memStore) Get(key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[key]
	return v, ok, nil
}

func (s *memStore) Put(key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv == nil {
		s.kv = map[string][]byte{}
	}
	s.kv[key] = value
	return nil
}

func workspace() *directory {
	return &directory{
		users: map[string]people.Person{
			"U0ALICE": {ID: "U0ALICE", Name: "alice", Zone: "Europe/Berlin"},
			"U0BOB":   {ID: "U0BOB", Name: "bob", Zone: "America/New_York"},
			"U0DAVE":  {ID: "U0DAVE", Name: "dave", Zone: "Asia/Tokyo"},
			"U0PI":    {ID: "U0PI", Name: "pi"},
		},
		emails: map[string]string{"bob@example.org": "U0BOB", "dave@example.org": "U0DAVE", "pi@example.org": "U0PI"},
	}
}

var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

func section() people.Config {
	return people.Config{
		Users:         map[string]string{"alice": "U0ALICE"},
		Namespaces:    map[string]string{"vision": "dave@example.org"},
		SlurmAccounts: map[string]string{"physics": "pi@example.org"},
		Email:         "{user}@example.org",
	}
}

func TestOwners(t *testing.T) {
	dir := workspace()
	p := people.New(section(), people.Options{Directory: dir, Store: &memStore{}, Now: func() time.Time { return t0 }})
	procs := []gpu.Process{
		{PID: 1, User: "alice", MemUsed: 40 << 30},                                   // by ID
		{PID: 2, User: "bob", MemUsed: 20 << 30},                                     // by the email pattern
		{PID: 3, User: "1000", Container: "k8s:vision/jupyter-0/c0ffee", MemUsed: 9}, // by namespace
		{PID: 4, User: "carol", MemUsed: 8},                                          // an email no one has
		{PID: 5, User: "erin", Job: "slurm:4242", Account: "physics", MemUsed: 7},    // by Slurm account
		{PID: 6, User: "alice", Job: "slurm:4250", MemUsed: 6},                       // alice again
	}
	owners, unmapped, err := p.Owners(context.Background(), procs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range owners {
		got = append(got, o.Person.ID+" "+strings.Join(o.Holds, "+")+" via "+string(o.Via))
	}
	want := []string{
		"U0ALICE alice+job 4250 (alice) via people.users.alice",
		"U0BOB bob via people.email",
		"U0DAVE vision/jupyter-0 via people.namespaces.vision",
		"U0PI job 4242 (erin) via people.slurm_accounts.physics",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("owners:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(unmapped) != 1 || unmapped[0] != "carol" {
		t.Errorf("unmapped %q, want carol", unmapped)
	}
	if owners[1].Person.Name != "bob" || owners[1].Person.Zone != "America/New_York" {
		t.Errorf("bob: %+v, want his name and zone from Slack", owners[1].Person)
	}

	// Everything is cached, misses too: asking again asks Slack nothing.
	before := len(dir.calls())
	if _, _, err := p.Owners(context.Background(), procs); err != nil {
		t.Fatal(err)
	}
	if after := dir.calls(); len(after) != before {
		t.Errorf("asking again called Slack: %q", after[before:])
	}
}

func TestCacheExpires(t *testing.T) {
	dir := workspace()
	st := &memStore{}
	now := t0
	cfg := section()
	cfg.Misses = 10 * time.Minute
	p := people.New(cfg, people.Options{Directory: dir, Store: st, Now: func() time.Time { return now }})
	carol := []people.Identity{{Kind: people.KindUser, Name: "carol"}}
	for range 2 {
		if _, _, ok, err := p.Resolve(context.Background(), carol); ok || err != nil {
			t.Fatalf("carol: %v, %v; want no one", ok, err)
		}
	}
	if n := strings.Count(strings.Join(dir.calls(), " "), "email:carol@example.org"); n != 1 {
		t.Errorf("a miss asked Slack %d times, want once (misses are remembered)", n)
	}
	// Carol joins Slack; past cache_misses, she is found.
	dir.users["U0CAROL"] = people.Person{ID: "U0CAROL", Name: "carol"}
	dir.emails["carol@example.org"] = "U0CAROL"
	now = now.Add(11 * time.Minute)
	if person, _, ok, _ := p.Resolve(context.Background(), carol); !ok || person.ID != "U0CAROL" {
		t.Errorf("after cache_misses: got %+v, %v, want carol found", person, ok)
	}
	// A restart finds the cache in the store: Slack is not asked again.
	before := len(dir.calls())
	q := people.New(cfg, people.Options{Directory: dir, Store: st, Now: func() time.Time { return now }})
	if person, _, ok, _ := q.Resolve(context.Background(), carol); !ok || person.ID != "U0CAROL" || len(dir.calls()) != before {
		t.Errorf("after a restart: got %+v, %v and %d calls to Slack, want carol from the store", person, ok, len(dir.calls())-before)
	}
	for key := range st.kv {
		if strings.Contains(key, "@") || strings.Contains(string(st.kv[key]), "@") {
			t.Errorf("the store keeps an email: %s = %s", key, st.kv[key])
		}
	}
}

func TestResolveSlackDown(t *testing.T) {
	dir := workspace()
	dir.fail = errors.New("slack is down")
	p := people.New(section(), people.Options{Directory: dir, Now: func() time.Time { return t0 }})
	_, _, err := p.Owners(context.Background(), []gpu.Process{{PID: 2, User: "bob"}})
	if err == nil {
		t.Errorf("Slack down: got no error, want one (the caller tries again)")
	}
	// A user ID needs no lookup: it goes on without a name.
	owners, _, err := p.Owners(context.Background(), []gpu.Process{{PID: 1, User: "alice"}})
	if err != nil || len(owners) != 1 || owners[0].Person.ID != "U0ALICE" {
		t.Errorf("alice by ID with Slack down: got %+v, %v; want her ID", owners, err)
	}
}

func TestManners(t *testing.T) {
	cfg := section()
	cfg.DailyLimit = 2
	cfg.QuietHours = "22:00-07:00"
	p := people.New(cfg, people.Options{Store: &memStore{}})
	bob := people.Person{ID: "U0BOB", Zone: "America/New_York"}
	at := time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC) // 10:00 in New York
	if ok, why := p.MayDisturb(bob, false, at); !ok {
		t.Errorf("10:00 in his zone: not disturbed (%s), want a message", why)
	}
	night := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC) // 23:00 in New York
	if ok, why := p.MayDisturb(bob, false, night); ok || why != "quiet hours" {
		t.Errorf("23:00 in his zone: got %v %q, want quiet hours", ok, why)
	}
	if ok, _ := p.MayDisturb(bob, true, night); !ok {
		t.Errorf("a critical alert at 23:00: not sent, want it sent")
	}
	p.Disturbed(bob, at)
	p.Disturbed(bob, at.Add(time.Hour))
	if ok, why := p.MayDisturb(bob, false, at.Add(2*time.Hour)); ok || why != "2 messages today" {
		t.Errorf("past the daily limit: got %v %q, want 2 messages today", ok, why)
	}
	if ok, _ := p.MayDisturb(bob, false, at.Add(24*time.Hour)); !ok {
		t.Errorf("the next day: not sent, want the count to start again")
	}
	if err := p.Mute("U0BOB", at.Add(8*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ok, why := p.MayDisturb(bob, true, at.Add(time.Hour)); ok || !strings.HasPrefix(why, "muted until") {
		t.Errorf("muted: got %v %q, want muted, even for a critical alert", ok, why)
	}
	if ok, _ := p.MayDisturb(bob, false, at.Add(9*time.Hour+24*time.Hour)); !ok {
		t.Errorf("after the mute: not sent")
	}
	if got := p.DigestChoice("U0BOB"); got != people.DigestWeekly {
		t.Errorf("digest by default: %q, want weekly", got)
	}
	if err := p.SetDigest("U0BOB", "off"); err != nil || p.DigestChoice("U0BOB") != people.DigestOff {
		t.Errorf("digest off: %v, %q", err, p.DigestChoice("U0BOB"))
	}
	if err := p.SetDigest("U0BOB", "hourly"); err == nil {
		t.Errorf("digest hourly: got no error")
	}
}

func TestTeams(t *testing.T) {
	cfg := section()
	cfg.Groups = []people.Group{
		{Name: "vision", Leads: []string{"pi@example.org", "U0GONE"}, Members: []string{"bob", "namespace:vision"}},
		{Name: "nobody-leads", Leads: []string{"gone@example.org"}, Members: []string{"alice"}},
	}
	p := people.New(cfg, people.Options{Directory: workspace()})
	teams, err := p.Teams(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(teams) != 1 || teams[0].Name != "vision" || len(teams[0].Leads) != 2 {
		t.Fatalf("teams %+v, want vision led by pi (and the ID Slack does not name)", teams)
	}
	for user, want := range map[string]bool{"bob": true, "vision/jupyter-0": true, "alice": false, "ml/train-0": false} {
		if got := teams[0].Counts(user); got != want {
			t.Errorf("vision counts %q: %v, want %v", user, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	cfg := people.Config{
		Users:      map[string]string{"alice": "U0ALICE", "bob": "not-an-email", "": "U0X"},
		Namespaces: map[string]string{"vision": "dave@example.org"},
		Email:      "{user}@{domain}",
		Groups:     []people.Group{{Name: "a", Leads: []string{"x"}, Members: []string{"job:1"}}, {Name: "a"}},
		DailyLimit: -1,
		QuietHours: "late",
		Digest:     people.DigestConfig{Default: "hourly", Receiver: "hook", Weekly: "bad"},
	}
	problems := cfg.Check(func(string) (bool, bool) { return true, false }, func(s string) error {
		if s == "bad" {
			return errors.New("bad schedule")
		}
		return nil
	})
	var got []string
	for _, p := range problems {
		got = append(got, strings.Join(p.Path, ".")+": "+p.Msg)
	}
	text := strings.Join(got, "\n")
	for _, want := range []string{
		"users: people.users has an empty name",
		"users.bob: people.users.bob is neither a Slack user ID",
		"email: people.email knows only the placeholder {user}",
		"groups.0.leads.0: people.groups[0].leads[0] is neither",
		`groups.0.members.0: people.groups[0].members[0]: "job:1" is not an identity`,
		`groups.1.name: people.groups[1]: group "a" is defined twice`,
		"daily_limit: people.daily_limit -1 is negative",
		`quiet_hours: people.quiet_hours "late" is not a span of the day`,
		`digest.default: people.digest.default "hourly" is not weekly, daily or off`,
		`digest.receiver: people.digest.receiver "hook" must be a Slack receiver`,
		"digest.weekly: people.digest.weekly: bad schedule",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("problems lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "not-an-email") || strings.Contains(text, "dave@") {
		t.Errorf("a problem quotes a mapping's value:\n%s", text)
	}
}

func TestQuietHours(t *testing.T) {
	q, err := people.ParseQuietHours("22:00-07:30")
	if err != nil {
		t.Fatal(err)
	}
	for clock, want := range map[string]bool{"21:59": false, "22:00": true, "03:00": true, "07:29": true, "07:30": false, "12:00": false} {
		at, _ := time.Parse("15:04", clock)
		if got := q.Holds(at); got != want {
			t.Errorf("%s: quiet %v, want %v", clock, got, want)
		}
	}
	day, _ := people.ParseQuietHours("12:00-13:00")
	if at, _ := time.Parse("15:04", "12:30"); !day.Holds(at) {
		t.Errorf("12:30 within 12:00-13:00: not quiet")
	}
	for _, bad := range []string{"", "22-07", "25:00-07:00", "22:00-22:00", "22:00-7:5"} {
		if _, err := people.ParseQuietHours(bad); err == nil {
			t.Errorf("%q: got no error", bad)
		}
	}
}

// BenchmarkOwners is what a Slack receiver pays to find the owners of an
// alert's eight processes, every person in the cache: what each
// notification costs once Slack was asked.
func BenchmarkOwners(b *testing.B) {
	p := people.New(section(), people.Options{Directory: workspace(), Store: &memStore{}, Now: func() time.Time { return t0 }})
	procs := []gpu.Process{
		{PID: 1, User: "alice"}, {PID: 2, User: "bob"}, {PID: 3, User: "1000", Container: "k8s:vision/jupyter-0/c0ffee"},
		{PID: 4, User: "carol"}, {PID: 5, User: "erin", Job: "slurm:4242", Account: "physics"}, {PID: 6, User: "alice", Job: "slurm:4250"},
		{PID: 7, User: "bob"}, {PID: 8, User: "dave"},
	}
	if _, _, err := p.Owners(context.Background(), procs); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := p.Owners(context.Background(), procs); err != nil {
			b.Fatal(err)
		}
	}
}
