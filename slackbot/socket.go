package slackbot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	goslack "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// RunSocketMode connects to Slack over Socket Mode (no public URL needed)
// and serves slash commands and button clicks through the same functions
// as the HTTP handlers, until ctx ends; then it returns nil. appToken is
// the app-level token (xapp-…, scope connections:write), botToken the bot
// token, apiURL a Slack-compatible API base ("" for Slack's own). It
// returns an error when Slack refuses the tokens or the connection fails
// for good; errors never contain the tokens.
func (a *App) RunSocketMode(ctx context.Context, appToken, botToken, apiURL string) error {
	if !strings.HasPrefix(appToken, "xapp-") {
		return errors.New("slack socket mode: slack.app_token is not an app-level token (xapp-…): create one with the connections:write scope under Basic Information → App-Level Tokens")
	}
	redact := strings.NewReplacer(appToken, "xapp-[redacted]", botToken, "[redacted bot token]")
	if botToken == "" {
		redact = strings.NewReplacer(appToken, "xapp-[redacted]")
	}
	logs := slogOutput{log: a.log, redact: redact}
	opts := []goslack.Option{goslack.OptionAppLevelToken(appToken), goslack.OptionHTTPClient(a.client), goslack.OptionLog(logs)}
	if apiURL != "" {
		opts = append(opts, goslack.OptionAPIURL(strings.TrimSuffix(apiURL, "/")+"/"))
	}
	client := socketmode.New(goslack.New(botToken, opts...), socketmode.OptionLog(logs))

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var handlers sync.WaitGroup
	defer handlers.Wait()
	done := make(chan error, 1)
	go func() { done <- client.RunContext(ctx) }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("slack socket mode: %s", redact.Replace(fmt.Sprint(err)))
		case ev := <-client.Events:
			if ev.Type == socketmode.EventTypeInvalidAuth {
				return errors.New("slack socket mode: Slack refused the app token (invalid_auth): check slack.app_token")
			}
			handlers.Go(func() { a.socketEvent(ctx, ev, client) })
		}
	}
}

// acker acknowledges a Socket Mode envelope, with a payload for a slash
// command's answer (socketmode.Client does this).
type acker interface {
	Ack(req socketmode.Request, payload ...any) error
}

// socketEvent handles one Socket Mode event: slash commands and button
// clicks go to the functions behind the HTTP handlers, and every envelope
// from Slack is acknowledged.
func (a *App) socketEvent(ctx context.Context, ev socketmode.Event, ack acker) {
	switch ev.Type {
	case socketmode.EventTypeSlashCommand:
		sc, ok := ev.Data.(goslack.SlashCommand)
		if !ok || ev.Request == nil {
			a.log.Warn("slack socket mode: a slash command without its payload was ignored")
			return
		}
		r := a.command(ctx, sc)
		if err := ack.Ack(*ev.Request, r); err != nil {
			// Slack drops acknowledgements over 20 KB: answer through
			// response_url instead.
			a.log.Warn("slack socket mode: the answer did not fit the acknowledgement; posting it to response_url", "err", err.Error())
			a.ackEmpty(ack, ev.Request)
			a.postLater(ctx, sc.ResponseURL, r)
		}
	case socketmode.EventTypeInteractive:
		if ev.Request == nil {
			return
		}
		a.ackEmpty(ack, ev.Request)
		if cb, ok := ev.Data.(goslack.InteractionCallback); ok {
			a.action(ctx, &cb, ev.Request.Payload)
		}
	case socketmode.EventTypeEventsAPI:
		if ev.Request != nil {
			a.ackEmpty(ack, ev.Request)
		}
	case socketmode.EventTypeConnecting, socketmode.EventTypeHello, socketmode.EventTypeDisconnect:
		a.log.Debug("slack socket mode", "event", string(ev.Type))
	case socketmode.EventTypeConnected:
		a.log.Info("slack socket mode connected")
	case socketmode.EventTypeConnectionError, socketmode.EventTypeIncomingError,
		socketmode.EventTypeErrorBadMessage, socketmode.EventTypeErrorWriteFailed:
		a.log.Warn("slack socket mode trouble; the client reconnects", "event", string(ev.Type))
	}
}

func (a *App) ackEmpty(ack acker, req *socketmode.Request) {
	if err := ack.Ack(*req); err != nil {
		a.log.Warn("slack socket mode: acknowledgement failed", "err", err.Error())
	}
}

// slogOutput passes slack-go's log lines to slog at debug level, tokens
// removed.
type slogOutput struct {
	log    *slog.Logger
	redact *strings.Replacer
}

// Output implements slack-go's logger.
func (o slogOutput) Output(_ int, s string) error {
	o.log.Debug("slack-go: " + o.redact.Replace(strings.TrimSpace(s)))
	return nil
}
