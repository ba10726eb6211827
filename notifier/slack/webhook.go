package slack

import (
	"context"
	"strings"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// notifyWebhook posts one new message per notification to the incoming
// webhook: firing, still firing and resolved alike.
func (n *Notifier) notifyWebhook(ctx context.Context, m *notifier.Notification) (bool, error) {
	alerts := alertsOf(m)
	blocks, text := render(alerts, n.now())
	return n.fail(ctx, "webhook", n.postWebhook(ctx, blocks, text))
}

// postWebhook posts one message to the incoming webhook, each try within
// its own timeout; as plain text when its blocks cannot go (see
// withBlocks).
func (n *Notifier) postWebhook(ctx context.Context, blocks []goslack.Block, text string) error {
	return n.withBlocks("webhook", blocks, text, func(blocks []goslack.Block, text string) error {
		msg := &goslack.WebhookMessage{Username: n.cfg.Username, Text: text}
		if len(blocks) > 0 {
			msg.Blocks = &goslack.Blocks{BlockSet: blocks}
		}
		ctx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
		defer cancel()
		// PostWebhookContext would use http.DefaultClient; this is the
		// same call with the configured client.
		return goslack.PostWebhookCustomHTTPContext(ctx, strings.TrimSpace(n.cfg.WebhookURL), n.opts.HTTPClient, msg)
	})
}
