package daemon_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/notifier"
)

func listSilences(t *testing.T, r *running) []daemon.SilenceJSON {
	t.Helper()
	code, body := r.Do(http.MethodGet, "/api/v1/silences", "")
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/silences: got HTTP %d %s, want 200", code, body)
	}
	var out []daemon.SilenceJSON
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("GET /api/v1/silences: %v in %s", err, body)
	}
	return out
}

func addSilence(t *testing.T, r *running, body string) daemon.SilenceJSON {
	t.Helper()
	code, answer := r.Do(http.MethodPost, "/api/v1/silences", body)
	if code != http.StatusCreated {
		t.Fatalf("POST /api/v1/silences %s: got HTTP %d %s, want 201", body, code, answer)
	}
	var s daemon.SilenceJSON
	if err := json.Unmarshal([]byte(answer), &s); err != nil {
		t.Fatalf("POST /api/v1/silences: %v in %s", err, answer)
	}
	return s
}

// states maps silence id to state.
func states(ss []daemon.SilenceJSON) map[string]string {
	out := map[string]string{}
	for _, s := range ss {
		out[s.ID] = s.State
	}
	return out
}

// TestSilencesOverAPI: a silence added over the API mutes the alert it
// matches, lists, expires, and outlives a restart.
func TestSilencesOverAPI(t *testing.T) {
	h := newHook(t, nil)
	clk := newClock(base)
	cfg := webhookConfig(t, t.TempDir(), h.URL, "1ns")
	r := start(t, cfg, clk.Now)

	if got := listSilences(t, r); len(got) != 0 {
		t.Fatalf("silences of a new store: got %v, want none", got)
	}
	sil := addSilence(t, r, `{"matchers":["alert=\"GPUHot\""],"duration":"2h","created_by":"alice","comment":"fan repair"}`)
	if sil.ID == "" || sil.State != "active" || !sil.EndsAt.Equal(base.Add(2*time.Hour)) || sil.CreatedBy != "alice" {
		t.Errorf("added silence: got %+v, want an id, active, ending %v, by alice", sil, base.Add(2*time.Hour))
	}
	if got := listSilences(t, r); len(got) != 1 || got[0].ID != sil.ID || !slices.Equal(got[0].Matchers, []string{`alert="GPUHot"`}) {
		t.Errorf("GET after POST: got %+v, want the one silence %s", got, sil.ID)
	}

	r.Steps(base.Add(time.Minute), 10*time.Second, []float64{90, 50, 50}, []float64{90, 50, 50})
	// Step has committed what it decided: nothing for a silenced alert.
	if n, got := r.Pending(), h.Requests(); n != 0 || len(got) != 0 {
		t.Fatalf("silenced alert: got %d pending and %d requests, want none", n, len(got))
	}
	if !strings.Contains(r.Logs.String(), "alert silenced") {
		t.Errorf("the log does not say the alert was silenced:\n%s", r.Logs)
	}
	// The API shows it silenced: until when, by whom.
	code, body := r.Do(http.MethodGet, "/api/v1/alerts", "")
	var alerts []daemon.AlertJSON
	if err := json.Unmarshal([]byte(body), &alerts); code != http.StatusOK || err != nil {
		t.Fatalf("GET /api/v1/alerts: HTTP %d %v in %s", code, err, body)
	}
	if len(alerts) != 1 || alerts[0].State != "firing" || alerts[0].Silenced == nil ||
		*alerts[0].Silenced != (daemon.SilencedJSON{ID: sil.ID, EndsAt: sil.EndsAt, CreatedBy: "alice", Comment: "fan repair"}) {
		t.Errorf("GET /api/v1/alerts under the silence: got %s, want GPUHot firing, silenced by %s (alice, fan repair) until %v", body, sil.ID, sil.EndsAt)
	}

	clk.Add(2 * time.Minute)
	code, body = r.Do(http.MethodDelete, "/api/v1/silences/"+sil.ID, "")
	if code != http.StatusOK {
		t.Fatalf("DELETE: got HTTP %d %s, want 200", code, body)
	}
	if got := states(listSilences(t, r))[sil.ID]; got != "expired" {
		t.Errorf("state after DELETE: got %q, want expired", got)
	}
	// GPU 1 fires after the expiry: delivered.
	r.Steps(base.Add(3*time.Minute), 10*time.Second, []float64{90, 90, 50}, []float64{90, 90, 50})
	h.WaitAccepted(t, 1)
	r.Drain()
	if got, want := h.Summary(), []string{"firing[1]"}; !slices.Equal(got, want) {
		t.Errorf("after the silence expired: got %v, want %v", got, want)
	}

	// A silence of GPU 2 made now persists across a restart and still mutes.
	gpu2 := addSilence(t, r, `{"matchers":["alert=\"GPUHot\"","gpu=\"2\""],"duration":"1h","comment":"burn-in"}`)
	r.Stop()
	again := start(t, cfg, clk.Now)
	want := map[string]string{sil.ID: "expired", gpu2.ID: "active"}
	if got := states(listSilences(t, again)); len(got) != 2 || got[sil.ID] != want[sil.ID] || got[gpu2.ID] != want[gpu2.ID] {
		t.Errorf("silences after a restart: got %v, want %v", got, want)
	}
	again.Steps(base.Add(5*time.Minute), 10*time.Second, []float64{90, 90, 95}, []float64{90, 90, 95})
	if n, got := again.Pending(), h.Summary(); n != 0 || len(got) != 1 {
		t.Errorf("GPU 2 under a restored silence: got %d pending and %v accepted, want nothing new", n, got)
	}
}

// TestAPIRefusesBadRequests: every bad request gets its status and a JSON
// error that says what is wrong.
func TestAPIRefusesBadRequests(t *testing.T) {
	r := start(t, webhookConfig(t, t.TempDir(), "http://127.0.0.1:1/hook", "1ns"), nil)
	huge := `{"comment":"` + strings.Repeat("x", 1<<20) + `"}`
	cases := []struct {
		name, method, path, body string
		status                   int
		message                  string // in the error
	}{
		{"not JSON", http.MethodPost, "/api/v1/silences", `{"matchers":`, http.StatusBadRequest, "not a silence"},
		{"unknown field", http.MethodPost, "/api/v1/silences", `{"matcher":["alert=\"X\""],"duration":"1h"}`, http.StatusBadRequest, "matcher"},
		{"bad matcher", http.MethodPost, "/api/v1/silences", `{"matchers":["alert=~\"(\""],"duration":"1h"}`, http.StatusBadRequest, "matcher"},
		{"bad duration", http.MethodPost, "/api/v1/silences", `{"matchers":["alert=\"X\""],"duration":"soon"}`, http.StatusBadRequest, "duration"},
		{"no end", http.MethodPost, "/api/v1/silences", `{"matchers":["alert=\"X\""]}`, http.StatusBadRequest, ""},
		{"over 1 MiB", http.MethodPost, "/api/v1/silences", huge, http.StatusRequestEntityTooLarge, "1 MiB"},
		{"unknown silence", http.MethodDelete, "/api/v1/silences/nope", "", http.StatusNotFound, "nope"},
		{"PUT silences", http.MethodPut, "/api/v1/silences", `{}`, http.StatusMethodNotAllowed, ""},
		{"POST outbox", http.MethodPost, "/api/v1/outbox", `{}`, http.StatusMethodNotAllowed, ""},
		{"GET one silence", http.MethodGet, "/api/v1/silences/abc", "", http.StatusMethodNotAllowed, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := r.Do(c.method, c.path, c.body)
			if code != c.status {
				t.Fatalf("%s %s: got HTTP %d %s, want %d", c.method, c.path, code, body, c.status)
			}
			if c.status == http.StatusMethodNotAllowed {
				return // the mux's own answer
			}
			var e struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" {
				t.Fatalf("%s %s: got body %q, want a JSON error", c.method, c.path, body)
			}
			if !strings.Contains(e.Error, c.message) {
				t.Errorf("%s %s: got error %q, want it to mention %q", c.method, c.path, e.Error, c.message)
			}
		})
	}
	if got := listSilences(t, r); len(got) != 0 {
		t.Errorf("silences after only bad requests: got %v, want none", got)
	}
}

// TestSilencesBoundedOverAPI: a silence with a huge comment is refused, a
// long list comes in pages, and silences expired for longer than the
// retention are gone after a restart, from the store too.
func TestSilencesBoundedOverAPI(t *testing.T) {
	clk := newClock(base)
	dir := t.TempDir()
	cfg := webhookConfig(t, dir, "http://127.0.0.1:1/hook", "1ns")
	r := start(t, cfg, clk.Now)

	huge := `{"matchers":["alert=\"GPUHot\""],"duration":"1h","comment":"` + strings.Repeat("x", 1000000) + `"}`
	if code, body := r.Do(http.MethodPost, "/api/v1/silences", huge); code != http.StatusBadRequest || !strings.Contains(body, "the most is 1024") {
		t.Errorf("POST of a 1 MB comment: got HTTP %d %s, want 400 saying the most is 1024", code, body)
	}
	var ids []string
	for i := range 7 {
		ids = append(ids, addSilence(t, r, fmt.Sprintf(`{"matchers":["gpu=\"%d\""],"duration":"%dm"}`, i, i+1)).ID)
	}
	var paged []string
	for offset := 0; ; offset += 3 {
		req, err := http.NewRequest(http.MethodGet, r.URL(fmt.Sprintf("/api/v1/silences?limit=3&offset=%d", offset)), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page []daemon.SilenceJSON
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("X-Total-Count") != "7" {
			t.Fatalf("GET page at %d: HTTP %d, X-Total-Count %q, %v; want 200, 7", offset, resp.StatusCode, resp.Header.Get("X-Total-Count"), err)
		}
		for _, s := range page {
			paged = append(paged, s.ID)
		}
		if len(page) < 3 {
			break
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(paged)), slices.Sorted(slices.Values(ids))) {
		t.Errorf("silences paged 3 at a time: got %v, want each of %v once", paged, ids)
	}
	if code, _ := r.Do(http.MethodGet, "/api/v1/silences?limit=100000", ""); code != http.StatusBadRequest {
		t.Errorf("GET with limit=100000: got HTTP %d, want 400", code)
	}

	// Five days and a bit later every one of them has been expired for
	// longer than the retention: a restart forgets them.
	r.Stop()
	clk.Add(notifier.SilenceRetention + time.Hour)
	again := start(t, cfg, clk.Now)
	if got := listSilences(t, again); len(got) != 0 {
		t.Errorf("after the retention: got %d silences, want none", len(got))
	}
	if !strings.Contains(again.Logs.String(), "forgot expired silences") {
		t.Errorf("the log does not say silences were forgotten:\n%s", again.Logs)
	}
}

// TestSilenceWarnsAboutUnknownAlert: a silence on an alert name no rule has
// (a typo, the wrong case) is kept, but the answer says it mutes nothing.
func TestSilenceWarnsAboutUnknownAlert(t *testing.T) {
	h := newHook(t, nil)
	r := start(t, webhookConfig(t, t.TempDir(), h.URL, "1ns"), newClock(base).Now)
	tests := []struct {
		matcher string
		warn    string // a substring of the one warning; "" for none
	}{
		{`alert=\"GPUHott\"`, `no rule is named alert="GPUHott", so the silence mutes nothing until one is (names are case-sensitive); the rules are GPUHot`},
		{`alert=\"gpuhot\"`, `no rule is named alert="gpuhot"`},
		{`alert=~\"GPUMem.*\"`, `no rule is named alert=~"GPUMem.*"`},
		{`alert=\"GPUHot\"`, ""},
		{`alert=~\"GPU.*\"`, ""},
		{`alert!=\"GPUHot\"`, ""},
		{`gpu=\"3\"`, ""},
	}
	for _, tt := range tests {
		s := addSilence(t, r, `{"matchers":["`+tt.matcher+`"],"duration":"1h"}`)
		switch {
		case tt.warn == "" && len(s.Warnings) > 0:
			t.Errorf("%s: got warnings %q, want none", tt.matcher, s.Warnings)
		case tt.warn != "" && (len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], tt.warn)):
			t.Errorf("%s: got warnings %q, want one with %q", tt.matcher, s.Warnings, tt.warn)
		}
	}
}
