package alertmanager

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/httpclient"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// memStore is a FiringStore in memory; fail makes every write fail.
type memStore struct {
	mu    sync.Mutex
	kv    map[string][]byte
	fail  bool
	aside map[string][]byte // records set aside: what they held
}

func newMemStore() *memStore { return &memStore{kv: map[string][]byte{}} }

func (s *memStore) All() (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.kv), nil
}

func (s *memStore) Put(key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("disk full")
	}
	s.kv[key] = value
	return nil
}

func (s *memStore) Delete(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("disk full")
	}
	delete(s.kv, key)
	return nil
}

func (s *memStore) SetAside(key string, _ error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aside == nil {
		s.aside = map[string][]byte{}
	}
	s.aside[key] = s.kv[key]
	delete(s.kv, key)
}

func (s *memStore) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.kv))
}

func (s *memStore) SetFail(fail bool) {
	s.mu.Lock()
	s.fail = fail
	s.mu.Unlock()
}

// noKeepAlive is a client whose connections close after each request, so
// no connection waits on the network between requests (synctest then
// sees every goroutine of the test blocked, and moves its clock).
func noKeepAlive() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}

// newNotifier builds a notifier for urls, failing the test on an error.
func newNotifier(t testing.TB, c Config, opts Options) *Notifier {
	t.Helper()
	if opts.HTTPClient == nil {
		opts.HTTPClient = noKeepAlive()
	}
	n, err := New("am", c, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return n
}

// decoded is the alerts of one request, as Alertmanager reads them.
func decoded(t testing.TB, r notifiertest.Request) []postableAlert {
	t.Helper()
	if r.Method != http.MethodPost || r.Path != "/api/v2/alerts" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("got %s %s (%s), want POST /api/v2/alerts of JSON", r.Method, r.Path, r.Header.Get("Content-Type"))
	}
	var out []postableAlert
	if err := json.Unmarshal(r.Body, &out); err != nil {
		t.Fatalf("the body is not a list of postable alerts: %v\n%s", err, r.Body)
	}
	return out
}

// firingNow is the sample notification, firing since ten minutes before now.
func firingNow(status notifier.Status, now time.Time) *notifier.Notification {
	m := notifiertest.Notification(status)
	a := &m.Alerts[0]
	a.StartsAt, a.At = now.Add(-10*time.Minute), now.Add(-10*time.Minute)
	if status == notifier.StatusResolved {
		a.EndsAt, a.At = now.Add(-time.Second), now.Add(-time.Second)
	}
	return m
}

func TestStatusTable(t *testing.T) {
	notifiertest.RunStatusTable(t, "", func(url string) notifier.Notifier {
		return newNotifier(t, Config{URLs: []string{url}}, Options{})
	})
}

// TestPostedAlert: what Alertmanager gets, firing and resolved.
func TestPostedAlert(t *testing.T) {
	srv := notifiertest.NewServer(t, nil)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	n := newNotifier(t, Config{URLs: []string{srv.URL}, ResendInterval: 30 * time.Second},
		Options{Now: func() time.Time { return now }, GeneratorURL: "http://node1:9477"})
	for _, status := range []notifier.Status{notifier.StatusFiring, notifier.StatusResolved} {
		m := firingNow(status, now)
		if _, err := n.Notify(context.Background(), m); err != nil {
			t.Fatalf("%s: %v", status, err)
		}
		reqs := srv.Requests()
		got := decoded(t, reqs[len(reqs)-1])
		a := m.Alerts[0]
		wantEnds := now.Add(4 * 30 * time.Second)
		if status == notifier.StatusResolved {
			wantEnds = a.EndsAt
		}
		want := []postableAlert{{
			Labels: map[string]string{"alertname": "GPUMemoryLeak", "host": "node1", "gpu": "0",
				"uuid": "GPU-cd613e30-d8f1-6adf-91b7-584a2265b1f5", "severity": "critical", "team": "ml"},
			Annotations: map[string]string{"summary": a.Summary, "description": a.Description},
			StartsAt:    a.StartsAt, EndsAt: wantEnds, GeneratorURL: "http://node1:9477/api/v1/alerts",
		}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: got\n%+v\nwant\n%+v", status, got, want)
		}
	}
}

// TestAlertAboutNoGPU: an alert of gpuwatch itself (gpu -1, no uuid) has
// neither label, and no empty one.
func TestAlertAboutNoGPU(t *testing.T) {
	a := notifier.Alert{Name: "GPUWatchSourceDown", Host: "hub", GPU: -1, Severity: "critical",
		Labels: map[string]string{"alert": "GPUWatchSourceDown", "severity": "critical", "host": "hub", "gpu": "-1", "uuid": "", "team": ""}}
	got := labels(&a)
	want := map[string]string{"alertname": "GPUWatchSourceDown", "host": "hub", "severity": "critical"}
	if !maps.Equal(got, want) {
		t.Errorf("got labels %v, want %v", got, want)
	}
}

// TestEveryURL: each Alertmanager of an HA cluster gets the alerts; one
// that fails is named in the error and is the only one the retry goes to;
// the notification is done when all have taken it.
func TestEveryURL(t *testing.T) {
	ok := notifiertest.NewServer(t, nil)
	flaky := notifiertest.NewServer(t, func(n int, _ *notifiertest.Request) notifiertest.Response {
		if n == 0 {
			return notifiertest.Response{Status: http.StatusServiceUnavailable, Body: "starting"}
		}
		return notifiertest.Response{}
	})
	n := newNotifier(t, Config{URLs: []string{ok.URL, flaky.URL}}, Options{})
	m := firingNow(notifier.StatusFiring, time.Now())
	retry, err := n.Notify(context.Background(), m)
	wantErr := "alertmanager: 1 of 2 did not take the alerts (1 did): urls[1] (" + notifier.RedactURL(flaky.URL) + "): HTTP 503 Service Unavailable: starting"
	if !retry || err == nil || err.Error() != wantErr {
		t.Fatalf("first try: got retry=%v err=%v, want retry and %q", retry, err, wantErr)
	}
	if retry, err := n.Notify(context.Background(), m); err != nil {
		t.Fatalf("second try: got retry=%v err=%v, want done", retry, err)
	}
	if len(ok.Requests()) != 1 || len(flaky.Requests()) != 2 {
		t.Errorf("got %d requests to urls[0] and %d to urls[1], want 1 and 2: a retry goes only where it failed",
			len(ok.Requests()), len(flaky.Requests()))
	}
	// A new notification goes to both again.
	next := firingNow(notifier.StatusResolved, time.Now())
	next.ID = 2
	if _, err := n.Notify(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	if len(ok.Requests()) != 2 || len(flaky.Requests()) != 3 {
		t.Errorf("the next notification: got %d and %d requests in all, want 2 and 3", len(ok.Requests()), len(flaky.Requests()))
	}
}

// TestEveryURLRefused: when what fails is permanent everywhere it fails,
// the notification is not retried (it becomes a dead letter); when one
// failure is worth a retry, it is; the longest Retry-After wins.
func TestEveryURLRefused(t *testing.T) {
	answer := func(status int, retryAfter string) *notifiertest.Server {
		return notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
			return notifiertest.Response{Status: status, Header: map[string]string{"Retry-After": retryAfter}}
		})
	}
	cases := []struct {
		name      string
		statuses  []int
		after     []string
		wantRetry bool
		wantAfter time.Duration
	}{
		{"one refuses", []int{200, 400}, []string{"", ""}, false, 0},
		{"both refuse", []int{422, 400}, []string{"", ""}, false, 0},
		{"refused and down", []int{400, 502}, []string{"", ""}, true, 0},
		{"rate limited", []int{429, 503}, []string{"7", "3"}, true, 7 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var urls []string
			for i, status := range c.statuses {
				urls = append(urls, answer(status, c.after[i]).URL)
			}
			n := newNotifier(t, Config{URLs: urls}, Options{})
			retry, err := n.Notify(context.Background(), firingNow(notifier.StatusFiring, time.Now()))
			if err == nil || retry != c.wantRetry {
				t.Fatalf("got retry=%v err=%v, want an error and retry=%v", retry, err, c.wantRetry)
			}
			var ra *notifier.RetryAfterError
			if got := errors.As(err, &ra); got != (c.wantAfter > 0) || got && ra.After != c.wantAfter {
				t.Errorf("got %v, want a Retry-After of %v", err, c.wantAfter)
			}
			for i, status := range c.statuses {
				if named := strings.Contains(err.Error(), fmt.Sprintf("urls[%d]", i)); named != (status/100 != 2) {
					t.Errorf("error %q: names urls[%d] %v, want %v", err, i, named, status/100 != 2)
				}
			}
		})
	}
}

// TestTimeoutIsATimeout: a hung Alertmanager is a timeout, for the retry
// and for gpuwatch_notifications_failed_total{reason}.
func TestTimeoutIsATimeout(t *testing.T) {
	release := make(chan struct{})
	hung := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
		<-release
		return notifiertest.Response{}
	})
	defer close(release)
	n := newNotifier(t, Config{URLs: []string{hung.URL}, Timeout: 50 * time.Millisecond}, Options{})
	retry, err := n.Notify(context.Background(), firingNow(notifier.StatusFiring, time.Now()))
	if !retry || !errors.Is(err, context.DeadlineExceeded) || notifier.ClassifyFailure(err) != notifier.FailureTimeout {
		t.Errorf("got retry=%v err=%v (reason %v), want a timeout worth a retry", retry, err, notifier.ClassifyFailure(err))
	}
}

func TestDigestRefused(t *testing.T) {
	n := newNotifier(t, Config{URLs: []string{"http://127.0.0.1:1"}}, Options{})
	m := &notifier.Notification{Status: notifier.StatusDigest, Digest: &notifier.Digest{Name: "daily"}}
	if retry, err := n.Notify(context.Background(), m); retry || err == nil || !strings.Contains(err.Error(), "takes alerts only") {
		t.Errorf("got retry=%v err=%v, want a permanent refusal", retry, err)
	}
}

// TestNoSecretLeaks: a server that quotes the whole request back (the
// Authorization header too) in its errors, and URLs with credentials,
// leave no secret in an error or the log.
func TestNoSecretLeaks(t *testing.T) {
	const (
		token    = "am-bearer-s3cret-81fe"
		password = "am-basic-s3cret-22aa"
		userinfo = "am-url-s3cret-93bc"
	)
	echo := notifiertest.NewServer(t, func(n int, r *notifiertest.Request) notifiertest.Response {
		status := []int{http.StatusInternalServerError, http.StatusTooManyRequests, http.StatusBadRequest}[n%3]
		return notifiertest.Response{Status: status, Header: map[string]string{"Retry-After": "1"},
			Body: fmt.Sprintf("you sent %s %v %s", r.Path, r.Header, r.Body)}
	})
	withUser := strings.Replace(echo.URL, "http://", "http://gpuwatch:"+userinfo+"@", 1)
	secrets := []string{token, password, userinfo,
		base64.StdEncoding.EncodeToString([]byte("gpuwatch:" + password)), base64.StdEncoding.EncodeToString([]byte("gpuwatch:" + userinfo))}
	for _, c := range []Config{
		{URLs: []string{echo.URL, withUser}, BearerToken: token},
		{URLs: []string{withUser + "/prefix"}, BasicAuth: &httpclient.BasicAuth{Username: "gpuwatch", Password: password}},
		{URLs: []string{"http://gpuwatch:" + userinfo + "@127.0.0.1:1"}, BearerToken: token},
	} {
		logs := &notifiertest.Buffer{}
		n := newNotifier(t, c, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
		m := firingNow(notifier.StatusFiring, time.Now())
		for range 3 {
			_, err := n.Notify(context.Background(), m)
			if err == nil {
				t.Fatal("got no error from a server that fails every request")
			}
			notifiertest.AssertNoSecrets(t, "the error", err.Error(), secrets...)
			var ra *notifier.RetryAfterError
			if errors.As(err, &ra) {
				notifiertest.AssertNoSecrets(t, "the Retry-After error", ra.Error(), secrets...)
			}
		}
		n.firing.remember(m.Alerts, []postableAlert{n.postable(&m.Alerts[0])})
		n.resendFiring(context.Background())
		notifiertest.AssertNoSecrets(t, "the log", logs.String(), secrets...)
		if !strings.Contains(logs.String(), "cannot re-send") {
			t.Errorf("the log says nothing of the failed re-send: the test did not exercise it\n%s", logs)
		}
	}
	// The credentials did travel, so the searches above could have found them.
	var sent strings.Builder
	for _, r := range echo.Requests() {
		fmt.Fprintln(&sent, r.Header)
	}
	for _, want := range []string{"Bearer " + token, secrets[3]} {
		if !strings.Contains(sent.String(), want) {
			t.Errorf("no request carried %q…: the test does not exercise it", want[:12])
		}
	}
}

// TestGeneratorURL: the config's generator_url wins over the daemon's
// address; with neither, alerts carry no link rather than a relative one.
func TestGeneratorURL(t *testing.T) {
	for _, c := range []struct{ config, option, want string }{
		{"https://gpuwatch.example.org/", "http://node1:9477", "https://gpuwatch.example.org/api/v1/alerts"},
		{"", "http://node1:9477", "http://node1:9477/api/v1/alerts"},
		{"", "", ""},
	} {
		n := newNotifier(t, Config{URLs: []string{"http://am:9093"}, GeneratorURL: c.config}, Options{GeneratorURL: c.option})
		if got := n.postable(&notifiertest.Notification(notifier.StatusFiring).Alerts[0]).GeneratorURL; got != c.want {
			t.Errorf("generator_url %q, default %q: got %q, want %q", c.config, c.option, got, c.want)
		}
	}
}

// TestRetryAfterHTTPDate: a 503 whose Retry-After is an HTTP date five
// seconds ahead is retried after five seconds.
func TestRetryAfterHTTPDate(t *testing.T) {
	srv := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response {
		return notifiertest.RetryAt(http.StatusServiceUnavailable, 5*time.Second)
	})
	_, err := newNotifier(t, Config{URLs: []string{srv.URL}}, Options{}).Notify(context.Background(), firingNow(notifier.StatusFiring, time.Now()))
	var ra *notifier.RetryAfterError
	if !errors.As(err, &ra) || ra.After != 5*time.Second {
		t.Errorf("HTTP 503 with Retry-After a date 5s ahead: got %v, want a retry after 5s", err)
	}
}
