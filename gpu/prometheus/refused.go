package prometheus

import (
	"strconv"
	"strings"
	"sync"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// A series with a label value gpuwatch reads that is longer than
// MaxLabelBytes is left out where the answer is read, without holding the
// value: the names of hosts, GPUs and users become store keys, which
// cannot be that long, and one such series must not cost the rest of the
// fleet its alerts. The log names each such series once.

// badLabel is the first label of a series too long to read.
type badLabel struct {
	label string // its name; "" for none
	size  int64  // its value's length, as sent
	start string // the first bytes of its value, as sent
}

// describe names the series of ls whose label b is too long, for the
// log: its name and the labels that say where it is from.
func (b *badLabel) describe(ls *labelSet) string {
	var parts []string
	for _, l := range [...]struct{ name, value string }{
		{"host", ls.host}, {"hostname", ls.hostname}, {"instance", ls.instance}, {"job", ls.job},
		{"gpu", ls.gpu}, {"uuid", ls.uuid}, {"UUID", ls.uuidDCGM},
	} {
		if l.value != "" {
			parts = append(parts, l.name+"="+gpu.Clip(l.value, maxQuoted))
		}
	}
	parts = append(parts, clip(b.label, maxQuoted)+"="+strconv.Quote(b.start)+"… ("+strconv.FormatInt(b.size, 10)+" bytes)")
	return clip(ls.name, 2*maxQuoted) + "{" + strings.Join(parts, ", ") + "}"
}

// maxRefusedNamed is how many series left out an answer describes.
const maxRefusedNamed = 10

// refuse counts a series left out, described.
func (a *answer) refuse(series string) {
	if a.refusedCount++; len(a.refused) < maxRefusedNamed {
		a.refused = append(a.refused, series)
	}
}

// maxRefusedRemembered bounds the series left out that the log has
// named: past it, new ones are counted, not named.
const maxRefusedRemembered = 1024

// refusedLog is the series left out that the log has named, shared by
// the queries of a Source.
type refusedLog struct {
	mu    sync.Mutex
	named map[string]bool
}

func newRefusedLog() *refusedLog { return &refusedLog{named: map[string]bool{}} }

// logRefused names, once each, the series an answer left out.
func (q *querier) logRefused(a *answer) {
	r := q.refused
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range a.refused {
		if r.named[s] || len(r.named) >= maxRefusedRemembered {
			continue
		}
		r.named[s] = true
		q.opts.Logger.Warn("a series is left out: a label gpuwatch reads is longer than "+strconv.Itoa(MaxLabelBytes)+
			" bytes (gpuwatch keeps state under these names); fix what exports it, or drop the label with metric_relabel_configs",
			"url", q.opts.URL, "series", s)
	}
	if more := a.refusedCount - len(a.refused); more > 0 {
		q.opts.Logger.Debug("more series with a label too long to read left out", "series", more)
	}
}
