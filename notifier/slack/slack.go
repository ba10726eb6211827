// Package slack delivers notifications to Slack, either through the Web API
// with a bot token (chat.postMessage, then chat.update and thread replies, so
// an alert's whole life stays on one message) or through an incoming webhook
// (a new message per transition). Messages are Block Kit: what is wrong,
// where, how bad, since when, who is behind it and a sparkline of the last
// 30 minutes.
//
// A Notifier makes exactly one attempt per Notify call and reports whether a
// failure is worth a retry; retries live in the outbox, not here.
package slack

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// Config is the `slack:` block of a receiver. Exactly one of Channel (with
// the global bot token) and WebhookURL is set.
type Config struct {
	Channel    string `yaml:"channel"`     // "#gpu-alerts" or a channel ID, with the global bot token
	WebhookURL string `yaml:"webhook_url"` // an incoming-webhook URL (a secret)
	Username   string `yaml:"username"`    // optional; the bot token needs chat:write.customize
}

// Check returns every problem with the block, each a sentence saying what to
// do; none when it is fine. haveBotToken tells whether slack.bot_token is
// set. The webhook URL is a secret, so no message quotes it.
func (c *Config) Check(haveBotToken bool) []string {
	var problems []string
	channel, hook := strings.TrimSpace(c.Channel), strings.TrimSpace(c.WebhookURL)
	switch {
	case channel == "" && hook == "":
		problems = append(problems, `set slack.channel (with slack.bot_token) or slack.webhook_url`)
	case channel != "" && hook != "":
		problems = append(problems, `set only one of slack.channel and slack.webhook_url`)
	}
	if channel != "" {
		if !haveBotToken {
			problems = append(problems, `slack.channel needs a bot token: set slack.bot_token (e.g. ${SLACK_BOT_TOKEN}) or use webhook_url`)
		}
		if name := strings.TrimPrefix(channel, "#"); name == "" || strings.ContainsFunc(name, unicode.IsSpace) || strings.Contains(name, "#") {
			problems = append(problems, fmt.Sprintf(`slack.channel %q is not a channel: use "#name" or a channel ID like C0123456789`, c.Channel))
		}
	}
	if hook != "" {
		if p := checkWebhookURL(hook); p != "" {
			problems = append(problems, p)
		}
	}
	if strings.ContainsFunc(c.Username, unicode.IsControl) {
		problems = append(problems, `slack.username must not hold control characters`)
	}
	return problems
}

// checkWebhookURL says what is wrong with an incoming-webhook URL without
// quoting it.
func checkWebhookURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return `slack.webhook_url is not a URL: use the https://hooks.slack.com/services/… URL Slack gave you`
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return `slack.webhook_url must be https (http only for a loopback address): it carries a secret`
	}
	return ""
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// MessageStore remembers which Slack message announced an alert, so a
// resolve can update it in place and repeats go into its thread. The lead
// implements it on the bbolt store; values are opaque bytes.
type MessageStore interface {
	Get(key string) ([]byte, bool, error)
	Put(key string, value []byte) error
	Delete(key string) error
	// SetAside takes a record that cannot be read out of the way, keeping
	// its bytes, and says so.
	SetAside(key string, why error)
}

// Options are what a Notifier needs besides its config.
type Options struct {
	// BotToken is slack.bot_token (xoxb-…), needed with Config.Channel.
	BotToken string
	// APIURL is a Slack-compatible Web API base; "" means
	// "https://slack.com/api/". Tests point it at a fake.
	APIURL string
	// HTTPClient makes the requests; nil means a new http.Client.
	HTTPClient *http.Client
	// Messages keeps message records (bot mode). Nil: every transition is
	// a new message, as with a webhook.
	Messages MessageStore
	// Timeout bounds each API call; 0 means 10s.
	Timeout time.Duration
	// Now tells durations that the alert's own times do not (a firing
	// alert without At). Nil: such durations are left out.
	Now func() time.Time
	// Wall is the wall clock, for what Slack times by its own: a
	// Retry-After date in an answer without a Date header, how long a
	// chart waits for its message. Nil: such a date is not counted, and
	// a chart waits for its message as long as it takes.
	Wall func() time.Time
	// Logger gets what must not fail a delivery: a message record that
	// could not be written or read. Nil: discarded.
	Logger *slog.Logger
	// Acknowledged tells who acknowledged a firing alert (by its key), so
	// a message redrawn when another of its alerts resolves keeps the
	// acknowledgement instead of showing the buttons again. Nil: only
	// the notification's own alerts say.
	Acknowledged func(alertKey string) (by string, ok bool)
	// People finds the owners of an alert's holders, for notifications
	// whose route tells them (notifier.Notification.Owners). Nil: owners
	// are not told, and such notifications go to the channel alone.
	People People
}

// DefaultTimeout bounds one API call when Options.Timeout is 0.
const DefaultTimeout = 10 * time.Second

// Notifier posts notifications to one Slack channel or webhook.
type Notifier struct {
	mu      sync.Mutex // serializes bot-mode deliveries: records are read, changed and written back
	name    string
	cfg     Config
	opts    Options
	api     *goslack.Client // nil in webhook mode
	apiURL  string          // the Web API's base, ending in "/"; "" in webhook mode
	log     *slog.Logger
	secrets []string
	// unsaved are message records the store refused, by record key; see
	// save. Guarded by mu.
	unsaved map[string][]byte
	// delivering is the outbox ID of the notification being delivered,
	// which the records it writes carry (record.Through). Guarded by mu.
	delivering uint64
}

// New returns the Slack notifier of receiver name. It checks c first and
// refuses a block Check finds problems with.
func New(name string, c Config, opts Options) (*Notifier, error) {
	if problems := c.Check(opts.BotToken != ""); len(problems) > 0 {
		return nil, fmt.Errorf("receiver %q: %s", name, strings.Join(problems, "; "))
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	opts.HTTPClient = notingClient(opts.HTTPClient, opts.Wall)
	n := &Notifier{name: name, cfg: c, opts: opts, log: opts.Logger, unsaved: map[string][]byte{},
		secrets: notifier.Secrets(append(notifier.URLSecrets(strings.TrimSpace(c.WebhookURL)), opts.BotToken)...)}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	if strings.TrimSpace(c.Channel) != "" {
		apiURL := opts.APIURL
		if apiURL == "" {
			apiURL = goslack.APIURL
		}
		if !strings.HasSuffix(apiURL, "/") {
			apiURL += "/"
		}
		n.api = goslack.New(opts.BotToken, goslack.OptionAPIURL(apiURL), goslack.OptionHTTPClient(opts.HTTPClient))
		n.apiURL = apiURL
	}
	return n, nil
}

// Notify delivers m: in bot mode a new message, a thread reply or an update
// of the message that announced the alert; with a webhook a new message.
// It stops at the first failed call. Calls already made are recorded, so
// the outbox's retry of the same notification does not post them twice.
// A digest (Status notifier.StatusDigest) is always one new message: its
// Digest.Blocks, or its markdown in a section, with the title as text.
func (n *Notifier) Notify(ctx context.Context, m *notifier.Notification) (retry bool, err error) {
	ctx = withRetryAfterNote(ctx)
	if m != nil && (m.Digest != nil || m.Status == notifier.StatusDigest) {
		return n.notifyDigest(ctx, m.Digest)
	}
	if m == nil || len(m.Alerts) == 0 {
		return false, nil
	}
	if n.api == nil && m.Event != nil {
		return false, nil // owners are told with the bot only
	}
	if n.api == nil {
		return n.notifyWebhook(ctx, m)
	}
	return n.notifyBot(ctx, m)
}

// now is the time of a duration an alert's own times do not give; zero
// when there is no clock.
func (n *Notifier) now() time.Time {
	if n.opts.Now == nil {
		return time.Time{}
	}
	return n.opts.Now()
}

// alertsOf returns m's alerts, each with its status (the notification's
// when the alert does not say). m is not changed.
func alertsOf(m *notifier.Notification) []notifier.Alert {
	for i := range m.Alerts {
		if m.Alerts[i].Status == "" {
			alerts := append([]notifier.Alert(nil), m.Alerts...)
			for j := range alerts {
				if alerts[j].Status == "" {
					alerts[j].Status = m.Status
				}
			}
			return alerts
		}
	}
	return m.Alerts
}
