package alertmanager

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// firingSet is the receiver's firing alerts as they were last pushed, but
// for endsAt, which each re-send sets afresh. It lives in memory, where
// it is the truth while the process lives, and in the store for restarts.
// A store that refuses a write delays it (it is tried again with the next
// change or re-send), never stops a push; a stalled one stalls no push,
// as writes happen outside the notifier's lock.
type firingSet struct {
	receiver string
	store    FiringStore // nil: memory only
	log      *slog.Logger

	mu      sync.Mutex               // guards alerts and unsaved
	alerts  map[string]postableAlert // by alert key
	unsaved map[string][]byte        // store key → record to write; nil: to delete

	writing sync.Mutex // one writer at a time, so writes keep their order
}

// loadFiring reads the receiver's firing alerts from the store. Records it
// cannot read are set aside (they are not re-sent).
func loadFiring(receiver string, store FiringStore, log *slog.Logger) (*firingSet, error) {
	s := &firingSet{receiver: receiver, store: store, log: log, alerts: map[string]postableAlert{}, unsaved: map[string][]byte{}}
	if store == nil {
		return s, nil
	}
	all, err := store.All()
	if err != nil {
		return nil, fmt.Errorf("read the firing alerts to re-send: %w", err)
	}
	prefix := receiver + "/"
	for key, raw := range all {
		alertKey, ok := strings.CutPrefix(key, prefix)
		if !ok {
			continue // another receiver's
		}
		var p postableAlert
		if err := json.Unmarshal(raw, &p); err != nil || len(p.Labels) == 0 {
			if err == nil {
				err = errors.New("it has no labels")
			}
			store.SetAside(key, fmt.Errorf("not a firing alert: %w: it is not re-sent", err))
			continue
		}
		s.alerts[alertKey] = p
	}
	return s, nil
}

// remember records alerts as firing, as posted (posted[i] is alerts[i]).
func (s *firingSet) remember(alerts []notifier.Alert, posted []postableAlert) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range alerts {
		p := posted[i]
		p.EndsAt = time.Time{}
		s.alerts[alerts[i].Key] = p
		if s.store == nil {
			continue
		}
		raw, err := json.Marshal(p)
		if err != nil {
			s.log.Warn("cannot encode a firing alert for the store: a restart re-sends it only when it fires again", "receiver", s.receiver, "alert", alerts[i].Key, "err", err)
			continue
		}
		s.unsaved[s.storeKey(alerts[i].Key)] = raw
	}
}

// forget stops re-sending alerts.
func (s *firingSet) forget(alerts []notifier.Alert) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range alerts {
		delete(s.alerts, alerts[i].Key)
		if s.store != nil {
			s.unsaved[s.storeKey(alerts[i].Key)] = nil
		}
	}
}

// list returns the firing alerts, by key.
func (s *firingSet) list() []postableAlert {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]postableAlert, 0, len(s.alerts))
	for _, key := range slices.Sorted(maps.Keys(s.alerts)) {
		out = append(out, s.alerts[key])
	}
	return out
}

func (s *firingSet) storeKey(alertKey string) string { return s.receiver + "/" + alertKey }

// flush writes the changes the store has not taken yet, in key order.
// With wait false it returns at once when another flush is writing (a
// stalled store must not hold the re-sends); that flush, or a later one,
// writes them.
func (s *firingSet) flush(wait bool) {
	if s.store == nil {
		return
	}
	if wait {
		s.writing.Lock()
	} else if !s.writing.TryLock() {
		return
	}
	defer s.writing.Unlock()
	s.mu.Lock()
	pending := maps.Clone(s.unsaved)
	s.mu.Unlock()
	for _, key := range slices.Sorted(maps.Keys(pending)) {
		value := pending[key]
		var err error
		if value == nil {
			err = s.store.Delete(key)
		} else {
			err = s.store.Put(key, value)
		}
		if err != nil {
			s.log.Warn("the store refused a firing alert record: kept in memory and tried again; a restart before it is written re-sends from the last one written",
				"receiver", s.receiver, "key", key, "unsaved", len(pending), "err", err)
			return // the store refuses: the others would fail alike
		}
		s.mu.Lock()
		if cur, ok := s.unsaved[key]; ok && (cur == nil) == (value == nil) && bytes.Equal(cur, value) {
			delete(s.unsaved, key) // unless it changed since
		}
		s.mu.Unlock()
	}
}
