package slackbot

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/history"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
	slacknotifier "github.com/gpuwatch/gpuwatch/notifier/slack"
)

// allScopes are the bot scopes of the app manifest, optional ones too.
const allScopes = "chat:write,chat:write.public,commands,files:write,users:read"

// chartApp is a test app on 4 GPUs whose charts go to a fake Slack
// through a real slacknotifier.Bot, which checked its scopes first; the
// host's zone is Europe/Paris.
func chartApp(t *testing.T, o notifiertest.SlackOptions) (*testApp, *notifiertest.Server) {
	t.Helper()
	fake := notifiertest.NewSlack(t, o)
	bot := slacknotifier.NewBot(slacknotifier.BotOptions{Token: "xoxb-1111-2222-historytest", APIURL: fake.URL + "/api/",
		Now: func() time.Time { return testNow }})
	bot.CheckScopes(t.Context())
	ta := newTestApp(t, 4, func(c *Config) { c.Uploader, c.Zones, c.Location = bot, bot, zone(t, "Europe/Paris") })
	ta.slowAfter = time.Minute // the answer waits for the upload, however loaded the machine
	return ta, fake
}

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("no zone data for %s on this machine: %v", name, err)
	}
	return loc
}

// wantChart is the chart /gpu history draws of node1's GPU index (or
// every GPU) over the 6 h before the latest sample, times in loc.
func wantChart(t *testing.T, ta *testApp, index int, loc *time.Location) []byte {
	t.Helper()
	to := ta.b.snap.Time.Truncate(time.Minute)
	from := to.Add(-DefaultHistoryWindow)
	gpus, err := ta.b.History(t.Context(), history.Query{Host: "node1", GPU: index, From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	png, err := (&chart.History{Title: historyTitle("node1", index, DefaultHistoryWindow), From: from, To: to, GPUs: gpus}).PNG(loc)
	if err != nil {
		t.Fatal(err)
	}
	return png
}

// calls counts the fake's requests to a path.
func calls(fake *notifiertest.Server, path string) int {
	n := 0
	for _, r := range fake.Requests() {
		if r.Path == path {
			n++
		}
	}
	return n
}

// TestHistoryChartPublic: "/gpu history 0 public" in a channel uploads
// the chart there (the upload flow, a PNG), saying who asked, with times
// in the asker's zone from users.info, looked up once however often they
// ask; the answer itself only tells them.
func TestHistoryChartPublic(t *testing.T) {
	ta, fake := chartApp(t, notifiertest.SlackOptions{Scopes: allScopes, Zones: map[string]string{"U1": "Asia/Tokyo"}})
	k := ta.run(t, "history 0 public", "U1", "alice")
	if k.ResponseType != ephemeral {
		t.Errorf("answer: response_type %q, want ephemeral (the chart is the public part)", k.ResponseType)
	}
	contains(t, "answer", k.all(), "node1 GPU 0 · last 6h: the chart is posted here")
	ups := notifiertest.SlackUploads(t, fake)
	if len(ups) != 1 {
		t.Fatalf("uploads: got %d, want 1", len(ups))
	}
	up := ups[0]
	if up.Channel != "C0GPU" || up.ThreadTS != "" {
		t.Errorf("chart shared in %q thread %q, want channel C0GPU itself", up.Channel, up.ThreadTS)
	}
	contains(t, "comment", up.Comment, "📈 node1 GPU 0 · last 6h", "asked by <@U1>")
	if img := notifiertest.DecodePNG(t, up.PNG); img.Bounds().Dx() < 1000 {
		t.Errorf("chart %d px wide, want at least 1000", img.Bounds().Dx())
	}
	if !bytes.Equal(up.PNG, wantChart(t, ta, 0, zone(t, "Asia/Tokyo"))) {
		t.Error("the chart is not the one drawn in the asker's zone, Asia/Tokyo")
	}
	ta.run(t, "history public", "U1", "alice")
	if n := calls(fake, "/api/users.info"); n != 1 {
		t.Errorf("users.info: %d calls for two commands of one user, want 1", n)
	}
	if ups := notifiertest.SlackUploads(t, fake); len(ups) != 2 || !bytes.Equal(ups[1].PNG, wantChart(t, ta, AllGPUs, zone(t, "Asia/Tokyo"))) {
		t.Errorf("/gpu history public: got %d uploads, want a second with every GPU", len(ups))
	}
}

// TestHistoryChartInDirectMessage: in a direct message with the app the
// chart is posted without "public"; without users:read its times are in
// the host's zone, and users.info is not asked.
func TestHistoryChartInDirectMessage(t *testing.T) {
	ta, fake := chartApp(t, notifiertest.SlackOptions{Scopes: "chat:write,commands,files:write"})
	k := ta.runIn(t, "D0ALICE", "history 0", "U1", "alice")
	contains(t, "answer", k.all(), "the chart is posted here")
	ups := notifiertest.SlackUploads(t, fake)
	if len(ups) != 1 || ups[0].Channel != "D0ALICE" || strings.Contains(ups[0].Comment, "asked by") {
		t.Fatalf("uploads %+v, want one to D0ALICE", ups)
	}
	if !bytes.Equal(ups[0].PNG, wantChart(t, ta, 0, zone(t, "Europe/Paris"))) {
		t.Error("the chart is not the one drawn in the host's zone, Europe/Paris")
	}
	if n := calls(fake, "/api/users.info"); n != 0 {
		t.Errorf("users.info: %d calls without users:read, want none", n)
	}
}

// TestHistoryWithoutPicture: where no picture can go, the answer is the
// sparklines, and its last line says why.
func TestHistoryWithoutPicture(t *testing.T) {
	cases := []struct {
		name    string
		o       notifiertest.SlackOptions
		command string
		why     string
		uploads int // calls to files.getUploadURLExternal
	}{
		{"private in a channel", notifiertest.SlackOptions{Scopes: allScopes}, "history 0",
			"For the chart, add `public` to post it here, or ask in a direct message with gpuwatch", 0},
		{"no files:write", notifiertest.SlackOptions{Scopes: "chat:write,commands"}, "history 0 public",
			"Charts need the Slack app's files:write scope", 0},
		{"files:write refused", notifiertest.SlackOptions{Scopes: allScopes, Fail: map[string]string{"files.getUploadURLExternal": "missing_scope"}},
			"history 0 public", "Charts need the Slack app's files:write scope", 1},
		{"not in the channel", notifiertest.SlackOptions{Scopes: allScopes, Fail: map[string]string{"files.completeUploadExternal": "not_in_channel"}},
			"history 0 public", "invite it to the channel (`/invite @gpuwatch`)", 1},
		{"Slack fails", notifiertest.SlackOptions{Scopes: allScopes, Fail: map[string]string{"files.completeUploadExternal": "internal_error"}},
			"history 0 public", "gpuwatch could not post the chart; the log says why", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ta, fake := chartApp(t, c.o)
			k := ta.run(t, c.command, "U1", "alice")
			if secs := k.texts("section"); len(secs) != 1 || !strings.Contains(secs[0], "*Memory* `▁") {
				t.Errorf("answer sections %q, want GPU 0's sparklines", secs)
			}
			contains(t, "last line", strings.Join(k.texts("context"), ""), c.why)
			if n := calls(fake, "/api/files.getUploadURLExternal"); n != c.uploads {
				t.Errorf("files.getUploadURLExternal: %d calls, want %d", n, c.uploads)
			}
			// Once Slack said the app lacks files:write, it is not asked again.
			ta.run(t, c.command, "U1", "alice")
			if again := calls(fake, "/api/files.getUploadURLExternal"); strings.Contains(c.why, "files:write") && again != c.uploads {
				t.Errorf("files.getUploadURLExternal after Slack refused it: %d calls, want still %d", again, c.uploads)
			}
		})
	}
}
