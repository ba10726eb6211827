// Package prometheus is the source of a gpuwatch hub: it reads the GPUs of
// a whole fleet from a Prometheus-compatible query API (Prometheus, Thanos,
// Mimir, VictoriaMetrics), from the series of gpuwatch agents or of NVIDIA
// dcgm-exporter, and turns each evaluation into one gpu.Snapshot per host.
//
// An evaluation is one instant query, whatever the size of the fleet: every
// series of the schema that the selector matches, and the up series of the
// scrape targets, at the evaluation's time, which becomes every snapshot's
// time. Its answer is decoded as it arrives. A host whose series were
// there before and are gone is judged by its targets' up: up, it reports
// without GPUs, so the rules engine counts its GPUs missing; down (up 0),
// its snapshot is Down, one alert for the host and none of its GPUs lost;
// neither (Prometheus has just started, or lost its scrapes), the
// evaluation is a *gpu.SourceError, and only past a grace is the host
// down. A GPU an agent reports lost (gpuwatch_gpu_lost 1) is left out of
// its host's. Each GPU's health readings are read from the agents'
// series, or from dcgm-exporter's under the field names of its 3.x and
// 4.0–4.8 releases or the renamed ones of 4.9 (package healthseries).
// XID events are the increases of the agents' XID counters, or of
// dcgm-exporter's counts of XIDs within a window, else the changes of its
// last XID, between evaluations. At start, Backfill reads the past with
// range queries, each reading over the span and at the step the rules
// need of it (Past; the health readings most fleets lack, together), so
// that the engine's windows are full at once.
//
// Only /api/v1/query and /api/v1/query_range are used. A failed query is a
// *gpu.SourceError: the daemon keeps running and says so in an alert.
package prometheus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

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
	// PodLabelKeys are the Kubernetes pod label keys read of
	// dcgm-exporter's series (--kubernetes-enable-pod-labels) and of
	// gpuwatch agents' per-process series (label_KEY, metrics.pod_labels),
	// sorted and distinct, at most gpu.MaxPodLabels: a process, or a pod
	// holding a GPU, carries them as its PodLabels.
	PodLabelKeys []string
	// Compression is how answers are asked for; "" is CompressionGzip.
	Compression Compression
}

// DefaultTimeout bounds a query when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// MaxPoints is the most points a range query asks per series: Prometheus
// refuses more than 11,000.
const MaxPoints = 11000

// maxAnswer is the largest answer read: a fleet of 10,000 GPUs answers
// some 40 MB.
const maxAnswer = 1 << 30

// MaxSeries is the most series one answer may have: a fleet of 10,000
// GPUs answers some 250,000. A larger answer fails the query, before
// what it holds grows past what a hub's memory allows for.
const MaxSeries = 500_000

// MaxGPUs is the most GPUs a hub watches, twice the 10,000 it is measured
// with (docs/fleet.md): an evaluation whose series name more fails.
const MaxGPUs = 20_000

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
	if opts.Compression, err = ParseCompression(string(opts.Compression)); err != nil {
		return nil, fmt.Errorf("prometheus %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	client := opts.Client
	if client == nil {
		client = http.DefaultClient
	}
	q := &querier{opts: opts, base: u, client: client, build: newBuilder(opts.Schema, opts.Interval, opts.PodLabelKeys), strs: newInterner(),
		metrics: newMetricCache(), refused: newRefusedLog()}
	return &Source{Poller: gpu.PollFleet(q, opts.Interval), q: q}, nil
}

// Backfill reads the past of the fleet that past asks for and hands each
// past evaluation's snapshots to warm, in time order, before the first
// Next. It sends one range query per series family read and round of
// chunkSteps steps.
func (s *Source) Backfill(ctx context.Context, past Past, warm func(*gpu.Snapshot)) error {
	return s.q.backfill(ctx, time.Now(), past, warm)
}

// querier runs the queries and builds the snapshots.
type querier struct {
	opts   Options
	base   *url.URL // the URL Prometheus's API paths are under
	client *http.Client
	build  *builder
	strs   *interner // the label values of the answers, shared
	buf    []byte    // the buffer answers are read through
	// unzip decompresses the answers that come gzipped.
	unzip decompressor
	// metrics are the label sets of the last evaluation's series, by
	// place: the next evaluation's are most often the same.
	metrics *metricCache
	// refused are the series left out that the log has named.
	refused *refusedLog
}

// SampleFleet runs an evaluation at time at: one instant query, of the
// GPU series and of the scrape targets' up. Its answer is read as it
// arrives, each series filed under its GPU at once: a fleet's answer is
// tens of megabytes, and only what the snapshots keep is held.
func (q *querier) SampleFleet(ctx context.Context, at time.Time) ([]*gpu.Snapshot, error) {
	e := q.build.start(at)
	q.strs.next()
	a, err := q.get(ctx, instantPath, url.Values{
		"query": {q.opts.Selector.Query(append(q.opts.Schema.names(), upSeries))},
		"time":  {formatTime(at)},
	}, func(ls *labelSet, samples []sample) error {
		if len(samples) == 1 {
			e.add(ls, samples[0].v)
		}
		return e.err
	})
	if err != nil {
		return nil, &gpu.SourceError{At: at, Err: q.failure("query", err)}
	}
	if a.resultType != "vector" {
		return nil, &gpu.SourceError{At: at, Err: fmt.Errorf("prometheus at %s answered a %q to an instant query, not a vector", q.opts.URL, a.resultType)}
	}
	snaps, unknown := e.finish(true)
	q.logSkipped()
	switch {
	case len(unknown) > 0:
		return nil, &gpu.SourceError{At: at, Err: q.silent(unknown)}
	case len(snaps) == 0:
		return nil, &gpu.SourceError{At: at, Err: q.noSeries()}
	}
	return snaps, nil
}

// silent is the error of an answer without the series of hosts that
// reported before, nor an up series of their targets: Prometheus is
// starting, or lost its scrapes of them, and the hosts' GPUs are not lost
// for that.
func (q *querier) silent(hosts []string) error {
	some := strings.Join(hosts[:min(len(hosts), 5)], ", ")
	if len(hosts) > 5 {
		some += fmt.Sprintf(" and %d more", len(hosts)-5)
	}
	return fmt.Errorf("prometheus at %s answers without the series of %d of the %d hosts it had (%s), and without an up series of their targets: it is starting, or not scraping them; no GPU is judged lost for that",
		q.opts.URL, len(hosts), len(q.build.hosts), some)
}

// instantPath is the query API's instant query: an evaluation.
const instantPath = "/api/v1/query"

// maxErrorAnswer is how much of an answer that is not a success is read
// for the error to quote.
const maxErrorAnswer = 64 << 10

// get asks the query API and decodes its answer as it arrives, handing
// each series to each (nil: the answer keeps them); an answer that is not
// a success is an error saying what Prometheus said.
func (q *querier) get(ctx context.Context, endpoint string, params url.Values, each func(*labelSet, []sample) error) (*answer, error) {
	ctx, cancel := context.WithTimeout(ctx, q.opts.Timeout)
	defer cancel()
	u := *q.base
	u.Path = path.Join(q.base.Path, endpoint)
	// VictoriaMetrics answers a query of its last 30 s (its
	// -search.latencyOffset) as of 30 s earlier, unless it is told not to
	// cache: the hub would see every reading 30 s late. Prometheus, Thanos
	// and Mimir ignore the parameter.
	params.Set("nocache", "1")
	u.RawQuery = params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept-Encoding", q.opts.Compression.acceptEncoding())
	resp, err := q.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := q.unzip.body(resp)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(answer, maxErrorAnswer))
		if a, err := parseAnswer(body); err == nil && a.errorMsg != "" {
			return nil, &queryError{kind: a.errorType, msg: a.errorMsg}
		}
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, clip(strings.TrimSpace(string(body)), 300))
	}
	var metrics *metricCache
	if endpoint == instantPath {
		metrics = q.metrics
	}
	a, err := decodeAnswer(answer, maxAnswer, &q.buf, q.strs, q.build.podNames, metrics, each)
	switch {
	case err != nil:
		return nil, err
	case a.status != "success" && a.errorMsg != "":
		return nil, &queryError{kind: a.errorType, msg: a.errorMsg}
	case a.status != "success":
		return nil, fmt.Errorf("HTTP %d: status %q", resp.StatusCode, a.status)
	}
	q.warn(a.warnings)
	q.logRefused(a)
	return a, nil
}

// queryError is what Prometheus said of a query it refused: the kind
// (bad_data, timeout, execution…) and its message.
type queryError struct{ kind, msg string }

func (e *queryError) Error() string { return e.kind + ": " + e.msg }

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
