package slackbot

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// Slack's published example (api.slack.com/authentication/verifying-requests-from-slack).
const (
	exampleTS   = "1531420618"
	exampleBody = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	exampleSig  = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
)

func assertNoSecret(t testing.TB, where, text string) {
	t.Helper()
	notifiertest.AssertNoSecrets(t, where, text, testSecret)
}

func TestVerifySlackExample(t *testing.T) {
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", exampleTS)
	h.Set("X-Slack-Signature", exampleSig)
	if err := Verify(testSecret, h, []byte(exampleBody), time.Unix(1531420618, 0)); err != nil {
		t.Errorf("Verify(Slack's example): got %v, want nil", err)
	}
	if got := Sign(testSecret, time.Unix(1531420618, 0), []byte(exampleBody)); got != exampleSig {
		t.Errorf("Sign(Slack's example): got %s, want %s", got, exampleSig)
	}
}

func TestVerifyRefuses(t *testing.T) {
	at := time.Unix(1531420618, 0)
	cases := []struct {
		name, secret, ts, sig, body string
		now                         time.Time
		want                        error
	}{
		{"no secret", "", exampleTS, exampleSig, exampleBody, at, ErrNoSigningSecret},
		{"no signature", testSecret, exampleTS, "", exampleBody, at, ErrMissingSignature},
		{"no timestamp", testSecret, "", exampleSig, exampleBody, at, ErrMissingSignature},
		{"tampered body", testSecret, exampleTS, exampleSig, exampleBody + "&x=1", at, ErrBadSignature},
		{"other secret", "another-secret", exampleTS, exampleSig, exampleBody, at, ErrBadSignature},
		{"tampered signature", testSecret, exampleTS, "v0=b2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503", exampleBody, at, ErrBadSignature},
		{"short signature", testSecret, exampleTS, "v0=a2114d", exampleBody, at, ErrBadSignature},
		{"no v0 prefix", testSecret, exampleTS, exampleSig[3:], exampleBody, at, ErrBadSignature},
		{"v1 scheme", testSecret, exampleTS, "v1=" + exampleSig[3:], exampleBody, at, ErrBadSignature},
		{"not hex", testSecret, exampleTS, "v0=zz", exampleBody, at, ErrBadSignature},
		{"timestamp not a number", testSecret, "yesterday", exampleSig, exampleBody, at, ErrBadSignature},
		{"stale by 5m1s", testSecret, exampleTS, exampleSig, exampleBody, at.Add(5*time.Minute + time.Second), ErrStaleRequest},
		{"future by 5m1s", testSecret, exampleTS, exampleSig, exampleBody, at.Add(-5*time.Minute - time.Second), ErrStaleRequest},
	}
	for _, c := range cases {
		h := http.Header{}
		if c.ts != "" {
			h.Set("X-Slack-Request-Timestamp", c.ts)
		}
		if c.sig != "" {
			h.Set("X-Slack-Signature", c.sig)
		}
		err := Verify(c.secret, h, []byte(c.body), c.now)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		if err != nil {
			assertNoSecret(t, c.name+" error", err.Error())
		}
	}
}

func TestVerifyAcceptsWithinFiveMinutes(t *testing.T) {
	at := time.Unix(1531420618, 0)
	for _, skew := range []time.Duration{0, 5 * time.Minute, -5 * time.Minute, 299 * time.Second} {
		h := http.Header{}
		h.Set("X-Slack-Request-Timestamp", strconv.FormatInt(at.Unix(), 10))
		h.Set("X-Slack-Signature", exampleSig)
		if err := Verify(testSecret, h, []byte(exampleBody), at.Add(skew)); err != nil {
			t.Errorf("clock off by %s: got %v, want nil", skew, err)
		}
	}
}
