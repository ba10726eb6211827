package gpu

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// What one snapshot may hold. gpuwatch keeps state per host, GPU and user
// (alert states, usage rollups, Slack message references) under store
// keys made of these names, and a key cannot pass 32 KiB; it keeps state
// in memory per GPU. A source that reads outside input (a hub's
// Prometheus, a replayed log) refuses what passes these limits where it
// reads it, in bounded memory, and Admit checks every snapshot again
// before it is evaluated: what cannot be kept never reaches the rules.
const (
	// MaxDevices is the most GPUs and MIG instances one snapshot (one
	// host) may have: eight GPUs split in seven instances each, and their
	// parents, are 64.
	MaxDevices = 128
	// MaxNameBytes is the longest host name, GPU UUID or user name, in
	// bytes: a DNS name has at most 253, a GPU's UUID 40, a MIG
	// instance's 45.
	MaxNameBytes = 1024
)

// Admit checks s against the limits, in place: a GPU whose UUID (or MIG
// parent's) is longer than MaxNameBytes is left out, and so are the GPUs
// past the first MaxDevices; a process's user longer than MaxNameBytes is
// clipped to it. It returns what it left out or clipped, in words, for
// the log. A host name longer than MaxNameBytes refuses the whole
// snapshot: ok is false, and the snapshot must not be evaluated.
func Admit(s *Snapshot) (problems []string, ok bool) {
	if len(s.Host) > MaxNameBytes {
		return []string{fmt.Sprintf("host %s has a name of %d bytes, more than the %d gpuwatch keeps: its snapshot is left out",
			Clip(s.Host, 64), len(s.Host), MaxNameBytes)}, false
	}
	kept := s.Devices[:0]
	for i := range s.Devices {
		d := &s.Devices[i]
		id := d.UUID
		if d.MIG != nil && len(d.MIG.ParentUUID) > len(id) {
			id = d.MIG.ParentUUID
		}
		switch {
		case len(id) > MaxNameBytes:
			problems = append(problems, fmt.Sprintf("%s of host %s has a UUID of %d bytes, more than the %d gpuwatch keeps: it is left out",
				d.Label(), Clip(s.Host, 64), len(id), MaxNameBytes))
			continue
		case len(kept) == MaxDevices:
			problems = append(problems, fmt.Sprintf("host %s reports %d GPUs, more than the %d gpuwatch watches on one host: those past %s are left out",
				Clip(s.Host, 64), len(s.Devices), MaxDevices, kept[len(kept)-1].Label()))
			s.Devices = kept
			return problems, true
		}
		for j := range d.Processes {
			if p := &d.Processes[j]; len(p.User) > MaxNameBytes {
				problems = append(problems, fmt.Sprintf("a process on %s of host %s has a user name of %d bytes: clipped to %d",
					d.Label(), Clip(s.Host, 64), len(p.User), MaxNameBytes))
				p.User = clipBytes(p.User, MaxNameBytes)
			}
		}
		kept = append(kept, *d)
	}
	s.Devices = kept
	return problems, true
}

// Clip quotes the start of text for a message, at most n bytes of it,
// saying how long it is when it is longer: "node1" or
// "aaaa… (33813 bytes)".
func Clip(text string, n int) string {
	if len(text) <= n {
		return strconv.Quote(text)
	}
	return strconv.Quote(clipBytes(text, n)) + "… (" + strconv.Itoa(len(text)) + " bytes)"
}

// clipBytes cuts text to at most n bytes, not in the middle of a
// character.
func clipBytes(text string, n int) string {
	if len(text) <= n {
		return text
	}
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n]
}
