// Package notifier turns alert transitions into messages and delivers them.
// It owns the Notifier interface that every integration implements; its
// subpackages are the integrations (console today; Slack and webhooks plug
// in behind the same interface).
package notifier

import (
	"context"

	"github.com/gpuwatch/gpuwatch/rules"
)

// Notifier delivers transitions to one place. retry reports whether a
// failure is worth trying again (a timeout, a 5xx) rather than permanent (a
// rejected request); it is meaningless when err is nil.
type Notifier interface {
	Notify(ctx context.Context, ts ...rules.Transition) (retry bool, err error)
}
