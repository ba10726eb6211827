package slackbot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	slacknotifier "github.com/gpuwatch/gpuwatch/notifier/slack"
)

// MaxBodyBytes is the largest request body the handlers read; larger ones
// get 413. Slack's own payloads are a few kilobytes.
const MaxBodyBytes = 1 << 20

// The response types of a slash command answer.
const (
	inChannel = "in_channel"
	ephemeral = "ephemeral"
)

// Config says who may use the app and how it reaches Slack.
type Config struct {
	// SigningSecret verifies HTTP requests (the app's Signing Secret).
	// Without it every HTTP request is refused; Socket Mode needs none.
	SigningSecret string
	// AllowedChannels are channel IDs (C…) or names without '#' where the
	// app answers commands and buttons; empty means every channel.
	AllowedChannels []string
	// Admins are Slack user IDs (U…) or user names who may silence and
	// acknowledge; empty means everyone may.
	Admins []string
	// Logger gets the refused requests and failed posts; nil discards.
	Logger *slog.Logger
	// HTTPClient posts to response_url and talks to Slack in Socket Mode;
	// nil means a client with a 10-second timeout.
	HTTPClient *http.Client
	// Now is the clock that checks request timestamps; nil means time.Now.
	Now func() time.Time
	// Uploader posts the charts of /gpu history; nil answers with
	// sparklines alone.
	Uploader Uploader
	// Zones tells users' time zones, the times of their charts; nil, or
	// where it does not know, charts show Location's.
	Zones Zones
	// Location is the host's time zone; nil means time.Local.
	Location *time.Location
	// Drawn, when set, is called after each chart is drawn (the daemon
	// hands the chart's memory back to the system).
	Drawn func()
	// Owners answers owners' buttons and the personal commands (/gpu
	// mine, mute-me, digest weekly|daily|off); nil without a people:
	// section.
	Owners Owners
	// Replays keeps the signatures of recent requests across restarts,
	// so a captured request sent again after a restart does not act
	// again. Nil: they are kept in memory only.
	Replays ReplayStore
}

// App is the Slack app: an http.Handler for slash commands and buttons,
// and a Socket Mode client that feeds the same functions.
type App struct {
	backend    Backend
	secret     string
	channels   map[string]bool
	admins     []string
	adminIDs   map[string]bool // admins listed by user ID
	adminNames map[string]bool // admins listed by user name (deprecated)
	log        *slog.Logger
	client     *http.Client
	now        func() time.Time
	uploader   Uploader
	zones      Zones
	owners     Owners
	location   *time.Location // the host's zone, of charts when the reader's is unknown
	drawn      func()

	// slowAfter is how long a command may take before the answer becomes
	// "working on it" and the result goes to response_url (Slack gives up
	// after 3 seconds).
	slowAfter time.Duration
	// posts are the response_url posts and button clicks still in flight.
	posts sync.WaitGroup
	// replays catches a signed request sent again.
	replays replays
}

// New returns the app answering from b.
func New(b Backend, c Config) (*App, error) {
	if b == nil {
		return nil, errors.New("slackbot: no backend")
	}
	a := &App{
		backend:    b,
		secret:     c.SigningSecret,
		channels:   map[string]bool{},
		adminIDs:   map[string]bool{},
		adminNames: map[string]bool{},
		log:        c.Logger,
		client:     c.HTTPClient,
		now:        c.Now,
		uploader:   c.Uploader,
		zones:      c.Zones,
		owners:     c.Owners,
		location:   c.Location,
		drawn:      c.Drawn,
		slowAfter:  2 * time.Second,
	}
	if a.location == nil {
		a.location = time.Local
	}
	for _, ch := range c.AllowedChannels {
		ch = strings.TrimPrefix(strings.TrimSpace(ch), "#")
		if ch == "" {
			return nil, errors.New("slackbot: an allowed channel is empty: list channel IDs or names without '#'")
		}
		a.channels[ch] = true
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	for _, u := range c.Admins {
		u = strings.TrimPrefix(strings.TrimSpace(u), "@")
		if u == "" {
			return nil, errors.New("slackbot: an admin is empty: list Slack user IDs (U…) or user names")
		}
		a.admins = append(a.admins, u)
		if slacknotifier.IsUserID(u) {
			a.adminIDs[u] = true
		} else {
			a.adminNames[u] = true
			a.log.Warn("slack.admins lists a user name: names still work, but Slack has deprecated them and users can change theirs; list the user ID instead (Slack profile → ⋯ → Copy member ID)", "admin", u)
		}
	}
	if a.client == nil {
		a.client = &http.Client{Timeout: 10 * time.Second}
	}
	if a.now == nil {
		a.now = time.Now
	}
	a.replays.st = c.Replays
	if err := a.replays.load(a.now()); err != nil {
		return nil, fmt.Errorf("slackbot: %w", err)
	}
	return a, nil
}

// Handler serves POST /slack/commands (slash commands) and POST
// /slack/actions (buttons). Every request is verified before anything is
// done: a missing, wrong or stale signature gets 401; another method 405;
// a body over MaxBodyBytes 413.
func (a *App) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/slack/commands", a.serveCommand)
	mux.HandleFunc("/slack/actions", a.serveAction)
	return mux
}

// readSigned reads and verifies a request's body; on false it has answered.
func (a *App) readSigned(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "use POST: this is Slack's request URL", http.StatusMethodNotAllowed)
		return nil, false
	}
	if r.ContentLength > MaxBodyBytes {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return nil, false
		}
		http.Error(w, "could not read the request body", http.StatusBadRequest)
		return nil, false
	}
	now := a.now()
	sig, err := verify(a.secret, r.Header, body, now)
	if err != nil {
		a.log.Warn("slack request refused", "path", r.URL.Path, "remote", r.RemoteAddr, "reason", err.Error())
		http.Error(w, "invalid Slack request signature", http.StatusUnauthorized)
		return nil, false
	}
	fresh, err := a.replays.first(sig, signedUntil(r.Header), now)
	if err != nil {
		a.log.Error("slack request refused: its signature could not be kept", "path", r.URL.Path, "err", err)
		http.Error(w, "gpuwatch cannot record this request (its store does not answer): try again in a minute", http.StatusServiceUnavailable)
		return nil, false
	}
	if !fresh {
		// Answered with an empty 200, as Slack takes an acknowledgement,
		// so whoever replays it learns nothing and nothing happens twice.
		a.log.Warn("slack request replayed: answered without acting", "path", r.URL.Path, "remote", r.RemoteAddr)
		w.WriteHeader(http.StatusOK)
		return nil, false
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "the body is not a form (application/x-www-form-urlencoded)", http.StatusBadRequest)
		return nil, false
	}
	return form, true
}

func (a *App) serveCommand(w http.ResponseWriter, r *http.Request) {
	form, ok := a.readSigned(w, r)
	if !ok {
		return
	}
	sc := goslack.SlashCommand{
		TeamID: form.Get("team_id"), ChannelID: form.Get("channel_id"), ChannelName: form.Get("channel_name"),
		UserID: form.Get("user_id"), UserName: form.Get("user_name"), Command: form.Get("command"),
		Text: form.Get("text"), ResponseURL: form.Get("response_url"), TriggerID: form.Get("trigger_id"),
	}
	writeJSON(w, a.command(r.Context(), sc))
}

func (a *App) serveAction(w http.ResponseWriter, r *http.Request) {
	form, ok := a.readSigned(w, r)
	if !ok {
		return
	}
	raw := []byte(form.Get("payload"))
	var cb goslack.InteractionCallback
	if err := json.Unmarshal(raw, &cb); err != nil {
		http.Error(w, "the payload field is not an interaction payload (JSON)", http.StatusBadRequest)
		return
	}
	// Slack gets its answer first: the click's work writes the store
	// (fsynced), and Slack tells the user it failed when no answer comes
	// within 3 seconds. The outcome goes to response_url.
	w.WriteHeader(http.StatusOK)
	a.posts.Go(func() { a.action(context.WithoutCancel(r.Context()), &cb, raw) })
}

// reply is a message as Slack takes it in a command's response, an
// acknowledgement, or a post to response_url.
type reply struct {
	ResponseType    string `json:"response_type,omitempty"`
	ReplaceOriginal bool   `json:"replace_original"`
	Text            string `json:"text"`
	Blocks          any    `json:"blocks,omitempty"`
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil { // only plain data is encoded: cannot happen
		http.Error(w, "could not encode the answer", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// user is who sent a command or clicked a button.
type user struct{ ID, Name string }

// String names the user for records (silences, acknowledgements) that are
// read outside Slack too: "alice (U2CERLKJA)".
func (u user) String() string {
	switch {
	case u.Name == "":
		return u.ID
	case u.ID == "":
		return u.Name
	}
	return u.Name + " (" + u.ID + ")"
}

// mention is the user as Slack shows them in a message.
func (u user) mention() string {
	if u.ID == "" {
		return "@" + blockkit.EscapeClip(u.Name, 80)
	}
	return "<@" + u.ID + ">"
}

// mayChange reports whether the user may silence and acknowledge: every
// user when there are no admins, else the admins by user ID. An admin
// listed by name is still matched by the name Slack sends (user_name,
// deprecated, and changeable by its user), with a warning that gives the
// ID to list instead.
func (a *App) mayChange(u user) bool {
	switch {
	case len(a.admins) == 0 || a.adminIDs[u.ID]:
		return true
	case u.Name != "" && a.adminNames[u.Name]:
		a.log.Warn("a Slack admin was recognised by user name; list their user ID in slack.admins instead, names can change", "admin", u.Name, "user_id", u.ID)
		return true
	}
	return false
}

// answersIn reports whether the app answers in the channel.
func (a *App) answersIn(id, name string) bool {
	return len(a.channels) == 0 || a.channels[id] || (name != "" && a.channels[name])
}

// refusal is the polite ephemeral answer to an unauthorised user.
func (a *App) refusal(what string) *reply {
	names := make([]string, len(a.admins))
	for i, ad := range a.admins {
		if slacknotifier.IsUserID(ad) {
			names[i] = "<@" + ad + ">"
		} else {
			names[i] = "@" + blockkit.EscapeClip(ad, 80)
		}
	}
	text := fmt.Sprintf("🙏 Sorry, only gpuwatch admins can %s; ask one of %s.", what, strings.Join(names, ", "))
	return private(text)
}

// notHere is the answer in a channel the app does not serve.
func notHere() *reply {
	text := "🙏 Sorry, gpuwatch does not answer in this channel; ask in one of the channels it serves."
	return private(text)
}

// withDeadline runs work and returns its reply if it is ready within
// slowAfter; otherwise it returns "working on it" and posts the reply to
// responseURL once work is done. A panic in work becomes an error reply.
func (a *App) withDeadline(ctx context.Context, responseURL string, work func() *reply) *reply {
	done := make(chan *reply, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				a.log.Error("slack command panicked", "panic", fmt.Sprint(p))
				done <- errorReply("gpuwatch hit an internal error answering this; the log has the details")
			}
		}()
		done <- work()
	}()
	t := time.NewTimer(a.slowAfter)
	defer t.Stop()
	select {
	case r := <-done:
		return r
	case <-t.C:
	}
	a.posts.Add(1)
	go func() {
		defer a.posts.Done()
		a.post(context.WithoutCancel(ctx), responseURL, <-done)
	}()
	return private("⏳ Working on it…")
}

// postLater posts r to responseURL in the background.
func (a *App) postLater(ctx context.Context, responseURL string, r *reply) {
	a.posts.Add(1)
	go func() {
		defer a.posts.Done()
		a.post(context.WithoutCancel(ctx), responseURL, r)
	}()
}

// post sends r to a response_url. Failures are logged, with the URL's host
// only: the URL itself lets anyone post to the channel.
func (a *App) post(ctx context.Context, responseURL string, r *reply) {
	u, err := url.Parse(responseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		a.log.Warn("slack response_url is missing or not an http(s) URL; the answer is dropped")
		return
	}
	body, err := json.Marshal(r)
	if err != nil {
		a.log.Error("encode slack response", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, responseURL, bytes.NewReader(body))
	if err != nil {
		a.log.Warn("slack response_url request", "host", u.Host, "err", "bad request")
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		a.log.Warn("post to slack response_url failed", "host", u.Host, "err", redactURL(err, responseURL))
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		return
	}
	a.log.Warn("slack response_url refused the post", "host", u.Host, "status", resp.StatusCode, "answer", string(bytes.TrimSpace(answer[:min(len(answer), 200)])))
	if resp.StatusCode == http.StatusBadRequest && r.Blocks != nil {
		// Slack refused the blocks (invalid_blocks): the text still goes.
		blocks, _ := replyBlocks(r)
		a.post(ctx, responseURL, r.plain(blocks))
	}
}

// redactURL keeps the cause of a failed request and drops the URL, which
// *url.Error quotes.
func redactURL(err error, raw string) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return strings.ReplaceAll(err.Error(), raw, "[response_url]")
}

// wait blocks until the background posts and clicks are done (for tests).
func (a *App) wait() { a.posts.Wait() }
