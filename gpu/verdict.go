package gpu

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Condition is a GPU's health in one word, from the readings it gives and
// the XID errors it reported lately.
type Condition uint8

// The conditions, from best to worst.
const (
	ConditionOK           Condition = iota // nothing known is wrong
	ConditionDegraded                      // it works, slower or with less margin: a hardware slowdown, a narrow PCIe link, an NVLink link down
	ConditionNeedsReset                    // reset it (or reboot the node) once its jobs have stopped
	ConditionNeedsService                  // drain it and call NVIDIA support: it is to be repaired or replaced
)

// String is the condition as people read it: "ok", "degraded", "needs
// reset", "needs service".
func (c Condition) String() string {
	switch c {
	case ConditionDegraded:
		return "degraded"
	case ConditionNeedsReset:
		return "needs reset"
	case ConditionNeedsService:
		return "needs service"
	}
	return "ok"
}

// MarshalText writes the condition's String, for JSON.
func (c Condition) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads a condition MarshalText wrote.
func (c *Condition) UnmarshalText(b []byte) error {
	for x := ConditionOK; x <= ConditionNeedsService; x++ {
		if x.String() == string(b) {
			*c = x
			return nil
		}
	}
	return fmt.Errorf("%q is not a GPU's condition: ok, degraded, needs reset or needs service", b)
}

// Verdict is a GPU's condition and why: the reasons of the worst
// condition first. Known says whether the GPU gives any health reading:
// an ok Verdict without one says nothing is known to be wrong, no more.
type Verdict struct {
	Condition Condition `json:"condition"`
	Reasons   []string  `json:"reasons,omitempty"`
	Known     bool      `json:"known"`
}

// Reason is the first reason, "" when the GPU is ok.
func (v Verdict) Reason() string {
	if len(v.Reasons) == 0 {
		return ""
	}
	return v.Reasons[0]
}

// String writes the verdict in a line: "needs reset: a row remap is
// pending (reset the GPU when its job ends)".
func (v Verdict) String() string {
	if len(v.Reasons) == 0 {
		if !v.Known {
			return "ok (no health readings)"
		}
		return v.Condition.String()
	}
	return v.Condition.String() + ": " + strings.Join(v.Reasons, "; ")
}

// RecentXIDWindow is how long an XID error counts for a GPU's verdict:
// long enough that one reported at night is seen in the morning's digest,
// short enough that a GPU reset since is not held against it for long.
const RecentXIDWindow = 6 * time.Hour

// Assess judges a GPU from its readings and the XID errors it reported
// within RecentXIDWindow (recent; any order). Only what the GPU gives
// counts: a missing reading is no reason.
func Assess(d *Device, recent []Event) Verdict {
	v := Verdict{Known: d.Health.Known()}
	add := func(c Condition, reason string) {
		switch {
		case c > v.Condition:
			v.Condition = c
			v.Reasons = append([]string{reason}, v.Reasons...)
		case c == v.Condition:
			v.Reasons = append(v.Reasons, reason)
		}
	}
	h := &d.Health
	if h.Flag(RowRemapFailed) {
		add(ConditionNeedsService, "a row remap failed: the GPU ran out of spare rows (NVIDIA's criterion to replace it)")
	}
	if n, ok := h.Get(ECCUncorrectedVolatile); ok && n > 0 {
		add(ConditionNeedsReset, fmt.Sprintf("%g uncorrectable ECC error(s) since the driver loaded", n))
	}
	if h.Flag(RowRemapPending) {
		add(ConditionNeedsReset, "a row remap is pending: reset the GPU when its job ends")
	}
	if h.Flag(RetiredPagesPending) {
		add(ConditionNeedsReset, "a retired page is pending: reset the GPU when its job ends")
	}
	if r, ok := h.Recovery(); ok && r != RecoveryNone {
		add(ConditionNeedsReset, "the driver asks to "+r.Advice())
	}
	if e, ok := h.ClockEvents(); ok && e.Hardware() {
		add(ConditionDegraded, "slowed down in hardware ("+strings.Join(e.Names(), ", ")+")")
	}
	if w, ok := h.Get(PCIeLinkWidth); ok {
		if most, ok := h.Get(PCIeLinkWidthMax); ok && w < most {
			add(ConditionDegraded, fmt.Sprintf("PCIe link at x%g of x%g", w, most))
		}
	}
	if n, ok := h.Get(NVLinkLinksDown); ok && n > 0 {
		add(ConditionDegraded, fmt.Sprintf("%g NVLink link(s) down", n))
	}
	if fan, ok := h.Get(FanSpeed); ok && fan < 5 && d.TempC > 60 {
		add(ConditionDegraded, fmt.Sprintf("fan at %g%% while the GPU is at %g C", fan, d.TempC))
	}
	// A GPU that tells its ECC errors and remaps says whether they still
	// need a reset; the XIDs that reported them do not.
	memoryKnown := h.known&(1<<ECCUncorrectedVolatile|1<<RowRemapPending|1<<RetiredPagesPending) != 0
	for _, x := range worstXIDs(recent) {
		if memoryKnown && isMemoryXID(x.Code) {
			continue
		}
		switch x.Action {
		case ActionSupport:
			add(ConditionNeedsService, x.Text())
		case ActionReset, ActionReboot:
			add(ConditionNeedsReset, x.Text())
		}
	}
	return v
}

// isMemoryXID reports whether an XID reports an ECC error or a row remap
// or page retirement.
func isMemoryXID(code uint64) bool {
	switch code {
	case 48, 63, 64, 92, 94, 95, 140:
		return true
	}
	return false
}

// worstXIDs are the catalogue's entries of the XID codes of events, each
// once, those whose action costs most first.
func worstXIDs(events []Event) []XID {
	var out []XID
	for _, ev := range events {
		if ev.Kind != EventXID || slices.ContainsFunc(out, func(x XID) bool { return x.Code == ev.XID }) {
			continue
		}
		x, _ := LookupXID(ev.XID)
		out = append(out, x)
	}
	slices.SortStableFunc(out, func(a, b XID) int { return int(b.Action) - int(a.Action) })
	return out
}

// RecentXIDs keeps each GPU's XID errors of the last RecentXIDWindow, by
// host and UUID (else index), for Assess. A GPU that comes back after it
// stopped reporting was reset (or its node rebooted): its XIDs before are
// forgotten. It is safe for concurrent use.
type RecentXIDs struct {
	mu    sync.Mutex
	byGPU map[gpuKey][]Event
	// present are, by host, the GPUs of its previous snapshot.
	present map[string]map[gpuKey]bool
}

// gpuKey names a GPU of a host: by UUID, else by index.
type gpuKey struct {
	host, uuid string
	index      int
}

func keyOf(host, uuid string, index int) gpuKey {
	if uuid != "" {
		index = 0
	}
	return gpuKey{host, uuid, index}
}

// NewRecentXIDs returns an empty RecentXIDs.
func NewRecentXIDs() *RecentXIDs {
	return &RecentXIDs{byGPU: map[gpuKey][]Event{}, present: map[string]map[gpuKey]bool{}}
}

// Observe keeps the snapshot's XID errors and forgets those older than
// RecentXIDWindow at its time.
func (r *RecentXIDs) Observe(s *Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	before := r.present[s.Host]
	same := before != nil && len(before) == len(s.Devices) // the GPUs it had: before is kept
	for i := range s.Devices {
		k := keyOf(s.Host, s.Devices[i].UUID, s.Devices[i].Index)
		if before != nil && !before[k] {
			delete(r.byGPU, k) // back after a reset
			same = false
		}
	}
	if s.Down == "" && !same {
		now := make(map[gpuKey]bool, len(s.Devices))
		for i := range s.Devices {
			now[keyOf(s.Host, s.Devices[i].UUID, s.Devices[i].Index)] = true
		}
		r.present[s.Host] = now
	}
	for _, ev := range s.Events {
		if ev.Kind == EventXID {
			k := keyOf(s.Host, ev.UUID, ev.GPU)
			r.byGPU[k] = append(r.byGPU[k], ev)
		}
	}
	for k, evs := range r.byGPU {
		evs = slices.DeleteFunc(evs, func(ev Event) bool { return !ev.Time.After(s.Time.Add(-RecentXIDWindow)) })
		if len(evs) == 0 {
			delete(r.byGPU, k)
		} else {
			r.byGPU[k] = evs
		}
	}
}

// Of returns the XID errors of GPU d of host within RecentXIDWindow of
// now.
func (r *RecentXIDs) Of(host string, d *Device, now time.Time) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, ev := range r.byGPU[keyOf(host, d.UUID, d.Index)] {
		if ev.Time.After(now.Add(-RecentXIDWindow)) {
			out = append(out, ev)
		}
	}
	return out
}
