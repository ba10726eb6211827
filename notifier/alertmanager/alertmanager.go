// Package alertmanager pushes alerts to Prometheus Alertmanager's API
// (POST /api/v2/alerts), as Prometheus itself does, so that gpuwatch on
// every node (or one hub for a fleet) feeds one Alertmanager cluster, which
// deduplicates by label set, groups, inhibits and routes to on-call.
//
// Each alert carries the labels alertname, host, gpu, uuid, severity and
// the rule's own labels; the annotations summary and description; startsAt
// (when it fired), endsAt and a generatorURL back to gpuwatch. While an
// alert fires its endsAt is 4 × resend_interval ahead, and the receiver
// pushes it again every resend_interval with a fresh endsAt (Alertmanager
// resolves an alert whose endsAt has passed); on resolve endsAt is the
// time it resolved.
//
// Firing and resolved notifications come through gpuwatch's outbox like
// every receiver's: Notify makes one attempt at every URL that has not
// taken the notification yet (an HA cluster: each instance gets every
// alert) and the outbox retries until all have. The re-sends in between
// are not notifications: Run pushes the receiver's set of firing alerts,
// which is kept in the store so a restart resumes re-sending at once.
package alertmanager

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/httpclient"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// Defaults of the config.
const (
	DefaultResendInterval = time.Minute
	DefaultTimeout        = 10 * time.Second
	// MinResendInterval is the shortest resend_interval: shorter pushes
	// every firing alert more often than Alertmanager needs.
	MinResendInterval = time.Second
)

// lifetimes is how many resend intervals a pushed firing alert lives in
// Alertmanager without a re-send, as Prometheus's 4 × resend delay: three
// re-sends may fail before Alertmanager resolves it.
const lifetimes = 4

// alertsPath is Alertmanager's API endpoint below each URL.
const alertsPath = "/api/v2/alerts"

// Config is the `alertmanager:` block of a receiver in gpuwatch's config.
type Config struct {
	// URLs are the Alertmanager instances, each a base URL
	// (http://alertmanager:9093, or with the --web.route-prefix path).
	// Every instance of an HA cluster gets every alert.
	URLs []string `yaml:"urls"`
	// ResendInterval is how often firing alerts are pushed again; 0
	// means DefaultResendInterval.
	ResendInterval time.Duration `yaml:"resend_interval"`
	// Timeout bounds one request; 0 means DefaultTimeout.
	Timeout time.Duration `yaml:"timeout"`
	// BearerToken (a secret), or the file BearerTokenFile names, is sent
	// as "Authorization: Bearer"; BasicAuth instead as "Basic".
	BearerToken     string                `yaml:"bearer_token"`
	BearerTokenFile string                `yaml:"bearer_token_file"`
	BasicAuth       *httpclient.BasicAuth `yaml:"basic_auth"`
	TLS             *httpclient.TLS       `yaml:"tls"`
	// GeneratorURL is where gpuwatch is reached, for each alert's link
	// back (GeneratorURL + "/api/v1/alerts"); empty means the server's
	// own address (Options.GeneratorURL).
	GeneratorURL string `yaml:"generator_url"`
}

// HTTP returns the config's credentials and TLS.
func (c *Config) HTTP() httpclient.Settings {
	return httpclient.Settings{BearerToken: c.BearerToken, BearerTokenFile: c.BearerTokenFile, BasicAuth: c.BasicAuth, TLS: c.TLS}
}

// ResolvePaths makes every file the config names relative to what
// resolve says (the config file's folder).
func (c *Config) ResolvePaths(resolve func(string) string) {
	s := c.HTTP()
	s.ResolvePaths(resolve)
	c.BearerTokenFile = s.BearerTokenFile // the others are pointers, resolved in place
}

// Check returns every problem with the config, each naming its field; none
// when it is usable. It reads the files the config names. Problems never
// quote a URL or a secret.
func (c *Config) Check() []httpclient.Problem {
	var out []httpclient.Problem
	add := func(field, format string, args ...any) {
		out = append(out, httpclient.Problem{Field: field, Text: fmt.Sprintf(format, args...)})
	}
	if len(c.URLs) == 0 {
		add("urls", "list at least one Alertmanager, such as [http://alertmanager:9093]; every instance of an HA cluster")
	}
	for i, raw := range c.URLs {
		field := fmt.Sprintf("urls[%d]", i)
		if p := httpclient.CheckURL(raw); p != "" {
			add(field, "%s", p)
			continue
		}
		if j := slices.Index(c.URLs[:i], raw); j >= 0 {
			add(field, "is urls[%d] again: list each Alertmanager once", j)
		}
		if u, _ := url.Parse(raw); u.RawQuery != "" || u.Fragment != "" {
			add(field, "has a query or fragment: give the Alertmanager's base URL; gpuwatch posts to %s below it", alertsPath)
		}
	}
	if c.ResendInterval != 0 && c.ResendInterval < MinResendInterval {
		add("resend_interval", "%v is shorter than %v: Alertmanager needs a firing alert again only within minutes; 1m, as Prometheus sends, is a good default",
			c.ResendInterval, MinResendInterval)
	}
	if c.GeneratorURL != "" {
		if p := httpclient.CheckURL(c.GeneratorURL); p != "" {
			add("generator_url", "%s", p)
		}
	}
	s := c.HTTP()
	return append(out, s.Check()...)
}

// FiringStore keeps the receiver's firing alerts across restarts: the
// daemon implements it on its store; values are opaque bytes.
type FiringStore interface {
	All() (map[string][]byte, error)
	Put(key string, value []byte) error
	Delete(key string) error
	// SetAside takes a record that cannot be read out of the way, keeping
	// its bytes, and says so.
	SetAside(key string, why error)
}

// Options are what a Notifier needs besides its config.
type Options struct {
	// HTTPClient makes the requests (its transport then stands for the
	// config's TLS; the credentials are added to it). Nil: a client of
	// the config's own.
	HTTPClient *http.Client
	// Firing keeps the firing alerts across restarts. Nil: in memory only.
	Firing FiringStore
	// Now is the wall clock that endsAt counts from (Alertmanager
	// compares it with its own); nil means time.Now.
	Now func() time.Time
	// Logger gets what Notify cannot return: failed re-sends and store
	// writes. Nil: discarded.
	Logger *slog.Logger
	// GeneratorURL is where gpuwatch is reached when the config sets no
	// generator_url.
	GeneratorURL string
}

// Notifier pushes one receiver's alerts to its Alertmanagers.
type Notifier struct {
	name      string
	targets   []target
	client    *http.Client
	timeout   time.Duration
	resend    time.Duration
	generator string
	now       func() time.Time
	log       *slog.Logger
	secrets   func() []string

	// mu serializes every push (notifications and re-sends), so a re-send
	// never overtakes a resolve, and guards what follows.
	mu sync.Mutex
	// accepted holds, by notification ID, the URLs (by index) that took a
	// notification the others have not yet: a retry goes to the others.
	accepted map[uint64][]bool
	firing   *firingSet
	// failing is, by URL index, whether the last re-send there failed, so
	// the log says once when it works again.
	failing []bool
}

// target is one Alertmanager: where to post, and how to name it in errors.
type target struct {
	endpoint string // URL + alertsPath
	name     string // "urls[1] (http://host:9093/…)": no path, no credentials
}

// New returns the notifier of the receiver called name. It fails with
// every problem Check finds, or when the firing alerts cannot be read.
func New(name string, c Config, opts Options) (*Notifier, error) {
	if problems := c.Check(); len(problems) > 0 {
		texts := make([]string, len(problems))
		for i, p := range problems {
			texts[i] = p.Field + ": " + p.Text
		}
		return nil, fmt.Errorf("alertmanager receiver %q: %s", name, strings.Join(texts, "; "))
	}
	settings := c.HTTP()
	n := &Notifier{name: name, timeout: cmp.Or(c.Timeout, DefaultTimeout), resend: cmp.Or(c.ResendInterval, DefaultResendInterval),
		now: opts.Now, log: opts.Logger, accepted: map[uint64][]bool{}, failing: make([]bool, len(c.URLs))}
	if base := cmp.Or(c.GeneratorURL, opts.GeneratorURL); base != "" {
		n.generator = strings.TrimSuffix(base, "/") + "/api/v1/alerts"
	}
	if n.now == nil {
		n.now = time.Now
	}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	var urlSecrets []string
	for i, raw := range c.URLs {
		endpoint, err := url.JoinPath(raw, alertsPath)
		if err != nil {
			return nil, fmt.Errorf("alertmanager receiver %q: urls[%d] is not a valid URL", name, i)
		}
		n.targets = append(n.targets, target{endpoint: endpoint, name: fmt.Sprintf("urls[%d] (%s)", i, notifier.RedactURL(raw))})
		// A base URL holds no token (Check refuses a query); only a
		// user:password in it is secret.
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			if password, ok := u.User.Password(); ok {
				urlSecrets = append(urlSecrets, password, u.User.String(),
					base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+password)))
			}
		}
	}
	n.secrets = func() []string { return notifier.Secrets(append(slices.Clone(urlSecrets), settings.Secrets()...)...) }
	if opts.HTTPClient != nil {
		client := *opts.HTTPClient
		client.Transport = settings.RoundTripper(client.Transport)
		n.client = &client
	} else {
		var err error
		if n.client, err = settings.Client(n.timeout); err != nil {
			return nil, fmt.Errorf("alertmanager receiver %q: %w", name, err)
		}
	}
	var err error
	if n.firing, err = loadFiring(name, opts.Firing, n.log); err != nil {
		return nil, fmt.Errorf("alertmanager receiver %q: %w", name, err)
	}
	return n, nil
}

// Notify makes one attempt to push m's alerts to every Alertmanager that
// has not taken them yet. It succeeds when all have; otherwise the error
// names those that did not, and retry says whether any failure is worth
// another try. A resolve stops the alerts' re-sends at once.
func (n *Notifier) Notify(ctx context.Context, m *notifier.Notification) (retry bool, err error) {
	if m == nil || m.Status == notifier.StatusDigest || m.Digest != nil {
		return false, errors.New("alertmanager takes alerts only, not digests: send the digest to a receiver of another kind")
	}
	if len(m.Alerts) == 0 {
		return false, errors.New("alertmanager: the notification has no alerts")
	}
	retry, err = n.notify(ctx, m)
	n.firing.flush(true) // outside n.mu: a slow store holds no push
	return retry, err
}

func (n *Notifier) notify(ctx context.Context, m *notifier.Notification) (retry bool, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.now()
	alerts := make([]postableAlert, len(m.Alerts))
	for i := range m.Alerts {
		alerts[i] = n.postable(&m.Alerts[i])
		alerts[i].endAt(&m.Alerts[i], now, n.lifetime())
	}
	if m.Status == notifier.StatusResolved {
		n.firing.forget(m.Alerts) // before the push: no re-send may follow it
	}
	body, err := encode(alerts)
	if err != nil {
		return false, fmt.Errorf("alertmanager: %w", err)
	}
	done := n.accepted[m.ID]
	if done == nil {
		done = make([]bool, len(n.targets))
	}
	failures := n.pushAll(ctx, body, done)
	if m.Status != notifier.StatusResolved && slices.Contains(done, true) {
		// Where it got through, re-sends keep it alive, whatever the others do.
		n.firing.remember(m.Alerts, alerts)
	}
	if len(failures) == 0 {
		delete(n.accepted, m.ID)
		return false, nil
	}
	retry = slices.ContainsFunc(failures, func(f failure) bool { return f.retry })
	if retry {
		n.accepted[m.ID] = done
	} else {
		delete(n.accepted, m.ID) // refused for good: the outbox keeps it as a dead letter
	}
	return retry, n.combine(failures)
}

// lifetime is how long Alertmanager keeps a pushed firing alert.
func (n *Notifier) lifetime() time.Duration { return lifetimes * n.resend }

// failure is one Alertmanager that did not take a push.
type failure struct {
	target int
	retry  bool
	err    error
}

// pushAll posts body to every target not done, at once, marks those that
// took it done, and returns the others' failures in URL order.
func (n *Notifier) pushAll(ctx context.Context, body []byte, done []bool) []failure {
	results := make([]*failure, len(n.targets))
	var wg sync.WaitGroup
	for i := range n.targets {
		if done[i] {
			continue
		}
		wg.Go(func() {
			if retry, err := n.post(ctx, &n.targets[i], body); err != nil {
				results[i] = &failure{target: i, retry: retry, err: err}
			}
		})
	}
	wg.Wait()
	var out []failure
	for i := range n.targets {
		switch {
		case done[i]:
		case results[i] == nil:
			done[i] = true
		default:
			out = append(out, *results[i])
		}
	}
	return out
}

// post sends one request and classifies the answer (notifier.CheckResponse).
func (n *Notifier) post(ctx context.Context, t *target, body []byte) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "gpuwatch")
	resp, err := n.client.Do(req)
	if err != nil {
		return true, notifier.TransportError(err)
	}
	defer resp.Body.Close()
	retry, err = notifier.CheckResponse(resp, n.now())
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	return retry, err
}

// combine makes one error of the failures, naming every Alertmanager that
// failed and how many took the alerts, with every secret redacted. When a
// failure worth a retry said when (Retry-After), the error says the
// longest such wait.
func (n *Notifier) combine(failures []failure) error {
	e := &pushError{}
	var after time.Duration
	parts := make([]string, len(failures))
	for i, f := range failures {
		text := f.err.Error()
		if ra := (*notifier.RetryAfterError)(nil); errors.As(f.err, &ra) {
			text = ra.Err.Error() // the wait is said once, for all
			if f.retry {
				after = max(after, ra.After)
			}
		}
		parts[i] = n.targets[f.target].name + ": " + text
		e.errs = append(e.errs, f.err)
	}
	if len(n.targets) == 1 {
		e.msg = "alertmanager " + parts[0]
	} else {
		took := len(n.targets) - len(failures)
		e.msg = fmt.Sprintf("alertmanager: %d of %d did not take the alerts (%d did): %s",
			len(failures), len(n.targets), took, strings.Join(parts, "; "))
	}
	var err error = e
	if after > 0 {
		err = &notifier.RetryAfterError{After: after, Err: e}
	}
	return notifier.RedactError(err, n.secrets()...)
}

// pushError is the failures of one push: their text together, and each
// one's chain for errors.Is (a deadline).
type pushError struct {
	msg  string
	errs []error
}

func (e *pushError) Error() string   { return e.msg }
func (e *pushError) Unwrap() []error { return e.errs }
