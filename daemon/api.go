package daemon

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/slackbot"
)

// maxBody is the largest request body the API reads.
const maxBody = 1 << 20

// serve starts the HTTP API on server.listen; it stops when ctx ends.
func (d *Daemon) serve(ctx context.Context) (*http.Server, error) {
	cert, err := d.cfg.Server.LoadCertificate()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", d.cfg.Server.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (server.listen): %w", d.cfg.Server.Listen, err)
	}
	if cert != nil {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12})
	}
	d.addr.Store(ln.Addr().String())
	srv := &http.Server{
		Handler:           d.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.logger.Error("the HTTP API stopped", "err", err)
		}
	}()
	d.logger.Info("HTTP API listening", "addr", d.Addr(), "tls", cert != nil, "authentication", d.auth != nil)
	return srv, nil
}

// Addr is the address the HTTP API listens on, once Run has started it.
func (d *Daemon) Addr() string {
	addr, _ := d.addr.Load().(string)
	return addr
}

// Handler serves the HTTP API:
//
//	GET    /healthz                  ok, or 503 and why: no recent sample, a stalled or failing store
//	GET    /metrics                  Prometheus metrics
//	GET    /api/v1/status            the latest snapshot of the GPUs and the active alerts
//	GET    /api/v1/alerts            the pending and firing alerts
//	GET    /api/v1/silences          silences, active first; ?limit=100&offset=0 pages them
//	POST   /api/v1/silences          {"matchers":["alert=\"GPUHot\""],"duration":"2h","created_by":"alice","comment":"fan repair"}
//	DELETE /api/v1/silences/{id}     expire a silence now
//	GET    /api/v1/outbox            notifications waiting per receiver, and the dead letters
//	GET    /api/v1/digest            the usage digest; ?window=24h&name=daily&format=text|markdown|blocks|json|png
//	GET    /api/v1/charts/ID.png             a chart a notification names (its chart_url)
//	POST   /slack/commands, /slack/actions   the Slack app, when slack.signing_secret is set
//	GET    /                         the page in the browser (package web), with its files and answers
//
// A known path asked with another method gets 405. With server.tls it is
// served over HTTPS; with server.bearer_token(_file) or
// server.basic_auth_users every path but /healthz, /slack/ and the page's
// files asks for credentials (401 without), or a browser login session
// (/login). A browser's request that changes state for another site's
// page is refused (403).
func (d *Daemon) Handler() http.Handler {
	mux := http.NewServeMux()
	d.page.Register(mux)
	mux.HandleFunc("GET /healthz", d.healthz)
	mux.Handle("GET /metrics", d.metricsHandler())
	mux.HandleFunc("GET /api/v1/status", d.status)
	mux.HandleFunc("GET /api/v1/alerts", d.alerts)
	if slack := d.SlackHandler(); slack != nil {
		mux.Handle("/slack/", slack)
	}
	mux.HandleFunc("GET /api/v1/silences", d.listSilences)
	mux.HandleFunc("POST /api/v1/silences", d.addSilence)
	mux.HandleFunc("DELETE /api/v1/silences/{id}", d.expireSilence)
	mux.HandleFunc("GET /api/v1/outbox", d.outbox)
	mux.HandleFunc("GET /api/v1/digest", d.digestText)
	mux.HandleFunc("GET /api/v1/charts/{file}", d.chartFile)
	return d.pageHandler(http.MaxBytesHandler(mux, maxBody))
}

// SilenceJSON is a silence as the API shows it.
type SilenceJSON struct {
	ID        string    `json:"id"`
	Matchers  []string  `json:"matchers"`
	StartsAt  time.Time `json:"starts_at"`
	EndsAt    time.Time `json:"ends_at"`
	CreatedBy string    `json:"created_by"`
	Comment   string    `json:"comment"`
	State     string    `json:"state"` // active | pending | expired
	// Warnings, in the answer to a new silence, say what in it looks
	// wrong: a matcher on an alert name no rule has.
	Warnings []string `json:"warnings,omitempty"`
}

func silenceJSON(s notifier.Silence, now time.Time) SilenceJSON {
	out := SilenceJSON{ID: s.ID, StartsAt: s.StartsAt, EndsAt: s.EndsAt, CreatedBy: s.CreatedBy, Comment: s.Comment, State: "active"}
	for _, m := range s.Matchers {
		out.Matchers = append(out.Matchers, m.String())
	}
	switch {
	case now.Before(s.StartsAt):
		out.State = "pending"
	case !now.Before(s.EndsAt):
		out.State = "expired"
	}
	return out
}

// Pages of GET /api/v1/silences: ?limit=N (default and most below) and
// ?offset=M; the X-Total-Count header says how many there are in all.
const (
	defaultSilencePage = 100
	maxSilencePage     = 1000
)

func (d *Daemon) listSilences(w http.ResponseWriter, r *http.Request) {
	offset, limit, err := page(r, defaultSilencePage, maxSilencePage)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	now := d.opts.Now()
	all := d.silences.List(now)
	out := []SilenceJSON{}
	for _, s := range all[min(offset, len(all)):min(offset+limit, len(all))] {
		out = append(out, silenceJSON(s, now))
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(len(all)))
	writeJSON(w, http.StatusOK, out)
}

// page reads ?offset= and ?limit= (limit defaults to def and may not pass most).
func page(r *http.Request, def, most int) (offset, limit int, err error) {
	limit = def
	for name, dst := range map[string]*int{"offset": &offset, "limit": &limit} {
		v := r.URL.Query().Get(name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || (name == "limit" && (n == 0 || n > most)) {
			return 0, 0, fmt.Errorf("%s=%q: use a whole number (limit 1 to %d)", name, v, most)
		}
		*dst = n
	}
	return offset, limit, nil
}

// NewSilenceJSON is the body of POST /api/v1/silences.
type NewSilenceJSON struct {
	Matchers  []string  `json:"matchers"`
	Duration  string    `json:"duration"`  // from now, e.g. "2h"; or
	EndsAt    time.Time `json:"ends_at"`   // an end time
	StartsAt  time.Time `json:"starts_at"` // default now
	CreatedBy string    `json:"created_by"`
	Comment   string    `json:"comment"`
}

func (d *Daemon) addSilence(w http.ResponseWriter, r *http.Request) {
	var req NewSilenceJSON
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "the body is over 1 MiB")
			return
		}
		writeError(w, http.StatusBadRequest, "the body is not a silence: "+err.Error())
		return
	}
	now := d.opts.Now()
	sil := notifier.Silence{StartsAt: req.StartsAt, EndsAt: req.EndsAt, CreatedBy: req.CreatedBy, Comment: req.Comment}
	if sil.StartsAt.IsZero() {
		sil.StartsAt = now
	}
	if req.Duration != "" {
		dur, err := time.ParseDuration(req.Duration)
		if err != nil || dur <= 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("duration %q: write it like 30m or 2h", req.Duration))
			return
		}
		sil.EndsAt = sil.StartsAt.Add(dur)
	}
	for _, text := range req.Matchers {
		m, err := notifier.ParseMatcher(text)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("matcher %q: %v", text, err))
			return
		}
		sil.Matchers = append(sil.Matchers, m)
	}
	added, err := d.AddSilence(sil)
	switch {
	case errors.Is(err, notifier.ErrTooManySilences):
		writeError(w, http.StatusConflict, err.Error())
		return
	case storeFailed(err):
		writeStoreFailed(w, err)
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	out := silenceJSON(added, now)
	out.Warnings = d.silenceWarnings(added.Matchers)
	writeJSON(w, http.StatusCreated, out)
}

func (d *Daemon) expireSilence(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := d.ExpireSilence(id); storeFailed(err) {
		writeStoreFailed(w, err)
		return
	} else if err != nil {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": id, "state": "expired"})
}

// storeFailed reports whether a write request failed because the store
// did not take it (stalled, or refused), not because of the request.
func storeFailed(err error) bool {
	return errors.Is(err, ErrStoreStalled) || errors.Is(err, notifier.ErrSilenceNotSaved)
}

// writeStoreFailed answers a write the store did not take: 503, try again
// in a while.
func writeStoreFailed(w http.ResponseWriter, err error) {
	w.Header().Set("Retry-After", "30")
	writeError(w, http.StatusServiceUnavailable, err.Error())
}

// OutboxJSON is GET /api/v1/outbox.
type OutboxJSON struct {
	Pending     map[string]int   `json:"pending"` // per receiver
	DeadLetters []DeadLetterJSON `json:"dead_letters"`
}

// DeadLetterJSON is a notification a receiver refused for good.
type DeadLetterJSON struct {
	Receiver string    `json:"receiver"`
	ID       uint64    `json:"id"`
	At       time.Time `json:"at"`
	Attempts int       `json:"attempts"`
	Reason   string    `json:"reason"`
	Status   string    `json:"status"`
	Alerts   []string  `json:"alerts"` // "GPUHot on GPU 3"
}

func (d *Daemon) outbox(w http.ResponseWriter, _ *http.Request) {
	out := OutboxJSON{Pending: d.depth.snapshot(), DeadLetters: []DeadLetterJSON{}}
	dead, err := d.db.DeadLetters(100)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "cannot read the dead letters")
		return
	}
	for _, dl := range dead {
		item := DeadLetterJSON{Receiver: dl.Receiver, ID: dl.ID, At: dl.At, Attempts: dl.Attempts, Reason: dl.Reason}
		var n notifier.Notification
		if json.Unmarshal(dl.Payload, &n) == nil {
			item.Status = string(n.Status)
			for _, a := range n.Alerts {
				item.Alerts = append(item.Alerts, a.Name+" on "+a.Subject())
			}
		}
		out.DeadLetters = append(out.DeadLetters, item)
	}
	writeJSON(w, http.StatusOK, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// StatusJSON is GET /api/v1/status: the latest snapshot of the GPUs and
// the active alerts. Time is null and GPUs empty before the first sample.
// Host, Time and GPUs are the latest snapshot's (of any host, on a hub);
// Hosts has the latest snapshot of every host, sorted by host.
type StatusJSON struct {
	Host   string      `json:"host"`
	Time   *time.Time  `json:"time"`
	GPUs   []GPUJSON   `json:"gpus"`
	Hosts  []HostJSON  `json:"hosts"`
	Alerts []AlertJSON `json:"alerts"`
}

// HostJSON is one host's latest snapshot. A host whose GPUs all stopped
// reporting has no GPUs.
type HostJSON struct {
	Host string    `json:"host"`
	Time time.Time `json:"time"`
	GPUs []GPUJSON `json:"gpus"`
}

// GPUJSON is one GPU's readings; a reading the GPU does not provide is
// null (memory too, when its total is unknown). Utilization is in percent.
type GPUJSON struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"` // the GPU's, or the MIG instance's
	Name  string `json:"name"`
	// Label names the GPU for people: "GPU 0", "GPU 0 · MIG 3 (1g.10gb)".
	Label string `json:"label"`
	// MIGEnabled says the GPU is split into MIG instances, which follow
	// it: it keeps the card's readings (temperature, power), its memory
	// and processes are theirs.
	MIGEnabled bool `json:"mig_enabled,omitempty"`
	// MIG is, for a MIG instance, which slice of which GPU it is.
	MIG               *gpu.MIG       `json:"mig,omitempty"`
	MemoryUsedBytes   *uint64        `json:"memory_used_bytes"`
	MemoryTotalBytes  *uint64        `json:"memory_total_bytes"`
	UtilizationGPU    notifier.Float `json:"utilization_gpu"`
	UtilizationMemory notifier.Float `json:"utilization_memory"`
	TemperatureC      notifier.Float `json:"temperature_c"`
	PowerW            notifier.Float `json:"power_w"`
	PowerLimitW       notifier.Float `json:"power_limit_w"`
	Processes         []gpu.Process  `json:"processes"`
	// Use is what the GPU is doing, as /gpu status counts it: "free" (no
	// process and under 1 GiB of memory in use), "busy", or "idle-held"
	// (held while computing nothing).
	// A GPU split into MIG instances has the use "mig": its instances have
	// theirs.
	Use string `json:"use"`
	// HeldSince is when the job that holds the GPU took it, as the rules
	// engine saw it; null while the GPU is free.
	HeldSince *time.Time `json:"held_since"`
	// Health is the GPU's condition and why, and the health readings it
	// gives.
	Health HealthJSON `json:"health"`
}

// HealthJSON is a GPU's health: its condition ("ok", "degraded", "needs
// reset", "needs service"), the reasons of it, whether the GPU gives any
// health reading (known), and those readings by name (the rule language's
// names: ecc.uncorrected.volatile, row_remap.pending, throttle.reasons,
// pcie.link.width, …).
type HealthJSON struct {
	gpu.Verdict
	Readings gpu.Health `json:"readings"`
}

// AlertJSON is a pending or firing alert. Since is when it went pending,
// or when it fired.
type AlertJSON struct {
	Key      string   `json:"key"`
	Alert    string   `json:"alert"`
	Severity string   `json:"severity"`
	State    string   `json:"state"`
	Host     string   `json:"host"`
	GPU      int      `json:"gpu"` // -1 for an alert not about a GPU (GPUWatchSourceDown)
	UUID     string   `json:"uuid"`
	Label    string   `json:"label,omitempty"` // "GPU 0", "GPU 0 · MIG 3 (1g.10gb)"; absent when not about a GPU
	MIG      *gpu.MIG `json:"mig,omitempty"`
	// Process is the process of a rule that runs per process; absent for
	// a rule on the GPU.
	Process        *gpu.Process `json:"process,omitempty"`
	Since          time.Time    `json:"since"`
	ValueText      string       `json:"value_text"`
	Summary        string       `json:"summary"`
	AcknowledgedBy string       `json:"acknowledged_by,omitempty"`
	// Answer is what the owner of its job answered, if one did: "alice
	// (U0123) is still using it · asked again at Mon 16:00 UTC".
	Answer string `json:"answer,omitempty"`
	// Silenced is the silence that mutes the alert now; absent when none
	// does. A silenced alert still fires: its notifications are not sent.
	Silenced *SilencedJSON `json:"silenced,omitempty"`
}

// SilencedJSON says which silence mutes an alert, until when and by whom.
type SilencedJSON struct {
	ID        string    `json:"id"`
	EndsAt    time.Time `json:"ends_at"`
	CreatedBy string    `json:"created_by"`
	Comment   string    `json:"comment,omitempty"`
}

func gpuJSON(dev *gpu.Device) GPUJSON {
	out := GPUJSON{
		Index: dev.Index, UUID: dev.UUID, Name: dev.Name, Label: dev.Label(), MIGEnabled: dev.MIGEnabled, MIG: dev.MIG,
		UtilizationGPU: notifier.Float(dev.UtilGPU), UtilizationMemory: notifier.Float(dev.UtilMem),
		TemperatureC: notifier.Float(dev.TempC), PowerW: notifier.Float(dev.PowerW), PowerLimitW: notifier.Float(dev.PowerLimitW),
		Processes: dev.Processes, Use: slackbot.UseOf(dev),
	}
	if dev.MemKnown() {
		used, total := dev.MemUsed, dev.MemTotal
		out.MemoryUsedBytes, out.MemoryTotalBytes = &used, &total
	}
	if out.Processes == nil {
		out.Processes = []gpu.Process{}
	}
	return out
}

// alertsJSON is the active alerts, firing first, as the API shows them.
func (d *Daemon) alertsJSON() []AlertJSON {
	active := d.Alerts()
	out := make([]AlertJSON, len(active))
	for i, a := range active {
		out[i] = AlertJSON{Key: a.Key, Alert: a.Name, Severity: a.Severity, State: a.State, Host: a.Host, GPU: a.GPU, UUID: a.UUID,
			MIG: a.MIG, Process: a.Process, Since: a.Since, ValueText: a.ValueText, Summary: a.Summary, AcknowledgedBy: a.Acknowledged, Answer: a.Answer}
		if a.GPU >= 0 {
			out[i].Label = gpu.Label(a.GPU, a.MIG)
		}
		if s := a.Silenced; s != nil {
			out[i].Silenced = &SilencedJSON{ID: s.ID, EndsAt: s.EndsAt, CreatedBy: s.CreatedBy, Comment: s.Comment}
		}
	}
	return out
}

func (d *Daemon) status(w http.ResponseWriter, _ *http.Request) {
	out := StatusJSON{GPUs: []GPUJSON{}, Hosts: []HostJSON{}, Alerts: d.alertsJSON()}
	if snap := d.Snapshot(); snap != nil {
		at := snap.Time
		out.Host, out.Time, out.GPUs = snap.Host, &at, gpusJSON(snap)
	}
	for _, snap := range d.Snapshots() {
		out.Hosts = append(out.Hosts, HostJSON{Host: snap.Host, Time: snap.Time, GPUs: d.healthJSON(snap, gpusJSON(snap))})
	}
	if snap := d.Snapshot(); snap != nil {
		d.healthJSON(snap, out.GPUs)
	}
	d.mu.Lock()
	for _, gpus := range append([][]GPUJSON{out.GPUs}, hostGPUs(out.Hosts)...) {
		for i := range gpus {
			if since := d.engine.HeldSince(gpus[i].UUID, gpus[i].Index); !since.IsZero() {
				gpus[i].HeldSince = &since
			}
		}
	}
	d.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// hostGPUs is the GPUs of each host.
func hostGPUs(hosts []HostJSON) [][]GPUJSON {
	out := make([][]GPUJSON, len(hosts))
	for i := range hosts {
		out[i] = hosts[i].GPUs
	}
	return out
}

// healthJSON fills in the health of gpus, the GPUs of snap, and returns
// them.
func (d *Daemon) healthJSON(snap *gpu.Snapshot, gpus []GPUJSON) []GPUJSON {
	for i := range gpus {
		dev := &snap.Devices[i]
		gpus[i].Health = HealthJSON{Verdict: d.Verdict(snap.Host, dev), Readings: dev.Health}
	}
	return gpus
}

func gpusJSON(snap *gpu.Snapshot) []GPUJSON {
	out := make([]GPUJSON, len(snap.Devices))
	for i := range snap.Devices {
		out[i] = gpuJSON(&snap.Devices[i])
	}
	return out
}

func (d *Daemon) alerts(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, d.alertsJSON())
}
