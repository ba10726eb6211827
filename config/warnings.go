package config

import (
	"fmt"
	"strings"

	"github.com/gpuwatch/gpuwatch/notifier/slack"
)

// Warnings are what in a valid config works but should change, one
// sentence each; `gpuwatch check` prints them.
func (c *Config) Warnings() []string {
	var out []string
	for _, u := range c.Slack.Admins {
		u = strings.TrimPrefix(strings.TrimSpace(u), "@")
		if !slack.IsUserID(u) {
			out = append(out, fmt.Sprintf("%s: slack.admins lists %q, a user name: it still works, but Slack has deprecated user names "+
				"and users can change theirs; list the user ID instead (Slack profile → ⋯ → Copy member ID)", c.File, u))
		}
	}
	return out
}
