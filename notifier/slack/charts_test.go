package slack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// pictures draws every chart as the same few bytes.
type pictures struct{}

func (pictures) ChartPNG(string) ([]byte, error) { return []byte("\x89PNG chart"), nil }

// TestChartWaitsForItsMessage: a chart of an alert from a replayed log,
// days old in the log's time, waits for its message on the wall clock:
// it is uploaded into the message's thread once the message is posted,
// and given up only after ChartWait without it.
func TestChartWaitsForItsMessage(t *testing.T) {
	fake := notifiertest.NewSlack(t, notifiertest.SlackOptions{Scopes: "chat:write,files:write"})
	wall := time.Now()
	clock := func() time.Time { return wall }
	store := newMemStore()
	n, err := New(receiver, Config{Channel: "#gpu-alerts"}, Options{BotToken: botToken, APIURL: fake.URL + "/api/", Messages: store, Now: clock, Wall: clock})
	if err != nil {
		t.Fatal(err)
	}
	u := n.ChartUploader(pictures{}, NewBot(BotOptions{Token: botToken, APIURL: fake.URL + "/api/", Now: clock}))
	m := notifiertest.Notification(notifier.StatusFiring) // its alert's time is notifiertest.Start, long before wall
	m.Alerts[0].Chart = "c1"

	retry, err := u.Notify(context.Background(), m)
	if !retry || !errors.Is(err, errMessageNotYet) {
		t.Fatalf("a chart before its message: got retry=%v err %v, want a retry: the message is not posted yet", retry, err)
	}
	notify(t, n, m) // the alert's message
	if retry, err := u.Notify(context.Background(), m); retry || err != nil {
		t.Fatalf("the chart after its message: got retry=%v err %v, want it uploaded", retry, err)
	}
	ups := notifiertest.SlackUploads(t, fake)
	if len(ups) != 1 || ups[0].ThreadTS == "" || string(ups[0].PNG) != "\x89PNG chart" {
		t.Fatalf("uploads %+v, want the chart in the message's thread", ups)
	}

	// Another chart whose message never comes: kept while ChartWait has
	// not passed on the wall clock, then given up.
	other := notifiertest.Notification(notifier.StatusFiring)
	other.Alerts[0].Key, other.Alerts[0].Chart = "node1/GPUHot/GPU-x", "c2"
	first := wall
	for _, step := range []time.Duration{0, ChartWait / 2, ChartWait / 2} {
		wall = wall.Add(step)
		if retry, _ := u.Notify(context.Background(), other); !retry {
			t.Fatalf("%v after it first waited: the chart is given up, want it kept until %v", wall.Sub(first), ChartWait)
		}
	}
	wall = wall.Add(time.Minute)
	if retry, err := u.Notify(context.Background(), other); retry || err != nil {
		t.Errorf("past ChartWait: got retry=%v err %v, want the picture given up", retry, err)
	}

	// A chart of an earlier firing, when the alert has fired again and its
	// message is of the later firing (a replay outran the pictures): given
	// up at once, not waited for.
	again := notifiertest.Notification(notifier.StatusFiring)
	again.Alerts[0].StartsAt = again.Alerts[0].StartsAt.Add(time.Hour)
	again.Alerts[0].At = again.Alerts[0].StartsAt
	notify(t, n, notifiertest.Notification(notifier.StatusResolved))
	notify(t, n, again)
	earlier := notifiertest.Notification(notifier.StatusResolved)
	earlier.Alerts[0].Chart = "c3"
	if retry, err := u.Notify(context.Background(), earlier); retry || err != nil {
		t.Errorf("a chart of an earlier firing: got retry=%v err %v, want it given up at once", retry, err)
	}
	if ups := notifiertest.SlackUploads(t, fake); len(ups) != 1 {
		t.Errorf("uploads: got %d, want only the first chart", len(ups))
	}
}
