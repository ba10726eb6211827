// Package prometheus is the source of a gpuwatch hub: it reads the GPUs of
// a whole fleet from a Prometheus-compatible query API (Prometheus, Thanos,
// Mimir, VictoriaMetrics), from the series of gpuwatch agents or of NVIDIA
// dcgm-exporter, and turns each evaluation into one gpu.Snapshot per host.
//
// An evaluation is one instant query, whatever the size of the fleet: every
// series of the schema that the selector matches, at the evaluation's time,
// which becomes every snapshot's time. A host whose series were there
// before and are gone gets a snapshot without GPUs, so the rules engine
// counts its GPUs missing; a GPU an agent reports lost (gpuwatch_gpu_lost 1)
// is left out of its host's. XID events are the increases of the agents'
// XID counters, or the changes of dcgm-exporter's last XID, between
// evaluations. At start, Backfill reads the past with one range query per
// series family so that the engine's windows are full at once.
//
// Only /api/v1/query and /api/v1/query_range are used. A failed query is a
// *gpu.SourceError: the daemon keeps running and says so in an alert.
package prometheus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// Options configure a Source.
type Options struct {
	// URL is the query API's base, such as http://prometheus:9090 (the
	// API is under URL/api/v1).
	URL      string
	Selector Selector
	Schema   Schema
	// Interval is the time between evaluations.
	Interval time.Duration
	// Timeout bounds each query; zero means DefaultTimeout.
	Timeout time.Duration
	// Client sends the queries, with the credentials and TLS the far side
	// wants; nil means http.DefaultClient.
	Client *http.Client
	// Secrets returns the credentials Client sends: they are cut out of
	// every error, even one that quotes the far side's answer. Nil: none.
	Secrets func() []string
	Logger  *slog.Logger
}

// DefaultTimeout bounds a query when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// MaxPoints is the most points a range query asks per series: Prometheus
// refuses more than 11,000.
const MaxPoints = 11000

// Source reads a fleet's GPUs from Prometheus; it is a gpu.Source (one
// snapshot per host and evaluation, hosts in order) used by one goroutine.
type Source struct {
	*gpu.Poller
	q *querier
}

// New makes a Source; it sends nothing until Backfill or Next.
func New(opts Options) (*Source, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus url %q is not http(s)://host:port", opts.URL)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	cfg := api.Config{Address: opts.URL, Client: opts.Client}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("prometheus client: %w", err)
	}
	q := &querier{opts: opts, api: v1.NewAPI(c), client: cfg.Client, build: newBuilder(opts.Schema)}
	return &Source{Poller: gpu.PollFleet(q, opts.Interval), q: q}, nil
}

// Backfill reads the last span of the fleet, one step per evaluation
// interval (coarser when that would pass MaxPoints), and hands each past
// evaluation's snapshots to warm, in time order, before the first Next.
// It sends one range query per series family of the schema.
func (s *Source) Backfill(ctx context.Context, span time.Duration, warm func(*gpu.Snapshot)) error {
	return s.q.backfill(ctx, time.Now(), span, warm)
}

// querier runs the queries and builds the snapshots.
type querier struct {
	opts   Options
	api    v1.API
	client *http.Client
	build  *builder
}

// SampleFleet runs an evaluation at time at: one instant query.
func (q *querier) SampleFleet(ctx context.Context, at time.Time) ([]*gpu.Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, q.opts.Timeout)
	defer cancel()
	query := q.opts.Selector.Query(q.opts.Schema.names())
	val, warnings, _, err := q.api.Query(ctx, query, at)
	if err != nil {
		return nil, &gpu.SourceError{At: at, Err: q.failure("query", err)}
	}
	q.warn(warnings)
	vec, ok := val.(model.Vector)
	if !ok {
		return nil, &gpu.SourceError{At: at, Err: fmt.Errorf("prometheus at %s answered a %s to an instant query, not a vector", q.opts.URL, val.Type())}
	}
	snaps := q.build.build(at, vectorPoints(vec))
	q.logSkipped()
	if len(snaps) == 0 {
		return nil, &gpu.SourceError{At: at, Err: q.noSeries()}
	}
	return snaps, nil
}

// noSeries is the error of an answer without a single GPU series, when
// no host was ever seen: the hub would watch nothing.
func (q *querier) noSeries() error {
	sel := q.opts.Selector.String()
	if sel == "" {
		sel = "{}"
	}
	return fmt.Errorf("prometheus at %s has no GPU series of schema %s matching %s: is it scraping the gpuwatch agents or dcgm-exporters, and does the selector match their labels?",
		q.opts.URL, q.opts.Schema, sel)
}

func (q *querier) warn(warnings v1.Warnings) {
	for _, w := range warnings {
		q.opts.Logger.Warn("prometheus warns about a query's answer (it may be partial)", "url", q.opts.URL, "warning", q.redact(w))
	}
}

func (q *querier) logSkipped() {
	if n := q.build.skipped; n > 0 {
		q.opts.Logger.Debug("series without a host or GPU label left out", "series", n)
	}
}

// failure words a failed query, without any credential.
func (q *querier) failure(what string, err error) error {
	var apiErr *v1.Error
	msg := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		msg = fmt.Sprintf("no answer within %v (source.prometheus.timeout)", q.opts.Timeout)
	case errors.As(err, &apiErr):
		msg = strings.TrimSpace(string(apiErr.Type) + ": " + apiErr.Msg)
		if said := farSideError(apiErr.Detail); said != "" {
			msg += ": " + said
		}
	}
	return errors.New(q.redact(fmt.Sprintf("%s prometheus at %s: %s", what, q.opts.URL, msg)))
}

// farSideError is what an answer's body says went wrong: the "error" of
// an API error, or the start of its text.
func farSideError(body string) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(body), &e) == nil {
		return clip(e.Error, 300)
	}
	return clip(strings.TrimSpace(body), 300)
}

// Close lets go of idle connections.
func (q *querier) Close() error {
	q.client.CloseIdleConnections()
	return nil
}

func vectorPoints(vec model.Vector) []point {
	out := make([]point, len(vec))
	for i, s := range vec {
		out[i] = point{metric: s.Metric, value: float64(s.Value)}
	}
	return out
}

// redact cuts the credentials out of text.
func (q *querier) redact(text string) string {
	if q.opts.Secrets == nil {
		return text
	}
	for _, s := range q.opts.Secrets() {
		if s != "" {
			text = strings.ReplaceAll(text, s, "<secret>")
		}
	}
	return text
}
