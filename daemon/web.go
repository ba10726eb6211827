package daemon

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/history"
	"github.com/gpuwatch/gpuwatch/web"
)

// newPage makes the page in the browser, reading through the daemon.
func (d *Daemon) newPage() (*web.Server, error) {
	return web.New(web.Options{Info: d.pageInfo, History: daemonHistory{d}, Logger: d.logger, Now: d.opts.Wall})
}

// pageInfo is what the page needs to know of this gpuwatch.
func (d *Daemon) pageInfo() web.PageInfo {
	d.mu.Lock()
	cfg := d.cfg
	d.mu.Unlock()
	info := web.PageInfo{Host: cfg.HostName(), Hub: d.hub, Refresh: sampleEvery(&cfg.Source)}
	for _, g := range cfg.Digests {
		info.Digests = append(info.Digests, g.Name)
	}
	for _, r := range cfg.Rules {
		info.Rules = append(info.Rules, r.Name)
	}
	return info
}

// sampleEvery is the wall-clock time between samples: the interval, sped
// up or slowed down for a simulation or a replay; zero when they come as
// fast as they can.
func sampleEvery(s *config.Source) time.Duration {
	speed := 1.0
	switch s.Type {
	case "sim":
		speed = s.Sim.Speed
	case "replay":
		speed = s.Replay.Speed
	}
	if speed <= 0 {
		return 0
	}
	return time.Duration(float64(s.Interval) / speed)
}

// pageHandler puts the page in front of the API: the login form and
// browser sessions where the API asks for credentials, and the headers
// and cross-origin checks every answer gets.
func (d *Daemon) pageHandler(api http.Handler) http.Handler {
	if d.auth != nil {
		api = d.page.Login(api, d.requireAuth(d.auth, api), d.auth.verifyLogin)
	}
	return d.hosts.wrap(d.logger, web.Protect(api))
}

// daemonHistory gives the page's charts their data: on a hub, the
// fleet's Prometheus; elsewhere the history the daemon keeps of every GPU
// it sampled, a point a minute for a day.
type daemonHistory struct{ d *Daemon }

// rangeReader is a source that reads its past over any window (a hub's
// Prometheus, with range queries).
type rangeReader interface {
	Range(ctx context.Context, from, to time.Time, step time.Duration, each func(*gpu.Snapshot)) error
}

// readFleetHistory makes the page's charts and /gpu history read src's
// past when src can tell it (a hub's Prometheus).
func (d *Daemon) readFleetHistory(src gpu.Source) {
	if r, ok := src.(rangeReader); ok {
		d.fleetHistory.Store(history.NewPrometheus(r.Range))
	}
}

func (h daemonHistory) History(ctx context.Context, host string, gpu int, uuid string, window time.Duration) (web.Series, error) {
	if fleet := h.d.fleetHistory.Load(); fleet != nil {
		return prometheusSeries(ctx, fleet, host, gpu, uuid, h.d.opts.Now(), window)
	}
	if s := h.d.last.Load(); s != nil && host == "" {
		host = s.Host
	}
	got, ok := h.d.history.History(host, uuid, gpu, window)
	if !ok {
		return web.Series{}, web.ErrUnknownGPU
	}
	return web.Series{Step: got.Step, End: got.End, MemoryUsed: got.MemoryUsed, Utilization: got.Utilization, Temperature: got.Temperature}, nil
}

// prometheusSeries reads host's GPU's window that ends at now from the
// fleet's Prometheus.
func prometheusSeries(ctx context.Context, fleet *history.Prometheus, host string, gpu int, uuid string, now time.Time, window time.Duration) (web.Series, error) {
	got, err := fleet.History(ctx, history.Query{Host: host, GPU: gpu, From: now.Add(-window), To: now})
	if err != nil {
		return web.Series{}, err
	}
	i := slices.IndexFunc(got, func(g chart.GPUHistory) bool { return uuid == "" && g.MIG == nil || uuid != "" && g.UUID == uuid })
	if i < 0 {
		return web.Series{}, web.ErrUnknownGPU
	}
	g := got[i]
	return web.Series{Step: g.MemoryPercent.Step, End: g.MemoryPercent.End(),
		MemoryUsed: g.MemoryPercent.Values, Utilization: g.Utilization.Values, Temperature: g.Temperature.Values}, nil
}
