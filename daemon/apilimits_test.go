package daemon_test

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestDigestAPIWindowLimit: a digest's window may reach back as far as
// usage is kept (storage.retention, 35d by default) and no further: a
// longer one, in any form, gets 400 saying the limit, before anything is
// computed; the longest allowed, as a picture, costs a bounded amount.
func TestDigestAPIWindowLimit(t *testing.T) {
	h := newDigestHook(t)
	r := start(t, digestConfig(t, t.TempDir(), h.URL), newClock(base).Now)
	for i := range 30 {
		r.D.Step(snapshot(base.Add(time.Duration(i)*time.Minute), 60, 40))
	}
	for _, query := range []string{"?window=2562047h", "?window=2562047h&format=png", "?window=36d&format=json", "?window=841h&name=hourly"} {
		code, body := r.Do(http.MethodGet, "/api/v1/digest"+query, "")
		if want := "is longer than the 35d of usage this gpuwatch keeps (storage.retention): ask for 35d or less"; code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("GET /api/v1/digest%s: got %d %q, want 400 saying %q", query, code, body, want)
		}
	}
	if took := picture(t, r, "?window=35d&format=png"); took > 64<<20 {
		t.Errorf("the picture of the longest window allocated %d MiB, want under 64 MiB", took>>20)
	}
}

// picture asks r's API for a digest's picture and returns what the
// process allocated meanwhile.
func picture(t *testing.T, r *running, query string) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	code, body := r.Do(http.MethodGet, "/api/v1/digest"+query, "")
	runtime.ReadMemStats(&after)
	if code != http.StatusOK || !strings.HasPrefix(body, "\x89PNG") {
		t.Fatalf("GET /api/v1/digest%s: got %d %.40q, want a picture", query, code, body)
	}
	return after.TotalAlloc - before.TotalAlloc
}

// TestSilenceAPIDurationLimit: a silence may last a year, as /gpu silence
// allows, and no longer: the API answers 400 saying the limit.
func TestSilenceAPIDurationLimit(t *testing.T) {
	r := start(t, webhookConfig(t, t.TempDir(), "http://127.0.0.1:1/hook", "0s"), newClock(base).Now)
	for body, want := range map[string]int{
		`{"matchers":["alert=\"GPUHot\""],"duration":"8760h"}`:               http.StatusCreated,
		`{"matchers":["alert=\"GPUHot\""],"duration":"8761h"}`:               http.StatusBadRequest,
		`{"matchers":["alert=\"GPUHot\""],"ends_at":"9999-12-31T00:00:00Z"}`: http.StatusBadRequest,
	} {
		code, answer := r.Do(http.MethodPost, "/api/v1/silences", body)
		if code != want || (want == http.StatusBadRequest && !strings.Contains(answer, "longer than 365d, the longest gpuwatch keeps")) {
			t.Errorf("POST /api/v1/silences %s: got %d %s, want %d", body, code, answer, want)
		}
	}
}

// TestDigestPictureOfOneHost: on a hub of many hosts, the picture the API
// serves for one host costs that host's, not the fleet's: over a window of
// 35 days, 400 hosts of 8 GPUs lay out 21 MiB of hours, and a report of
// them more; one host's picture needs neither.
func TestDigestPictureOfOneHost(t *testing.T) {
	h := newDigestHook(t)
	r := start(t, digestConfig(t, t.TempDir(), h.URL), newClock(base).Now)
	for i := range 2 {
		for host := range 400 {
			s := snapshot(base.Add(time.Duration(i)*time.Minute), 50, 50, 50, 50, 50, 50, 50, 50)
			s.Host = fmt.Sprintf("node%04d", host)
			r.D.Step(s)
		}
	}
	if took := picture(t, r, "?window=35d&format=png&host=node0007"); took > 16<<20 {
		t.Errorf("the picture of one host of 400 allocated %d MiB, want under 16 MiB", took>>20)
	}
	if code, _ := r.Do(http.MethodGet, "/api/v1/digest?window=35d&format=png&host=elsewhere", ""); code != http.StatusNotFound {
		t.Errorf("GET the picture of a host without hours: got %d, want 404", code)
	}
}
