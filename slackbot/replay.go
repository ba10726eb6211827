package slackbot

import (
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// replays remembers the signature of every request verified within the
// last MaxClockSkew: Verify accepts a captured request again for that
// long, so a second request with a signature already seen is a replay
// (Slack never sends one command or click twice) and is answered without
// acting. A signature is the HMAC itself, decoded from its hex, so that
// the same one in upper case is the same. With a ReplayStore the
// signatures outlive a restart for their five minutes: each is written
// before its request acts. Memory is bounded by the requests Slack sends
// in ten minutes.
type replays struct {
	st   ReplayStore // nil: memory only
	mu   sync.Mutex
	seen map[string]time.Time // hex of the signature → when Verify stops accepting it
	adds int
}

// ReplayStore keeps the signatures of the requests the app acted on, for
// the five minutes Verify would accept them again, across restarts. The
// daemon keeps them in its store; values are opaque bytes.
type ReplayStore interface {
	All() (map[string][]byte, error)
	// Update puts and deletes records in one write.
	Update(put map[string][]byte, del []string) error
	// SetAside takes a record that cannot be read out of the way, keeping
	// its bytes, and says so.
	SetAside(key string, why error)
}

// errReplayNotSaved is why a request is refused when the store does not
// take its signature: acting on it would let it act again after a restart.
var errReplayNotSaved = errors.New("cannot record the request to refuse it if it is sent again")

// pruneEvery is how many new signatures pass between sweeps of the
// expired ones.
const pruneEvery = 256

// load takes back the signatures a previous run kept that Verify still
// accepts at now, and deletes the others from the store.
func (r *replays) load(now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = map[string]time.Time{}
	if r.st == nil {
		return nil
	}
	all, err := r.st.All()
	if err != nil {
		return fmt.Errorf("read the signatures of recent Slack requests: %w", err)
	}
	var expired []string
	for key, v := range all {
		var until time.Time
		if err := until.UnmarshalText(v); err != nil {
			r.st.SetAside(key, fmt.Errorf("not a time: %w", err))
			continue
		}
		if now.Before(until) {
			r.seen[key] = until
		} else {
			expired = append(expired, key)
		}
	}
	if len(expired) > 0 {
		if err := r.st.Update(nil, expired); err != nil {
			return fmt.Errorf("forget the signatures of old Slack requests: %w", err)
		}
	}
	return nil
}

// first records sig, valid until until, and reports whether it is new;
// now prunes what Verify no longer accepts. A new signature is kept in
// the store before first returns; when the store refuses it, first
// forgets it again and returns an error.
func (r *replays) first(sig []byte, until, now time.Time) (bool, error) {
	key := hex.EncodeToString(sig)
	r.mu.Lock()
	if r.seen == nil {
		r.seen = map[string]time.Time{}
	}
	if exp, ok := r.seen[key]; ok && now.Before(exp) {
		r.mu.Unlock()
		return false, nil
	}
	r.seen[key] = until
	var expired []string
	if r.adds++; r.adds%pruneEvery == 0 {
		for s, exp := range r.seen {
			if !now.Before(exp) {
				delete(r.seen, s)
				expired = append(expired, s)
			}
		}
	}
	r.mu.Unlock()
	if r.st == nil {
		return true, nil
	}
	v, _ := until.MarshalText() // a time from a header's Unix seconds always marshals
	if err := r.st.Update(map[string][]byte{key: v}, expired); err != nil {
		r.mu.Lock()
		delete(r.seen, key)
		r.mu.Unlock()
		return false, fmt.Errorf("%w: %w", errReplayNotSaved, err)
	}
	return true, nil
}
