package daemon_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// TestReplayEndDrainsWithoutUnhealthyLines: after a paced replay ends,
// the daemon delivers what is queued, saying once that the source has no
// more samples; it does not log "unhealthy" at every look of the
// watchdog while the replay's clock runs on.
func TestReplayEndDrainsWithoutUnhealthyLines(t *testing.T) {
	h := newHook(t, func(int) int { return http.StatusServiceUnavailable }) // the drain lasts
	logs := &notifiertest.Buffer{}
	wallStart := time.Now()
	// A replay paced at 600×: ten minutes of the log's time each second.
	paced := func() time.Time { return base.Add(600 * time.Since(wallStart)) }
	d, err := daemon.New(webhookConfig(t, t.TempDir(), h.URL, "1ns"), options(logs, io.Discard, paced))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	src := &sliceSource{}
	for i := range 2 {
		src.snaps = append(src.snaps, snapshot(base.Add(time.Duration(i)*10*time.Second), 90))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, src, nil) }()
	waitFor(t, "the replay to end", func() bool { return strings.Contains(logs.String(), "the source has no more samples") })
	time.Sleep(8 * time.Second) // two looks of the watchdog: it looks every eighth of 30 s
	cancel()
	<-done
	if n := strings.Count(logs.String(), "gpuwatch is unhealthy"); n > 0 {
		t.Errorf("the log says %d times that gpuwatch is unhealthy while it drains a replay that ended:\n%s", n, logs)
	}
}
