package daemon

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/digest"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/rules"
)

// Buckets of the usage digests: the hourly rollups, and when each digest
// was last sent (its scheduled time, RFC 3339).
const (
	BucketRollups = "rollups"
	BucketDigests = "digests"
)

// checkpointEvery is how much sample time passes between writes of the
// rollups to the store: a crash loses at most this much usage.
const checkpointEvery = 5 * time.Minute

// digests is the daemon's usage accounting and digest schedule.
type digests struct {
	rollups    *digest.Rollups
	scheduler  *digest.Scheduler
	checkpoint time.Time // sample time of the last checkpoint; zero before the first sample
}

// startDigests restores the rollups and the digests' last-sent times from
// the store and builds the scheduler; a digest never sent before first
// runs at its first scheduled time from now.
func (d *Daemon) startDigests(cfg *config.Config) (*digests, error) {
	g := &digests{rollups: digest.NewRollups()}
	records, err := d.db.All(BucketRollups)
	if err != nil {
		return nil, fmt.Errorf("load usage rollups: %w", err)
	}
	if err := g.rollups.Load(records); err != nil {
		var bad *digest.LoadError
		if !errors.As(err, &bad) {
			return nil, fmt.Errorf("load usage rollups: %w", err)
		}
		for _, key := range slices.Sorted(maps.Keys(bad.Records)) {
			d.setAside(BucketRollups, key, fmt.Errorf("not a usage rollup (digests miss its hour): %w", bad.Records[key]))
		}
	}
	sent, err := d.db.All(BucketDigests)
	if err != nil {
		return nil, fmt.Errorf("load when digests were last sent: %w", err)
	}
	last := make(map[string]time.Time, len(sent))
	for name, b := range sent {
		t, err := time.Parse(time.RFC3339Nano, string(b))
		if err != nil {
			d.setAside(BucketDigests, name, fmt.Errorf("not the time the digest was last sent: %w", err))
			continue
		}
		last[name] = t
	}
	list := make([]digest.Digest, 0, len(cfg.Digests))
	for _, c := range cfg.Digests {
		s, err := digest.ParseSchedule(c.Schedule)
		if err != nil { // config.Parse checked it; a config built in code may not be
			return nil, fmt.Errorf("digest %q: %w", c.Name, err)
		}
		list = append(list, digest.Digest{Name: c.Name, Schedule: s, Window: c.Window, CatchUp: c.CatchUp})
	}
	personal, err := d.personalDigests(cfg)
	if err != nil {
		return nil, err
	}
	list = append(list, personal...)
	g.scheduler = digest.NewScheduler(list, last, d.opts.Now())
	return g, nil
}

// stepDigests adds a snapshot and its transitions to the rollups and, every
// checkpointEvery of sample time, adds the changed rollups, and the keys of
// the hours past storage.retention, to the snapshot's commit. The caller
// holds d.mu.
func (d *Daemon) stepDigests(snap *gpu.Snapshot, ts []rules.Transition, c *notifier.Commit) {
	g := d.digests
	g.rollups.Update(snap)
	for i := range ts {
		if t := &ts[i]; t.Resolved() && !t.StartsAt.IsZero() {
			g.rollups.RecordAlert(t.Alert, t.StartsAt, t.EndsAt.Sub(t.StartsAt))
		}
	}
	switch {
	case g.checkpoint.IsZero():
		g.checkpoint = snap.Time
	case snap.Time.Sub(g.checkpoint) >= checkpointEvery:
		g.checkpoint = snap.Time
		d.checkpointRollups(snap.Time, c)
	}
}

// checkpointRollups adds the rollups changed since the last checkpoint and
// the hours to prune at time now to c.
func (d *Daemon) checkpointRollups(now time.Time, c *notifier.Commit) {
	for k, v := range d.digests.rollups.Dirty() {
		c.PutRecord(BucketRollups, k, v)
	}
	for _, k := range d.digests.rollups.Prune(now.Add(-d.cfg.Storage.Retention)) {
		c.DeleteRecord(BucketRollups, k)
	}
}

// dirtyRollups is a commit of the rollups changed since the last
// checkpoint: a stop writes it, so on a clean stop nothing is lost.
func (d *Daemon) dirtyRollups() *notifier.Commit {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := &notifier.Commit{}
	for k, v := range d.digests.rollups.Dirty() {
		c.PutRecord(BucketRollups, k, v)
	}
	return c
}

// SendDigests sends every digest due at now (the wall clock): one
// notification per receiver, written to the outbox together with the
// digest's send time. Run calls it as digests come due; it is exported for
// tests, which pass fixed times.
func (d *Daemon) SendDigests(now time.Time) {
	d.digests.scheduler.Fire(now, d.fireDigest)
}

// fireDigest queues a due digest for its receivers. It returns an error
// only when the store could not take it, so the scheduler tries again.
func (d *Daemon) fireDigest(r digest.Run) error {
	stamp := map[string]map[string][]byte{BucketDigests: {r.Name: []byte(r.At.UTC().Format(time.RFC3339Nano))}}
	if r.Skipped {
		d.logger.Warn("a digest was missed by more than its catch_up while gpuwatch was down; skipped", "digest", r.Name, "scheduled", r.At)
		if err := d.db.Commit(nil, stamp, nil); err != nil {
			d.logger.Error("cannot record a skipped digest", "digest", r.Name, "err", err)
			return err
		}
		return nil
	}
	if r.Missed {
		d.logger.Warn("older runs of a digest were missed while gpuwatch was down; sending the newest only", "digest", r.Name, "scheduled", r.At)
	}
	commit := &notifier.Commit{Put: stamp}
	var outbox map[string][][]byte
	if choice, ok := personalChoice(r.Name); ok {
		var err error
		if outbox, err = d.personalOutbox(commit, r, choice); err != nil {
			d.logger.Error("cannot make the personal digests; trying again in a minute", "digest", r.Name, "err", err)
			return err
		}
	} else if outbox = d.digestOutbox(commit, r); outbox == nil {
		return nil
	}
	commit.Outbox = outbox
	d.queueChartUploads(commit)
	if err := d.db.Commit(commit.Outbox, commit.Put, nil); err != nil {
		d.logger.Error("cannot write a digest to the store; trying again in a minute", "digest", r.Name, "err", err)
		return err
	}
	d.depth.committed(commit)
	d.logger.Info("digest queued", "digest", r.Name, "scheduled", r.At, "from", r.From, "to", r.To, "receivers", len(outbox))
	for receiver := range commit.Outbox {
		if dl, ok := d.deliverers[receiver]; ok {
			dl.Wake()
		}
	}
	return nil
}

// digestOutbox renders the configured digest r is a run of, for each of
// its receivers, its pictures in commit; nil when the config no longer
// has it.
func (d *Daemon) digestOutbox(commit *notifier.Commit, r digest.Run) map[string][][]byte {
	d.mu.Lock()
	cfg := d.cfg
	d.mu.Unlock()
	c := findDigest(cfg, r.Name)
	if c == nil {
		d.logger.Warn("a digest is no longer in the config; it takes effect on restart", "digest", r.Name)
		return nil
	}
	report, days, _ := d.report(c, r.From, r.To, allPictures)
	charts := d.dayCharts(commit, r.Name, r.At, days)
	outbox := map[string][][]byte{}
	for _, receiver := range c.Receivers {
		n, err := report.Notification(receiver, r.At)
		if err != nil {
			d.logger.Error("cannot render a digest", "digest", r.Name, "receiver", receiver, "err", err)
			continue
		}
		n.Digest.Charts = charts
		raw, err := json.Marshal(n)
		if err != nil {
			d.logger.Error("cannot encode a digest", "digest", r.Name, "receiver", receiver, "err", err)
			continue
		}
		outbox[receiver] = append(outbox[receiver], raw)
	}
	return outbox
}

// retention is how long usage rollups are kept, the longest window a
// digest reports.
func (d *Daemon) retention() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg.Storage.Retention
}

// inDays writes a duration of whole days as the config does ("35d").
func inDays(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// findDigest returns the digest named name in cfg, or nil.
func findDigest(cfg *config.Config, name string) *config.Digest {
	for i := range cfg.Digests {
		if cfg.Digests[i].Name == name {
			return &cfg.Digests[i]
		}
	}
	return nil
}

// drawing says which pictures a report draws: none, every host's (a
// scheduled digest's), or one host's (a picture the API serves: the
// host's, or without one the first host's in name order).
type drawing struct {
	any, one bool
	host     string
}

var (
	noPictures  = drawing{}
	allPictures = drawing{any: true}
)

func pictureOf(host string) drawing { return drawing{any: true, one: true, host: host} }

// report builds digest c's report of [from, to) from the rollups and the
// alerts firing now, which the rollups count only once they resolve, and
// the pictures draw asks for, one per host, and returns the zone they
// show times in. A request for one host's picture costs that host's,
// whatever the size of the fleet: it gets no report (nil).
func (d *Daemon) report(c *config.Digest, from, to time.Time, draw drawing) (*digest.Report, []*chart.Day, *time.Location) {
	d.mu.Lock()
	gpus, users, alerts := d.digests.rollups.Window(from, to)
	host := d.cfg.Host
	var firing []digest.FiringAlert
	for _, a := range d.engine.Active() {
		if a.State == rules.StateFiring {
			firing = append(firing, digest.FiringAlert{Alert: a.Rule.Name, Since: a.FiredAt})
		}
	}
	d.mu.Unlock()
	if s := d.last.Load(); s != nil && s.Host != "" {
		host = s.Host
	}
	opts := digest.Options{
		Name: c.Name, Host: host, From: from, To: to, TopUsers: c.TopUsers,
		PricePerKWh: c.PricePerKWh, Currency: c.Currency, Location: d.zone(c.Schedule), Firing: firing,
		Health: d.gpuHealth(),
	}
	var days []*chart.Day
	if draw.any {
		pg, pu := gpus, users
		if draw.one {
			pg, pu = oneHost(gpus, users, draw.host, host)
		}
		days = digest.Pictures(pg, pu, opts)
	}
	if draw.one {
		return nil, days, opts.Location
	}
	return digest.Build(gpus, users, alerts, opts), days, opts.Location
}

// oneHost keeps the hours of host, or, without one, of the first host in
// name order; an hour that names no host is own's, this gpuwatch's.
func oneHost(gpus []digest.GPUHour, users []digest.UserHour, host, own string) ([]digest.GPUHour, []digest.UserHour) {
	of := func(h string) string { return cmp.Or(h, own) }
	if host == "" && len(gpus) > 0 {
		host = of(slices.MinFunc(gpus, func(a, b digest.GPUHour) int { return cmp.Compare(of(a.Host), of(b.Host)) }).Host)
	}
	var g []digest.GPUHour
	for _, h := range gpus {
		if of(h.Host) == host {
			g = append(g, h)
		}
	}
	var u []digest.UserHour
	for _, h := range users {
		if of(h.Host) == host {
			u = append(u, h)
		}
	}
	return g, u
}

// zone is the time zone a digest shows times in: its schedule's CRON_TZ,
// else the daemon's.
func (d *Daemon) zone(schedule string) *time.Location {
	spec := strings.TrimSpace(schedule)
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		if rest, ok := strings.CutPrefix(spec, prefix); ok {
			name, _, _ := strings.Cut(rest, " ")
			if loc, err := time.LoadLocation(name); err == nil {
				return loc
			}
		}
	}
	return d.opts.Location
}

// UsageReport is the usage digest of the window that ends now (the latest
// sample's time, or the wall clock before any). With name, the digest of
// that name shapes it (top users, price, zone) and a zero window takes its
// window or, without one, the time since its previous scheduled run;
// without name, a zero window is 24h.
func (d *Daemon) UsageReport(name string, window time.Duration) (*digest.Report, error) {
	r, _, _, err := d.usage(name, window, noPictures)
	return r, err
}

// usage is the usage digest of the window that ends now and the pictures
// draw asks for, with the zone they show times in; see UsageReport and
// report.
func (d *Daemon) usage(name string, window time.Duration, draw drawing) (*digest.Report, []*chart.Day, *time.Location, error) {
	to := d.opts.Now()
	if s := d.last.Load(); s != nil {
		to = s.Time
	}
	d.mu.Lock()
	cfg := d.cfg
	d.mu.Unlock()
	c := &config.Digest{Name: "usage", TopUsers: config.DefaultTopUsers}
	if name != "" {
		if c = findDigest(cfg, name); c == nil {
			return nil, nil, nil, fmt.Errorf("no digest is named %q; the config has %s", name, digestNames(cfg))
		}
		if window == 0 {
			window = c.Window
		}
		if window == 0 {
			s, err := digest.ParseSchedule(c.Schedule)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("digest %q: %w", name, err)
			}
			window = to.Sub(digest.Previous(s, s.Next(to)))
		}
	}
	if window <= 0 {
		window = 24 * time.Hour
	}
	// Usage older than storage.retention is pruned: a digest whose
	// schedule is rarer than that reports what is kept.
	window = min(window, cfg.Storage.Retention)
	r, days, loc := d.report(c, to.Add(-window), to, draw)
	return r, days, loc, nil
}

// digestNames lists the digests of cfg for an error message.
func digestNames(cfg *config.Config) string {
	if len(cfg.Digests) == 0 {
		return "none (add them under digests:)"
	}
	names := make([]string, len(cfg.Digests))
	for i, c := range cfg.Digests {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// digestText serves GET /api/v1/digest?window=24h&name=daily&format=text:
// the usage digest, as plain text or in the form format names (see
// digest.Formats; png is the picture of the day of ?host=, by default the
// first).
func (d *Daemon) digestText(w http.ResponseWriter, r *http.Request) {
	format := digest.FormatText
	if v := r.URL.Query().Get("format"); v != "" {
		f, err := digest.ParseFormat(v)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		format = f
	}
	var window time.Duration
	if v := r.URL.Query().Get("window"); v != "" {
		var err error
		if window, err = strictyaml.ParseDuration(v); err != nil || window <= 0 {
			http.Error(w, fmt.Sprintf("window %q is not a positive duration: write it like 24h, 90m or 7d", v), http.StatusBadRequest)
			return
		}
		if window < time.Hour {
			http.Error(w, fmt.Sprintf("window %s is shorter than an hour: usage is kept by the hour; ask for 1h or more", v), http.StatusBadRequest)
			return
		}
		if kept := d.retention(); window > kept {
			http.Error(w, fmt.Sprintf("window %s is longer than the %s of usage this gpuwatch keeps (storage.retention): ask for %s or less",
				v, inDays(kept), inDays(kept)), http.StatusBadRequest)
			return
		}
	}
	draw := noPictures
	if format == digest.FormatPNG {
		draw = pictureOf(r.URL.Query().Get("host"))
	}
	report, days, loc, err := d.usage(r.URL.Query().Get("name"), window, draw)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if format == digest.FormatPNG {
		d.servePicture(w, r.URL.Query().Get("host"), loc, days)
		return
	}
	out, err := report.Render(format)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", format.ContentType())
	w.Write(out)
}

// servePicture answers /api/v1/digest?format=png: the picture of the
// host asked (by default the first).
func (d *Daemon) servePicture(w http.ResponseWriter, host string, loc *time.Location, days []*chart.Day) {
	for _, day := range days {
		if host != "" && day.Title != "GPU usage on "+host {
			continue
		}
		png, err := day.PNG(loc)
		releaseDrawing()
		if err != nil {
			d.logger.Error("cannot draw a digest's picture", "err", err)
			http.Error(w, "the picture could not be drawn; the log says why", http.StatusInternalServerError)
			return
		}
		servePNG(w, png)
		return
	}
	http.Error(w, "no GPU of that host reported in the window: there is no picture", http.StatusNotFound)
}

// gpuHealth is every reporting GPU's health now, for a digest.
func (d *Daemon) gpuHealth() []digest.GPUHealth {
	var out []digest.GPUHealth
	for _, s := range d.Snapshots() {
		for i := range s.Devices {
			dev := &s.Devices[i]
			if dev.MIG != nil {
				continue // a MIG instance's health is its GPU's
			}
			out = append(out, digest.GPUHealth{Host: s.Host, GPU: dev.Index, UUID: dev.UUID, Verdict: d.Verdict(s.Host, dev)})
		}
	}
	return out
}
