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
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

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

// maxAnswer is the largest answer read: a fleet of 10,000 GPUs answers
// some 40 MB.
const maxAnswer = 1 << 30

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
	q := &querier{opts: opts, api: c, client: cfg.Client, build: newBuilder(opts.Schema)}
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
	api    api.Client
	client *http.Client
	build  *builder
}

// SampleFleet runs an evaluation at time at: one instant query.
func (q *querier) SampleFleet(ctx context.Context, at time.Time) ([]*gpu.Snapshot, error) {
	a, err := q.get(ctx, "/api/v1/query", url.Values{
		"query": {q.opts.Selector.Query(q.opts.Schema.names())},
		"time":  {formatTime(at)},
	})
	if err != nil {
		return nil, &gpu.SourceError{At: at, Err: q.failure("query", err)}
	}
	if a.resultType != "vector" {
		return nil, &gpu.SourceError{At: at, Err: fmt.Errorf("prometheus at %s answered a %q to an instant query, not a vector", q.opts.URL, a.resultType)}
	}
	points := make([]point, 0, len(a.series))
	for i := range a.series {
		if s := &a.series[i]; len(s.samples) > 0 {
			points = append(points, point{labels: &s.labels, value: s.samples[0].v})
		}
	}
	snaps := q.build.build(at, points)
	q.logSkipped()
	if len(snaps) == 0 {
		return nil, &gpu.SourceError{At: at, Err: q.noSeries()}
	}
	return snaps, nil
}

// get asks the query API and decodes its answer; an answer that is not a
// success is an error saying what Prometheus said.
func (q *querier) get(ctx context.Context, path string, params url.Values) (*answer, error) {
	ctx, cancel := context.WithTimeout(ctx, q.opts.Timeout)
	defer cancel()
	u := q.api.URL(path, nil)
	u.RawQuery = params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, body, err := q.api.Do(ctx, req)
	if err != nil {
		return nil, err
	}
	if len(body) > maxAnswer {
		return nil, fmt.Errorf("the answer has %d bytes, more than the %d gpuwatch reads: narrow source.prometheus.selector", len(body), maxAnswer)
	}
	a, perr := parseAnswer(body)
	switch {
	case resp.StatusCode/100 != 2 || (perr == nil && a.status != "success"):
		if perr == nil && a.errorMsg != "" {
			return nil, &v1.Error{Type: v1.ErrorType(a.errorType), Msg: a.errorMsg}
		}
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, clip(strings.TrimSpace(string(body)), 300))
	case perr != nil:
		return nil, perr
	}
	q.warn(a.warnings)
	return a, nil
}

// formatTime writes a time as the API takes it: seconds since the epoch.
func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', -1, 64)
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

func (q *querier) warn(warnings []string) {
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
	msg := err.Error()
	if errors.Is(err, context.DeadlineExceeded) {
		msg = fmt.Sprintf("no answer within %v (source.prometheus.timeout)", q.opts.Timeout)
	}
	return errors.New(q.redact(fmt.Sprintf("%s prometheus at %s: %s", what, q.opts.URL, msg)))
}

// Close lets go of idle connections.
func (q *querier) Close() error {
	q.client.CloseIdleConnections()
	return nil
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
