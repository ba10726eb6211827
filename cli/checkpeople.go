package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/notifier/slack"
	"github.com/gpuwatch/gpuwatch/people"
)

// peopleCheckTimeout bounds how long check asks Slack about the people
// the config maps.
const peopleCheckTimeout = 20 * time.Second

// checkPeople asks Slack whether it knows each person the people: section
// names one by one (users.info for an ID, users.lookupByEmail for an
// email) and warns about those it does not know: their alerts would go to
// the channel alone. Without a bot token nothing is asked. The warnings
// never quote an email or a token.
func checkPeople(ctx context.Context, cfg *config.Config) []string {
	mappings := cfg.People.Mappings()
	if len(mappings) == 0 || cfg.Slack.BotToken == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, peopleCheckTimeout)
	defer cancel()
	bot := slack.NewBot(slack.BotOptions{Token: cfg.Slack.BotToken, APIURL: cfg.Slack.APIURL, Timeout: peopleCheckTimeout / 2})
	p := people.New(cfg.People, people.Options{Directory: bot})
	var out []string
	for _, m := range mappings {
		known, err := p.Known(ctx, m.Target)
		switch {
		case err != nil:
			return append(out, fmt.Sprintf("%s: cannot ask Slack whether it knows the people mapped (%v): run gpuwatch check where Slack answers",
				cfg.File, err))
		case !known:
			out = append(out, fmt.Sprintf("%s: %s names %s that Slack does not know: alerts on that job go to the channel alone; check it (Slack profile → ⋯ → Copy member ID)",
				cfg.File, m.Path, m.Target.Kind()))
		}
	}
	return out
}
