package alertmanager

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// BenchmarkResend1000Alerts is one re-send of a fleet's bad day: 1,000
// firing alerts (125 hosts × 8 GPUs), in batches, to one Alertmanager on
// loopback, as a hub makes every resend_interval.
func BenchmarkResend1000Alerts(b *testing.B) {
	srv := notifiertest.NewServer(b, nil)
	n, err := New("am", Config{URLs: []string{srv.URL}}, Options{HTTPClient: &http.Client{}})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	for i := range 1000 {
		m := firingNow(notifier.StatusFiring, now)
		a := &m.Alerts[0]
		a.Host, a.GPU, a.UUID = fmt.Sprintf("node%03d", i/8), i%8, fmt.Sprintf("GPU-%04d", i)
		a.Key = notifier.AlertKey(a.Host, a.Name, a.UUID)
		n.firing.remember(m.Alerts, []postableAlert{n.postable(a)})
	}
	b.ReportAllocs()
	for b.Loop() {
		n.resendFiring(context.Background())
	}
	if n.failing[0] {
		b.Fatal("the re-sends failed")
	}
}
