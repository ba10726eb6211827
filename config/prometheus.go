package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/gpu/prometheus"
	"github.com/gpuwatch/gpuwatch/internal/httpclient"
)

// PrometheusSource is a hub's source: the query API of the Prometheus (or
// Thanos, Mimir, VictoriaMetrics) that scrapes the fleet.
type PrometheusSource struct {
	URL      string `yaml:"url"`
	Selector string `yaml:"selector"` // label matchers added to every query: {cluster="a"}
	Schema   string `yaml:"schema"`   // gpuwatch | dcgm | auto
	// Timeout bounds each query.
	Timeout time.Duration `yaml:"timeout"`
	// HostDownFor is how long Prometheus must fail to scrape a host's
	// exporter before the hub raises GPUHostDown for it.
	HostDownFor time.Duration `yaml:"host_down_for"`
	// Compression is how the answers are asked for: gzip, or none (for
	// a hub beside Prometheus).
	Compression     string                `yaml:"compression"`
	BearerToken     string                `yaml:"bearer_token"`
	BearerTokenFile string                `yaml:"bearer_token_file"`
	BasicAuth       *httpclient.BasicAuth `yaml:"basic_auth"`
	TLS             *httpclient.TLS       `yaml:"tls"`
}

// Defaults of a prometheus source.
const (
	// DefaultPrometheusInterval is a hub's source.interval: Prometheus
	// scrapes every 15 to 60 seconds, so evaluating more often reads the
	// same samples again.
	DefaultPrometheusInterval = 30 * time.Second
	DefaultPrometheusTimeout  = prometheus.DefaultTimeout
	// DefaultHostDownFor is source.prometheus.host_down_for: a scrape or
	// two may fail without a host being down.
	DefaultHostDownFor = time.Minute
)

// client is the HTTP client settings of the source.
func (p *PrometheusSource) client() httpclient.Settings {
	return httpclient.Settings{BearerToken: p.BearerToken, BearerTokenFile: p.BearerTokenFile, BasicAuth: p.BasicAuth, TLS: p.TLS}
}

// prometheusDefaults fills in what a prometheus source leaves out and
// makes its files relative to the config.
func (c *Config) prometheusDefaults(intervalSet bool) {
	if c.Source.Type != "prometheus" {
		return
	}
	p := &c.Source.Prometheus
	if !intervalSet {
		c.Source.Interval = DefaultPrometheusInterval
	}
	if p.Schema == "" {
		p.Schema = string(prometheus.SchemaAuto)
	}
	if p.Timeout == 0 {
		// A default follows what the user set: a query waits at most
		// until the next evaluation is due.
		p.Timeout = min(DefaultPrometheusTimeout, c.Source.Interval)
	}
	if p.HostDownFor == 0 {
		p.HostDownFor = DefaultHostDownFor
	}
	if p.Compression == "" {
		p.Compression = string(prometheus.CompressionGzip)
	}
	cl := p.client()
	cl.ResolvePaths(func(f string) string { return besideConfig(c.File, f) })
	p.BearerTokenFile = cl.BearerTokenFile // BasicAuth and TLS are resolved in place
}

// checkPrometheus reports what is wrong with a prometheus source. It reads
// the files it names but sends nothing: check works without the network.
func (c *Config) checkPrometheus(at func(...string) *yaml.Node, fail func(*yaml.Node, string, ...any)) {
	p := &c.Source.Prometheus
	key := func(keys ...string) *yaml.Node { return at(append([]string{"source", "prometheus"}, keys...)...) }
	if problem := prometheusURLProblem(p.URL); problem != "" {
		fail(key("url"), "source.prometheus.url %s", problem)
	}
	if _, err := prometheus.ParseSelector(p.Selector); err != nil {
		fail(key("selector"), "source.prometheus.%v", err)
	}
	if _, err := prometheus.ParseSchema(p.Schema); err != nil {
		fail(key("schema"), "source.prometheus.%v", err)
	}
	if _, err := prometheus.ParseCompression(p.Compression); err != nil {
		fail(key("compression"), "source.prometheus.%v: gzip sends a twelfth of the bytes; none spares Prometheus and the hub compressing them, for a hub beside Prometheus", err)
	}
	if p.HostDownFor < 0 {
		fail(key("host_down_for"), "source.prometheus.host_down_for %v is negative: give how long a host's exporter must be down before GPUHostDown fires, such as 1m", p.HostDownFor)
	}
	if p.Timeout > c.Source.Interval {
		fail(key("timeout"), "source.prometheus.timeout %v is longer than source.interval %v: evaluations would wait for each other; make it shorter", p.Timeout, c.Source.Interval)
	}
	cl := p.client()
	for _, problem := range cl.Check() {
		fail(key(strings.Split(problem.Field, ".")...), "source.prometheus.%s: %s", problem.Field, problem.Text)
	}
}

// prometheusURLProblem says what is wrong with a query API URL; "" when
// nothing is. Credentials belong in basic_auth, not the URL, where logs and
// errors would show them.
func prometheusURLProblem(raw string) string {
	if raw == "" {
		return "is required with type prometheus: the query API of Prometheus, Thanos, Mimir or VictoriaMetrics, such as http://prometheus:9090"
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Sprintf("%q is not an http:// or https:// URL such as http://prometheus:9090", afterCredentials(raw))
	case u.User != nil:
		return "holds credentials: put them in source.prometheus.basic_auth (or bearer_token_file), where logs never show them"
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Sprintf("%q has a query or fragment: give the API's base, such as http://prometheus:9090 or https://mimir.example.net/prometheus", raw)
	}
	return ""
}

// afterCredentials is a URL without what may be credentials: the text
// up to its last @.
func afterCredentials(raw string) string {
	if i := strings.LastIndexByte(raw, '@'); i >= 0 {
		return "…" + raw[i:]
	}
	return raw
}

// PrometheusOptions are the options of the prometheus source the config
// describes, its HTTP client made (the files it names read); Logger is the
// caller's to set.
func (c *Config) PrometheusOptions() (prometheus.Options, error) {
	p := &c.Source.Prometheus
	sel, err := prometheus.ParseSelector(p.Selector)
	if err != nil {
		return prometheus.Options{}, err
	}
	schema, err := prometheus.ParseSchema(p.Schema)
	if err != nil {
		return prometheus.Options{}, err
	}
	cl := p.client()
	client, err := cl.Client(0) // each query has its own timeout
	if err != nil {
		return prometheus.Options{}, fmt.Errorf("source.prometheus: %w", err)
	}
	compression, err := prometheus.ParseCompression(p.Compression)
	if err != nil {
		return prometheus.Options{}, err
	}
	secrets := cl.Secrets // read again when asked: token files are rotated
	return prometheus.Options{URL: p.URL, Selector: sel, Schema: schema, Interval: c.Source.Interval,
		Timeout: p.Timeout, Client: client, Secrets: secrets, PodLabelKeys: c.People.PodLabelKeys(), Compression: compression}, nil
}
