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
}

// ErrSilenceNotFound is returned for an ID no silence has.
var ErrSilenceNotFound = errors.New("silence not found")

// ErrSilenceExpired is returned when expiring a silence that has already
// ended.
var ErrSilenceExpired = errors.New("silence already expired")

// Silences is the set of silences, kept in memory and written through to a
// SilenceStore. It is safe for concurrent use: the HTTP API adds and
// expires while the dispatcher checks.
type Silences struct {
	st    SilenceStore
	newID func() string

	mu   sync.RWMutex
	byID map[string]Silence
}

// NewSilences loads the silences persisted in st. newID makes the IDs of
// new silences; nil means 8 random bytes in hex. A nil st keeps silences
// in memory only.
func NewSilences(st SilenceStore, newID func() string) (*Silences, error) {
	if newID == nil {
		newID = randomID
	}
	s := &Silences{st: st, newID: newID, byID: map[string]Silence{}}
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
			return nil, fmt.Errorf("load silence %q: %w: expire it and add it again", key, err)
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
// after its StartsAt; CreatedBy and Comment are optional.
func (s *Silences) Add(sil Silence) (Silence, error) {
	sil.Matchers = slices.Clone(sil.Matchers) // validation replaces them
	if err := validateSilence(&sil); err != nil {
		return Silence{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sil.ID = s.newID()
	if sil.ID == "" {
		return Silence{}, errors.New("add silence: the ID generator returned an empty ID")
	}
	if _, ok := s.byID[sil.ID]; ok {
		return Silence{}, fmt.Errorf("add silence: ID %q is already taken", sil.ID)
	}
	if err := s.persist(sil); err != nil {
		return Silence{}, err
	}
	s.byID[sil.ID] = sil
	return copySilence(sil), nil
}

func validateSilence(sil *Silence) error {
	if len(sil.Matchers) == 0 {
		return errors.New(`a silence needs at least one matcher, e.g. alert="GPUHot"`)
	}
	for i, m := range sil.Matchers {
		if m == nil {
			return fmt.Errorf("silence matcher %d is missing", i)
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
	return nil
}

// persist writes a silence to the store; the caller holds the lock.
func (s *Silences) persist(sil Silence) error {
	if s.st == nil {
		return nil
	}
	b, err := json.Marshal(sil)
	if err != nil {
		return fmt.Errorf("encode silence %q: %w", sil.ID, err)
	}
	if err := s.st.Put(sil.ID, b); err != nil {
		return fmt.Errorf("save silence %q: %w", sil.ID, err)
	}
	return nil
}

// Expire ends the silence with this ID at at; it stays listed as expired
// until GC forgets it. A silence that had not started yet ends before it
// begins. Expiring one that already ended returns ErrSilenceExpired.
func (s *Silences) Expire(id string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sil, ok := s.byID[id]
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
	s.byID[id] = sil
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
	s.mu.RLock()
	defer s.mu.RUnlock()
	var bestEnd time.Time
	for sid, sil := range s.byID {
		if !sil.Mutes(labels, at) {
			continue
		}
		if !muted || sil.EndsAt.After(bestEnd) || (sil.EndsAt.Equal(bestEnd) && sid < id) {
			id, bestEnd, muted = sid, sil.EndsAt, true
		}
	}
	return id, muted
}

// GC forgets the silences that ended before before, in the store too, and
// returns how many it forgot.
func (s *Silences) GC(before time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, sil := range s.byID {
		if !sil.EndsAt.Before(before) {
			continue
		}
		if s.st != nil {
			if err := s.st.Delete(id); err != nil {
				return n, fmt.Errorf("forget silence %q: %w", id, err)
			}
		}
		delete(s.byID, id)
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
