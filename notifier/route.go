package notifier

import (
	"fmt"
	"time"

	"github.com/gpuwatch/gpuwatch/rules"
)

// Defaults of the root route, inherited by every route that sets nothing.
const (
	DefaultGroupWait      = 10 * time.Second
	DefaultRepeatInterval = 4 * time.Hour
)

// RouteConfig is the `route:` block of the config file: a receiver, the
// matchers that select alerts for it, and child routes that refine it.
// What a route leaves out (empty or nil) it inherits from its parent.
type RouteConfig struct {
	Receiver       string         `yaml:"receiver"`
	Matchers       []string       `yaml:"matchers"`
	Continue       bool           `yaml:"continue"`
	GroupWait      *time.Duration `yaml:"group_wait"`      // nil: inherit (root default 10s); 0: send at once
	RepeatInterval *time.Duration `yaml:"repeat_interval"` // nil: inherit (root default 4h); 0: never repeat
	// Owners tells the owners of an alert's holders too (see
	// OwnersConfig); nil: inherit (the root tells no owner).
	Owners *OwnersConfig `yaml:"owners"`
	Routes []RouteConfig `yaml:"routes"`
}

// Route is one node of the routing tree, with inherited values filled in.
type Route struct {
	// Path names the node in the config, "route" or "route.routes[1]"; it
	// tells apart routes with the same receiver (for group keys).
	Path           string
	Receiver       string
	Matchers       Matchers
	Continue       bool
	GroupWait      time.Duration
	RepeatInterval time.Duration
	// Owners is how the route tells the owners of an alert's holders;
	// nil tells none.
	Owners *Owners
	Routes []*Route
}

// RouteProblem is one thing wrong in a route config: Path names the field,
// as in "route.routes[1].matchers[0]".
type RouteProblem struct {
	Path string
	Msg  string
}

// Error returns "path: message".
func (p RouteProblem) Error() string { return p.Path + ": " + p.Msg }

// NewRoute builds the routing tree from its config. Children inherit the
// receiver, group_wait and repeat_interval they do not set; the root
// defaults to DefaultGroupWait and DefaultRepeatInterval. Every problem is
// reported, not just the first; the tree is usable (bad matchers left out)
// only when there are none.
func NewRoute(c RouteConfig) (*Route, []RouteProblem) {
	var problems []RouteProblem
	if c.Receiver == "" {
		problems = append(problems, RouteProblem{Path: "route.receiver", Msg: "the root route needs a receiver: the one that gets alerts no child route takes"})
	}
	if len(c.Matchers) > 0 {
		problems = append(problems, RouteProblem{Path: "route.matchers", Msg: "the root route takes every alert, so it has no matchers: move them into a child route under routes:"})
	}
	parent := &Route{GroupWait: DefaultGroupWait, RepeatInterval: DefaultRepeatInterval}
	root := buildRoute("route", c, parent, &problems)
	root.Matchers = nil
	root.Continue = false
	return root, problems
}

func buildRoute(path string, c RouteConfig, parent *Route, problems *[]RouteProblem) *Route {
	r := &Route{
		Path:     path,
		Receiver: c.Receiver,
		Continue: c.Continue,
	}
	if r.Receiver == "" {
		r.Receiver = parent.Receiver
	}
	r.GroupWait = inheritDuration(path+".group_wait", c.GroupWait, parent.GroupWait, problems)
	r.RepeatInterval = inheritDuration(path+".repeat_interval", c.RepeatInterval, parent.RepeatInterval, problems)
	if c.RepeatInterval != nil && *c.RepeatInterval > 0 && *c.RepeatInterval < rules.MinRepeatInterval {
		*problems = append(*problems, RouteProblem{Path: path + ".repeat_interval", Msg: fmt.Sprintf(
			"%v is shorter than %v: a firing alert would be announced again at almost every sample; give %v or more (4h is the default), or 0 to never repeat",
			*c.RepeatInterval, rules.MinRepeatInterval, rules.MinRepeatInterval)})
		r.RepeatInterval = parent.RepeatInterval
	}
	r.Owners = parent.Owners
	if c.Owners != nil {
		r.Owners = newOwners(path+".owners", c.Owners, problems)
	}
	for i, text := range c.Matchers {
		ms, err := ParseMatchers(text)
		if err != nil {
			*problems = append(*problems, RouteProblem{
				Path: fmt.Sprintf("%s.matchers[%d]", path, i),
				Msg:  fmt.Sprintf("matcher %q: %v", text, err),
			})
			continue
		}
		r.Matchers = append(r.Matchers, ms...)
	}
	for i, cc := range c.Routes {
		r.Routes = append(r.Routes, buildRoute(fmt.Sprintf("%s.routes[%d]", path, i), cc, r, problems))
	}
	return r
}

func inheritDuration(path string, d *time.Duration, parent time.Duration, problems *[]RouteProblem) time.Duration {
	switch {
	case d == nil:
		return parent
	case *d < 0:
		*problems = append(*problems, RouteProblem{Path: path, Msg: fmt.Sprintf("%v is negative: give a duration such as 30s, or leave it out to inherit %v", *d, parent)})
		return parent
	}
	return *d
}

// Match returns the routes that take an alert with these labels, in
// order: depth first, a node takes the alert when its matchers match;
// among its children the first that matches wins, unless it has continue
// set, in which case the next ones are tried too; a node none of whose
// children matches takes the alert itself. The root takes every alert, so
// the result is never empty when called on the root.
func (r *Route) Match(labels map[string]string) []*Route {
	if !r.Matchers.Matches(labels) {
		return nil
	}
	var all []*Route
	for _, child := range r.Routes {
		got := child.Match(labels)
		all = append(all, got...)
		if len(got) > 0 && !child.Continue {
			break
		}
	}
	if len(all) == 0 {
		all = append(all, r)
	}
	return all
}

// Receivers returns every receiver the tree names, each once, in the order
// they first appear (depth first), for checking them against the config's
// receivers.
func (r *Route) Receivers() []string {
	seen := map[string]bool{}
	var names []string
	var walk func(*Route)
	walk = func(n *Route) {
		if n.Receiver != "" && !seen[n.Receiver] {
			seen[n.Receiver] = true
			names = append(names, n.Receiver)
		}
		for _, c := range n.Routes {
			walk(c)
		}
	}
	walk(r)
	return names
}
