package notifier

import (
	"slices"
	"testing"
	"time"
)

// testRouteConfig is the tree the route tests share:
//
//	route (team-slack)
//	├── [0] severity="critical" → ops, continue, repeat 1h
//	│   └── [0] host=~"dev-.*" → (ops), group_wait 1m
//	├── [1] alert="GPUHot" → hw
//	│   ├── [0] gpu="0" → hw-gpu0
//	│   └── [1] gpu=~"1|2" → (hw), repeat 30m
//	├── [2] alert="GPUHot" → never (shadowed by [1])
//	└── [3] alert=~"GPUMemory.*" → mem, continue
func testRouteConfig() RouteConfig {
	return RouteConfig{
		Receiver:  "team-slack",
		GroupWait: ptr(30 * time.Second),
		Routes: []RouteConfig{
			{Matchers: []string{`severity="critical"`}, Receiver: "ops", Continue: true, RepeatInterval: ptr(time.Hour),
				Routes: []RouteConfig{{Matchers: []string{`host=~"dev-.*"`}, GroupWait: ptr(time.Minute)}}},
			{Matchers: []string{`alert="GPUHot"`}, Receiver: "hw",
				Routes: []RouteConfig{
					{Matchers: []string{`gpu="0"`}, Receiver: "hw-gpu0"},
					{Matchers: []string{`gpu=~"1|2"`}, RepeatInterval: ptr(30 * time.Minute)},
				}},
			{Matchers: []string{`alert="GPUHot"`}, Receiver: "never"},
			{Matchers: []string{`alert=~"GPUMemory.*"`}, Receiver: "mem", Continue: true},
		},
	}
}

func TestRouteMatch(t *testing.T) {
	root, problems := NewRoute(testRouteConfig())
	if len(problems) > 0 {
		t.Fatalf("NewRoute: got problems %v, want none", problems)
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   []string // paths of the matching routes, in order
	}{
		{"no match goes to the root", map[string]string{"alert": "GPUIdle", "severity": "warning"}, []string{"route"}},
		{"no labels at all", nil, []string{"route"}},
		{"first match wins", map[string]string{"alert": "GPUHot", "gpu": "5"}, []string{"route.routes[1]"}},
		{"first matching grandchild", map[string]string{"alert": "GPUHot", "gpu": "0"}, []string{"route.routes[1].routes[0]"}},
		{"second grandchild", map[string]string{"alert": "GPUHot", "gpu": "2"}, []string{"route.routes[1].routes[1]"}},
		{"continue then first match", map[string]string{"alert": "GPUHot", "severity": "critical", "gpu": "0"},
			[]string{"route.routes[0]", "route.routes[1].routes[0]"}},
		{"continue reaches the last", map[string]string{"alert": "GPUMemoryNearFull", "severity": "critical"},
			[]string{"route.routes[0]", "route.routes[3]"}},
		{"continue on the last route", map[string]string{"alert": "GPUMemoryLeak"}, []string{"route.routes[3]"}},
		{"nested leaf under continue", map[string]string{"alert": "GPUXidError", "severity": "critical", "host": "dev-7"},
			[]string{"route.routes[0].routes[0]"}},
		{"anchored regexp", map[string]string{"alert": "XGPUMemory"}, []string{"route"}},
	}
	for _, tt := range tests {
		var got []string
		for _, r := range root.Match(tt.labels) {
			got = append(got, r.Path)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: Match(%v): got %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
}

func TestRouteInheritance(t *testing.T) {
	root, problems := NewRoute(testRouteConfig())
	if len(problems) > 0 {
		t.Fatalf("NewRoute: got problems %v, want none", problems)
	}
	tests := []struct {
		r              *Route
		receiver       string
		groupWait      time.Duration
		repeatInterval time.Duration
	}{
		{root, "team-slack", 30 * time.Second, DefaultRepeatInterval},
		{root.Routes[0], "ops", 30 * time.Second, time.Hour},
		{root.Routes[0].Routes[0], "ops", time.Minute, time.Hour},
		{root.Routes[1], "hw", 30 * time.Second, DefaultRepeatInterval},
		{root.Routes[1].Routes[0], "hw-gpu0", 30 * time.Second, DefaultRepeatInterval},
		{root.Routes[1].Routes[1], "hw", 30 * time.Second, 30 * time.Minute},
		{root.Routes[3], "mem", 30 * time.Second, DefaultRepeatInterval},
	}
	for _, tt := range tests {
		if tt.r.Receiver != tt.receiver || tt.r.GroupWait != tt.groupWait || tt.r.RepeatInterval != tt.repeatInterval {
			t.Errorf("%s: got receiver %q group_wait %v repeat_interval %v, want %q %v %v", tt.r.Path,
				tt.r.Receiver, tt.r.GroupWait, tt.r.RepeatInterval, tt.receiver, tt.groupWait, tt.repeatInterval)
		}
	}

	plain, problems := NewRoute(RouteConfig{Receiver: "console"})
	if len(problems) > 0 || plain.GroupWait != DefaultGroupWait || plain.RepeatInterval != DefaultRepeatInterval {
		t.Errorf("NewRoute(receiver only): got group_wait %v repeat_interval %v problems %v, want %v %v none",
			plain.GroupWait, plain.RepeatInterval, problems, DefaultGroupWait, DefaultRepeatInterval)
	}
	if plain.GroupWait != 10*time.Second || plain.RepeatInterval != 4*time.Hour {
		t.Errorf("defaults: got group_wait %v repeat_interval %v, want 10s 4h", plain.GroupWait, plain.RepeatInterval)
	}
}

func TestRouteSeveralMatchersPerItem(t *testing.T) {
	root, problems := NewRoute(RouteConfig{Receiver: "a", Routes: []RouteConfig{
		{Receiver: "b", Matchers: []string{`severity="critical"`, `{alert="GPUHot", gpu="1"}`}},
	}})
	if len(problems) > 0 {
		t.Fatalf("NewRoute: got problems %v, want none", problems)
	}
	if got := root.Routes[0].Matchers.String(); got != `{severity="critical", alert="GPUHot", gpu="1"}` {
		t.Errorf("matchers: got %s, want all three", got)
	}
}

func TestRouteProblems(t *testing.T) {
	tests := []struct {
		name string
		c    RouteConfig
		want []string
	}{
		{"root without receiver", RouteConfig{Routes: []RouteConfig{{Receiver: "x"}}},
			[]string{"route.receiver: the root route needs a receiver: the one that gets alerts no child route takes"}},
		{"child without receiver inherits", RouteConfig{Receiver: "a", Routes: []RouteConfig{{Matchers: []string{`a="b"`}}}}, nil},
		{"root matchers", RouteConfig{Receiver: "a", Matchers: []string{`a="b"`}},
			[]string{"route.matchers: the root route takes every alert, so it has no matchers: move them into a child route under routes:"}},
		{"bad matchers everywhere, all reported", RouteConfig{Receiver: "a", Routes: []RouteConfig{
			{Matchers: []string{`a="b"`, `gpu=~"("`}},
			{Routes: []RouteConfig{{Matchers: []string{`severity`}}}},
		}}, []string{
			`route.routes[0].matchers[1]: matcher "gpu=~\"(\"": column 6: invalid regular expression "(": missing closing )`,
			`route.routes[1].routes[0].matchers[0]: matcher "severity": column 9: expected =, !=, =~ or !~ after the label name "severity"`,
		}},
		{"negative durations", RouteConfig{Receiver: "a", GroupWait: ptr(-time.Second), Routes: []RouteConfig{{RepeatInterval: ptr(-time.Minute)}}},
			[]string{
				"route.group_wait: -1s is negative: give a duration such as 30s, or leave it out to inherit 10s",
				"route.routes[0].repeat_interval: -1m0s is negative: give a duration such as 30s, or leave it out to inherit 4h0m0s",
			}},
	}
	for _, tt := range tests {
		_, problems := NewRoute(tt.c)
		var got []string
		for _, p := range problems {
			got = append(got, p.Error())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: got problems\n\t%q\nwant\n\t%q", tt.name, got, tt.want)
		}
	}
}

func TestRouteBadMatcherLeftOut(t *testing.T) {
	// With problems the tree is still built without the bad matcher, and
	// the problem's path names it.
	root, problems := NewRoute(RouteConfig{Receiver: "a", Routes: []RouteConfig{{Receiver: "b", Matchers: []string{`x=~"("`, `y="1"`}}}})
	if len(problems) != 1 || problems[0].Path != "route.routes[0].matchers[0]" {
		t.Fatalf("got problems %v, want one at route.routes[0].matchers[0]", problems)
	}
	if got := root.Routes[0].Matchers.String(); got != `{y="1"}` {
		t.Errorf("matchers: got %s, want {y=\"1\"}", got)
	}
}

func TestRouteReceivers(t *testing.T) {
	root, _ := NewRoute(testRouteConfig())
	want := []string{"team-slack", "ops", "hw", "hw-gpu0", "never", "mem"}
	if got := root.Receivers(); !slices.Equal(got, want) {
		t.Errorf("Receivers: got %v, want %v", got, want)
	}
	empty, _ := NewRoute(RouteConfig{})
	if got := empty.Receivers(); len(got) != 0 {
		t.Errorf("Receivers of a tree without receivers: got %v, want none", got)
	}
}

func BenchmarkRouteMatch(b *testing.B) {
	root, problems := NewRoute(testRouteConfig())
	if len(problems) > 0 {
		b.Fatal(problems)
	}
	labels := map[string]string{"alert": "GPUMemoryNearFull", "severity": "critical", "host": "prod-1", "gpu": "3"}
	b.ReportAllocs()
	for b.Loop() {
		if len(root.Match(labels)) != 2 {
			b.Fatal("want two routes")
		}
	}
}

func ptr(d time.Duration) *time.Duration { return &d }
