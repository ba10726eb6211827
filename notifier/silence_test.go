package notifier

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// memSilenceStore is an in-memory SilenceStore that can be made to fail.
type memSilenceStore struct {
	mu    sync.Mutex
	data  map[string][]byte
	fail  error            // returned by Put and Delete when set
	aside map[string]error // records set aside, and why
}

func newMemSilenceStore() *memSilenceStore { return &memSilenceStore{data: map[string][]byte{}} }

func (m *memSilenceStore) Put(key string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.data[key] = slices.Clone(value)
	return nil
}

func (m *memSilenceStore) Delete(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	delete(m.data, key)
	return nil
}

func (m *memSilenceStore) All() (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.data), nil
}

func (m *memSilenceStore) SetAside(key string, why error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.aside == nil {
		m.aside = map[string]error{}
	}
	m.aside[key] = why
	delete(m.data, key)
}

// sequentialSilenceIDs returns IDs s1, s2, … so tests can name silences.
func sequentialSilenceIDs() func() string {
	var mu sync.Mutex
	n := 0
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("s%d", n)
	}
}

var silT0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

func mustParseMatchers(t testing.TB, s string) Matchers {
	t.Helper()
	ms, err := ParseMatchers(s)
	if err != nil {
		t.Fatalf("ParseMatchers(%q): %v", s, err)
	}
	return ms
}

func newTestSilences(t *testing.T) (*Silences, *memSilenceStore) {
	t.Helper()
	st := newMemSilenceStore()
	s, err := NewSilences(st, sequentialSilenceIDs())
	if err != nil {
		t.Fatalf("NewSilences: %v", err)
	}
	return s, st
}

func TestSilenceActiveAndMutes(t *testing.T) {
	sil := Silence{Matchers: mustParseMatchers(t, `alert="GPUHot"`), StartsAt: silT0, EndsAt: silT0.Add(time.Hour)}
	hot := map[string]string{"alert": "GPUHot"}
	tests := []struct {
		at     time.Time
		labels map[string]string
		active bool
		mutes  bool
	}{
		{silT0.Add(-time.Nanosecond), hot, false, false},
		{silT0, hot, true, true}, // starts exactly at StartsAt
		{silT0.Add(30 * time.Minute), hot, true, true},
		{silT0.Add(time.Hour - time.Nanosecond), hot, true, true},
		{silT0.Add(time.Hour), hot, false, false}, // stops exactly at EndsAt
		{silT0.Add(30 * time.Minute), map[string]string{"alert": "GPUIdle"}, true, false},
	}
	for _, tt := range tests {
		if got := sil.Active(tt.at); got != tt.active {
			t.Errorf("Active(%v): got %v, want %v", tt.at, got, tt.active)
		}
		if got := sil.Mutes(tt.labels, tt.at); got != tt.mutes {
			t.Errorf("Mutes(%v, %v): got %v, want %v", tt.labels, tt.at, got, tt.mutes)
		}
	}
	noMatchers := Silence{StartsAt: silT0, EndsAt: silT0.Add(time.Hour)}
	if noMatchers.Mutes(hot, silT0) {
		t.Errorf("a silence without matchers: got muted, want nothing muted")
	}
}

func TestSilencesAddPersistReload(t *testing.T) {
	s, st := newTestSilences(t)
	in := Silence{
		ID:        "ignored",
		Matchers:  mustParseMatchers(t, `{alert="GPUHot", host=~"dev-.*"}`),
		StartsAt:  silT0,
		EndsAt:    silT0.Add(2 * time.Hour),
		CreatedBy: "ana",
		Comment:   "fan replaced",
	}
	got, err := s.Add(in, silT0)
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	if got.ID != "s1" {
		t.Errorf("Add: got ID %q, want s1", got.ID)
	}
	if _, ok := st.data["s1"]; !ok {
		t.Fatalf("Add: got store keys %v, want s1 persisted", slices.Collect(maps.Keys(st.data)))
	}
	var stored map[string]any
	if err := json.Unmarshal(st.data["s1"], &stored); err != nil {
		t.Fatalf("stored value is not JSON: %v", err)
	}
	wantStored := map[string]any{
		"id": "s1", "matchers": []any{`alert="GPUHot"`, `host=~"dev-.*"`},
		"starts_at": "2026-11-29T09:00:00Z", "ends_at": "2026-11-29T11:00:00Z", "created_by": "ana", "comment": "fan replaced",
	}
	if fmt.Sprint(stored) != fmt.Sprint(wantStored) {
		t.Errorf("stored JSON: got %v, want %v", stored, wantStored)
	}

	reloaded, err := NewSilences(st, sequentialSilenceIDs())
	if err != nil {
		t.Fatalf("NewSilences (reload): %v", err)
	}
	list := reloaded.List(silT0)
	if len(list) != 1 {
		t.Fatalf("reloaded List: got %d silences, want 1", len(list))
	}
	r := list[0]
	if r.ID != "s1" || r.Matchers.String() != in.Matchers.String() || !r.StartsAt.Equal(in.StartsAt) ||
		!r.EndsAt.Equal(in.EndsAt) || r.CreatedBy != "ana" || r.Comment != "fan replaced" {
		t.Errorf("reloaded: got %+v, want %+v with ID s1", r, in)
	}
	id, muted := reloaded.Mutes(map[string]string{"alert": "GPUHot", "host": "dev-3"}, silT0.Add(time.Minute))
	if !muted || id != "s1" {
		t.Errorf("reloaded Mutes: got %q %v, want s1 true", id, muted)
	}
	if _, muted := reloaded.Mutes(map[string]string{"alert": "GPUHot", "host": "prod-3"}, silT0.Add(time.Minute)); muted {
		t.Errorf("reloaded Mutes(host=prod-3): got muted, want not (the regexp must survive the reload)")
	}
}

func TestSilencesAddErrors(t *testing.T) {
	s, st := newTestSilences(t)
	tests := []struct {
		name string
		sil  Silence
		want string
	}{
		{"no matchers", Silence{StartsAt: silT0, EndsAt: silT0.Add(time.Hour)}, `a silence needs at least one matcher, e.g. alert="GPUHot"`},
		{"nil matcher", Silence{Matchers: Matchers{nil}, StartsAt: silT0, EndsAt: silT0.Add(time.Hour)}, "silence matcher 0 is missing"},
		{"bad literal matcher", Silence{Matchers: Matchers{{Name: "gpu", Type: MatchRegexp, Value: "("}}, StartsAt: silT0, EndsAt: silT0.Add(time.Hour)},
			`silence matcher 0: invalid regular expression "(": missing closing )`},
		{"no start", Silence{Matchers: mustParseMatchers(t, `a="b"`), EndsAt: silT0}, "a silence needs a start time (starts_at)"},
		{"ends at start", Silence{Matchers: mustParseMatchers(t, `a="b"`), StartsAt: silT0, EndsAt: silT0},
			"a silence must end after it starts: ends_at 2026-11-29T09:00:00Z is not after starts_at 2026-11-29T09:00:00Z"},
		{"ends before start", Silence{Matchers: mustParseMatchers(t, `a="b"`), StartsAt: silT0, EndsAt: silT0.Add(-time.Hour)},
			"a silence must end after it starts: ends_at 2026-11-29T08:00:00Z is not after starts_at 2026-11-29T09:00:00Z"},
	}
	for _, tt := range tests {
		_, err := s.Add(tt.sil, silT0)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: Add: got error %v, want %q", tt.name, err, tt.want)
		}
	}
	if len(st.data) != 0 || len(s.List(silT0)) != 0 {
		t.Errorf("after failed adds: got %d stored, %d listed, want none", len(st.data), len(s.List(silT0)))
	}

	st.fail = errors.New("disk full")
	_, err := s.Add(Silence{Matchers: mustParseMatchers(t, `a="b"`), StartsAt: silT0, EndsAt: silT0.Add(time.Hour)}, silT0)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Add with a failing store: got error %v, want one that says disk full", err)
	}
	if _, muted := s.Mutes(map[string]string{"a": "b"}, silT0); muted {
		t.Errorf("a silence that was not persisted: got muting, want it not added")
	}
}

func TestSilencesAddLiteralMatcher(t *testing.T) {
	// A matcher built as a struct literal gets checked and compiled.
	s, _ := newTestSilences(t)
	sil, err := s.Add(Silence{Matchers: Matchers{{Name: "gpu", Type: MatchRegexp, Value: "1|2"}}, StartsAt: silT0, EndsAt: silT0.Add(time.Hour)}, silT0)
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	if sil.Matchers[0].re == nil {
		t.Errorf("Add: got an uncompiled matcher, want it compiled")
	}
	if _, muted := s.Mutes(map[string]string{"gpu": "2"}, silT0); !muted {
		t.Errorf("Mutes(gpu=2): got not muted, want muted")
	}
}

func TestSilencesDefaultID(t *testing.T) {
	s, err := NewSilences(newMemSilenceStore(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Add(Silence{Matchers: mustParseMatchers(t, `a="b"`), StartsAt: silT0, EndsAt: silT0.Add(time.Hour)}, silT0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Add(Silence{Matchers: mustParseMatchers(t, `a="b"`), StartsAt: silT0, EndsAt: silT0.Add(time.Hour)}, silT0)
	if err != nil {
		t.Fatal(err)
	}
	hex16 := regexp.MustCompile(`^[0-9a-f]{16}$`)
	if !hex16.MatchString(a.ID) || !hex16.MatchString(b.ID) || a.ID == b.ID {
		t.Errorf("default IDs: got %q and %q, want two different 16-digit hex IDs", a.ID, b.ID)
	}

	dup, err := NewSilences(nil, func() string { return "same" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dup.Add(Silence{Matchers: mustParseMatchers(t, `a="b"`), StartsAt: silT0, EndsAt: silT0.Add(time.Hour)}, silT0); err != nil {
		t.Fatalf("first Add with a nil store: %v", err)
	}
	_, err = dup.Add(Silence{Matchers: mustParseMatchers(t, `a="b"`), StartsAt: silT0, EndsAt: silT0.Add(time.Hour)}, silT0)
	if want := `add silence: ID "same" is already taken`; err == nil || err.Error() != want {
		t.Errorf("Add with a repeated ID: got error %v, want %q", err, want)
	}
}

// TestNewSilencesBadRecord: one silence that cannot be read is set aside,
// saying why, and the others load: it does not stop gpuwatch.
func TestNewSilencesBadRecord(t *testing.T) {
	st := newMemSilenceStore()
	st.data["k1"] = []byte(`{"id":"k1","matchers":["gpu=~\"(\""]}`)
	st.data["k2"] = []byte(`{"id":"k2","matchers":["alert=\"GPUHot\""],"starts_at":"2026-11-29T09:00:00Z","ends_at":"2026-11-29T10:00:00Z"}`)
	s, err := NewSilences(st, nil)
	if err != nil {
		t.Fatalf("NewSilences with a bad record: %v; want it set aside and the others loaded", err)
	}
	want := `not a silence: matcher "gpu=~\"(\"": column 6: invalid regular expression "(": missing closing )`
	if got := st.aside["k1"]; got == nil || got.Error() != want {
		t.Errorf("set aside k1: %v, want %q", got, want)
	}
	if list := s.List(silT0); len(list) != 1 || list[0].ID != "k2" {
		t.Errorf("loaded silences: %v, want k2", list)
	}
}

func TestSilencesExpire(t *testing.T) {
	s, st := newTestSilences(t)
	active, _ := s.Add(Silence{Matchers: mustParseMatchers(t, `alert="GPUHot"`), StartsAt: silT0, EndsAt: silT0.Add(time.Hour)}, silT0)
	pending, _ := s.Add(Silence{Matchers: mustParseMatchers(t, `alert="GPUIdle"`), StartsAt: silT0.Add(time.Hour), EndsAt: silT0.Add(2 * time.Hour)}, silT0)
	hot := map[string]string{"alert": "GPUHot"}

	at := silT0.Add(10 * time.Minute)
	if err := s.Expire(active.ID, at); err != nil {
		t.Fatalf("Expire(%s): %v", active.ID, err)
	}
	if _, muted := s.Mutes(hot, at); muted {
		t.Errorf("Mutes at the expiry time: got muted, want not")
	}
	if _, muted := s.Mutes(hot, at.Add(-time.Nanosecond)); !muted {
		t.Errorf("Mutes just before the expiry time: got not muted, want muted")
	}
	list := s.List(at)
	if len(list) != 2 || list[1].ID != active.ID || !list[1].EndsAt.Equal(at) {
		t.Errorf("List after Expire: got %+v, want %s still listed, ending at %v", list, active.ID, at)
	}
	var persisted Silence
	if err := json.Unmarshal(st.data[active.ID], &persisted); err != nil || !persisted.EndsAt.Equal(at) {
		t.Errorf("persisted after Expire: got ends_at %v (%v), want %v", persisted.EndsAt, err, at)
	}

	// A pending silence expired before it starts never becomes active.
	if err := s.Expire(pending.ID, at); err != nil {
		t.Fatalf("Expire(%s): %v", pending.ID, err)
	}
	if _, muted := s.Mutes(map[string]string{"alert": "GPUIdle"}, silT0.Add(90*time.Minute)); muted {
		t.Errorf("an expired pending silence: got muting at its old start, want not")
	}

	err := s.Expire(active.ID, at.Add(time.Minute))
	if !errors.Is(err, ErrSilenceExpired) || err.Error() != `expire silence "s1": silence already expired at 2026-11-29T09:10:00Z` {
		t.Errorf("Expire twice: got %v, want ErrSilenceExpired", err)
	}
	err = s.Expire("nope", at)
	if !errors.Is(err, ErrSilenceNotFound) || err.Error() != "expire silence \"nope\": silence not found: list them with `gpuwatch silence list`" {
		t.Errorf("Expire(unknown): got %v, want ErrSilenceNotFound", err)
	}
}

func TestSilencesList(t *testing.T) {
	s, _ := newTestSilences(t)
	now := silT0.Add(10 * time.Hour)
	add := func(start, end time.Duration) string {
		t.Helper()
		sil, err := s.Add(Silence{Matchers: mustParseMatchers(t, `a="b"`), StartsAt: silT0.Add(start), EndsAt: silT0.Add(end)}, silT0)
		if err != nil {
			t.Fatal(err)
		}
		return sil.ID
	}
	expiredOld := add(0, time.Hour)                       // s1
	active1 := add(9*time.Hour, 12*time.Hour)             // s2
	pendingLate := add(13*time.Hour, 14*time.Hour)        // s3
	expiredNew := add(time.Hour, 10*time.Hour)            // s4: ended exactly now
	active2 := add(9*time.Hour+time.Minute, 11*time.Hour) // s5: started later than s2
	pendingSoon := add(11*time.Hour, 20*time.Hour)        // s6

	want := []string{active2, active1, pendingSoon, pendingLate, expiredNew, expiredOld}
	var got []string
	for _, sil := range s.List(now) {
		got = append(got, sil.ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("List: got %v, want %v (active newest first, pending soonest first, expired newest first)", got, want)
	}

	// What List returns is a copy.
	list := s.List(now)
	list[0].Matchers[0] = nil
	list[0].Comment = "changed"
	if again := s.List(now); again[0].Matchers[0] == nil || again[0].Comment != "" {
		t.Errorf("List: changing the result changed the set")
	}
}

func TestSilencesMutesPicksLongest(t *testing.T) {
	s, _ := newTestSilences(t)
	for _, end := range []time.Duration{time.Hour, 3 * time.Hour, 2 * time.Hour} {
		if _, err := s.Add(Silence{Matchers: mustParseMatchers(t, `alert=~"GPU.*"`), StartsAt: silT0, EndsAt: silT0.Add(end)}, silT0); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 { // map order must not matter
		if id, muted := s.Mutes(map[string]string{"alert": "GPUHot"}, silT0); !muted || id != "s2" {
			t.Fatalf("Mutes: got %q %v, want s2 (the longest) true", id, muted)
		}
	}
	if id, muted := s.Mutes(map[string]string{"alert": "GPUHot"}, silT0.Add(150*time.Minute)); !muted || id != "s2" {
		t.Errorf("Mutes after two ended: got %q %v, want s2 true", id, muted)
	}
	if id, muted := s.Mutes(map[string]string{"alert": "GPUHot"}, silT0.Add(3*time.Hour)); muted {
		t.Errorf("Mutes after all ended: got %q muting, want none", id)
	}
}

func TestSilencesGC(t *testing.T) {
	s, st := newTestSilences(t)
	for _, end := range []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour} {
		if _, err := s.Add(Silence{Matchers: mustParseMatchers(t, `a="b"`), StartsAt: silT0, EndsAt: silT0.Add(end)}, silT0); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.GC(silT0.Add(2 * time.Hour)) // s2 ended exactly then: kept
	if err != nil || n != 1 {
		t.Fatalf("GC: got %d, %v, want 1, nil", n, err)
	}
	var ids []string
	for _, sil := range s.List(silT0) {
		ids = append(ids, sil.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"s2", "s3"}) {
		t.Errorf("after GC: got %v, want [s2 s3]", ids)
	}
	if _, ok := st.data["s1"]; ok || len(st.data) != 2 {
		t.Errorf("after GC: store still has s1 or lost others: %v", slices.Sorted(maps.Keys(st.data)))
	}

	st.fail = errors.New("disk gone")
	n, err = s.GC(silT0.Add(24 * time.Hour))
	if err == nil || !strings.Contains(err.Error(), "disk gone") || n != 0 {
		t.Errorf("GC with a failing store: got %d, %v, want 0 and an error that says disk gone", n, err)
	}
	if len(s.List(silT0)) != 2 {
		t.Errorf("GC with a failing store: got %d listed, want the 2 kept", len(s.List(silT0)))
	}
}

func TestSilencesConcurrent(t *testing.T) {
	s, st := newTestSilences(t)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				_, err := s.Add(Silence{Matchers: mustParseMatchers(t, fmt.Sprintf(`gpu="%d"`, w*100+i)), StartsAt: silT0, EndsAt: silT0.Add(time.Hour)}, silT0)
				if err != nil {
					t.Errorf("Add: %v", err)
					return
				}
			}
		})
		wg.Go(func() {
			for i := range 200 {
				s.Mutes(map[string]string{"gpu": fmt.Sprint(i)}, silT0)
				s.List(silT0)
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if _, err := s.GC(silT0); err != nil {
				t.Errorf("GC: %v", err)
			}
		}
	})
	wg.Wait()
	if got := len(s.List(silT0)); got != 200 || len(st.data) != 200 {
		t.Errorf("after concurrent adds: got %d listed, %d stored, want 200", got, len(st.data))
	}
	for w := range 4 {
		if _, muted := s.Mutes(map[string]string{"gpu": fmt.Sprint(w*100 + 49)}, silT0); !muted {
			t.Errorf("Mutes(gpu=%d): got not muted, want muted", w*100+49)
		}
	}
}

func BenchmarkSilencesMutes(b *testing.B) {
	s, err := NewSilences(nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		if _, err := s.Add(Silence{Matchers: mustParseMatchers(b, fmt.Sprintf(`{alert="GPUHot", host=~"node-%d"}`, i)), StartsAt: silT0, EndsAt: silT0.Add(time.Hour)}, silT0); err != nil {
			b.Fatal(err)
		}
	}
	labels := map[string]string{"alert": "GPUHot", "host": "node-99", "gpu": "0"}
	b.ReportAllocs()
	for b.Loop() {
		if _, muted := s.Mutes(labels, silT0); !muted {
			b.Fatal("want muted")
		}
	}
}

// TestSilencesBounded: a silence is refused when its parts are too big or
// when too many are active; past MaxKeptSilences, adding forgets the
// expired silences that ended first, so the store never grows unbounded.
func TestSilencesBounded(t *testing.T) {
	hot := func() Matchers { return mustParseMatchers(t, `alert="GPUHot"`) }
	s, st := newTestSilences(t)
	for _, tt := range []struct {
		name string
		sil  Silence
		want string
	}{
		{"a 1 MB comment", Silence{Matchers: hot(), Comment: strings.Repeat("x", 1<<20)},
			"a silence's comment is 1048576 bytes, the most is 1024"},
		{"a long created_by", Silence{Matchers: hot(), CreatedBy: strings.Repeat("x", 300)},
			"a silence's created_by is 300 bytes, the most is 256"},
		{"too many matchers", Silence{Matchers: slices.Repeat(hot(), 40)},
			"a silence has 40 matchers, the most is 32"},
		{"a long matcher value", Silence{Matchers: mustParseMatchers(t, `alert="`+strings.Repeat("x", 2000)+`"`)},
			"silence matcher 0: its value is 2000 bytes, the most is 1024"},
		{"too big in all", Silence{Matchers: slices.Repeat(mustParseMatchers(t, `alert="`+strings.Repeat("x", 1000)+`"`), 5)},
			"a silence takes"},
	} {
		tt.sil.StartsAt, tt.sil.EndsAt = silT0, silT0.Add(time.Hour)
		if _, err := s.Add(tt.sil, silT0); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: Add: got %v, want %q…", tt.name, err, tt.want)
		}
	}
	if len(st.data) != 0 {
		t.Fatalf("after refused adds: %d stored, want none", len(st.data))
	}

	s.maxActive, s.maxKept = 10, 50 // the constants' 1000 and 5000 would only be slower
	for i := range s.maxActive {
		if _, err := s.Add(Silence{Matchers: hot(), StartsAt: silT0, EndsAt: silT0.Add(time.Duration(i+1) * time.Minute)}, silT0); err != nil {
			t.Fatalf("Add %d: %v", i, err)
		}
	}
	if _, err := s.Add(Silence{Matchers: hot(), StartsAt: silT0, EndsAt: silT0.Add(time.Hour)}, silT0); !errors.Is(err, ErrTooManySilences) {
		t.Fatalf("Add past %d active: got %v, want ErrTooManySilences", s.maxActive, err)
	}

	// Time passes: they all expire, and each later one is added in their place.
	later := silT0.Add(24 * time.Hour)
	for i := range s.maxKept {
		if _, err := s.Add(Silence{Matchers: hot(), StartsAt: later, EndsAt: later.Add(time.Duration(i+1) * time.Second)}, later.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatalf("Add %d later: %v", i, err)
		}
	}
	if got := len(st.data); got != s.maxKept {
		t.Errorf("after %d adds: %d stored, want at most %d", s.maxActive+s.maxKept, got, s.maxKept)
	}
	for _, sil := range s.List(later) {
		if sil.EndsAt.Before(later) {
			t.Fatalf("silence %s that ended at %v is still kept: the oldest expired go first", sil.ID, sil.EndsAt)
		}
	}
}

// TestSilencesReadDuringStalledWrite: a write the store does not finish
// (a stalled disk) keeps neither List nor Mutes waiting.
func TestSilencesReadDuringStalledWrite(t *testing.T) {
	st := &stallingSilenceStore{memSilenceStore: newMemSilenceStore(), stall: make(chan struct{}), entered: make(chan struct{})}
	s, err := NewSilences(st, sequentialSilenceIDs())
	if err != nil {
		t.Fatal(err)
	}
	added := make(chan error, 1)
	go func() {
		_, err := s.Add(Silence{Matchers: mustParseMatchers(t, `alert="GPUHot"`), StartsAt: silT0, EndsAt: silT0.Add(time.Hour)}, silT0)
		added <- err
	}()
	<-st.entered
	read := make(chan struct{})
	go func() {
		s.List(silT0)
		s.Mutes(map[string]string{"alert": "GPUHot"}, silT0)
		close(read)
	}()
	select {
	case <-read:
	case <-time.After(10 * time.Second):
		t.Fatal("List and Mutes waited for a stalled write")
	}
	close(st.stall)
	if err := <-added; err != nil {
		t.Fatalf("Add once the store answered: %v", err)
	}
	if _, muted := s.Mutes(map[string]string{"alert": "GPUHot"}, silT0); !muted {
		t.Errorf("after the write finished: not muted, want the silence in force")
	}
}

// stallingSilenceStore blocks its first Put until stall is closed.
type stallingSilenceStore struct {
	*memSilenceStore
	stall   chan struct{}
	entered chan struct{}
	once    sync.Once
}

func (s *stallingSilenceStore) Put(key string, value []byte) error {
	s.once.Do(func() { close(s.entered) })
	<-s.stall
	return s.memSilenceStore.Put(key, value)
}
