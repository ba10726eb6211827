// Package daemon wires gpuwatch's parts into the running service: a source
// feeds the rule engine; the dispatcher routes, silences and groups the
// engine's transitions; each snapshot's decisions and alert states are
// written to the store in one transaction; deliverers empty each
// receiver's outbox; a small HTTP API serves silences and the outbox to
// `gpuwatch silence` and `gpuwatch outbox`. Everything below the source
// works in the snapshots' time.
package daemon

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/history"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/slack"
	"github.com/gpuwatch/gpuwatch/people"
	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/slackbot"
	"github.com/gpuwatch/gpuwatch/web"
)

// BucketAlerts holds the state of every firing alert, so a restart neither
// announces them again nor forgets them.
const BucketAlerts = "alerts"

// BucketSilences holds the silences, by ID.
const BucketSilences = "silences"

// Options are what the daemon takes from the process around it.
type Options struct {
	Logger *slog.Logger
	// Console is where console receivers print.
	Console io.Writer
	// Location is the zone console receivers show times in.
	Location *time.Location
	// HTTPClient is used by webhook, Slack and alertmanager receivers; nil
	// means a default.
	HTTPClient *http.Client
	// Backoff is the retry schedule of deliveries; zero means DefaultBackoff.
	Backoff notifier.Backoff
	// Now is the clock of the GPUs' world: the source's own where it
	// runs in its own time (a paced simulation or replay), else the wall
	// clock. The API (silences start now), acknowledgements, digests and
	// dead letters take it; nil means time.Now. Evaluation never uses it.
	Now func() time.Time
	// Wall is the wall clock, for the times the world outside sets and
	// checks by its own clock: the age of a Slack request's signature,
	// browser sessions and login throttles, a signed webhook's timestamp,
	// a Retry-After date, the lifetime Alertmanager gives a firing alert,
	// how long a store write has been stuck. nil means time.Now.
	Wall func() time.Time
	// Version is gpuwatch's version, for gpuwatch_build_info on /metrics.
	Version string
	// OpenStore opens the state store at storage.path, giving up when ctx
	// ends; nil opens a *store.DB. Tests pass one that plays a failing
	// disk.
	OpenStore func(ctx context.Context, path string) (Store, error)
	// FinalWrite bounds how long a stop waits for the store to take what
	// it has not yet written; zero means DefaultFinalWrite.
	FinalWrite time.Duration
	// WriteWait bounds how long a request (an API call, a Slack command
	// or button) waits for the store to take what it changes before it
	// answers that the store is stalled; zero means DefaultWriteWait.
	WriteWait time.Duration
}

// DefaultWriteWait is how long a request waits for the store.
const DefaultWriteWait = 5 * time.Second

// DefaultFinalWrite is how long a stop waits for the store to take what
// it has not yet written before it gives up and says what is lost.
const DefaultFinalWrite = 10 * time.Second

// Daemon is a running gpuwatch.
type Daemon struct {
	opts       Options
	logger     *slog.Logger
	db         *watchedStore
	silences   *notifier.Silences
	mu         sync.Mutex // guards cfg, engine and dispatcher against Reload; never held across a write
	cfg        *config.Config
	engine     *rules.Engine
	dispatcher *notifier.Dispatcher
	deliverers map[string]*notifier.Deliverer
	depth      outboxDepth  // notifications waiting per receiver, in memory
	background []background // integrations' own work, run beside the deliverers
	addr       atomic.Value // string: where the HTTP API listens
	// writeMu serializes writes of commits and guards unwritten.
	writeMu sync.Mutex
	// unwritten is what the store refused (a snapshot's commit, an
	// acknowledgement); the next write takes it first, so a failing disk
	// delays notifications, never drops them. A stop writes it or says
	// what is lost.
	unwritten *notifier.Commit
	// writing is the commit the store is writing now, for a stop that
	// cannot wait for it to say what it held.
	writing atomic.Pointer[notifier.Commit]
	metrics daemonMetrics

	// sampledAt is the wall-clock time (Unix ns) of the last Step, or of
	// New before the first; staleAfter is how old it may get (/healthz).
	sampledAt  atomic.Int64
	staleAfter time.Duration
	// sourceEnded is set when the source has no more samples (a replay
	// at its end): none is late then.
	sourceEnded atomic.Bool
	// interval and storagePath are the config's, which a reload leaves
	// alone, for /healthz and the stop to say without taking d.mu.
	interval    time.Duration
	storagePath string

	// What the Slack app reads and acts through.
	last  atomic.Pointer[gpu.Snapshot] // the latest snapshot, of any host
	fleet *fleet                       // the latest snapshot of every host
	// recentXIDs are each GPU's recent XID errors, for its health verdict.
	recentXIDs *gpu.RecentXIDs
	history    *histories    // the last day of every GPU, for /gpu history
	app        *slackbot.App // nil without slack.signing_secret and slack.app_token
	// bot uploads pictures and reads users' zones with slack.bot_token;
	// nil without one.
	bot *slack.Bot
	// people maps the identities on the GPUs to Slack users; nil without
	// a people: section.
	people *people.People

	digests *digests // usage rollups and the digest schedule

	// chartQueues names, by receiver, the outbox of its chart uploads
	// (receivers that show pictures that way). chartsNow are the charts
	// of the evaluation under way, by transition, and pendingCharts their
	// data, to write with its commit; both guarded by mu.
	chartQueues   map[string]string
	chartsNow     map[string]string
	pendingCharts []pendingChart

	auth  *authenticator // nil when the server section asks for no credentials
	hosts *hostGuard     // the Host names the API answers to; nil on a network listener
	page  *web.Server    // the page in the browser
	// fleetHistory is a hub's Prometheus, read for /gpu history and the
	// page's charts (see History); nil elsewhere.
	fleetHistory atomic.Pointer[history.Prometheus]

	// health follows whether the source answers (guarded by mu); hub is
	// whether the source is a fleet's Prometheus, whose GPUs /metrics
	// does not export again.
	health sourceHealth
	hub    bool

	// notes is what the store cost: damage Open accepted, records set
	// aside (/healthz lists them).
	notes storeNotes
	// hostsDown are the hosts of the fleet that are down, by host
	// (guarded by mu).
	hostsDown map[string]*hostDown
	// leftOut is what snapshots held past gpuwatch's limits that the
	// log has said (see admit).
	leftOut saidOnce
}

// New is NewContext that nothing stops.
func New(cfg *config.Config, opts Options) (*Daemon, error) {
	return NewContext(context.Background(), cfg, opts)
}

// NewContext opens the store, restores what the last run left (alert
// states, waiting notifications, silences) and builds every receiver. A
// record of the store it cannot read is set aside and said (the log,
// /healthz); the check of the store stops when ctx ends (a stop before
// the daemon runs). The caller must Close the daemon.
func NewContext(ctx context.Context, cfg *config.Config, opts Options) (*Daemon, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Wall == nil {
		opts.Wall = time.Now
	}
	if opts.Backoff == (notifier.Backoff{}) {
		opts.Backoff = notifier.DefaultBackoff()
	}
	if opts.OpenStore == nil {
		opts.OpenStore = openStore
	}
	if opts.FinalWrite <= 0 {
		opts.FinalWrite = DefaultFinalWrite
	}
	if opts.WriteWait <= 0 {
		opts.WriteWait = DefaultWriteWait
	}
	db, err := opts.OpenStore(ctx, cfg.Storage.Path)
	if err != nil {
		return nil, fmt.Errorf("open the state store (storage.path): %w", err)
	}
	d := &Daemon{opts: opts, logger: opts.Logger, db: watch(db, opts.Wall), cfg: cfg, history: newHistories(historySpan(cfg)), fleet: newFleet(), recentXIDs: gpu.NewRecentXIDs(),
		chartQueues: map[string]string{},
		staleAfter:  staleAfter(cfg), interval: cfg.Source.Interval, storagePath: cfg.Storage.Path,
		health: sourceHealth{host: cfg.HostName()}, hub: cfg.Source.Type == "prometheus", hostsDown: map[string]*hostDown{}}
	d.sampledAt.Store(opts.Wall().UnixNano())
	d.sayRecovered()
	if err := d.start(cfg); err != nil {
		db.Close()
		return nil, err
	}
	return d, nil
}

func (d *Daemon) start(cfg *config.Config) error {
	var err error
	if d.auth, err = newAuthenticator(&cfg.Server, d.opts.Wall); err != nil {
		return err
	}
	d.hosts = newHostGuard(&cfg.Server)
	if d.page, err = d.newPage(); err != nil {
		return err
	}
	d.silences, err = notifier.NewSilences(d.bucket(BucketSilences), nil)
	if err != nil {
		return fmt.Errorf("load silences: %w", err)
	}
	d.forgetOldSilences()
	route, err := buildRoute(cfg)
	if err != nil {
		return err
	}
	d.dispatcher = notifier.NewDispatcher(route, d.silences, d.logger)
	d.dispatcher.SetCharts(func(t *rules.Transition) string { return d.chartsNow[transitionKey(t)] })
	groups, err := d.db.All(notifier.BucketGroups)
	if err != nil {
		return err
	}
	sent, err := d.db.All(notifier.BucketSent)
	if err != nil {
		return err
	}
	d.dispatcher.Restore(groups, sent, d.setAside)
	if err := d.restoreAcks(); err != nil {
		return err
	}
	if err := d.restoreOwned(); err != nil {
		return err
	}
	if err := d.restoreHostsDown(); err != nil {
		return fmt.Errorf("read the hosts the last run left down: %w", err)
	}
	if err := d.restoreSourceDown(); err != nil {
		return fmt.Errorf("load the source's state: %w", err)
	}
	d.configureMetrics(cfg)
	d.engine = d.newEngine(cfg)
	records, err := d.loadAlerts()
	if err != nil {
		return err
	}
	d.engine.Restore(records)
	d.bot = d.newBot(cfg)
	d.people = d.newPeople(cfg)
	d.deliverers, err = d.buildDeliverers(cfg)
	if err != nil {
		return err
	}
	d.app, err = d.newSlackApp(cfg)
	if err != nil {
		return err
	}
	d.digests, err = d.startDigests(cfg)
	return err
}

func (d *Daemon) newEngine(cfg *config.Config) *rules.Engine {
	return rules.NewEngine(cfg.Rules, rules.Options{RepeatFor: d.dispatcher.RepeatInterval, Logger: d.logger})
}

func (d *Daemon) loadAlerts() ([]rules.AlertRecord, error) {
	raw, err := d.db.All(BucketAlerts)
	if err != nil {
		return nil, fmt.Errorf("load alert states: %w", err)
	}
	records := make([]rules.AlertRecord, 0, len(raw))
	for key, b := range raw {
		var rec rules.AlertRecord
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&rec); err != nil {
			d.setAside(BucketAlerts, key, fmt.Errorf("not an alert state: %w", err))
			continue
		}
		records = append(records, rec)
	}
	return records, nil
}

func alertRecordKey(t *rules.Transition) string { return t.Alert + "/" + t.SeriesID() }

// ruleLabels are the labels of the rule a transition is of.
func ruleLabels(t *rules.Transition) map[string]string {
	if t.Rule == nil {
		return nil
	}
	return t.Rule.Labels
}

// Close releases the store. When a write has not finished (a stalled
// disk), it leaves the file to the operating system rather than wait.
func (d *Daemon) Close() error {
	if w := d.db.state(); !w.stuckSince.IsZero() {
		return fmt.Errorf("close the store %s: a write has not finished since %s; leaving the file as it is",
			d.storagePath, w.stuckSince.Format(time.RFC3339))
	}
	return d.db.Close()
}

// bufferedSource is a Source that says how many snapshots it holds
// already (gpu.Poller: the rest of a fleet's hosts).
type bufferedSource interface {
	Buffered() int
}

// Run starts the deliverers and the HTTP API and evaluates every snapshot
// of src until src ends (nil) or ctx ends (nil: a clean stop). Before it
// returns it writes what the store had refused; when the store still
// refuses (or does not answer within Options.FinalWrite), the log and
// the error say what is lost.
func (d *Daemon) Run(ctx context.Context, src gpu.Source, reload <-chan *config.Config) (err error) {
	var wg sync.WaitGroup
	defer func() {
		if ferr := d.finalWrite(); ferr != nil && err == nil {
			err = ferr
		}
	}()
	defer d.waitStopped(&wg) // after cancel: the deliverers stop when ctx ends
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Before any delivery: without files:write no upload is tried.
	d.checkSlackScopes(ctx)
	for _, dl := range d.deliverers {
		wg.Go(func() { dl.Run(ctx) })
	}
	for _, b := range d.background {
		wg.Go(func() { b.Run(ctx) })
	}
	d.startSocketMode(ctx, &wg)
	wg.Go(func() { d.digests.scheduler.Run(ctx, d.opts.Now, d.fireDigest) })
	wg.Go(func() { every(ctx, silenceGCInterval, d.forgetOldSilences) })
	wg.Go(func() { every(ctx, silenceGCInterval, d.forgetOldCharts) })
	wg.Go(func() { d.watchdog(ctx) })
	srv, err := d.serve(ctx)
	if err != nil {
		return err
	}
	defer d.stopServing(srv)
	d.backfill(ctx, src)
	d.readFleetHistory(src)
	buffered, _ := src.(bufferedSource)
	for {
		snap, err := src.Next(ctx)
		var sourceErr *gpu.SourceError
		// A fleet's evaluation is one snapshot per host: they are stepped
		// together, rather than each in a goroutine of its own.
		batch := []*gpu.Snapshot{snap}
		for err == nil && buffered != nil && buffered.Buffered() > 0 {
			next, nerr := src.Next(ctx)
			if nerr != nil {
				break // a buffered snapshot is not sampled: this does not happen
			}
			batch = append(batch, next)
		}
		step := func() {
			for _, snap := range batch {
				if ctx.Err() != nil {
					return // stopping: the rest is the next run's to sample
				}
				began := time.Now()
				d.Step(snap)
				d.observeStep(time.Since(began))
			}
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, io.EOF):
			d.sourceEnded.Store(true)
			d.logger.Info("the source has no more samples (a replay at its end); delivering what is queued, then stopping")
			d.drain(ctx)
			return nil
		case errors.As(err, &sourceErr):
			step = func() { d.sourceFailed(sourceErr) }
		case err != nil:
			return err
		}
		select {
		case cfg := <-reload:
			d.Reload(cfg)
		default:
		}
		// A Step that a stalled disk holds must not hold a stop: the stop
		// says what the stuck write held.
		stepped := make(chan struct{})
		go func() {
			defer close(stepped)
			step()
		}()
		select {
		case <-stepped:
		case <-ctx.Done():
			return nil
		}
	}
}

// Step evaluates one snapshot: rules, routing, and one durable write of
// everything it decided; then it wakes the deliverers concerned. The
// write happens outside d.mu, so the API, /metrics and the Slack app
// answer while a stalled disk holds it.
func (d *Daemon) Step(snap *gpu.Snapshot) {
	d.sampledAt.Store(d.opts.Wall().UnixNano())
	if !d.admit(snap) {
		return
	}
	d.commit(d.evaluate(snap))
}

// evaluate runs the rules and the dispatcher on a snapshot and returns
// what it decided, to write.
func (d *Daemon) evaluate(snap *gpu.Snapshot) *notifier.Commit {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.last.Store(snap)
	d.fleet.record(snap)
	d.recentXIDs.Observe(snap)
	back := d.sourceAnswered(snap.Time)
	if snap.Down != "" {
		ts, record := d.hostIsDown(snap)
		d.chartsNow = nil // a host down has no chart
		c := d.dispatcher.Dispatch(snap.Time, append(back, ts...))
		if back != nil {
			c.DeleteRecord(BucketSource, sourceDownKey)
		}
		c.PutRecord(BucketSource, hostDownPrefix+snap.Host, record)
		return c
	}
	d.history.Record(snap)
	d.trackGPUs(snap)
	LogEvents(d.logger, snap)
	ts := d.engine.Eval(snap)
	up, wasDown := d.hostAnswered(snap)
	all := ts
	if back != nil || up != nil {
		all = append(append(back, up...), ts...)
	}
	d.chartsNow = d.alertCharts(ts)
	c := d.dispatcher.Dispatch(snap.Time, all)
	d.writeCharts(c)
	if back != nil {
		c.DeleteRecord(BucketSource, sourceDownKey)
	}
	if wasDown {
		c.DeleteRecord(BucketSource, hostDownPrefix+snap.Host)
	}
	for i := range ts {
		t := &ts[i]
		if t.Resolved() {
			c.DeleteRecord(BucketAlerts, alertRecordKey(t))
			continue
		}
		var b bytes.Buffer
		if err := gob.NewEncoder(&b).Encode(rules.AlertRecord{Rule: t.Alert, UUID: t.SeriesID(), Severity: t.Severity, Labels: ruleLabels(t), Alert: t.AlertState}); err != nil {
			d.logger.Error("cannot encode an alert state", "alert", t.Alert, "err", err)
			continue
		}
		c.PutRecord(BucketAlerts, alertRecordKey(t), b.Bytes())
	}
	d.stepDigests(snap, ts, c)
	d.queueChartUploads(c)
	return c
}

// commit writes c, after whatever the store refused before, in one
// transaction, and wakes the deliverers of its notifications. When the
// store refuses it, all of it is kept for the next commit (or the stop).
func (d *Daemon) commit(c *notifier.Commit) error {
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	if d.unwritten != nil {
		c.Absorb(d.unwritten)
		d.unwritten = nil
	}
	if c.Empty() {
		return nil
	}
	d.writing.Store(c)
	err := d.db.Commit(c.Outbox, c.Put, c.Delete)
	d.writing.Store(nil)
	if err != nil {
		d.logger.Error("cannot write to the store; keeping what was decided to write with the next sample", "err", err,
			"notifications", notificationCount(c))
		d.unwritten = c
		return err
	}
	d.depth.committed(c)
	for receiver := range c.Outbox {
		if dl, ok := d.deliverers[receiver]; ok {
			dl.Wake()
		}
	}
	return nil
}

// stopServing stops the HTTP API, waiting for the requests in flight at
// most Options.WriteWait and a second (a write request answers within
// WriteWait), then cutting off what is left: a stop does not wait for a
// request a stalled disk holds.
func (d *Daemon) stopServing(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.WriteWait+time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		d.logger.Warn("HTTP requests still in flight at the stop were cut off", "err", err)
		_ = srv.Close()
	}
}

// waitStopped waits for the daemon's goroutines (deliverers, digests,
// the Slack app) to end, at most Options.FinalWrite: one a stalled disk
// holds in a write is left to the operating system, as the stop does not
// wait for the disk.
func (d *Daemon) waitStopped(wg *sync.WaitGroup) {
	stopped := make(chan struct{})
	go func() {
		wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(d.opts.FinalWrite):
		d.logger.Error("a deliverer (or another part of gpuwatch) did not stop in time: it waits on the store, whose disk is stalled", "waited", d.opts.FinalWrite)
	}
}

// finalWrite writes, when a stop comes, what the store refused before and
// the usage rollups not yet saved, waiting up to Options.FinalWrite. When
// the store still refuses or does not answer, it logs loudly what is lost
// and returns an error saying so.
func (d *Daemon) finalWrite() error {
	c := d.dirtyRollups()
	done := make(chan error, 1)
	go func() { done <- d.commit(c) }()
	var lost, inDoubt *notifier.Commit
	select {
	case err := <-done:
		if err == nil {
			return nil
		}
		// The store refused it: its transaction rolled back, nothing of
		// it is in the store.
		d.writeMu.Lock()
		lost = d.unwritten
		d.writeMu.Unlock()
	case <-time.After(d.opts.FinalWrite):
		// A write is stuck: it holds what was refused before, and c
		// unless c still waits behind it. The stuck one may yet reach
		// the disk (the process cannot leave a write the kernel holds):
		// it is in doubt, not lost. What waits behind it is lost.
		inDoubt = d.writing.Load()
		if inDoubt != c && !c.Empty() {
			lost = c
		}
		d.logger.Error("the store did not finish a write in time", "waited", d.opts.FinalWrite)
	}
	var parts []string
	if lost != nil {
		parts = append(parts, "lost: "+describeLoss(lost))
	}
	if inDoubt != nil {
		parts = append(parts, "in doubt (a write the disk had not finished: it is in the store if the disk finishes it, else lost): "+describeLoss(inDoubt))
	}
	what := strings.Join(parts, "; ")
	d.logger.Error("STOPPING WITH STATE THE STORE DID NOT TAKE: alerts still true are sent again after the restart, "+
		"those that fired and resolved meanwhile are not", "storage", d.storagePath, "state", what)
	return fmt.Errorf("the store (storage.path %s) did not take the last writes; %s", d.storagePath, what)
}

// notificationCount is how many notifications c puts in outboxes.
func notificationCount(c *notifier.Commit) int {
	n := 0
	for _, payloads := range c.Outbox {
		n += len(payloads)
	}
	return n
}

// describeLoss says what a commit that was not written held: its
// notifications by receiver, alert and status, and how many records.
func describeLoss(c *notifier.Commit) string {
	var parts []string
	for _, receiver := range slices.Sorted(maps.Keys(c.Outbox)) {
		for _, raw := range c.Outbox[receiver] {
			var n notifier.Notification
			if json.Unmarshal(raw, &n) != nil {
				parts = append(parts, receiver+": an unreadable notification")
				continue
			}
			what := string(n.Status)
			if n.Digest != nil {
				what = "digest " + n.Digest.Name
			}
			for _, a := range n.Alerts {
				what += fmt.Sprintf(" %s on gpu %d", a.Name, a.GPU)
			}
			parts = append(parts, receiver+": "+what)
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no notifications")
	}
	var states []string
	for _, key := range slices.Sorted(maps.Keys(c.Put[BucketAlerts])) {
		states = append(states, key+" active")
	}
	for _, key := range slices.Sorted(slices.Values(c.Delete[BucketAlerts])) {
		states = append(states, key+" resolved")
	}
	if len(states) > 0 {
		parts = append(parts, "alert states "+strings.Join(states, ", "))
	}
	records := 0
	for bucket, kv := range c.Put {
		if bucket != BucketAlerts {
			records += len(kv)
		}
	}
	for bucket, keys := range c.Delete {
		if bucket != BucketAlerts {
			records += len(keys)
		}
	}
	return fmt.Sprintf("%s; %d other records (waiting groups, usage rollups, …)", strings.Join(parts, "; "), records)
}

// drain waits until every outbox is empty or ctx ends: a source that ends
// (a replay) should not cut deliveries short.
func (d *Daemon) drain(ctx context.Context) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		empty := true
		for _, n := range d.depth.snapshot() {
			if n > 0 {
				empty = false
			}
		}
		if empty {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Reload switches to a new, already validated config: new rules (keeping
// the state of rules of the same name), routes and receivers. Source and
// storage settings take effect on restart.
func (d *Daemon) Reload(cfg *config.Config) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !sameReceivers(cfg.Receivers, d.cfg.Receivers) || !reflect.DeepEqual(cfg.Slack, d.cfg.Slack) {
		// Deliverers are built at start; routing to receivers that have
		// none would leave notifications waiting until a restart.
		d.logger.Warn("receivers or the slack section changed: they and the route take effect when gpuwatch restarts; the new rules apply now")
		cfg.Receivers, cfg.Route, cfg.Slack = d.cfg.Receivers, d.cfg.Route, d.cfg.Slack
	} else {
		route, err := buildRoute(cfg)
		if err != nil {
			d.logger.Error("reload refused", "err", err)
			return
		}
		d.dispatcher.SetRoute(route)
	}
	if !reflect.DeepEqual(cfg.People, d.cfg.People) {
		// Who is who is built at start, with the bot and the schedules of
		// the personal digests.
		d.logger.Warn("the people: section changed: it takes effect when gpuwatch restarts")
		cfg.People = d.cfg.People
	}
	d.configureMetrics(cfg)
	d.history.keep(historySpan(cfg))
	e := d.newEngine(cfg)
	e.Inherit(d.engine)
	d.engine, d.cfg = e, cfg
	d.logger.Info("config reloaded", "rules", len(cfg.Rules))
}

// sameReceivers reports whether two receiver lists configure the same
// receivers (positions in the file aside).
func sameReceivers(a, b []config.Receiver) bool {
	return slices.EqualFunc(a, b, func(x, y config.Receiver) bool {
		x.Pos, y.Pos = strictyaml.Pos{}, strictyaml.Pos{}
		return reflect.DeepEqual(x, y)
	})
}

// silenceGCInterval is how often silences expired for longer than
// notifier.SilenceRetention are forgotten.
const silenceGCInterval = time.Hour

// forgetOldSilences forgets the silences expired for longer than the
// retention.
func (d *Daemon) forgetOldSilences() {
	n, err := d.silences.GC(d.opts.Now().Add(-notifier.SilenceRetention))
	if err != nil {
		d.logger.Error("cannot forget old expired silences; trying again in an hour", "forgotten", n, "err", err)
		return
	}
	if n > 0 {
		d.logger.Info("forgot expired silences", "silences", n, "expired_for_over", notifier.SilenceRetention)
	}
}

// every calls f every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// LogEvents logs what happened to the GPUs since the previous snapshot:
// lost GPUs and XID errors.
func LogEvents(logger *slog.Logger, s *gpu.Snapshot) {
	for _, ev := range s.Events {
		switch ev.Kind {
		case gpu.EventGPULost:
			logger.Error("GPU lost: it fell off the bus or stopped answering; the other GPUs are still watched",
				"host", s.Host, "gpu", ev.GPU, "uuid", ev.UUID, "detail", ev.Detail)
		case gpu.EventXID:
			logger.Warn("XID error", "host", s.Host, "gpu", ev.GPU, "uuid", ev.UUID, "xid", ev.XID, "detail", ev.Detail)
		}
	}
}

// kvBucket is one bucket of the store as the small key-value interfaces
// of the integrations (silences, Slack messages) want it.
type kvBucket struct {
	d      *Daemon
	bucket string
}

// bucket returns the store's bucket as the integrations want it.
func (d *Daemon) bucket(name string) kvBucket { return kvBucket{d, name} }

func (b kvBucket) Put(key string, value []byte) error { return b.d.db.Put(b.bucket, key, value) }
func (b kvBucket) Delete(key string) error            { return b.d.db.Delete(b.bucket, key) }
func (b kvBucket) All() (map[string][]byte, error)    { return b.d.db.All(b.bucket) }
func (b kvBucket) SetAside(key string, why error)     { b.d.setAside(b.bucket, key, why) }

// Update puts and deletes records in one write, waiting for the store at
// most Options.WriteWait: a request waits on it.
func (b kvBucket) Update(put map[string][]byte, del []string) error {
	return b.d.bounded(func() error {
		return b.d.db.Commit(nil, map[string]map[string][]byte{b.bucket: put}, map[string][]string{b.bucket: del})
	})
}
func (b kvBucket) Get(key string) ([]byte, bool, error) {
	return b.d.db.Get(b.bucket, key)
}
