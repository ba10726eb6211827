package daemon

import (
	"sync"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// admit checks a snapshot against gpu's limits before it is evaluated
// (gpu.Admit): what passes them is left out, and the log says so, once
// for each thing left out. It reports whether the snapshot is evaluated
// at all (a host name too long to keep is not).
func (d *Daemon) admit(snap *gpu.Snapshot) bool {
	problems, ok := gpu.Admit(snap)
	for _, p := range problems {
		if d.leftOut.first(p) {
			d.logger.Warn("a snapshot passes what gpuwatch keeps: "+p, "limits", "docs/operations.md#limits")
		}
	}
	return ok
}

// maxSaid bounds the problems a saidOnce remembers: past it, they are
// not said again, so memory stays bounded however many there are.
const maxSaid = 1024

// saidOnce remembers what the log has said, so that it says each thing
// once.
type saidOnce struct {
	mu   sync.Mutex
	said map[string]bool
}

// first reports whether what has not been said before (and remembers
// it); false once maxSaid things have been.
func (s *saidOnce) first(what string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.said == nil {
		s.said = map[string]bool{}
	}
	if s.said[what] || len(s.said) >= maxSaid {
		return false
	}
	s.said[what] = true
	return true
}
