package daemon

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/slackbot"
)

// BucketSlackReplays holds the signatures of the Slack requests of the
// last five minutes, so a request captured and sent again after a restart
// does not act twice.
const BucketSlackReplays = "slack-replays"

// newSlackApp builds the Slack app (slash commands and buttons) when the
// config gives it a way in: a signing secret for HTTP requests, or an app
// token for Socket Mode. Without either it returns nil.
func (d *Daemon) newSlackApp(cfg *config.Config) (*slackbot.App, error) {
	if cfg.Slack.SigningSecret == "" && cfg.Slack.AppToken == "" {
		return nil, nil
	}
	c := slackbot.Config{
		SigningSecret:   cfg.Slack.SigningSecret,
		AllowedChannels: cfg.Slack.AllowedChannels,
		Admins:          cfg.Slack.Admins,
		Logger:          d.logger.With("component", "slack-app"),
		HTTPClient:      d.opts.HTTPClient,
		Now:             d.opts.Wall,
		Location:        d.opts.Location,
		Drawn:           releaseDrawing,
		Replays:         d.bucket(BucketSlackReplays),
	}
	if d.bot != nil { // an interface holding a nil *slack.Bot would not be nil
		c.Uploader, c.Zones = d.bot, d.bot
	}
	if d.people != nil {
		c.Owners = ownerDesk{d}
	}
	app, err := slackbot.New(d, c)
	if err != nil {
		return nil, fmt.Errorf("the Slack app (slack:): %w", err)
	}
	return app, nil
}

// SlackHandler serves the Slack app's request URLs, POST /slack/commands
// and POST /slack/actions, each request verified with slack.signing_secret;
// nil when no signing secret is set (then nothing answers under /slack/).
func (d *Daemon) SlackHandler() http.Handler {
	if d.app == nil || d.cfg.Slack.SigningSecret == "" {
		return nil
	}
	return d.app.Handler()
}

// startSocketMode connects the Slack app over Socket Mode when
// slack.app_token is set, until ctx ends. A failure is logged, not fatal:
// alerts still go out without the app.
func (d *Daemon) startSocketMode(ctx context.Context, wg *sync.WaitGroup) {
	s := d.cfg.Slack
	if d.app == nil || s.AppToken == "" {
		return
	}
	wg.Go(func() {
		d.logger.Info("connecting the Slack app over Socket Mode")
		if err := d.app.RunSocketMode(ctx, s.AppToken, s.BotToken, s.APIURL); err != nil {
			d.logger.Error("the Slack app's Socket Mode connection stopped; slash commands and buttons do not work until gpuwatch restarts", "err", err)
		}
	})
}
