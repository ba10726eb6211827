package slackbot

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxClockSkew is how far a request's X-Slack-Request-Timestamp may be from
// the verifier's clock, either way, before the request counts as a replay.
const MaxClockSkew = 5 * time.Minute

// The reasons Verify refuses a request; the error it returns wraps one.
var (
	ErrNoSigningSecret  = errors.New("no signing secret configured: set slack.signing_secret to the app's Signing Secret (Basic Information page)")
	ErrMissingSignature = errors.New("missing X-Slack-Signature or X-Slack-Request-Timestamp header")
	ErrBadSignature     = errors.New("signature does not match the body")
	ErrStaleRequest     = errors.New("request timestamp is more than 5 minutes from now")
)

// Verify checks a Slack request's signature: X-Slack-Signature must be
// "v0=" and the hex HMAC-SHA256, keyed with the signing secret, of
// "v0:" + X-Slack-Request-Timestamp + ":" + body, and the timestamp (Unix
// seconds) must be within MaxClockSkew of now. The comparison takes the same
// time whatever the signature. Errors never contain the secret.
func Verify(signingSecret string, header http.Header, body []byte, now time.Time) error {
	_, err := verify(signingSecret, header, body, now)
	return err
}

// verify is Verify that returns the signature it checked, decoded.
func verify(signingSecret string, header http.Header, body []byte, now time.Time) ([]byte, error) {
	if signingSecret == "" {
		return nil, ErrNoSigningSecret
	}
	ts := header.Get("X-Slack-Request-Timestamp")
	sig := header.Get("X-Slack-Signature")
	if ts == "" || sig == "" {
		return nil, ErrMissingSignature
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: X-Slack-Request-Timestamp %q is not Unix seconds", ErrBadSignature, clipHeader(ts))
	}
	if skew := now.Unix() - sec; skew > int64(MaxClockSkew/time.Second) || skew < -int64(MaxClockSkew/time.Second) {
		return nil, fmt.Errorf("%w (off by %s): check the server's clock", ErrStaleRequest, time.Duration(skew)*time.Second)
	}
	hexSig, ok := strings.CutPrefix(sig, "v0=")
	if !ok {
		return nil, fmt.Errorf("%w: X-Slack-Signature has no v0= prefix", ErrBadSignature)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return nil, fmt.Errorf("%w: X-Slack-Signature is not hex", ErrBadSignature)
	}
	if !hmac.Equal(got, signature(signingSecret, ts, body)) {
		return nil, ErrBadSignature
	}
	return got, nil
}

// signedUntil is when Verify stops accepting a request with this
// (already verified) header: MaxClockSkew after its timestamp.
func signedUntil(header http.Header) time.Time {
	sec, _ := strconv.ParseInt(header.Get("X-Slack-Request-Timestamp"), 10, 64)
	return time.Unix(sec, 0).Add(MaxClockSkew)
}

// signature is the raw HMAC-SHA256 of Slack's v0 base string.
func signature(secret, ts string, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:"))
	mac.Write([]byte(ts))
	mac.Write([]byte(":"))
	mac.Write(body)
	return mac.Sum(nil)
}

// Sign returns the X-Slack-Signature value for a body sent at ts, as Slack
// computes it. Tests and load tools use it to build signed requests.
func Sign(signingSecret string, ts time.Time, body []byte) string {
	return "v0=" + hex.EncodeToString(signature(signingSecret, strconv.FormatInt(ts.Unix(), 10), body))
}

// clipHeader shortens a header value for an error message.
func clipHeader(s string) string {
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}
