package cli_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/replay"
	"github.com/gpuwatch/gpuwatch/internal/imagetest"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
	"github.com/gpuwatch/gpuwatch/slackbot"
)

var updatePictures = flag.Bool("update-pictures", false, "redraw the README's pictures in docs/images")

// TestREADMEPictures draws the README's pictures from the leak log with
// the commands the README shows, and compares them with the committed
// ones (tolerant to anti-aliasing); -update-pictures redraws them.
func TestREADMEPictures(t *testing.T) {
	dir := t.TempDir()
	for name, args := range map[string][]string{
		"replay.png": {"replay", "--trace", "testdata/traces/memory-leak.csv", "--plot", filepath.Join(dir, "replay.png")},
		"day.png":    {"digest", "--trace", "testdata/traces/memory-leak.csv", "--format", "png", "--out", filepath.Join(dir, "day.png")},
	} {
		if got := gpuwatch(t, args...); got.code != cli.ExitOK {
			t.Fatalf("gpuwatch %v: exit %d\n%s", args, got.code, got.stderr)
		}
		png, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		imagetest.Readable(t, name, png, chart.Width)
		imagetest.Golden(t, filepath.Join("..", "docs", "images", name), png, *updatePictures)
	}
	// The leak's chart, as the alert's thread shows it: drawn from the
	// log's history at the time GPUMemoryLeak fired (see TestRunLeakUploadsChart
	// for the way there through run).
	png := leakChart(t)
	imagetest.Readable(t, "leak.png", png, chart.Width)
	imagetest.Golden(t, filepath.Join("..", "docs", "images", "leak.png"), png, *updatePictures)
	// What /gpu history answers once the daemon has seen the log.
	png = historyAnswer(t, "history 2h public")
	imagetest.Readable(t, "history.png", png, chart.Width)
	imagetest.Golden(t, filepath.Join("..", "docs", "images", "history.png"), png, *updatePictures)
}

// historyAnswer is the chart a daemon that has read the leak log (host
// node1, times in UTC) uploads to Slack for "/gpu TEXT": the command goes
// to its Slack app signed as Slack signs it, and the picture is taken
// from the fake Slack it is uploaded to.
func historyAnswer(t *testing.T, text string) []byte {
	t.Helper()
	const secret = "8f742231b10e8888abcd99yyyzzz85a5"
	fake := notifiertest.NewSlack(t, notifiertest.SlackOptions{Scopes: "chat:write,commands,files:write"})
	const trace = "testdata/traces/memory-leak.csv"
	yaml := strings.ReplaceAll(daemonSettings, "@DIR@", t.TempDir()) + `
host: node1
source: {type: replay, replay: {file: ` + trace + `}}
slack:
  signing_secret: ` + secret + `
  bot_token: xoxb-1111-2222-pictures
  api_url: ` + fake.URL + `/api/
`
	cfg, err := config.Parse("gpuwatch.yaml", []byte(yaml), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	src, err := replay.Open(trace, replay.Options{Host: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(cfg, daemon.Options{Logger: slog.New(slog.DiscardHandler), Console: io.Discard, Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithCancel(t.Context())
	read := &heldOpen{Source: src, ended: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, read, nil) }()
	defer func() { cancel(); <-done; src.Close() }()
	<-read.ended

	form := url.Values{"command": {"/gpu"}, "text": {text}, "user_id": {"U1"}, "user_name": {"alice"},
		"channel_id": {"C1"}, "response_url": {"http://127.0.0.1:1/commands/1"}}
	body := form.Encode()
	req := httptest.NewRequest(http.MethodPost, "/slack/commands", strings.NewReader(body))
	now := time.Now()
	req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("X-Slack-Signature", slackbot.Sign(secret, now, []byte(body)))
	w := httptest.NewRecorder()
	d.SlackHandler().ServeHTTP(w, req)
	// On a loaded machine the answer may come before the upload is done.
	for deadline := time.Now().Add(time.Minute); len(notifiertest.SlackUploads(t, fake)) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	ups := notifiertest.SlackUploads(t, fake)
	if len(ups) != 1 {
		t.Fatalf("/gpu %s: answered %s, and %d charts uploaded; want one", text, w.Body, len(ups))
	}
	return ups[0].PNG
}

// heldOpen is a source that says when it has given every snapshot and
// then waits for the end, so the daemon answers about the whole log.
type heldOpen struct {
	gpu.Source
	ended chan struct{}
	once  sync.Once
}

func (h *heldOpen) Next(ctx context.Context) (*gpu.Snapshot, error) {
	s, err := h.Source.Next(ctx)
	if !errors.Is(err, io.EOF) {
		return s, err
	}
	h.once.Do(func() { close(h.ended) })
	<-ctx.Done()
	return nil, ctx.Err()
}

// leakChart is the chart of the leak log's GPUMemoryLeak as it fired:
// the last hour of GPU 0, the growth the alert reported.
func leakChart(t *testing.T) []byte {
	t.Helper()
	r, err := replay.Open("testdata/traces/memory-leak.csv", replay.Options{Host: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fired := time.Date(2026, 11, 29, 9, 33, 45, 0, time.UTC)
	a := &chart.Alert{Kind: chart.KindMemory, Alert: "GPUMemoryLeak", Status: "firing", Host: "node1", GPU: 0,
		At: fired, FiredAt: fired, Growth: 3690966.4287632643, Holder: "pid 4242 · alice · python train.py",
		Memory: chart.Series{Start: fired.Add(-time.Hour).Truncate(time.Minute), Step: time.Minute}}
	sums := make([]float64, 61)
	counts := make([]int, 61)
	for {
		s, err := r.Next(t.Context())
		if err != nil || s.Time.After(fired) {
			break
		}
		i := int(s.Time.Sub(a.Memory.Start) / time.Minute)
		if i < 0 || i >= len(sums) || len(s.Devices) == 0 {
			continue
		}
		d := s.Devices[0]
		a.Ceiling = float64(d.MemAllocatable())
		sums[i] += float64(d.MemUsed)
		counts[i]++
	}
	for i := range sums {
		v := 0.0
		if counts[i] > 0 {
			v = sums[i] / float64(counts[i])
		} else {
			v = nan()
		}
		a.Memory.Values = append(a.Memory.Values, v)
	}
	png, err := a.PNG(time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return png
}

func nan() float64 { var zero float64; return zero / zero }
