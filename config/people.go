package config

import (
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/digest"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/people"
)

// checkPeople reports what is wrong with the people: section and with
// the routes that tell owners, each at the value concerned. No message
// quotes an email.
func (c *Config) checkPeople(root *yaml.Node, fail func(*yaml.Node, string, ...any)) {
	problems := c.People.Check(c.slackBot, func(spec string) error {
		_, err := digest.ParseSchedule(spec)
		return err
	})
	for _, p := range problems {
		fail(walk(root, append([]string{"people"}, p.Path...)...), "%s", p.Msg)
	}
	c.checkOwnerRoutes(nodePath(root, "route"), "route", &c.Route, nil, fail)
}

// slackBot says whether a receiver exists, and whether it is a Slack
// receiver that posts with the bot token (so it can send direct messages).
func (c *Config) slackBot(name string) (exists, bot bool) {
	for i := range c.Receivers {
		if r := &c.Receivers[i]; r.Name == name {
			return true, r.Slack != nil && r.Slack.Channel != "" && c.Slack.BotToken != ""
		}
	}
	return false, false
}

// checkOwnerRoutes reports routes that tell owners through a receiver
// that cannot (only a Slack receiver with the bot token sends direct
// messages and reads who is who), and escalate_to values that name no
// one. inherited is the owners: block the route inherits.
func (c *Config) checkOwnerRoutes(n *yaml.Node, path string, r *notifier.RouteConfig, inherited *notifier.OwnersConfig, fail func(*yaml.Node, string, ...any)) {
	owners := inherited
	if r.Owners != nil {
		owners = r.Owners
		if to := r.Owners.EscalateTo; to != "" {
			if _, err := people.ParseTarget(to); err != nil {
				fail(nodePath(n, "owners", "escalate_to"), "%s.owners.escalate_to %v", path, err)
			}
		}
	}
	tells := owners != nil && owners.Tell != notifier.TellNone
	if receiver := r.Receiver; tells && receiver != "" {
		if exists, bot := c.slackBot(receiver); exists && !bot {
			at := nodePath(n, "owners")
			if r.Owners == nil {
				at = nodePath(n, "receiver")
			}
			fail(at, "%s tells owners through receiver %q, which cannot: owners are told by a Slack receiver with a channel and slack.bot_token; "+
				"give this route owners: {tell: none}, or route it to such a receiver", path, receiver)
		}
	}
	for i := range r.Routes {
		c.checkOwnerRoutes(nodeAt(n, "routes", i), fmt.Sprintf("%s.routes[%d]", path, i), &r.Routes[i], owners, fail)
	}
}

// walk finds the node at keys below root, a number indexing a list; it
// stops at the deepest node found.
func walk(root *yaml.Node, keys ...string) *yaml.Node {
	n := strictyaml.Resolve(root)
	for _, key := range keys {
		var next *yaml.Node
		if i, err := strconv.Atoi(key); err == nil && n.Kind == yaml.SequenceNode {
			if i < len(n.Content) {
				next = strictyaml.Resolve(n.Content[i])
			}
		} else {
			next = mappingValue(n, key)
		}
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

// tellsOwners reports whether any route tells owners.
func (c *Config) tellsOwners() bool {
	var any func(r *notifier.RouteConfig, inherited bool) bool
	any = func(r *notifier.RouteConfig, inherited bool) bool {
		tells := inherited
		if r.Owners != nil {
			tells = r.Owners.Tell != notifier.TellNone
		}
		if tells {
			return true
		}
		for i := range r.Routes {
			if any(&r.Routes[i], tells) {
				return true
			}
		}
		return false
	}
	return any(&c.Route, false)
}
