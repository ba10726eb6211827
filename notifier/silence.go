package notifier

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Silence mutes the alerts its matchers select from StartsAt until EndsAt.
type Silence struct {
	ID        string    `json:"id"`
	Matchers  Matchers  `json:"matchers"`
	StartsAt  time.Time `json:"starts_at"`
	EndsAt    time.Time `json:"ends_at"`
	CreatedBy string    `json:"created_by"`
	Comment   string    `json:"comment"`
}

// Active reports whether the silence is in force at at: StartsAt <= at <
// EndsAt, so it stops muting exactly at EndsAt.
func (s *Silence) Active(at time.Time) bool {
	return !at.Before(s.StartsAt) && at.Before(s.EndsAt)
}

// Mutes reports whether the silence is active at at and its matchers match
// the labels. A silence without matchers mutes nothing: it would
// otherwise mute everything.
func (s *Silence) Mutes(labels map[string]string, at time.Time) bool {
	return len(s.Matchers) > 0 && s.Active(at) && s.Matchers.Matches(labels)
}

// SilenceStore persists silences as JSON under their IDs. The daemon keeps
// them in the embedded store (bucket "silences").
type SilenceStore interface {
	Put(key string, value []byte) error
	Delete(key string) error
	All() (map[string][]byte, error)
	// SetAside takes a record that cannot be read out of the way, keeping
	// its bytes, and says so: one damaged silence must not stop gpuwatch.
	SetAside(key string, why error)
}

// ErrSilenceNotFound is returned for an ID no silence has.
var ErrSilenceNotFound = errors.New("silence not found")

// ErrSilenceExpired is returned when expiring a silence that has already
// ended.
var ErrSilenceExpired = errors.New("silence already expired")

// ErrSilenceNotSaved is returned when the store refused a silence's write:
// nothing changed, and trying again later may work.
var ErrSilenceNotSaved = errors.New("the store did not save the silence")

// Limits on silences, so that nobody (a script in a loop, a hostile
// client) can fill the store or the memory of whoever lists them.
const (
	// MaxActiveSilences is how many silences may be active or pending at once.
	MaxActiveSilences = 1000
	// MaxKeptSilences is how many silences are kept, expired ones included:
	// past it, adding one forgets the expired silences that ended first.
	MaxKeptSilences = 5000
	// SilenceRetention is how long an expired silence stays listed (as
	// Alertmanager keeps them) before GC forgets it.
	SilenceRetention = 5 * 24 * time.Hour
	// MaxSilenceMatchers is how many matchers one silence may have.
	MaxSilenceMatchers = 32
	// MaxSilenceComment is the longest comment, in bytes.
	MaxSilenceComment = 1024
	// MaxSilenceCreatedBy is the longest created_by, in bytes.
	MaxSilenceCreatedBy = 256
	// MaxSilenceMatcherBytes is the longest matcher value, in bytes.
	MaxSilenceMatcherBytes = 1024
	// MaxSilenceBytes is the most a silence may take in the store, as JSON.
	MaxSilenceBytes = 4096
	// MaxSilenceDuration is the longest a silence may last.
	MaxSilenceDuration = 365 * 24 * time.Hour
)

// ErrTooManySilences is returned when MaxActiveSilences are active or
// pending already.
var ErrTooManySilences = errors.New("too many active or pending silences")

// Silences is the set of silences, kept in memory and written through to a
// SilenceStore. It is safe for concurrent use: the HTTP API adds and
// expires while the dispatcher checks. Readers never wait for the store:
// a write holds the set's lock only to change memory, after the store took
// it, so a stalled disk stalls writers alone.
type Silences struct {
	st    SilenceStore
	newID func() string

	writeMu sync.Mutex // one writer at a time, held across the store's write
	mu      sync.RWMutex
	byID    map[string]Silence

	// maxActive and maxKept are MaxActiveSilences and MaxKeptSilences;
	// tests make them small.
	maxActive, maxKept int
}

// NewSilences loads the silences persisted in st; a record that is not a
// silence is set aside (st.SetAside) and the others are loaded. newID
// makes the IDs of new silences; nil means 8 random bytes in hex. A nil st
// keeps silences in memory only.
func NewSilences(st SilenceStore, newID func() string) (*Silences, error) {
	if newID == nil {
		newID = randomID
	}
	s := &Silences{st: st, newID: newID, byID: map[string]Silence{}, maxActive: MaxActiveSilences, maxKept: MaxKeptSilences}
	if st == nil {
		return s, nil
	}
	all, err := st.All()
	if err != nil {
		return nil, fmt.Errorf("load silences: %w", err)
	}
	for key, b := range all {
		var sil Silence
		if err := json.Unmarshal(b, &sil); err != nil {
			st.SetAside(key, fmt.Errorf("not a silence: %w", err))
			continue
		}
		sil.ID = key
		s.byID[key] = sil
	}
	return s, nil
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b[:])
}

// Add validates a new silence, gives it an ID (any ID it has is replaced),
// persists it and returns it. It needs at least one matcher and an EndsAt
// after its StartsAt; CreatedBy and Comment are optional; sizes are bounded
// (MaxSilenceComment, …). At now, at most MaxActiveSilences may be active
// or pending; past MaxKeptSilences, the expired silences that ended first
// are forgotten to make room.
func (s *Silences) Add(sil Silence, now time.Time) (Silence, error) {
	sil.Matchers = slices.Clone(sil.Matchers) // validation replaces them
	if err := validateSilence(&sil); err != nil {
		return Silence{}, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	sil.ID = s.newID()
	if sil.ID == "" {
		return Silence{}, errors.New("add silence: the ID generator returned an empty ID")
	}
	s.mu.RLock()
	_, taken := s.byID[sil.ID]
	active := 0
	for _, other := range s.byID {
		if now.Before(other.EndsAt) {
			active++
		}
	}
	crowd := s.oldestExpired(now, len(s.byID)+1-s.maxKept)
	s.mu.RUnlock()
	switch {
	case taken:
		return Silence{}, fmt.Errorf("add silence: ID %q is already taken", sil.ID)
	case active >= s.maxActive && now.Before(sil.EndsAt):
		return Silence{}, fmt.Errorf("%w: %d, the most gpuwatch keeps: expire some (gpuwatch silence list)", ErrTooManySilences, active)
	}
	if err := s.forget(crowd); err != nil {
		return Silence{}, err
	}
	if err := s.persist(sil); err != nil {
		return Silence{}, err
	}
	s.mu.Lock()
	s.byID[sil.ID] = sil
	s.mu.Unlock()
	return copySilence(sil), nil
}

// oldestExpired returns the IDs of up to n silences expired at now, those
// that ended first first. The caller holds mu.
func (s *Silences) oldestExpired(now time.Time, n int) []string {
	if n <= 0 {
		return nil
	}
	var expired []Silence
	for _, sil := range s.byID {
		if !now.Before(sil.EndsAt) {
			expired = append(expired, sil)
		}
	}
	first := func(a, b Silence) int { return cmp.Or(a.EndsAt.Compare(b.EndsAt), cmp.Compare(a.ID, b.ID)) }
	if n == 1 && len(expired) > 0 { // the usual case, one in one out: no sort
		return []string{slices.MinFunc(expired, first).ID}
	}
	slices.SortFunc(expired, first)
	ids := make([]string, 0, min(n, len(expired)))
	for _, sil := range expired[:min(n, len(expired))] {
		ids = append(ids, sil.ID)
	}
	return ids
}

// forget deletes silences from the store, then from memory, stopping at
// the first the store refuses. The caller holds writeMu.
func (s *Silences) forget(ids []string) error {
	for _, id := range ids {
		if s.st != nil {
			if err := s.st.Delete(id); err != nil {
				return fmt.Errorf("forget silence %q: %w", id, err)
			}
		}
		s.mu.Lock()
		delete(s.byID, id)
		s.mu.Unlock()
	}
	return nil
}

func validateSilence(sil *Silence) error {
	switch {
	case len(sil.Matchers) == 0:
		return errors.New(`a silence needs at least one matcher, e.g. alert="GPUHot"`)
	case len(sil.Matchers) > MaxSilenceMatchers:
		return fmt.Errorf("a silence has %d matchers, the most is %d: silence a label that the alerts share", len(sil.Matchers), MaxSilenceMatchers)
	case len(sil.Comment) > MaxSilenceComment:
		return fmt.Errorf("a silence's comment is %d bytes, the most is %d: say why in a sentence and link to the ticket", len(sil.Comment), MaxSilenceComment)
	case len(sil.CreatedBy) > MaxSilenceCreatedBy:
		return fmt.Errorf("a silence's created_by is %d bytes, the most is %d", len(sil.CreatedBy), MaxSilenceCreatedBy)
	}
	for i, m := range sil.Matchers {
		if m == nil {
			return fmt.Errorf("silence matcher %d is missing", i)
		}
		if len(m.Value) > MaxSilenceMatcherBytes {
			return fmt.Errorf("silence matcher %d: its value is %d bytes, the most is %d", i, len(m.Value), MaxSilenceMatcherBytes)
		}
		// Rebuild each so that one written as a struct literal is checked
		// and gets its compiled regular expression.
		checked, err := NewMatcher(m.Type, m.Name, m.Value)
		if err != nil {
			return fmt.Errorf("silence matcher %d: %w", i, err)
		}
		sil.Matchers[i] = checked
	}
	if sil.StartsAt.IsZero() {
		return errors.New("a silence needs a start time (starts_at)")
	}
	if !sil.EndsAt.After(sil.StartsAt) {
		return fmt.Errorf("a silence must end after it starts: ends_at %s is not after starts_at %s",
			sil.EndsAt.Format(time.RFC3339), sil.StartsAt.Format(time.RFC3339))
	}
	if sil.EndsAt.Sub(sil.StartsAt) > MaxSilenceDuration {
		return fmt.Errorf("a silence of %s is longer than %s, the longest gpuwatch keeps: silence for less, or remove the rule",
			sil.EndsAt.Sub(sil.StartsAt).Round(time.Hour), "365d")
	}
	return nil
}

// persist writes a silence to the store; the caller holds writeMu, not mu.
func (s *Silences) persist(sil Silence) error {
	b, err := json.Marshal(sil)
	if err != nil {
		return fmt.Errorf("encode silence %q: %w", sil.ID, err)
	}
	if len(b) > MaxSilenceBytes {
		return fmt.Errorf("a silence takes %d bytes, the most is %d: use fewer or shorter matchers and a shorter comment", len(b), MaxSilenceBytes)
	}
	if s.st == nil {
		return nil
	}
	if err := s.st.Put(sil.ID, b); err != nil {
		return fmt.Errorf("save silence %q: %w: %w", sil.ID, ErrSilenceNotSaved, err)
	}
	return nil
}

// Expire ends the silence with this ID at at; it stays listed as expired
// until GC forgets it. A silence that had not started yet ends before it
// begins. Expiring one that already ended returns ErrSilenceExpired.
func (s *Silences) Expire(id string, at time.Time) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.RLock()
	sil, ok := s.byID[id]
	s.mu.RUnlock()
	if !ok {
		return fmt.Errorf("expire silence %q: %w: list them with `gpuwatch silence list`", id, ErrSilenceNotFound)
	}
	if !at.Before(sil.EndsAt) {
		return fmt.Errorf("expire silence %q: %w at %s", id, ErrSilenceExpired, sil.EndsAt.Format(time.RFC3339))
	}
	if at.Before(sil.StartsAt) {
		sil.StartsAt = at
	}
	sil.EndsAt = at
	if err := s.persist(sil); err != nil {
		return err
	}
	s.mu.Lock()
	s.byID[id] = sil
	s.mu.Unlock()
	return nil
}

// silenceState orders List: active, then pending, then expired.
func silenceState(sil *Silence, at time.Time) int {
	switch {
	case sil.Active(at):
		return 0
	case at.Before(sil.StartsAt):
		return 1
	}
	return 2
}

// List returns every silence as of at: the active ones first (the most
// recently started first), then the pending ones (the soonest to start
// first), then the expired ones (the most recently ended first).
func (s *Silences) List(at time.Time) []Silence {
	s.mu.RLock()
	out := make([]Silence, 0, len(s.byID))
	for _, sil := range s.byID {
		out = append(out, copySilence(sil))
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b Silence) int {
		sa, sb := silenceState(&a, at), silenceState(&b, at)
		if sa != sb {
			return cmp.Compare(sa, sb)
		}
		var c int
		switch sa {
		case 0:
			c = b.StartsAt.Compare(a.StartsAt)
		case 1:
			c = a.StartsAt.Compare(b.StartsAt)
		default:
			c = b.EndsAt.Compare(a.EndsAt)
		}
		if c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// Mutes reports whether an active silence mutes the labels at at, and
// which: of several, the one that lasts longest (then the smallest ID), so
// the answer does not depend on map order.
func (s *Silences) Mutes(labels map[string]string, at time.Time) (id string, muted bool) {
	sil, muted := s.MutedBy(labels, at)
	return sil.ID, muted
}

// MutedBy returns the active silence that mutes the labels at at, as
// Mutes picks it, for showing an alert as silenced: until when, by whom.
func (s *Silences) MutedBy(labels map[string]string, at time.Time) (Silence, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var best *Silence
	for sid, sil := range s.byID {
		if !sil.Mutes(labels, at) {
			continue
		}
		if best == nil || sil.EndsAt.After(best.EndsAt) || (sil.EndsAt.Equal(best.EndsAt) && sid < best.ID) {
			best = &sil
		}
	}
	if best == nil {
		return Silence{}, false
	}
	return copySilence(*best), true
}

// GC forgets the silences that ended before before, in the store too, and
// returns how many it forgot. The daemon calls it with the retention
// (SilenceRetention) behind the clock.
func (s *Silences) GC(before time.Time) (int, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.RLock()
	var old []string
	for id, sil := range s.byID {
		if sil.EndsAt.Before(before) {
			old = append(old, id)
		}
	}
	s.mu.RUnlock()
	slices.Sort(old)
	n := 0
	for _, id := range old {
		if err := s.forget([]string{id}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// copySilence returns sil with its own matcher slice, so that callers
// cannot change the set's silences through what they are given.
func copySilence(sil Silence) Silence {
	sil.Matchers = slices.Clone(sil.Matchers)
	return sil
}
