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
	msg := &goslack.WebhookMessage{Username: n.cfg.Username, Text: text, Blocks: &goslack.Blocks{BlockSet: blocks}}
	ctx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
	defer cancel()
	// PostWebhookContext would use http.DefaultClient; this is the same
	// call with the configured client.
	err := goslack.PostWebhookCustomHTTPContext(ctx, strings.TrimSpace(n.cfg.WebhookURL), n.opts.HTTPClient, msg)
	return n.fail(ctx, "webhook", err)
}
