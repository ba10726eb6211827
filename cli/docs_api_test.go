package cli_test

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/testcert"
)

// The API reference (docs/api.md) shows each request as a curl command
// against the default address, then names the status of its answer
// (`201 Created`) and shows the answer. runCurl runs each against the
// daemon of TestDocsCommands, which runs the example config on simulated
// GPUs, and checks both.

// apiAnswers are the types of the API's JSON answers, by method and path.
var apiAnswers = map[string]reflect.Type{
	"GET /api/v1/status":           reflect.TypeFor[daemon.StatusJSON](),
	"GET /api/v1/alerts":           reflect.TypeFor[[]daemon.AlertJSON](),
	"GET /api/v1/silences":         reflect.TypeFor[[]daemon.SilenceJSON](),
	"POST /api/v1/silences":        reflect.TypeFor[daemon.SilenceJSON](),
	"DELETE /api/v1/silences/{id}": reflect.TypeFor[map[string]string](),
	"GET /api/v1/outbox":           reflect.TypeFor[daemon.OutboxJSON](),
	"error":                        reflect.TypeFor[map[string]string](), // {"error": "…"}
}

// networkAPI is a second gpuwatch run, whose API asks for what one that
// other machines reach must: TLS, with a certificate of its own, and a
// token, as docs/api.md configures them.
type networkAPI struct {
	addr, certFile, tokenFile string
}

// startNetwork starts, once, the example config on simulated GPUs (as
// startDaemon does) with the TLS and token of docs/api.md.
func (r *readmeRun) startNetwork(t *testing.T) *networkAPI {
	t.Helper()
	if r.network != nil {
		return r.network
	}
	r.startDaemon(t) // config.yaml on simulated GPUs
	dir := filepath.Join(r.dir, "network")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	n := &networkAPI{addr: freeAddr(t), tokenFile: filepath.Join(dir, "api-token")}
	var keyFile string
	n.certFile, keyFile = testcert.Write(t, dir)
	if err := os.WriteFile(n.tokenFile, []byte(rand.Text()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(r.dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(cfg), filepath.Join(r.dir, "state"), filepath.Join(dir, "state"), 1)
	text = strings.Replace(text, "listen: "+r.addr, fmt.Sprintf("listen: %s\n  tls: {cert_file: %s, key_file: %s}\n  bearer_token_file: %s",
		n.addr, n.certFile, keyFile, n.tokenFile), 1)
	r.write(t, "network.yaml", text)
	r.startRun(t, "network.yaml")
	r.network = n
	return n
}

// runCurl runs a curl command of the docs against the running daemon and
// checks the answer its page shows: the status the prose names, and the
// body: JSON with the fields its type has and every field the daemon's
// answer has, text whose lines start as the daemon's do. A GET is asked
// again for up to a minute while the daemon has not sampled enough to
// answer as the page shows.
func runCurl(t *testing.T, r *readmeRun, cmd string) {
	r.startDaemon(t)
	status, shown := r.readme.answer(t, cmd)
	line := strings.ReplaceAll(cmd, "127.0.0.1:9477", r.addr)
	if strings.Contains(cmd, "https://gpu-server-1:9477") {
		n := r.startNetwork(t)
		line = strings.NewReplacer("https://gpu-server-1:9477", "https://"+n.addr,
			"/etc/gpuwatch/tls.crt", n.certFile, "/etc/gpuwatch/api-token", n.tokenFile).Replace(cmd)
	}
	for docID, id := range r.ids {
		line = strings.ReplaceAll(line, docID, id)
	}
	line = strings.Replace(line, "curl ", `curl -w '\n%{http_code}' `, 1)
	method, path := curlRequest(t, cmd)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		got := r.shell(t, r.dir, line)
		body, code, _ := cutLast(got.stdout)
		problems := []string{}
		if got.code != 0 {
			problems = append(problems, fmt.Sprintf("curl exited %d: %s", got.code, got.stderr))
		}
		if code != status {
			problems = append(problems, fmt.Sprintf("status %s, the page says %s", code, status))
		}
		if shown.lang == "json" {
			request := method + " " + path
			if status >= "400" {
				request = "error"
			}
			problems = append(problems, jsonAnswerProblems(request, strings.Join(shown.lines, "\n"), body, r.ids)...)
		} else {
			problems = append(problems, textAnswerProblems(shown.lines, body)...)
		}
		if len(problems) == 0 {
			return
		}
		if method != "GET" || time.Now().After(deadline) {
			t.Errorf("%s (%s): %s\nthe daemon answered\n%s", cmd, shown, strings.Join(problems, "; "), body)
			return
		}
	}
}

// curlRequest returns the method and the API path of a curl command, the
// path as apiAnswers names it.
func curlRequest(t *testing.T, cmd string) (method, path string) {
	t.Helper()
	method = "GET"
	w := words(cmd)
	for i, word := range w {
		switch {
		case word == "-X" && i+1 < len(w):
			method = w[i+1]
		case strings.HasPrefix(word, "http://") || strings.HasPrefix(word, "https://"):
			u, err := url.Parse(word)
			if err != nil {
				t.Fatalf("%s: %v", cmd, err)
			}
			path = u.Path
		}
	}
	if method == "DELETE" && strings.HasPrefix(path, "/api/v1/silences/") {
		path = "/api/v1/silences/{id}"
	}
	return method, path
}

// cutLast splits off the last line of s.
func cutLast(s string) (before, last string, ok bool) {
	i := strings.LastIndex(s, "\n")
	if i < 0 {
		return "", s, false
	}
	return s[:i], s[i+1:], true
}

// jsonAnswerProblems compares the answer a page shows with the daemon's:
// the page's decodes strictly into the answer's type (it names no field
// the API lacks), and every field of the daemon's answer is on the page
// (where both show an element of a list, the first). IDs the page shows
// are mapped to the daemon's, for the commands that follow.
func jsonAnswerProblems(request, shown, got string, ids map[string]string) []string {
	var problems []string
	typ, ok := apiAnswers[request]
	if !ok {
		return []string{fmt.Sprintf("apiAnswers has no type for %s", request)}
	}
	dec := json.NewDecoder(strings.NewReader(shown))
	dec.DisallowUnknownFields()
	if err := dec.Decode(reflect.New(typ).Interface()); err != nil {
		problems = append(problems, fmt.Sprintf("the page's answer is not a %s: %v", typ, err))
	}
	var page, daemon any
	if err := json.Unmarshal([]byte(shown), &page); err != nil {
		return append(problems, fmt.Sprintf("the page's answer is not JSON: %v", err))
	}
	if err := json.Unmarshal([]byte(got), &daemon); err != nil {
		return append(problems, fmt.Sprintf("the answer is not JSON: %v", err))
	}
	problems = append(problems, missingFields("", page, daemon)...)
	if p, ok := page.(map[string]any); ok {
		if d, ok := daemon.(map[string]any); ok {
			if pid, ok := p["id"].(string); ok {
				if did, ok := d["id"].(string); ok && pid != did {
					ids[pid] = did
				}
			}
		}
	}
	return problems
}

// missingFields lists the fields of got that shown lacks, at path.
func missingFields(path string, shown, got any) []string {
	var out []string
	switch g := got.(type) {
	case map[string]any:
		s, ok := shown.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s is an object, the page shows %T", or(path, "the answer"), shown)}
		}
		for k, v := range g {
			if _, ok := s[k]; !ok {
				out = append(out, fmt.Sprintf("the page does not show %s.%s", path, k))
				continue
			}
			out = append(out, missingFields(path+"."+k, s[k], v)...)
		}
	case []any:
		s, ok := shown.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s is a list, the page shows %T", or(path, "the answer"), shown)}
		}
		if len(g) > 0 && len(s) > 0 {
			out = append(out, missingFields(path+"[0]", s[0], g[0])...)
		}
	}
	return out
}

func or(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// textAnswerProblems checks a text answer (metrics, /healthz, a digest):
// each line the page shows (but "...") starts with a word some line of the
// daemon's starts with, numbers aside.
func textAnswerProblems(shown []string, got string) []string {
	first := func(line string) string {
		w, _, _ := strings.Cut(line, " ")
		w, _, _ = strings.Cut(w, "{")
		return regexp.MustCompile(`[0-9.]+`).ReplaceAllString(w, "0")
	}
	var starts []string
	for _, line := range strings.Split(got, "\n") {
		starts = append(starts, first(strings.TrimSpace(line)))
	}
	var problems []string
	for _, line := range shown {
		if line = strings.TrimSpace(line); line == "" || line == "..." {
			continue
		}
		if !slices.Contains(starts, first(line)) {
			problems = append(problems, fmt.Sprintf("no line of the answer starts as the page's %q", line))
		}
	}
	return problems
}

// answer returns what the page that first shows cmd (in an sh block) says
// it answers: the status named in the prose after the block (`200 OK`),
// and the block that follows.
func (r *readme) answer(t *testing.T, cmd string) (status string, shown fenced) {
	t.Helper()
	statusRE := regexp.MustCompile(`^([1-5][0-9][0-9])( [A-Z][A-Za-z ]+)?$`)
	for _, p := range r.pages {
		for i, b := range p.blocks {
			if b.lang != "sh" || !slices.ContainsFunc(b.lines, func(l string) bool { return shellCommand(l) == cmd }) {
				continue
			}
			if i+1 == len(p.blocks) || p.blocks[i+1].lang == "sh" {
				t.Fatalf("%s: %s: no answer shown after it", b, cmd)
			}
			next := p.blocks[i+1]
			prose := strings.Join(p.lines[b.line+len(b.lines)+1:next.line-1], "\n")
			for _, span := range codeSpans(prose) {
				if m := statusRE.FindStringSubmatch(span); m != nil {
					return m[1], next
				}
			}
			t.Fatalf("%s: %s: the prose after it names no status (`200 OK`)", b, cmd)
		}
	}
	t.Fatalf("no page shows %q in an sh block", cmd)
	return "", fenced{}
}

// TestDocsAPIFields checks that docs/api.md names, as code in its prose or
// tables, every field of every body the API takes or answers with.
func TestDocsAPIFields(t *testing.T) {
	api := readPage(t, "../docs/api.md")
	for _, typ := range []reflect.Type{
		reflect.TypeFor[daemon.NewSilenceJSON](), reflect.TypeFor[daemon.SilenceJSON](),
		reflect.TypeFor[daemon.StatusJSON](), reflect.TypeFor[daemon.HostJSON](), reflect.TypeFor[daemon.GPUJSON](),
		reflect.TypeFor[gpu.Process](), reflect.TypeFor[daemon.AlertJSON](),
		reflect.TypeFor[daemon.OutboxJSON](), reflect.TypeFor[daemon.DeadLetterJSON](),
	} {
		for _, name := range jsonFields(typ) {
			if !slices.Contains(api.spans, name) {
				t.Errorf("docs/api.md does not name %s's field %q", typ, name)
			}
		}
	}
}

// jsonFields are the JSON names of a struct's fields.
func jsonFields(typ reflect.Type) []string {
	var out []string
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}
