package digest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// GPUHealth is one GPU's health when the report is made: its condition in
// one word (ok, degraded, needs reset, needs service) and why.
type GPUHealth struct {
	Host    string      `json:"host,omitempty"`
	GPU     int         `json:"gpu"`
	UUID    string      `json:"uuid"`
	Verdict gpu.Verdict `json:"verdict"`
}

// MaxHealthLines is how many GPUs that are not ok a report lists.
const MaxHealthLines = 20

// buildHealth keeps the GPUs' verdicts, the worst first, then by host and
// index; none when no GPU gives a health reading and none is known to be
// amiss (a log without health columns says nothing of it).
func (r *Report) buildHealth(health []GPUHealth) {
	if !slices.ContainsFunc(health, func(h GPUHealth) bool { return h.Verdict.Known || h.Verdict.Condition != gpu.ConditionOK }) {
		return
	}
	r.Health = slices.Clone(health)
	slices.SortStableFunc(r.Health, func(a, b GPUHealth) int {
		return cmp.Or(cmp.Compare(b.Verdict.Condition, a.Verdict.Condition), cmp.Compare(a.Host, b.Host), cmp.Compare(a.GPU, b.GPU))
	})
}

// healthSection says how many GPUs are in each condition, and each that
// is not ok with why: "GPU 3 needs reset: XID 79: the GPU has fallen off
// the bus — reset the GPU or reboot the node".
func (r *Report) healthSection(st style) section {
	counts := map[gpu.Condition]int{}
	known := 0
	for _, h := range r.Health {
		counts[h.Verdict.Condition]++
		if h.Verdict.Known {
			known++
		}
	}
	var parts []string
	for c := gpu.ConditionNeedsService; ; c-- {
		if counts[c] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[c], c))
		}
		if c == gpu.ConditionOK {
			break
		}
	}
	lines := []string{strings.Join(parts, ", ") + " now"}
	if known < len(r.Health) {
		lines[0] += fmt.Sprintf(" (%d of %d GPUs give health readings)", known, len(r.Health))
	}
	shown := 0
	for i := range r.Health {
		h := &r.Health[i]
		if h.Verdict.Condition == gpu.ConditionOK {
			break
		}
		if shown == MaxHealthLines {
			lines = append(lines, fmt.Sprintf("…and %d more", counts[gpu.ConditionDegraded]+counts[gpu.ConditionNeedsReset]+counts[gpu.ConditionNeedsService]-shown))
			break
		}
		lines = append(lines, fmt.Sprintf("%s %s: %s", r.gpuName(h.Host, h.GPU, nil, st), h.Verdict.Condition, strings.Join(h.Verdict.Reasons, "; ")))
		shown++
	}
	return section{heading: "Health", lines: lines}
}
