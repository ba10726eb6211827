// Package webhook delivers notifications to HTTP webhooks in the format the
// far side expects: gpuwatch's own JSON (generic), the Alertmanager webhook
// payload, Discord, Microsoft Teams, Feishu/Lark, DingTalk, WeCom,
// PagerDuty's Events API v2, or a user's Go template.
//
// Each Notify makes exactly one attempt (one request, or one per alert for
// PagerDuty) and says whether a failure is worth a retry; retries live in
// the notifier's outbox. Every request carries the notification's
// Idempotency-Key header (notifier.IdempotencyKey), the same on every try,
// for the far side to drop a repeat. Errors never quote the URL, the
// signing secret, the routing key or header values.
//
// # The generic format
//
// format: generic (the default) posts this JSON, version "1":
//
//	{
//	  "version": "1",
//	  "receiver": "ops",                      // the receiver's name
//	  "status": "firing",                     // or "resolved"
//	  "group_key": "ops/GPUMemoryLeak/firing",
//	  "alerts": [{
//	    "key": "node1/GPUMemoryLeak/GPU-cd61…", // stable across transitions and restarts
//	    "alert": "GPUMemoryLeak",
//	    "status": "firing",
//	    "repeat": false,                      // true: a reminder of an alert still firing
//	    "severity": "critical",               // info | warning | critical
//	    "host": "node1",
//	    "gpu": 0,                             // null for an alert about no GPU (GPUWatchSourceDown)
//	    "uuid": "GPU-cd61…",
//	    "gpu_name": "NVIDIA H100 80GB HBM3",
//	    "labels": {"alert": "GPUMemoryLeak", "severity": "critical", "host": "node1", "gpu": "0", "uuid": "GPU-cd61…"},
//	    "summary": "GPU 0 memory keeps growing: 1.5 GiB/min",
//	    "description": "",
//	    "value": 26843545.6,                  // base unit: bytes, percent, C, W, seconds, per second; null if unknown
//	    "value_text": "1.5 GiB/min",
//	    "trend": 26843545.6,                  // per second over the last 30 minutes; null if unknown
//	    "trend_text": "+1.5 GiB/min",
//	    "time_to_full_seconds": 720,          // null when unknown or not growing
//	    "starts_at": "2026-11-29T09:41:05Z",
//	    "ends_at": null,                      // RFC 3339 once resolved
//	    "at": "2026-11-29T09:41:05Z",         // when this transition happened
//	    "processes": [{"pid": 4242, "user": "alice", "command": "python train.py",
//	                   "container": "docker:3f2a9c1b7e4d", "memory_bytes": 65498251264}]
//	  }]
//	}
//
// A scheduled usage digest posts, in the same version:
//
//	{
//	  "version": "1",
//	  "receiver": "ops",
//	  "status": "digest",
//	  "digest": {
//	    "name": "daily",                      // the digest's name in the config
//	    "title": "GPU usage on node1, …",
//	    "text": "…",                          // plain text
//	    "markdown": "…",
//	    "data": {…}                           // the report as JSON
//	  }
//	}
//
// # Digests in the other formats
//
// The chat formats post a digest's title and markdown; template executes
// with the notification, whose .Digest is then set and .Alerts empty
// (test {{if .Digest}}); alertmanager and pagerduty take alerts only and
// refuse a digest with a permanent error.
package webhook

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/httpclient"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// The formats a webhook receiver speaks.
const (
	FormatGeneric      = "generic"
	FormatAlertmanager = "alertmanager"
	FormatDiscord      = "discord"
	FormatTeams        = "teams"
	FormatFeishu       = "feishu"
	FormatDingTalk     = "dingtalk"
	FormatWeCom        = "wecom"
	FormatPagerDuty    = "pagerduty"
	FormatTemplate     = "template"
)

// Formats returns the names of every format, the default first.
func Formats() []string {
	return []string{FormatGeneric, FormatAlertmanager, FormatDiscord, FormatTeams, FormatFeishu,
		FormatDingTalk, FormatWeCom, FormatPagerDuty, FormatTemplate}
}

// DefaultTimeout bounds one request when the config sets no timeout.
const DefaultTimeout = 10 * time.Second

// userAgent names gpuwatch to the far side.
const userAgent = "gpuwatch"

// maxAnswer bounds how much of an answer's body is read.
const maxAnswer = 64 << 10

// Config is the `webhook:` block of a receiver in gpuwatch's config.
type Config struct {
	// URL is where to post; a secret (it often holds a token). Optional
	// for pagerduty, which defaults to PagerDuty's Events API v2.
	URL string `yaml:"url"`
	// Format is one of Formats(); empty means generic.
	Format string `yaml:"format"`
	// Secret signs feishu and dingtalk requests; a secret.
	Secret string `yaml:"secret"`
	// RoutingKey is PagerDuty's integration key; a secret.
	RoutingKey string `yaml:"routing_key"`
	// Template is the body for format template, a Go text/template
	// executed with the *notifier.Notification.
	Template string `yaml:"template"`
	// Headers are added to every request (Authorization: Bearer …); their
	// values are secrets. Only format template may set Content-Type.
	Headers map[string]string `yaml:"headers"`
	// Timeout bounds one request; 0 means DefaultTimeout.
	Timeout time.Duration `yaml:"timeout"`
}

// Check returns every problem with the config, in words a person can act
// on; nil when it is usable. Problems never quote a secret.
func (c *Config) Check() []string {
	var problems []string
	format := cmp.Or(c.Format, FormatGeneric)
	problems = append(problems, checkURL(c.URL, format)...)
	if !slices.Contains(Formats(), format) {
		// What else fits depends on the format: say only this.
		return append(problems, fmt.Sprintf("format %q is not one of %s", c.Format, strings.Join(Formats(), ", ")))
	}
	if c.Secret != "" && format != FormatFeishu && format != FormatDingTalk {
		problems = append(problems, fmt.Sprintf("secret is only used by formats feishu and dingtalk, not %s: remove it", format))
	}
	switch {
	case format == FormatPagerDuty && c.RoutingKey == "":
		problems = append(problems, "format pagerduty needs routing_key: the integration key of a PagerDuty Events API v2 integration")
	case format != FormatPagerDuty && c.RoutingKey != "":
		problems = append(problems, fmt.Sprintf("routing_key is only used by format pagerduty, not %s: remove it", format))
	}
	switch {
	case format == FormatTemplate && strings.TrimSpace(c.Template) == "":
		problems = append(problems, "format template needs template: the Go template of the request body")
	case format == FormatTemplate:
		problems = append(problems, checkTemplate(c.Template, contentType(c))...)
	case c.Template != "":
		problems = append(problems, fmt.Sprintf("template is only used by format template, not %s: set format: template or remove it", format))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Headers)) {
		switch {
		case !validHeaderName(name):
			problems = append(problems, fmt.Sprintf("header %q is not a valid HTTP header name", name))
		case strings.EqualFold(name, "Host"):
			problems = append(problems, "header Host cannot be set: put the host in url")
		case strings.EqualFold(name, "Content-Type") && format != FormatTemplate:
			problems = append(problems, fmt.Sprintf("header Content-Type cannot be set for format %s, which sends JSON; only format template may set it", format))
		case strings.ContainsAny(c.Headers[name], "\r\n"):
			problems = append(problems, fmt.Sprintf("header %s has a line break in its value", name))
		}
	}
	if c.Timeout < 0 {
		problems = append(problems, fmt.Sprintf("timeout %v is negative: leave it out for %v", c.Timeout, DefaultTimeout))
	}
	return problems
}

// checkURL says what is wrong with a webhook URL without quoting it.
func checkURL(raw, format string) []string {
	if raw == "" {
		if format == FormatPagerDuty {
			return nil
		}
		return []string{"url is missing: set it to the webhook's http(s) URL"}
	}
	if p := httpclient.CheckURL(raw); p != "" {
		return []string{"url " + p}
	}
	return nil
}

func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// contentType is the request's Content-Type: JSON unless a template's
// headers say otherwise.
func contentType(c *Config) string {
	for k, v := range c.Headers {
		if strings.EqualFold(k, "Content-Type") {
			return v
		}
	}
	return "application/json"
}

// Notifier posts notifications to one webhook.
type Notifier struct {
	name    string
	cfg     Config
	url     string
	client  *http.Client
	now     func() time.Time
	timeout time.Duration
	body    *template.Template // format template
	secrets []string           // what errors must never quote, longest first
	ctype   string
	// charts draws the pictures alerts name, for the formats that carry
	// one (discord); chartURL links them (generic's chart_url, a Teams
	// card's button). Both optional; see SetCharts.
	charts   notifier.Charts
	chartURL func(id string) string
}

// SetCharts gives the notifier the pictures alerts name: charts draws
// them for the formats that carry an image (discord), chartURL links them
// where people with access to the API open them (generic's chart_url,
// a button on a Teams card); either may be nil.
func (n *Notifier) SetCharts(charts notifier.Charts, chartURL func(id string) string) {
	n.charts, n.chartURL = charts, chartURL
}

// linkOf is the link to an alert's chart, "" when there is none.
func (n *Notifier) linkOf(a *notifier.Alert) string {
	if n.chartURL == nil || a.Chart == "" {
		return ""
	}
	return n.chartURL(a.Chart)
}

// New returns a notifier for the receiver called name. client nil means a
// client of its own with the config's timeout. now gives the timestamps
// feishu and dingtalk sign (their servers refuse ones an hour off); nil
// means the wall clock. It fails with every problem Check finds.
func New(name string, c Config, client *http.Client, now func() time.Time) (*Notifier, error) {
	if problems := c.Check(); len(problems) > 0 {
		return nil, fmt.Errorf("webhook receiver %q: %s", name, strings.Join(problems, "; "))
	}
	c.Format = cmp.Or(c.Format, FormatGeneric)
	n := &Notifier{name: name, cfg: c, url: c.URL, client: client, now: now,
		timeout: cmp.Or(c.Timeout, DefaultTimeout), ctype: contentType(&c)}
	if n.url == "" && c.Format == FormatPagerDuty {
		n.url = pagerDutyURL
	}
	if n.client == nil {
		n.client = &http.Client{Timeout: n.timeout}
	}
	if n.now == nil {
		n.now = time.Now
	}
	if c.Format == FormatTemplate {
		t, err := parseTemplate(c.Template)
		if err != nil { // Check parsed it already; kept for safety
			return nil, fmt.Errorf("webhook receiver %q: %w", name, err)
		}
		n.body = t
	}
	n.secrets = secretsOf(&c)
	return n, nil
}

// secretsOf lists every string an error must not quote: the URL's secret
// parts, the signing secret, the routing key and header values (and the
// token of an "Authorization: Bearer TOKEN"), in every form a far side may
// echo them in.
func secretsOf(c *Config) []string {
	values := append(notifier.URLSecrets(c.URL), c.Secret, c.RoutingKey)
	for _, v := range c.Headers {
		values = append(values, v)
		if _, token, ok := strings.Cut(v, " "); ok { // "Bearer TOKEN"
			values = append(values, strings.TrimSpace(token))
		}
	}
	return notifier.Secrets(values...)
}

// Notify makes one attempt to deliver m: one request, or for pagerduty one
// per alert. retry says whether a failure is worth trying again. A usage
// digest is one request; alertmanager and pagerduty refuse it for good.
func (n *Notifier) Notify(ctx context.Context, m *notifier.Notification) (retry bool, err error) {
	if isDigest(m) {
		ctx, cancel := context.WithTimeout(ctx, n.timeout)
		defer cancel()
		return n.notifyDigest(ctx, m)
	}
	if m == nil || len(m.Alerts) == 0 {
		return false, errors.New("webhook: notification has no alerts")
	}
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	if n.cfg.Format == FormatPagerDuty {
		return n.notifyPagerDuty(ctx, m)
	}
	target, body, err := n.encode(m)
	if err != nil {
		return false, n.fail(fmt.Errorf("%s: %w", n.cfg.Format, err))
	}
	if n.cfg.Format == FormatDiscord && n.charts != nil {
		if withImages, ctype, ok := n.discordImages(m, body); ok {
			return n.postAs(ctx, target, withImages, ctype, m.IdempotencyKey(), nil)
		}
	}
	return n.post(ctx, target, body, m.IdempotencyKey(), n.answerCheck())
}

// encode builds the request's URL and body in the receiver's format.
func (n *Notifier) encode(m *notifier.Notification) (target string, body []byte, err error) {
	switch n.cfg.Format {
	case FormatGeneric:
		body, err = encodeGeneric(n.name, m, n.linkOf)
	case FormatAlertmanager:
		body, err = encodeAlertmanager(n.name, m)
	case FormatDiscord:
		body, err = encodeDiscord(m)
	case FormatTeams:
		body, err = encodeTeams(m, n.linkOf)
	case FormatFeishu:
		body, err = encodeFeishu(m, n.cfg.Secret, n.now())
	case FormatDingTalk:
		body, err = encodeDingTalk(m)
		if err == nil && n.cfg.Secret != "" {
			target, err = signDingTalkURL(n.url, n.cfg.Secret, n.now())
		}
	case FormatWeCom:
		body, err = encodeWeCom(m)
	case FormatTemplate:
		body, err = executeTemplate(n.body, m, n.ctype)
	default:
		err = fmt.Errorf("unknown format %q", n.cfg.Format)
	}
	return cmp.Or(target, n.url), body, err
}

// answerCheck returns the check of a 2xx answer's body for the formats
// that report failures in it, nil for the others.
func (n *Notifier) answerCheck() func([]byte) (bool, error) {
	switch n.cfg.Format {
	case FormatFeishu:
		return checkFeishuAnswer
	case FormatDingTalk:
		return checkDingTalkAnswer
	case FormatWeCom:
		return checkWeComAnswer
	}
	return nil
}

// post sends one request and classifies the answer: the HTTP status by
// notifier.CheckResponse, then the body by answer when it is set. key is
// the notification's notifier.IdempotencyKey, sent in its header.
func (n *Notifier) post(ctx context.Context, target string, body []byte, key string, answer func([]byte) (bool, error)) (bool, error) {
	return n.postAs(ctx, target, body, n.ctype, key, answer)
}

// postAs is post with the body's Content-Type.
func (n *Notifier) postAs(ctx context.Context, target string, body []byte, ctype, key string, answer func([]byte) (bool, error)) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return false, n.fail(fmt.Errorf("%s: build request: %w", n.cfg.Format, err))
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set(notifier.IdempotencyHeader, key)
	for k, v := range n.cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return true, n.fail(fmt.Errorf("%s: %w", n.cfg.Format, notifier.TransportError(err)))
	}
	defer resp.Body.Close()
	if retry, err := notifier.CheckResponse(resp, n.now()); err != nil {
		return retry, n.fail(fmt.Errorf("%s: %w", n.cfg.Format, err))
	}
	got, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return true, n.fail(fmt.Errorf("%s: read answer: %w", n.cfg.Format, notifier.TransportError(err)))
	}
	if answer == nil {
		return false, nil
	}
	if retry, err := answer(got); err != nil {
		return retry, n.fail(fmt.Errorf("%s: %w", n.cfg.Format, err))
	}
	return false, nil
}

// fail makes err safe to log: every secret the notifier holds is replaced
// in its text (see notifier.RedactError).
func (n *Notifier) fail(err error) error {
	return notifier.RedactError(err, n.secrets...)
}
