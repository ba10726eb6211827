package slackbot

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/history"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// Command is what the text after /gpu asks for, as ParseCommand reads it.
type Command struct {
	Kind   CommandKind
	Public bool // "public" was given: answer in the channel, not only to the user

	// Host is the host the command is about (status, top, alerts, free,
	// history); "" means every host, or the only one.
	Host   string
	GPU    int           // history: the GPU index, or AllGPUs
	Window time.Duration // history and digest: how far back
	// HostOrGPU is a lone history word that reads as a GPU and names a
	// host as well ("gpu3"): the answer takes it as the host when one of
	// that name reports.
	HostOrGPU string

	Target   SilenceTarget // silence: what to silence
	Duration time.Duration // silence: how long
	Reason   string        // silence: why (optional)

	SilenceID string // unsilence: the silence to end

	// Choice is the personal digest chosen (digest weekly|daily|off).
	Choice string
}

// CommandKind names a /gpu subcommand.
type CommandKind int

// The /gpu subcommands.
const (
	CmdHelp CommandKind = iota
	CmdStatus
	CmdTop
	CmdAlerts
	CmdHistory
	CmdSilence
	CmdSilences
	CmdUnsilence
	CmdDigest
	CmdFree
	CmdHealth
	CmdMine
	CmdMuteMe
	CmdDigestChoice
)

// String returns the subcommand as typed.
func (k CommandKind) String() string {
	switch k {
	case CmdStatus:
		return "status"
	case CmdTop:
		return "top"
	case CmdAlerts:
		return "alerts"
	case CmdHistory:
		return "history"
	case CmdSilence:
		return "silence"
	case CmdSilences:
		return "silences"
	case CmdUnsilence:
		return "unsilence"
	case CmdDigest:
		return "digest"
	case CmdFree:
		return "free"
	case CmdHealth:
		return "health"
	case CmdMine:
		return "mine"
	case CmdMuteMe:
		return "mute-me"
	case CmdDigestChoice:
		return "digest"
	}
	return "help"
}

// SilenceTarget is what /gpu silence mutes: one alert by name, one GPU, or
// everything; on one host, or on every host.
type SilenceTarget struct {
	All   bool
	GPU   int    // when Alert == "" and !All
	Alert string // an alert (rule) name
	Host  string // "on HOST": only that host's alerts; "" for every host
}

// String returns the target as the user would type it.
func (t SilenceTarget) String() string {
	what := "gpu " + strconv.Itoa(t.GPU)
	switch {
	case t.All:
		what = "all"
	case t.Alert != "":
		what = t.Alert
	}
	if t.Host != "" {
		what += " on " + t.Host
	}
	return what
}

// IsGPU reports whether the target is one GPU (by index).
func (t SilenceTarget) IsGPU() bool { return !t.All && t.Alert == "" }

// AllGPUs is a history command's GPU when it names none: every GPU of
// the host.
const AllGPUs = history.AllGPUs

// Limits of the commands' arguments.
const (
	DefaultHistoryWindow = 6 * time.Hour
	MaxHistoryWindow     = 24 * time.Hour
	DefaultDigestWindow  = 24 * time.Hour
	MaxDigestWindow      = 35 * 24 * time.Hour // the rollups' default retention
	MaxSilenceDuration   = notifier.MaxSilenceDuration
	DefaultMute          = 8 * time.Hour
	MaxMute              = 7 * 24 * time.Hour
	maxCommandText       = 4000 // Slack's own limit on a slash command's text
	maxReason            = 500
)

// ParseCommand reads the text after /gpu. An empty text is status. The
// word "public" anywhere (any case) makes the answer public and is
// otherwise ignored. On an error the returned Command is help and the error
// says what was not understood and how to write it.
func ParseCommand(text string) (Command, error) {
	if !utf8.ValidString(text) {
		return Command{}, fmt.Errorf("the command is not valid UTF-8 text")
	}
	if len(text) > maxCommandText {
		return Command{}, fmt.Errorf("the command is %d bytes long; the longest /gpu takes is %d", len(text), maxCommandText)
	}
	var c Command
	var words []string
	for _, w := range strings.Fields(text) {
		if strings.EqualFold(w, "public") {
			c.Public = true
			continue
		}
		words = append(words, w)
	}
	if len(words) == 0 {
		c.Kind = CmdStatus
		return c, nil
	}
	verb, args := strings.ToLower(words[0]), words[1:]
	var err error
	switch verb {
	case "status":
		c.Kind = CmdStatus
		c.Host, err = optionalHost(verb, args)
	case "top":
		c.Kind = CmdTop
		c.Host, err = optionalHost(verb, args)
	case "alerts":
		c.Kind = CmdAlerts
		c.Host, err = optionalHost(verb, args)
	case "free":
		c.Kind = CmdFree
		c.Host, err = optionalHost(verb, args)
	case "health":
		c.Kind = CmdHealth
		c.Host, err = optionalHost(verb, args)
	case "silences":
		c.Kind, err = CmdSilences, noArgs(verb, args)
	case "help":
		c.Kind = CmdHelp
	case "history":
		c.Kind = CmdHistory
		err = parseHistory(&c, args)
	case "silence":
		c.Kind = CmdSilence
		err = parseSilence(&c, args)
	case "unsilence":
		c.Kind = CmdUnsilence
		err = parseUnsilence(&c, args)
	case "digest":
		c.Kind = CmdDigest
		err = parseDigest(&c, args)
	case "mine":
		c.Kind, err = CmdMine, noArgs(verb, args)
	case "mute-me", "muteme":
		c.Kind = CmdMuteMe
		err = parseMuteMe(&c, args)
	default:
		err = fmt.Errorf("%q is not a /gpu command%s", clipWord(words[0]), suggestVerb(verb))
		verb = ""
	}
	if err != nil {
		return Command{Kind: CmdHelp, Public: c.Public}, withUsage(err, verb)
	}
	return c, nil
}

// withUsage adds how to write the command verb to a parse error that does
// not say it yet.
func withUsage(err error, verb string) error {
	if strings.Contains(err.Error(), "write /gpu") {
		return err
	}
	for _, c := range commandHelp {
		if c.verb == verb {
			return fmt.Errorf("%w; write %s", err, strings.NewReplacer("`", "", "&lt;", "<", "&gt;", ">").Replace(c.usage))
		}
	}
	return err
}

// suggestVerb names the command closest to a word that is none: "; did
// you mean /gpu status?".
func suggestVerb(word string) string {
	verbs := make([]string, 0, len(commandHelp)+1)
	for _, c := range commandHelp {
		verbs = append(verbs, c.verb)
	}
	verbs = append(verbs, "help")
	if s := strictyaml.Suggest(word, verbs); s != "" {
		name := strings.TrimSuffix(strings.TrimPrefix(s, ` (did you mean "`), `"?)`)
		return "; did you mean /gpu " + name + "?"
	}
	return ": /gpu help lists the commands"
}

func noArgs(verb string, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("/gpu %s takes nothing after it, got %q", verb, clipWord(strings.Join(args, " ")))
	}
	return nil
}

// optionalHost reads the host that status, top, alerts and free may be
// given; "" when none is.
func optionalHost(verb string, args []string) (string, error) {
	switch len(args) {
	case 0:
		return "", nil
	case 1:
		return args[0], checkHost(args[0], "write /gpu "+verb+" [host], e.g. /gpu "+verb+" node1")
	}
	return "", fmt.Errorf("/gpu %s takes at most a host, got %q: write /gpu %s [host], e.g. /gpu %s node1",
		verb, clipWord(strings.Join(args, " ")), verb, verb)
}

// maxHostName is the longest host name a command takes (DNS's limit).
const maxHostName = 253

// checkHost says what is wrong with a host name a command names: letters,
// digits and . - _ : [ ] (a host name, or a Prometheus instance such as
// 10.0.0.7:9400 or [::1]:9400).
func checkHost(s, usage string) error {
	ok := s != "" && len(s) <= maxHostName
	for _, r := range s {
		if !ok {
			break
		}
		ok = r == '.' || r == '-' || r == '_' || r == ':' || r == '[' || r == ']' ||
			('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
	}
	if !ok {
		return fmt.Errorf("%q is not a host name (letters, digits, '.', '-', '_' and ':'): %s", clipWord(s), usage)
	}
	return nil
}

// historyUsage is how /gpu history is written, for its errors.
const historyUsage = "write /gpu history [host] [gpu] [window], e.g. /gpu history 0 6h or /gpu history node1 12h"

// historyWord is what a word after /gpu history reads as.
type historyWord int

const (
	wordHost historyWord = iota
	wordGPU
	wordWindow
)

// classify reads a word: a GPU index ("3", "gpu3"), a window ("6h",
// "1d"; a GPU index never reads as one), else a host.
func classify(w string) historyWord {
	if isGPU(w) {
		return wordGPU
	}
	if _, err := ParseDuration(w); err == nil {
		return wordWindow
	}
	return wordHost
}

// parseHistory reads [host] [gpu] [window], each optional, in that
// order: no GPU is every GPU of the host, no host the only one. "gpu3"
// alone is GPU 3, and also kept in HostOrGPU: a host of that name (a
// common one for GPU servers) is meant when one reports. Each error
// answers what was typed.
func parseHistory(c *Command, args []string) error {
	c.GPU, c.Window = AllGPUs, DefaultHistoryWindow
	if len(args) > 3 {
		return fmt.Errorf("/gpu history takes at most a host, a GPU and a window, got %q: %s", clipWord(strings.Join(args, " ")), historyUsage)
	}
	kinds := make([]historyWord, len(args))
	for i, w := range args {
		kinds[i] = classify(w)
	}
	// A host named like a GPU, before a GPU: "gpu1 2" is GPU 2 of gpu1.
	if len(args) >= 2 && kinds[0] == wordGPU && kinds[1] == wordGPU && !isDigits(args[0]) {
		kinds[0] = wordHost
	}
	var host, gpuWord, window string
	for i, w := range args {
		last := i == len(args)-1
		switch kinds[i] {
		case wordWindow:
			if last {
				window = w
				break
			}
			rest := args[i+1:]
			if j := slices.IndexFunc(rest, func(r string) bool { return classify(r) == wordWindow }); j >= 0 {
				return fmt.Errorf("/gpu history takes one window, got %s and %s: %s", w, rest[j], historyUsage)
			}
			if i > 0 && !slices.ContainsFunc(rest, isGPU) {
				return fmt.Errorf("nothing goes after the window, got %q: write /gpu history %s", clipWord(strings.Join(rest, " ")), strings.Join(args[:i+1], " "))
			}
			return fmt.Errorf("the window goes last: write /gpu history %s", strings.Join(append(slices.Delete(slices.Clone(args), i, i+1), w), " "))
		case wordGPU:
			if gpuWord != "" {
				return fmt.Errorf("/gpu history shows one GPU, or every GPU of a host: got GPUs %s and %s; write /gpu history %s, or /gpu history [host] for all", gpuWord, w, gpuWord)
			}
			gpuWord = w
		case wordHost:
			switch {
			case gpuWord != "" && last:
				// After a GPU only a window may come: a mistyped one.
				_, err := ParseDuration(w)
				return fmt.Errorf("history window: %w", err)
			case gpuWord != "":
				return fmt.Errorf("the host goes before the GPU: write /gpu history %s %s", w, gpuWord)
			case host != "":
				return fmt.Errorf("%q after host %s is not a GPU index (0, 1, …) or a window (6h): %s", clipWord(w), host, historyUsage)
			}
			if err := checkHost(w, historyUsage); err != nil {
				return err
			}
			host = w
		}
	}
	if gpuWord != "" {
		gpu, err := parseGPU(gpuWord)
		if err != nil { // classify read it as one: cannot happen
			return fmt.Errorf("%w: %s", err, historyUsage)
		}
		c.GPU = gpu
		if host == "" && !isDigits(gpuWord) && checkHost(gpuWord, "") == nil {
			c.HostOrGPU = gpuWord
		}
	}
	c.Host = host
	if window != "" {
		w, err := ParseDuration(window)
		if err != nil {
			return fmt.Errorf("history window: %w", err)
		}
		if w < time.Minute || w > MaxHistoryWindow {
			return fmt.Errorf("history window %s is out of range: use 1m to 24h", window)
		}
		c.Window = w
	}
	return nil
}

func parseDigest(c *Command, args []string) error {
	const usage = "write /gpu digest [window], e.g. /gpu digest 7d, or /gpu digest weekly|daily|off for your own"
	if len(args) > 1 {
		return fmt.Errorf("/gpu digest takes at most a window: %s", usage)
	}
	if len(args) == 1 {
		switch choice := strings.ToLower(args[0]); choice {
		case "weekly", "daily", "off":
			c.Kind, c.Choice = CmdDigestChoice, choice
			return nil
		}
	}
	c.Window = DefaultDigestWindow
	if len(args) == 1 {
		w, err := ParseDuration(args[0])
		if err != nil {
			return fmt.Errorf("digest window: %w", err)
		}
		if w < time.Hour || w > MaxDigestWindow {
			return fmt.Errorf("digest window %s is out of range: use 1h to 35d", args[0])
		}
		c.Window = w
	}
	return nil
}

// parseMuteMe reads /gpu mute-me [duration|off]: 8h when no duration is
// given, "off" (a zero Duration) to end a mute.
func parseMuteMe(c *Command, args []string) error {
	const usage = "write /gpu mute-me [duration], e.g. /gpu mute-me 8h, or /gpu mute-me off"
	switch {
	case len(args) == 0:
		c.Duration = DefaultMute
		return nil
	case len(args) > 1:
		return fmt.Errorf("/gpu mute-me takes at most a duration: %s", usage)
	case strings.EqualFold(args[0], "off"):
		return nil
	}
	d, err := ParseDuration(args[0])
	if err != nil {
		return fmt.Errorf("mute-me duration: %w", err)
	}
	if d > MaxMute {
		return fmt.Errorf("mute-me duration %s is too long: at most 7d", clipWord(args[0]))
	}
	c.Duration = d
	return nil
}

func parseSilence(c *Command, args []string) error {
	const usage = "write /gpu silence <alert|gpu N|all> [on <host>] <duration> [reason], e.g. /gpu silence GPUHot 2h fan repair"
	if len(args) == 0 {
		return fmt.Errorf("/gpu silence needs what to silence and for how long: %s", usage)
	}
	switch first := strings.ToLower(args[0]); {
	case first == "all":
		c.Target.All = true
		args = args[1:]
	case first == "gpu":
		if len(args) < 2 {
			return fmt.Errorf("gpu needs its index: %s", usage)
		}
		gpu, err := parseGPU(args[1])
		if err != nil {
			return fmt.Errorf("%w: %s", err, usage)
		}
		c.Target.GPU = gpu
		args = args[2:]
	case strings.HasPrefix(first, "gpu") && isDigits(first[3:]):
		gpu, err := parseGPU(first)
		if err != nil {
			return fmt.Errorf("%w: %s", err, usage)
		}
		c.Target.GPU = gpu
		args = args[1:]
	default:
		if _, err := ParseDuration(args[0]); err == nil {
			return fmt.Errorf("say what to silence before the duration: %s", usage)
		}
		if !validAlertName(args[0]) {
			return fmt.Errorf("%q is not an alert name (letters, digits, _ and -): %s", clipWord(args[0]), usage)
		}
		c.Target.Alert = args[0]
		args = args[1:]
	}
	if len(args) > 0 && strings.EqualFold(args[0], "on") {
		if len(args) < 2 {
			return fmt.Errorf("on needs a host: %s", usage)
		}
		if err := checkHost(args[1], usage); err != nil {
			return err
		}
		c.Target.Host = args[1]
		args = args[2:]
	}
	if len(args) == 0 {
		return fmt.Errorf("/gpu silence needs a duration after %s: %s", c.Target, usage)
	}
	d, err := ParseDuration(args[0])
	if err != nil {
		return fmt.Errorf("silence duration: %w", err)
	}
	if d > MaxSilenceDuration {
		return fmt.Errorf("silence duration %s is too long: at most 365d", args[0])
	}
	c.Duration = d
	c.Reason = strings.Join(args[1:], " ")
	if utf8.RuneCountInString(c.Reason) > maxReason {
		return fmt.Errorf("the reason is longer than %d characters: shorten it", maxReason)
	}
	return nil
}

func parseUnsilence(c *Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("/gpu unsilence needs one silence ID: write /gpu unsilence <id>; /gpu silences lists them")
	}
	if len(args[0]) > 64 {
		return fmt.Errorf("%q is not a silence ID: /gpu silences lists them", clipWord(args[0]))
	}
	c.SilenceID = args[0]
	return nil
}

// parseGPU reads a GPU index: "3", "gpu3" or "GPU3".
func parseGPU(s string) (int, error) {
	digits := s
	if len(s) > 3 && strings.EqualFold(s[:3], "gpu") {
		digits = s[3:]
	}
	if !isDigits(digits) || len(digits) > 4 {
		return 0, fmt.Errorf("%q is not a GPU index (0, 1, …)", clipWord(s))
	}
	n, _ := strconv.Atoi(digits) // at most 4 digits: cannot fail
	return n, nil
}

// isGPU reports whether s reads as a GPU index.
func isGPU(s string) bool {
	_, err := parseGPU(s)
	return err == nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func validAlertName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if r != '_' && r != '-' && r != ':' && r != '.' && !('a' <= r && r <= 'z') && !('A' <= r && r <= 'Z') && !('0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

// ParseDuration reads a positive duration as Go writes it ("90m",
// "1h30m") or with days and weeks ("2d", "1w", "1d12h").
func ParseDuration(s string) (time.Duration, error) {
	const hint = "write a duration like 30m, 2h, 1d12h or 1w"
	rest := strings.ToLower(s)
	var total time.Duration
	for _, unit := range []struct {
		suffix byte
		d      time.Duration
	}{{'w', 7 * 24 * time.Hour}, {'d', 24 * time.Hour}} {
		i := strings.IndexByte(rest, unit.suffix)
		if i < 0 {
			continue
		}
		if i == 0 || !isDigits(rest[:i]) || i > 4 {
			return 0, fmt.Errorf("%q is not a duration: %s", clipWord(s), hint)
		}
		n, _ := strconv.Atoi(rest[:i])
		total += time.Duration(n) * unit.d
		rest = rest[i+1:]
	}
	if rest != "" {
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 || d > math.MaxInt64-total {
			return 0, fmt.Errorf("%q is not a duration: %s", clipWord(s), hint)
		}
		total += d
	}
	if total <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration: %s", clipWord(s), hint)
	}
	return total, nil
}

// clipWord shortens user text quoted in an error.
func clipWord(s string) string {
	if utf8.RuneCountInString(s) > 40 {
		return string([]rune(s)[:40]) + "…"
	}
	return s
}
