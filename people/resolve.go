package people

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// Directory is what People asks Slack: the user an email belongs to
// (users.lookupByEmail, scope users:read.email) and a user's name and time
// zone (users.info, scope users:read). The Slack bot implements it.
type Directory interface {
	// LookupByEmail returns the user of an email; ErrUnknown when Slack
	// knows no one with it.
	LookupByEmail(ctx context.Context, email string) (Person, error)
	// UserInfo returns a user's name and zone; ErrUnknown when Slack
	// knows no such user.
	UserInfo(ctx context.Context, id string) (Person, error)
}

// ErrUnknown says Slack knows no such user.
var ErrUnknown = errors.New("Slack knows no such user")

// ErrNoDirectory says an email cannot be looked up: no Slack bot token.
var ErrNoDirectory = errors.New("no Slack bot token to look emails up with")

// Store keeps what People learns and what people ask for, as opaque
// records (the daemon's store, bucket "people").
type Store interface {
	Get(key string) ([]byte, bool, error)
	Put(key string, value []byte) error
}

// Options are what People needs besides its config.
type Options struct {
	// Directory is Slack; nil knows nobody by email, and names nobody.
	Directory Directory
	// Store keeps the cache and the people's choices; nil keeps them in
	// memory only.
	Store Store
	// Logger gets what must not fail a delivery (a store that refuses a
	// record); nil discards. It never gets an email.
	Logger *slog.Logger
	// Now is the wall clock, which the cache and the manners go by; nil
	// means time.Now.
	Now func() time.Time
}

// People maps identities to persons and keeps their manners. It is safe
// for use by several goroutines.
type People struct {
	cfg   Config
	quiet *QuietHours
	dir   Directory
	st    Store
	log   *slog.Logger
	now   func() time.Time

	mu      sync.Mutex
	mem     map[string][]byte     // records, in front of the store (and instead of it without one)
	entries map[string]cacheEntry // the cache's records, decoded
}

// New returns the People of a checked config (ApplyDefaults is applied).
func New(cfg Config, o Options) *People {
	cfg.ApplyDefaults()
	p := &People{cfg: cfg, dir: o.Directory, st: o.Store, log: o.Logger, now: o.Now, mem: map[string][]byte{}, entries: map[string]cacheEntry{}}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	if q, err := ParseQuietHours(cfg.QuietHours); err == nil {
		p.quiet = &q
	}
	return p
}

// Config is the section People was made of, defaults applied.
func (p *People) Config() Config { return p.cfg }

// Via says how an identity was mapped, for people: "people.users.alice",
// "people.email", "people.namespaces.vision",
// "people.pod_labels.owner.alice", "people.pod_label_email". It never
// holds an email.
type Via string

// target returns whom an identity maps to, and how; false when the
// section maps it to no one.
func (p *People) target(id Identity) (Target, Via, bool) {
	var m map[string]string
	var key string
	switch id.Kind {
	case KindUser:
		m, key = p.cfg.Users, "users"
	case KindNamespace:
		m, key = p.cfg.Namespaces, "namespaces"
	case KindSlurmAccount:
		m, key = p.cfg.SlurmAccounts, "slurm_accounts"
	case KindPodLabel:
		return p.podLabelTarget(id.Name)
	}
	if v, ok := m[id.Name]; ok {
		if t, err := ParseTarget(v); err == nil {
			return t, Via("people." + key + "." + id.Name), true
		}
	}
	if id.Kind == KindUser {
		if email, ok := EmailOf(p.cfg.Email, id.Name); ok {
			return Target{Email: email}, "people.email", true
		}
	}
	return Target{}, "", false
}

// podLabelTarget returns whom a pod label ("owner=alice") maps to, and
// how: the value pod_labels lists, else pod_label_email's email.
func (p *People) podLabelTarget(label string) (Target, Via, bool) {
	key, value, _ := strings.Cut(label, "=")
	if v, ok := p.cfg.PodLabels[key][value]; ok {
		if t, err := ParseTarget(v); err == nil {
			return t, Via("people.pod_labels." + key + "." + value), true
		}
	}
	if email, ok := PodLabelEmailOf(p.cfg.PodLabelEmail, key, value); ok {
		return Target{Email: email}, "people.pod_label_email", true
	}
	return Target{}, "", false
}

// Resolve returns the person the first of ids that maps to someone
// Slack knows belongs to, and how it was mapped; ok is false when none
// does. An error means Slack could not be asked (down, or a scope
// missing): the caller may try again.
func (p *People) Resolve(ctx context.Context, ids []Identity) (person Person, via Via, ok bool, err error) {
	var firstErr error
	for _, id := range ids {
		t, v, mapped := p.target(id)
		if !mapped {
			continue
		}
		person, err := p.ofTarget(ctx, t)
		switch {
		case err == nil:
			return person, v, true, nil
		case errors.Is(err, ErrUnknown):
			continue // a mapping Slack does not know: the next identity may do
		case firstErr == nil:
			firstErr = err
		}
	}
	return Person{}, "", false, firstErr
}

// ofTarget is the person a target names: an ID with what users.info says
// of it (the bare ID when Slack does not answer), or the user of an
// email (cached, misses too).
func (p *People) ofTarget(ctx context.Context, t Target) (Person, error) {
	if t.ID != "" {
		return p.Info(ctx, t.ID), nil
	}
	key := emailKey(t.Email)
	if e, ok := p.cached(key); ok {
		if e.Miss {
			return Person{}, ErrUnknown
		}
		return e.Person, nil
	}
	if p.dir == nil {
		return Person{}, ErrNoDirectory
	}
	person, err := p.dir.LookupByEmail(ctx, t.Email)
	switch {
	case errors.Is(err, ErrUnknown):
		p.remember(key, cacheEntry{Miss: true, Until: p.now().Add(p.cfg.Misses)})
		return Person{}, ErrUnknown
	case err != nil:
		return Person{}, err
	}
	// The lookup answers the user with a name and zone: users.info need
	// not be asked again.
	p.remember(key, cacheEntry{Person: person, Until: p.now().Add(p.cfg.Cache)})
	p.remember(userKey(person.ID), cacheEntry{Person: person, Until: p.now().Add(p.cfg.Cache)})
	return person, nil
}

// Info is a user with the name and zone users.info tells (cached): the
// bare ID when Slack does not say.
func (p *People) Info(ctx context.Context, id string) Person {
	key := userKey(id)
	if e, ok := p.cached(key); ok {
		return e.Person
	}
	person := Person{ID: id}
	if p.dir == nil {
		return person
	}
	got, err := p.dir.UserInfo(ctx, id)
	switch {
	case err == nil:
		got.ID = id
		person = got
		p.remember(key, cacheEntry{Person: person, Until: p.now().Add(p.cfg.Cache)})
	case errors.Is(err, ErrUnknown):
		p.remember(key, cacheEntry{Person: person, Until: p.now().Add(p.cfg.Misses)})
	default:
		p.log.Debug("cannot read a Slack user's name and zone; going on with the ID", "user", id, "err", err)
	}
	return person
}

// Known reports whether Slack knows the target, asking it now (not the
// cache): for gpuwatch check.
func (p *People) Known(ctx context.Context, t Target) (bool, error) {
	if p.dir == nil {
		return false, ErrNoDirectory
	}
	var err error
	if t.ID != "" {
		_, err = p.dir.UserInfo(ctx, t.ID)
	} else {
		_, err = p.dir.LookupByEmail(ctx, t.Email)
	}
	if errors.Is(err, ErrUnknown) {
		return false, nil
	}
	return err == nil, err
}

// Owner is a person who holds a GPU, with what of theirs holds it.
type Owner struct {
	Person Person
	// Holds names what of theirs holds the GPU: "job 4242 (alice)",
	// "alice", "vision/train-0".
	Holds []string
	Via   Via
}

// Owners are the persons behind an alert's processes (its holders), each
// once, in the order of the processes (the largest first), and the
// holders that belong to no one gpuwatch can tell. An error means Slack
// could not be asked: the caller may try again.
func (p *People) Owners(ctx context.Context, procs []gpu.Process) (owners []Owner, unmapped []string, err error) {
	for i := range procs {
		proc := &procs[i]
		who := proc.Who()
		if who == "" {
			who = proc.Holder()
		}
		person, via, ok, rerr := p.Resolve(ctx, IdentitiesOf(proc))
		if rerr != nil {
			return nil, nil, rerr
		}
		if !ok {
			if who != "" && !slices.Contains(unmapped, who) {
				unmapped = append(unmapped, who)
			}
			continue
		}
		j := slices.IndexFunc(owners, func(o Owner) bool { return o.Person.ID == person.ID })
		if j < 0 {
			owners = append(owners, Owner{Person: person, Via: via})
			j = len(owners) - 1
		}
		if who != "" && !slices.Contains(owners[j].Holds, who) {
			owners[j].Holds = append(owners[j].Holds, who)
		}
	}
	return owners, unmapped, nil
}

// OwnerOf is the person a digest's user (a rollup's owner: a Unix user,
// or "NAMESPACE/POD" for a pod named without its processes) belongs to.
func (p *People) OwnerOf(ctx context.Context, user string) (Person, bool, error) {
	var ids []Identity
	if ns, _, isPod := strings.Cut(user, "/"); isPod {
		ids = append(ids, Identity{KindNamespace, ns})
	} else if user != "" && !isNumeric(user) {
		ids = append(ids, Identity{KindUser, user})
	}
	person, _, ok, err := p.Resolve(ctx, ids)
	return person, ok, err
}

// cacheEntry is what is kept of a lookup: the person, or that Slack knows
// no one (Miss), until when.
type cacheEntry struct {
	Person Person    `json:"person"`
	Miss   bool      `json:"miss,omitempty"`
	Until  time.Time `json:"until"`
}

// emailKey keeps an email out of the store's keys (and of any error that
// quotes a key): its hash stands for it.
func emailKey(email string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(email)))
	return "email/" + hex.EncodeToString(sum[:16])
}

func userKey(id string) string { return "user/" + id }

// cached returns an entry that has not expired: decoded in memory, or
// read from the store (after a restart) and decoded once.
func (p *People) cached(key string) (cacheEntry, bool) {
	p.mu.Lock()
	e, ok := p.entries[key]
	p.mu.Unlock()
	if !ok {
		raw, found := p.get(key)
		if !found || json.Unmarshal(raw, &e) != nil {
			return cacheEntry{}, false
		}
		p.mu.Lock()
		p.entries[key] = e
		p.mu.Unlock()
	}
	if !p.now().Before(e.Until) {
		return cacheEntry{}, false
	}
	return e, true
}

func (p *People) remember(key string, e cacheEntry) {
	raw, err := json.Marshal(e)
	if err != nil {
		return
	}
	p.mu.Lock()
	if len(p.entries) >= maxRecords {
		clear(p.entries)
	}
	p.entries[key] = e
	p.mu.Unlock()
	p.put(key, raw)
}

// get reads a record: from memory, else from the store.
func (p *People) get(key string) ([]byte, bool) {
	p.mu.Lock()
	raw, ok := p.mem[key]
	p.mu.Unlock()
	if ok || p.st == nil {
		return raw, ok
	}
	raw, ok, err := p.st.Get(key)
	if err != nil {
		p.log.Warn("cannot read a record of the people: section from the store; asking again", "key", key, "err", err)
		return nil, false
	}
	if ok {
		p.mu.Lock()
		p.mem[key] = raw
		p.mu.Unlock()
	}
	return raw, ok
}

// put writes a record to memory and the store; a store that refuses it
// is logged, and memory keeps it until a restart.
func (p *People) put(key string, raw []byte) error {
	p.mu.Lock()
	if len(p.mem) >= maxRecords {
		clear(p.mem) // the store keeps them; memory is only in front of it
	}
	p.mem[key] = raw
	p.mu.Unlock()
	if p.st == nil {
		return nil
	}
	if err := p.st.Put(key, raw); err != nil {
		p.log.Warn("cannot write a record of the people: section to the store; kept in memory until gpuwatch restarts", "key", key, "err", err)
		return fmt.Errorf("the store did not take it: %w", err)
	}
	return nil
}

// maxRecords bounds the records kept in memory.
const maxRecords = 8192

// Person is the Slack user a mapping's value names (a user ID or an
// email, as escalate_to gives one); ErrUnknown when Slack knows no such
// user.
func (p *People) Person(ctx context.Context, who string) (Person, error) {
	t, err := ParseTarget(who)
	if err != nil {
		return Person{}, fmt.Errorf("a person %v", err)
	}
	return p.ofTarget(ctx, t)
}
