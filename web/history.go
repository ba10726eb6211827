package web

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// Series is one GPU's recent readings, oldest first, a point each Step;
// a reading unknown at a point is NaN.
type Series struct {
	Step        time.Duration
	End         time.Time // the time of the last point
	MemoryUsed  []float64 // percent of the memory in use
	Utilization []float64 // percent
	Temperature []float64 // degrees Celsius
}

// HistorySource gives the charts a GPU's readings over the window that
// ends now: the daemon's own history, or a hub's Prometheus.
type HistorySource interface {
	History(ctx context.Context, host string, gpu int, uuid string, window time.Duration) (Series, error)
}

// ErrUnknownGPU is what a HistorySource answers for a GPU it has no
// readings of.
var ErrUnknownGPU = errors.New("no readings of this GPU")

// Windows of GET /api/v1/history.
const (
	DefaultHistoryWindow = 6 * time.Hour
	MaxHistoryWindow     = 24 * time.Hour
)

// historyJSON is GET /api/v1/history: times in Unix seconds, readings
// null where unknown.
type historyJSON struct {
	Host        string           `json:"host"`
	GPU         int              `json:"gpu"`
	StepSeconds float64          `json:"step_seconds"`
	Times       []int64          `json:"times"`
	MemoryUsed  []notifier.Float `json:"memory_used_percent"`
	Utilization []notifier.Float `json:"utilization_percent"`
	Temperature []notifier.Float `json:"temperature_c"`
}

// history answers GET /api/v1/history?host=H&gpu=N&window=6h. An empty
// host is this gpuwatch's own (on a hub, the host must be named); uuid=U
// picks a MIG instance of GPU N (or any GPU by its UUID).
func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	host := q.Get("host")
	gpu, err := strconv.Atoi(q.Get("gpu"))
	if err != nil || gpu < 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("gpu=%q: give the GPU's index, e.g. gpu=0", q.Get("gpu")))
		return
	}
	window := DefaultHistoryWindow
	if v := q.Get("window"); v != "" {
		window, err = strictyaml.ParseDuration(v)
		if err != nil || window < time.Minute || window > MaxHistoryWindow {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("window=%q: give a duration from 1m to %s, e.g. 6h", v, "24h"))
			return
		}
	}
	if s.opts.History == nil {
		writeError(w, http.StatusNotFound, "this gpuwatch keeps no history")
		return
	}
	series, err := s.opts.History.History(r.Context(), host, gpu, q.Get("uuid"), window)
	switch {
	case errors.Is(err, ErrUnknownGPU):
		writeError(w, http.StatusNotFound, fmt.Sprintf("no readings of GPU %d on %s: see /api/v1/status for the GPUs there are", gpu, hostOrHere(host)))
		return
	case err != nil:
		writeError(w, http.StatusBadGateway, "cannot read the history: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, seriesJSON(host, gpu, series))
}

func hostOrHere(host string) string {
	if host == "" {
		return "this host"
	}
	return "host " + strconv.Quote(host)
}

// seriesJSON lays a series out as the charts read it.
func seriesJSON(host string, gpu int, s Series) historyJSON {
	n := len(s.MemoryUsed)
	out := historyJSON{Host: host, GPU: gpu, StepSeconds: s.Step.Seconds(), Times: make([]int64, n),
		MemoryUsed: floats(s.MemoryUsed, n), Utilization: floats(s.Utilization, n), Temperature: floats(s.Temperature, n)}
	for i := range n {
		out.Times[i] = s.End.Add(-time.Duration(n-1-i) * s.Step).Unix()
	}
	return out
}

// floats is v as JSON numbers (NaN as null), n long: a series shorter than
// the times is padded with nulls at its start.
func floats(v []float64, n int) []notifier.Float {
	out := make([]notifier.Float, n)
	pad := n - len(v)
	for i := range out {
		if i < pad {
			out[i] = notifier.Float(math.NaN())
			continue
		}
		out[i] = notifier.Float(v[i-pad])
	}
	return out
}
