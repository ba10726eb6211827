package daemon

import (
	"context"
	"net/http"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/web"
)

// newPage makes the page in the browser, reading through the daemon.
func (d *Daemon) newPage() (*web.Server, error) {
	return web.New(web.Options{Info: d.pageInfo, History: daemonHistory{d}, Logger: d.logger, Now: d.opts.Now})
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
	return web.Protect(api)
}

// daemonHistory is the history the daemon keeps of every GPU it sampled,
// a point a minute for a day, for the page's charts.
type daemonHistory struct{ d *Daemon }

func (h daemonHistory) History(_ context.Context, host string, gpu int, window time.Duration) (web.Series, error) {
	got, ok := h.d.History(host, gpu, window)
	if !ok {
		return web.Series{}, web.ErrUnknownGPU
	}
	return web.Series{Step: got.Step, End: got.End, MemoryUsed: got.MemoryUsed, Utilization: got.Utilization, Temperature: got.Temperature}, nil
}
