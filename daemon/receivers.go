package daemon

import (
	"context"
	"fmt"
	"net"
	"os"

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
	for _, r := range cfg.Receivers {
		n, err := d.buildNotifier(cfg, &r)
		if err != nil {
			return nil, fmt.Errorf("receiver %q: %w", r.Name, err)
		}
		out[r.Name] = notifier.NewDeliverer(r.Name, n, d.db, d.opts.Backoff, d.logger)
		if b, ok := n.(background); ok {
			d.background = append(d.background, b)
		}
		if s, ok := n.(*slack.Notifier); ok {
			if u := s.ChartUploader(d); u != nil {
				queue := chartQueuePrefix + r.Name
				out[queue] = notifier.NewDeliverer(queue, u, d.db, d.opts.Backoff, d.logger)
				d.chartQueues[r.Name] = queue
				d.uploaders = append(d.uploaders, u)
			}
		}
	}
	return out, nil
}

// checkChartScope asks Slack, once for the bot token every Slack
// receiver shares, whether it may upload charts; without files:write it
// warns once and every receiver's alerts go as text alone.
func (d *Daemon) checkChartScope(ctx context.Context) {
	if len(d.uploaders) == 0 || d.uploaders[0].CheckScope(ctx) {
		return
	}
	for _, u := range d.uploaders[1:] {
		u.Disable()
	}
}

func (d *Daemon) buildNotifier(cfg *config.Config, r *config.Receiver) (notifier.Notifier, error) {
	client := d.opts.HTTPClient // nil: each integration makes one with its own timeout
	switch {
	case r.Slack != nil:
		return slack.New(r.Name, *r.Slack, slack.Options{
			BotToken: cfg.Slack.BotToken, APIURL: cfg.Slack.APIURL, HTTPClient: client,
			Messages: kvBucket{d.db, BucketSlackMessages}, Now: d.opts.Now, Logger: d.logger.With("receiver", r.Name),
			Acknowledged: d.acknowledged,
		})
	case r.Webhook != nil:
		n, err := webhook.New(r.Name, *r.Webhook, client, d.opts.Now)
		if err != nil {
			return nil, err
		}
		server := cfg.Server
		n.SetCharts(d, server.ChartURL)
		return n, nil
	case r.Alertmanager != nil:
		return alertmanager.New(r.Name, *r.Alertmanager, alertmanager.Options{
			HTTPClient: client, Firing: kvBucket{d.db, BucketAlertmanagerFiring}, Now: d.opts.Now,
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
