package daemon

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/alertmanager"
	"github.com/gpuwatch/gpuwatch/notifier/console"
	"github.com/gpuwatch/gpuwatch/notifier/slack"
	"github.com/gpuwatch/gpuwatch/notifier/webhook"
)

// BucketSlackMessages remembers which Slack message announced which alert.
const BucketSlackMessages = "slack-messages"

// BucketAlertmanagerFiring holds, per alertmanager receiver, the firing
// alerts it re-sends, so a restart resumes re-sending them at once.
const BucketAlertmanagerFiring = "alertmanager-firing"

// background is an integration with work of its own between
// notifications (the alertmanager receiver's re-sends); Run does it until
// ctx ends.
type background interface {
	Run(ctx context.Context)
}

func buildRoute(cfg *config.Config) (*notifier.Route, error) {
	route, problems := notifier.NewRoute(cfg.Route)
	if len(problems) > 0 {
		return nil, fmt.Errorf("route: %v", problems[0]) // config validation reports them all
	}
	return route, nil
}

// buildDeliverers makes each receiver's integration and its deliverer.
func (d *Daemon) buildDeliverers(cfg *config.Config) (map[string]*notifier.Deliverer, error) {
	out := map[string]*notifier.Deliverer{}
	d.depth = outboxDepth{} // each queue's count is read below, before any deliverer runs
	for _, r := range cfg.Receivers {
		n, err := d.buildNotifier(cfg, &r)
		if err != nil {
			return nil, fmt.Errorf("receiver %q: %w", r.Name, err)
		}
		out[r.Name] = notifier.NewDeliverer(r.Name, n, countingQueue{d.db, d.depth}, d.opts.Backoff, d.logger)
		if b, ok := n.(background); ok {
			d.background = append(d.background, b)
		}
		if s, ok := n.(*slack.Notifier); ok {
			if u := s.ChartUploader(d, d.bot); u != nil {
				queue := chartQueuePrefix + r.Name
				out[queue] = notifier.NewDeliverer(queue, u, countingQueue{d.db, d.depth}, d.opts.Backoff, d.logger)
				d.chartQueues[r.Name] = queue
			}
		}
	}
	if err := d.depth.read(d.db, slices.Collect(maps.Keys(out))); err != nil {
		return nil, fmt.Errorf("read the outbox: %w", err)
	}
	return out, nil
}

// newBot returns the bot token's Slack client for pictures and users'
// zones, shared by every Slack receiver and the Slack app; nil without
// slack.bot_token.
func (d *Daemon) newBot(cfg *config.Config) *slack.Bot {
	if cfg.Slack.BotToken == "" {
		return nil
	}
	return slack.NewBot(slack.BotOptions{Token: cfg.Slack.BotToken, APIURL: cfg.Slack.APIURL, HTTPClient: d.opts.HTTPClient,
		Logger: d.logger.With("component", "slack"), Now: d.opts.Wall, People: cfg.People.Mapped()})
}

// checkSlackScopes asks Slack, once for the bot token every Slack
// receiver and the Slack app share, what it may do: without files:write
// it warns once and alerts and answers go as text alone.
func (d *Daemon) checkSlackScopes(ctx context.Context) {
	if d.bot != nil && (len(d.chartQueues) > 0 || d.app != nil || d.people != nil) {
		d.bot.CheckScopes(ctx)
	}
}

func (d *Daemon) buildNotifier(cfg *config.Config, r *config.Receiver) (notifier.Notifier, error) {
	client := d.opts.HTTPClient // nil: each integration makes one with its own timeout
	switch {
	case r.Slack != nil:
		o := slack.Options{
			BotToken: cfg.Slack.BotToken, APIURL: cfg.Slack.APIURL, HTTPClient: client,
			Messages: d.bucket(BucketSlackMessages), Now: d.opts.Now, Wall: d.opts.Wall, Logger: d.logger.With("receiver", r.Name),
			Acknowledged: d.acknowledged,
		}
		if d.people != nil { // an interface holding a nil *people.People would not be nil
			o.People = d.people
		}
		return slack.New(r.Name, *r.Slack, o)
	case r.Webhook != nil:
		n, err := webhook.New(r.Name, *r.Webhook, client, d.opts.Wall)
		if err != nil {
			return nil, err
		}
		server := cfg.Server
		n.SetCharts(d, server.ChartURL)
		return n, nil
	case r.Alertmanager != nil:
		return alertmanager.New(r.Name, *r.Alertmanager, alertmanager.Options{
			HTTPClient: client, Firing: d.bucket(BucketAlertmanagerFiring), Now: d.opts.Wall,
			Logger: d.logger.With("receiver", r.Name), GeneratorURL: generatorURL(cfg),
		})
	default:
		return console.New(d.opts.Console, d.opts.Location), nil
	}
}

// generatorURL is where Alertmanager's users reach this gpuwatch by
// default: server.listen, with the host's name when it listens on every
// interface.
func generatorURL(cfg *config.Config) string {
	scheme := "http"
	if cfg.Server.TLS != nil {
		scheme = "https"
	}
	host, port, err := net.SplitHostPort(cfg.Server.Listen)
	if err != nil {
		return scheme + "://" + cfg.Server.Listen
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = cfg.Host
		if host == "" {
			host, _ = os.Hostname()
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
