package slack

import (
	"context"
	"testing"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

func BenchmarkRender(b *testing.B) {
	m := notifiertest.Notification(notifier.StatusFiring)
	b.ReportAllocs()
	for b.Loop() {
		render(m.Alerts, notifiertest.Start)
	}
}

// BenchmarkNotifyFiring posts one firing notification per iteration to a
// loopback fake of the Web API, records included.
func BenchmarkNotifyFiring(b *testing.B) {
	srv := fakeSlack(b, nil)
	n := newBot(b, srv, newMemStore())
	m := notifiertest.Notification(notifier.StatusFiring)
	b.ReportAllocs()
	for b.Loop() {
		m.Alerts[0].StartsAt = m.Alerts[0].StartsAt.Add(1) // a new firing each time
		if _, err := n.Notify(context.Background(), m); err != nil {
			b.Fatal(err)
		}
	}
}
