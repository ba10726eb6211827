package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os/user"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpuwatch/gpuwatch/daemon"
)

func silenceCommand(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usageErrf("silence: say what to do: gpuwatch silence add|list|expire (see gpuwatch silence --help)")
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(env.Stdout, `Usage: gpuwatch silence add|list|expire [flags]

Silences in the running gpuwatch (over its HTTP API):
  add MATCHER...   mute alerts that match every matcher, e.g. alert=GPUHot gpu=3
  list             show silences: active, pending, expired
  expire ID...     end silences now
"gpuwatch silence add --help" shows the flags.
`)
		return flag.ErrHelp
	case "add":
		return silenceAdd(ctx, env, args[1:])
	case "list", "ls":
		return silenceList(ctx, env, args[1:])
	case "expire", "rm":
		return silenceExpire(ctx, env, args[1:])
	}
	return usageErrf("silence: unknown action %q: use add, list or expire", args[0])
}

func silenceAdd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "silence add", "[--duration 2h] [--reason TEXT] MATCHER...", `
Silences the alerts that match every MATCHER for a while, in the running
gpuwatch: they are not sent, nor their reminders; an alert posted before
the silence began still gets its resolve. Matchers
name a label and a value: alert=GPUHot, gpu=3, severity!=info,
host=~"node[12]". Silences persist across restarts and expire by themselves.`)
	duration := fs.Duration("duration", 2*time.Hour, "how long the silence lasts")
	reason := fs.String("reason", "", "why, for the people who see the silence")
	by := fs.String("by", currentUser(), "who silences")
	api := serverFlags(fs)
	args, err := parseFlags(env, fs, args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return usageErrf("silence add: name what to silence, e.g. gpuwatch silence add alert=GPUHot gpu=3")
	}
	c, err := api.client(env)
	if err != nil {
		return err
	}
	var out daemon.SilenceJSON
	req := daemon.NewSilenceJSON{Matchers: args, Duration: duration.String(), CreatedBy: *by, Comment: *reason}
	if err := c.do(ctx, "POST", "/api/v1/silences", req, &out); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "silence %s: %s until %s\n", out.ID, strings.Join(out.Matchers, " "), out.EndsAt.In(env.Location).Format(timeLayout))
	for _, w := range out.Warnings {
		fmt.Fprintln(env.Stderr, "warning: "+w)
	}
	return nil
}

func silenceList(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "silence list", "[--json]", "Lists the running gpuwatch's silences: active, then pending, then expired.")
	asJSON := fs.Bool("json", false, "print JSON")
	api := serverFlags(fs)
	args, err := parseFlags(env, fs, args)
	if err != nil {
		return err
	}
	if err := noArgs("silence list", args); err != nil {
		return err
	}
	c, err := api.client(env)
	if err != nil {
		return err
	}
	var list []daemon.SilenceJSON
	for {
		var page []daemon.SilenceJSON
		if err := c.do(ctx, "GET", fmt.Sprintf("/api/v1/silences?limit=%d&offset=%d", silencePage, len(list)), nil, &page); err != nil {
			return err
		}
		list = append(list, page...)
		if len(page) < silencePage {
			break
		}
	}
	if *asJSON {
		return json.NewEncoder(env.Stdout).Encode(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(env.Stdout, "no silences")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tMATCHERS\tENDS\tBY\tREASON")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.State, strings.Join(s.Matchers, " "),
			s.EndsAt.In(env.Location).Format(timeLayout), s.CreatedBy, s.Comment)
	}
	return tw.Flush()
}

// silencePage is how many silences silence list asks for at once.
const silencePage = 500

func silenceExpire(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "silence expire", "ID...", "Ends silences now.")
	api := serverFlags(fs)
	args, err := parseFlags(env, fs, args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return usageErrf("silence expire: name the silence: gpuwatch silence expire ID (gpuwatch silence list shows them)")
	}
	c, err := api.client(env)
	if err != nil {
		return err
	}
	for _, id := range args {
		if err := c.do(ctx, "DELETE", "/api/v1/silences/"+id, nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "silence %s expired\n", id)
	}
	return nil
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}

func outboxCommand(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		args = []string{"list", "--help"}
	}
	if len(args) == 0 || args[0] != "list" {
		return usageErrf("outbox: use gpuwatch outbox list")
	}
	fs := newFlags(env, "outbox list", "[--json]", `
Shows the running gpuwatch's outbox: notifications waiting per receiver
(a receiver that is down keeps them until it is back) and the dead letters,
notifications a receiver refused for good, with the reason.`)
	asJSON := fs.Bool("json", false, "print JSON")
	api := serverFlags(fs)
	rest, err := parseFlags(env, fs, args[1:])
	if err != nil {
		return err
	}
	if err := noArgs("outbox list", rest); err != nil {
		return err
	}
	c, err := api.client(env)
	if err != nil {
		return err
	}
	var out daemon.OutboxJSON
	if err := c.do(ctx, "GET", "/api/v1/outbox", nil, &out); err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(env.Stdout).Encode(out)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RECEIVER\tWAITING")
	for _, name := range slices.Sorted(maps.Keys(out.Pending)) {
		fmt.Fprintf(tw, "%s\t%d\n", name, out.Pending[name])
	}
	tw.Flush()
	if len(out.DeadLetters) == 0 {
		fmt.Fprintln(env.Stdout, "\nno dead letters")
		return nil
	}
	fmt.Fprintln(env.Stdout, "\ndead letters (refused for good):")
	tw = tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tRECEIVER\tSTATUS\tALERTS\tTRIES\tREASON")
	for _, d := range out.DeadLetters {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", d.At.In(env.Location).Format(timeLayout), d.Receiver, d.Status,
			strings.Join(d.Alerts, ", "), d.Attempts, d.Reason)
	}
	return tw.Flush()
}
