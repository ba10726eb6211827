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
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/slackbot"
	"github.com/gpuwatch/gpuwatch/store"
)

// BucketAlerts holds the state of every firing alert, so a restart neither
// announces them again nor forgets them.
const BucketAlerts = "alerts"

// Options are what the daemon takes from the process around it.
type Options struct {
	Logger *slog.Logger
	// Console is where console receivers print.
	Console io.Writer
	// Location is the zone console receivers show times in.
	Location *time.Location
	// HTTPClient is used by webhook and Slack receivers; nil means a default.
	HTTPClient *http.Client
	// Backoff is the retry schedule of deliveries; zero means DefaultBackoff.
	Backoff notifier.Backoff
	// Now is the wall clock, for the API (silences start now) and dead
	// letters; nil means time.Now. Evaluation never uses it.
	Now func() time.Time
	// Version is gpuwatch's version, for gpuwatch_build_info on /metrics.
	Version string
}

// Daemon is a running gpuwatch.
type Daemon struct {
	opts       Options
	logger     *slog.Logger
	db         *store.DB
	silences   *notifier.Silences
	mu         sync.Mutex // guards cfg, engine and dispatcher against Reload
	cfg        *config.Config
	engine     *rules.Engine
	dispatcher *notifier.Dispatcher
	deliverers map[string]*notifier.Deliverer
	addr       atomic.Value // string: where the HTTP API listens
	// unwritten is a snapshot's commit the store refused; the next Step
	// writes it first, so a failing disk delays notifications, never drops them.
	unwritten *notifier.Commit
	metrics   daemonMetrics

	// What the Slack app reads and acts through.
	last    atomic.Pointer[gpu.Snapshot] // the latest snapshot
	history *histories                   // the last day of every GPU, for /gpu history
	app     *slackbot.App                // nil without slack.signing_secret and slack.app_token

	digests *digests // usage rollups and the digest schedule
}

// New opens the store, restores what the last run left (alert states,
// waiting notifications, silences) and builds every receiver. The caller
// must Close the daemon.
func New(cfg *config.Config, opts Options) (*Daemon, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Backoff == (notifier.Backoff{}) {
		opts.Backoff = notifier.DefaultBackoff()
	}
	db, err := store.Open(cfg.Storage.Path, store.Options{})
	if err != nil {
		return nil, fmt.Errorf("open the state store (storage.path): %w", err)
	}
	d := &Daemon{opts: opts, logger: opts.Logger, db: db, cfg: cfg, history: newHistories()}
	if err := d.start(cfg); err != nil {
		db.Close()
		return nil, err
	}
	return d, nil
}

func (d *Daemon) start(cfg *config.Config) error {
	var err error
	d.silences, err = notifier.NewSilences(kvBucket{d.db, "silences"}, nil)
	if err != nil {
		return fmt.Errorf("load silences: %w", err)
	}
	d.forgetOldSilences()
	route, err := buildRoute(cfg)
	if err != nil {
		return err
	}
	d.dispatcher = notifier.NewDispatcher(route, d.silences, d.logger)
	groups, err := d.db.All(notifier.BucketGroups)
	if err != nil {
		return err
	}
	sent, err := d.db.All(notifier.BucketSent)
	if err != nil {
		return err
	}
	if err := d.dispatcher.Restore(groups, sent); err != nil {
		return err
	}
	if err := d.restoreAcks(); err != nil {
		return err
	}
	d.engine = d.newEngine(cfg)
	records, err := d.loadAlerts()
	if err != nil {
		return err
	}
	d.engine.Restore(records)
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
	return rules.NewEngine(cfg.Rules, rules.Options{RepeatFor: d.dispatcher.RepeatInterval})
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
			d.logger.Warn("dropping an unreadable saved alert state", "key", key, "err", err)
			continue
		}
		records = append(records, rec)
	}
	return records, nil
}

func alertRecordKey(t *rules.Transition) string { return t.Alert + "/" + t.UUID }

// Close releases the store.
func (d *Daemon) Close() error { return d.db.Close() }

// Run starts the deliverers and the HTTP API and evaluates every snapshot
// of src until src ends (nil) or ctx ends (nil: a clean stop).
func (d *Daemon) Run(ctx context.Context, src gpu.Source, reload <-chan *config.Config) error {
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: the deliverers stop when ctx ends
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, dl := range d.deliverers {
		wg.Go(func() { dl.Run(ctx) })
	}
	d.startSocketMode(ctx, &wg)
	defer d.flushRollups()
	wg.Go(func() { d.digests.scheduler.Run(ctx, d.opts.Now, d.fireDigest) })
	wg.Go(func() { every(ctx, silenceGCInterval, d.forgetOldSilences) })
	srv, err := d.serve(ctx)
	if err != nil {
		return err
	}
	defer srv.Shutdown(context.Background())
	for {
		snap, err := src.Next(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, io.EOF):
			d.logger.Info("the source has no more samples; delivering what is queued")
			d.drain(ctx)
			return nil
		case err != nil:
			return err
		}
		select {
		case cfg := <-reload:
			d.Reload(cfg)
		default:
		}
		began := time.Now()
		d.Step(snap)
		d.observeStep(time.Since(began))
	}
}

// Step evaluates one snapshot: rules, routing, and one durable write of
// everything it decided; then it wakes the deliverers concerned.
func (d *Daemon) Step(snap *gpu.Snapshot) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.last.Store(snap)
	d.history.Record(snap)
	LogEvents(d.logger, snap)
	ts := d.engine.Eval(snap)
	c := d.dispatcher.Dispatch(snap.Time, ts)
	for i := range ts {
		t := &ts[i]
		if t.Resolved() {
			c.DeleteRecord(BucketAlerts, alertRecordKey(t))
			continue
		}
		var b bytes.Buffer
		if err := gob.NewEncoder(&b).Encode(rules.AlertRecord{Rule: t.Alert, UUID: t.UUID, Alert: t.AlertState}); err != nil {
			d.logger.Error("cannot encode an alert state", "alert", t.Alert, "err", err)
			continue
		}
		c.PutRecord(BucketAlerts, alertRecordKey(t), b.Bytes())
	}
	d.stepDigests(snap, ts, c)
	if d.unwritten != nil {
		c.Absorb(d.unwritten)
		d.unwritten = nil
	}
	if c.Empty() {
		return
	}
	if err := d.db.Commit(c.Outbox, c.Put, c.Delete); err != nil {
		d.logger.Error("cannot write to the store; keeping this sample's notifications to write with the next one", "err", err)
		d.unwritten = c
		return
	}
	for receiver := range c.Outbox {
		if dl, ok := d.deliverers[receiver]; ok {
			dl.Wake()
		}
	}
}

// drain waits until every outbox is empty or ctx ends: a source that ends
// (a replay) should not cut deliveries short.
func (d *Daemon) drain(ctx context.Context) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		empty := true
		for name := range d.deliverers {
			if n, err := d.db.PendingCount(name); err != nil || n > 0 {
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
				"gpu", ev.GPU, "uuid", ev.UUID, "detail", ev.Detail)
		case gpu.EventXID:
			logger.Warn("XID error", "gpu", ev.GPU, "uuid", ev.UUID, "xid", ev.XID, "detail", ev.Detail)
		}
	}
}

// kvBucket is one bucket of the store as the small key-value interfaces
// of the integrations (silences, Slack messages) want it.
type kvBucket struct {
	db     *store.DB
	bucket string
}

func (b kvBucket) Put(key string, value []byte) error { return b.db.Put(b.bucket, key, value) }
func (b kvBucket) Delete(key string) error            { return b.db.Delete(b.bucket, key) }
func (b kvBucket) All() (map[string][]byte, error)    { return b.db.All(b.bucket) }
func (b kvBucket) Get(key string) ([]byte, bool, error) {
	return b.db.Get(b.bucket, key)
}
