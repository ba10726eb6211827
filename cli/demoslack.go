package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/slack"
	"github.com/gpuwatch/gpuwatch/rules"
)

// demoSlack sends the demo's alerts to Slack too, when the environment has
// SLACK_WEBHOOK_URL, or SLACK_BOT_TOKEN (with SLACK_CHANNEL, default
// #gpuwatch-demo). It posts directly, once per alert: a demo has no outbox,
// and a failure is a warning, not the end of the demo.
type demoSlack struct {
	notifier *slack.Notifier
	logger   *slog.Logger
}

// newDemoSlack returns nil when no Slack is configured in the environment.
func newDemoSlack(env *Env, logger *slog.Logger) (*demoSlack, error) {
	lookup := env.lookup()
	hook, _ := lookup("SLACK_WEBHOOK_URL")
	token, _ := lookup("SLACK_BOT_TOKEN")
	channel, _ := lookup("SLACK_CHANNEL")
	if channel == "" {
		channel = "#gpuwatch-demo"
	}
	var c slack.Config
	switch {
	case hook != "":
		c.WebhookURL = hook
	case token != "":
		c.Channel = channel
	default:
		return nil, nil
	}
	n, err := slack.New("demo-slack", c, slack.Options{BotToken: token, Messages: &memoryMessages{m: map[string][]byte{}}, Logger: logger})
	if err != nil {
		return nil, userErrf("demo: SLACK_WEBHOOK_URL / SLACK_BOT_TOKEN: %v", err)
	}
	to := channel
	if hook != "" {
		to = "the incoming webhook"
	}
	logger.Warn("the demo's alerts also go to Slack", "to", to)
	return &demoSlack{notifier: n, logger: logger}, nil
}

func (d *demoSlack) send(ctx context.Context, ts []rules.Transition) {
	for i := range ts {
		a := notifier.FromTransition(&ts[i])
		n := &notifier.Notification{Receiver: "demo-slack", Status: a.Status, Alerts: []notifier.Alert{a}, CreatedAt: a.At}
		if _, err := d.notifier.Notify(ctx, n); err != nil {
			d.logger.Warn("Slack did not take the demo's alert", "alert", fmt.Sprintf("%s on gpu %d", a.Name, a.GPU), "err", err)
		}
	}
}

// memoryMessages keeps the demo's Slack message references in memory.
type memoryMessages struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memoryMessages) Get(key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return v, ok, nil
}

func (s *memoryMessages) Put(key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = value
	return nil
}

func (s *memoryMessages) Delete(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}

// SetAside forgets a record the notifier cannot read: the demo's records
// live as long as the demo, and it writes each itself.
func (s *memoryMessages) SetAside(key string, _ error) { _ = s.Delete(key) }
