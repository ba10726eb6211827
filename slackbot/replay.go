package slackbot

import (
	"sync"
	"time"
)

// replays remembers the signature of every request verified within the
// last MaxClockSkew: Verify accepts a captured request again for that
// long, so a second request with a signature already seen is a replay
// (Slack never sends one command or click twice) and is answered without
// acting. Memory is bounded by the requests Slack sends in ten minutes.
type replays struct {
	mu   sync.Mutex
	seen map[string]time.Time // signature → when Verify stops accepting it
	adds int
}

// pruneEvery is how many new signatures pass between sweeps of the
// expired ones.
const pruneEvery = 256

// first records sig, valid until until, and reports whether it is new;
// now prunes what Verify no longer accepts.
func (r *replays) first(sig string, until, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string]time.Time{}
	}
	if exp, ok := r.seen[sig]; ok && now.Before(exp) {
		return false
	}
	r.seen[sig] = until
	if r.adds++; r.adds%pruneEvery == 0 {
		for s, exp := range r.seen {
			if !now.Before(exp) {
				delete(r.seen, s)
			}
		}
	}
	return true
}
