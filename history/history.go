// Package history answers "what did these GPUs do over this window?":
// memory, utilization and temperature of each GPU, one point a step, for
// charts (/gpu history, replay plots, a web page). A Recorder keeps what
// a run of snapshots showed; Prometheus reads a fleet's series with range
// queries; the daemon's own minute ring is a Source too.
package history

import (
	"context"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
)

// AllGPUs asks a Query for every GPU of its host (or hosts).
const AllGPUs = -1

// Query says which GPUs and which window to read.
type Query struct {
	Host     string // "" for every host
	GPU      int    // an index, or AllGPUs
	From, To time.Time
}

// Source reads the history of GPUs. Implementations are safe to call from
// any goroutine.
type Source interface {
	History(ctx context.Context, q Query) ([]chart.GPUHistory, error)
}
