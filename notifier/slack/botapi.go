package slack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/people"
)

// The scopes gpuwatch asks of the Slack app beyond posting messages.
const (
	// FilesScope lets the app upload charts (alert threads, digests,
	// /gpu history).
	FilesScope = "files:write"
	// UsersScope lets the app read a user's time zone, so /gpu history
	// shows times in the zone of whoever asked. Optional.
	UsersScope = "users:read"
)

// ErrNoFilesScope says Slack refuses uploads: the app lacks files:write.
var ErrNoFilesScope = errors.New("the Slack app lacks the files:write scope")

// Bot is what gpuwatch does with the Slack app's bot token besides
// posting messages: it asks which scopes the token has (auth.test's
// X-OAuth-Scopes), uploads pictures (files.getUploadURLExternal, the
// bytes, files.completeUploadExternal) and reads users' time zones
// (users.info). One Bot serves every Slack receiver and the slash
// commands, so a missing scope is found, and said, once.
type Bot struct {
	api     *goslack.Client
	apiURL  string
	opts    BotOptions
	log     *slog.Logger
	secrets []string
	// noFiles is set once Slack says the token lacks files:write:
	// pictures are dropped, after one warning, until a restart.
	noFiles atomic.Bool
	// noUsers is set once Slack says the token lacks users:read: charts
	// show the host's zone.
	noUsers atomic.Bool
	// noEmails is set once Slack says the token lacks users:read.email.
	noEmails atomic.Bool
	zones    zoneCache
}

// BotOptions say how a Bot reaches Slack.
type BotOptions struct {
	// Token is slack.bot_token (xoxb-…).
	Token string
	// APIURL is a Slack-compatible Web API base; "" means Slack's.
	APIURL string
	// HTTPClient makes the requests; nil means a new http.Client.
	HTTPClient *http.Client
	// Timeout bounds each API call (an upload's three calls together get
	// three times it); 0 means DefaultTimeout.
	Timeout time.Duration
	// Logger gets the warnings about missing scopes; nil discards.
	Logger *slog.Logger
	// Now is the clock users' zones are kept by; nil means time.Now.
	Now func() time.Time
	// People says the config tells owners (a people: section): the
	// scopes of direct messages and email lookups are checked too.
	People bool
}

// NewBot returns the Bot of a bot token.
func NewBot(o BotOptions) *Bot {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.HTTPClient = notingClient(o.HTTPClient, o.Now)
	apiURL := o.APIURL
	if apiURL == "" {
		apiURL = goslack.APIURL
	}
	if !strings.HasSuffix(apiURL, "/") {
		apiURL += "/"
	}
	b := &Bot{
		api:     goslack.New(o.Token, goslack.OptionAPIURL(apiURL), goslack.OptionHTTPClient(o.HTTPClient)),
		apiURL:  apiURL,
		opts:    o,
		log:     o.Logger,
		secrets: notifier.Secrets(o.Token),
		zones:   zoneCache{byUser: map[string]zoneEntry{}},
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	return b
}

// CheckScopes asks Slack which scopes the token has. Without files:write
// it warns once and turns uploads off: alerts go as text alone. Without
// users:read it says that charts show the host's zone. When Slack does
// not answer or does not say, nothing is turned off, and a call Slack
// refuses for want of a scope turns its use off then.
func (b *Bot) CheckScopes(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.apiURL+"auth.test", http.NoBody)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+b.opts.Token)
	resp, err := b.opts.HTTPClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	header := resp.Header.Get("X-OAuth-Scopes")
	if resp.StatusCode != http.StatusOK || header == "" {
		return
	}
	scopes := strings.Split(header, ",")
	for i := range scopes {
		scopes[i] = strings.TrimSpace(scopes[i])
	}
	if !slices.Contains(scopes, FilesScope) {
		b.refuseFiles("the Slack app lacks the files:write scope: alerts go without charts; add the scope (deploy/slack-app-manifest.yaml lists it) and reinstall the app")
	}
	if !slices.Contains(scopes, UsersScope) {
		b.noUsers.Store(true)
		b.log.Info("the Slack app lacks the optional users:read scope: charts of /gpu history show the host's time zone, not each reader's; add the scope and reinstall the app for theirs")
	}
	if b.opts.People && !slices.Contains(scopes, IMScope) {
		b.log.Warn("the Slack app lacks the im:write scope: owners get no direct messages (their alerts fail to reach them); add the scope (deploy/slack-app-manifest.yaml lists it) and reinstall the app")
	}
	if b.opts.People && !slices.Contains(scopes, EmailScope) {
		b.noEmails.Store(true)
		b.log.Warn("the Slack app lacks the users:read.email scope: people mapped by email are not found, and their alerts go to the channel alone; add the scope and reinstall the app")
	}
}

// refuseFiles turns uploads off, with one warning.
func (b *Bot) refuseFiles(warning string) {
	if !b.noFiles.Swap(true) {
		b.log.Warn(warning)
	}
}

// MayUpload reports whether uploads are on: Slack has not said the
// token lacks files:write.
func (b *Bot) MayUpload() bool { return !b.noFiles.Load() }

// File is a picture to share in a conversation.
type File struct {
	// Channel is the conversation's ID (C…, G…, D…).
	Channel string
	// ThreadTS puts the picture in a message's thread; "" in the
	// conversation itself.
	ThreadTS string
	Name     string // the file name, "gpuwatch-….png"
	Title    string // the picture's title and alternative text
	// Comment is the message the picture comes with; "" for none.
	Comment string
	PNG     []byte
	// BeforeShare, when set, is told the file's ID once its bytes are
	// uploaded, before files.completeUploadExternal shares it: an answer
	// to that call can be lost after Slack shared the file, and whoever
	// records the ID can look for it before sharing again. An error stops
	// the upload.
	BeforeShare func(fileID string) error
}

// Upload shares f in its conversation and returns the file's ID. Without
// files:write it returns ErrNoFilesScope (after one warning, and at once
// from then on). Its other errors are slack-go's, with the token taken
// out of their text.
func (b *Bot) Upload(ctx context.Context, f File) (string, error) {
	if b.noFiles.Load() {
		return "", ErrNoFilesScope
	}
	ctx, cancel := context.WithTimeout(ctx, 3*b.opts.Timeout)
	defer cancel()
	id, err := b.upload(ctx, f)
	if err != nil {
		if missingScope(err) {
			b.refuseFiles("Slack refuses uploads: give the Slack app the files:write scope and reinstall it; alerts go without charts until a restart")
			return "", ErrNoFilesScope
		}
		return "", err
	}
	return id, nil
}

// upload runs Slack's upload flow: an upload URL and the file's ID, the
// bytes, then the share into the conversation, telling f.BeforeShare the
// ID in between.
func (b *Bot) upload(ctx context.Context, f File) (string, error) {
	u, err := b.api.GetUploadURLExternalContext(ctx, goslack.GetUploadURLExternalParameters{
		FileName: f.Name, FileSize: len(f.PNG), AltTxt: f.Title,
	})
	if err != nil {
		return "", fmt.Errorf("files.getUploadURLExternal: %w", err)
	}
	if err := b.api.UploadToURL(ctx, goslack.UploadToURLParameters{UploadURL: u.UploadURL, Reader: bytes.NewReader(f.PNG), Filename: f.Name}); err != nil {
		return "", fmt.Errorf("upload the file's bytes: %w", err)
	}
	if f.BeforeShare != nil {
		if err := f.BeforeShare(u.FileID); err != nil {
			return "", err
		}
	}
	if _, err := b.api.CompleteUploadExternalContext(ctx, goslack.CompleteUploadExternalParameters{
		Files: []goslack.FileSummary{{ID: u.FileID, Title: f.Title}}, Channel: f.Channel,
		InitialComment: f.Comment, ThreadTimestamp: f.ThreadTS,
	}); err != nil {
		return "", fmt.Errorf("files.completeUploadExternal: %w", err)
	}
	return u.FileID, nil
}

// Redact takes the token out of an error's text, for a log.
func (b *Bot) Redact(err error) string { return notifier.Redact(err.Error(), b.secrets...) }

// missingScope reports whether Slack refused a call for want of a scope.
func missingScope(err error) bool {
	var apiErr goslack.SlackErrorResponse
	return errors.As(err, &apiErr) && (apiErr.Err == "missing_scope" || apiErr.Err == "not_allowed_token_type")
}

// How long a user's zone is kept: people travel, rarely within hours;
// a failed look-up is tried again sooner.
const (
	zoneKept      = 12 * time.Hour
	zoneUnknownTo = 10 * time.Minute
	maxZones      = 4096
)

// zoneCache keeps the zones users.info told, by user.
type zoneCache struct {
	mu     sync.Mutex
	byUser map[string]zoneEntry
}

type zoneEntry struct {
	loc   *time.Location // nil: Slack did not tell
	until time.Time
}

// UserZone is the time zone Slack has for a user (users.info, with
// users:read), looked up once in a while per user; false when Slack does
// not tell (no users:read, an unknown user, Slack down).
func (b *Bot) UserZone(ctx context.Context, userID string) (*time.Location, bool) {
	if userID == "" || b.noUsers.Load() {
		return nil, false
	}
	now := b.opts.Now()
	b.zones.mu.Lock()
	e, ok := b.zones.byUser[userID]
	b.zones.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.loc, e.loc != nil
	}
	loc, err := b.lookUpZone(ctx, userID)
	e = zoneEntry{loc: loc, until: now.Add(zoneKept)}
	if loc == nil {
		e.until = now.Add(zoneUnknownTo)
	}
	if err != nil {
		b.log.Debug("cannot read a Slack user's time zone; the chart shows the host's", "user", userID, "err", b.Redact(err))
	}
	b.zones.mu.Lock()
	if len(b.zones.byUser) >= maxZones {
		clear(b.zones.byUser)
	}
	b.zones.byUser[userID] = e
	b.zones.mu.Unlock()
	return loc, loc != nil
}

// lookUpZone asks users.info for a user's zone: the IANA zone when this
// host knows it, else the offset Slack gives under the zone's name.
func (b *Bot) lookUpZone(ctx context.Context, userID string) (*time.Location, error) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	u, err := b.api.GetUserInfoContext(ctx, userID)
	if err != nil {
		if missingScope(err) && !b.noUsers.Swap(true) {
			b.log.Info("Slack refuses users.info: without the optional users:read scope, charts of /gpu history show the host's time zone")
		}
		return nil, err
	}
	if u.TZ == "" {
		return nil, nil
	}
	if loc, err := time.LoadLocation(u.TZ); err == nil {
		return loc, nil
	}
	return time.FixedZone(u.TZ, u.TZOffset), nil
}

// The scopes of the people: section: looking users up by email (optional
// without emails in the section), and direct messages to owners.
const (
	EmailScope = "users:read.email"
	IMScope    = "im:write"
)

// LookupByEmail asks Slack (users.lookupByEmail, scope users:read.email)
// whose an email is. It makes the Bot a people.Directory. Slack knowing no
// one with it, or refusing for want of the scope (said once in the log),
// is people.ErrUnknown; other errors have the token and the email taken
// out of their text.
func (b *Bot) LookupByEmail(ctx context.Context, email string) (people.Person, error) {
	if b.noEmails.Load() {
		return people.Person{}, people.ErrUnknown
	}
	ctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	u, err := b.api.GetUserByEmailContext(ctx, email)
	if err != nil {
		if missingScope(err) {
			if !b.noEmails.Swap(true) {
				b.log.Warn("Slack refuses users.lookupByEmail: give the Slack app the users:read.email scope and reinstall it; until then people mapped by email are not told")
			}
			return people.Person{}, people.ErrUnknown
		}
		if unknownUser(err) {
			return people.Person{}, people.ErrUnknown
		}
		return people.Person{}, errors.New(notifier.Redact(b.Redact(err), email))
	}
	return personOf(u), nil
}

// UserInfo asks Slack (users.info, scope users:read) for a user's name and
// time zone. It makes the Bot a people.Directory.
func (b *Bot) UserInfo(ctx context.Context, id string) (people.Person, error) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	u, err := b.api.GetUserInfoContext(ctx, id)
	switch {
	case unknownUser(err):
		return people.Person{}, people.ErrUnknown
	case err != nil:
		return people.Person{}, errors.New(b.Redact(err))
	}
	return personOf(u), nil
}

// unknownUser reports whether Slack says there is no such user.
func unknownUser(err error) bool {
	var apiErr goslack.SlackErrorResponse
	return errors.As(err, &apiErr) && (apiErr.Err == "users_not_found" || apiErr.Err == "user_not_found")
}

// personOf is what gpuwatch keeps of a Slack user: the ID, how Slack shows
// the name, the zone. Never the email.
func personOf(u *goslack.User) people.Person {
	name := u.Profile.DisplayName
	if name == "" {
		name = u.RealName
	}
	if name == "" {
		name = u.Name
	}
	return people.Person{ID: u.ID, Name: name, Zone: u.TZ, Offset: u.TZOffset}
}
