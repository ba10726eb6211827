package people

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// Config is the people: section of the config file: whom each identity
// gpuwatch sees belongs to, how long what Slack says is kept, and the
// manners of telling people.
type Config struct {
	// Users maps Unix users to Slack users: a user ID ("U0123ABCD") or an
	// email, which Slack's users.lookupByEmail turns into the ID.
	Users map[string]string `yaml:"users"`
	// Namespaces maps Kubernetes namespaces to Slack users: a pod's
	// processes belong to whom its namespace names.
	Namespaces map[string]string `yaml:"namespaces"`
	// SlurmAccounts maps Slurm accounts to Slack users: a job charged to
	// the account belongs to whom it names.
	SlurmAccounts map[string]string `yaml:"slurm_accounts"`
	// PodLabels maps Kubernetes pod labels to Slack users: by the label's
	// key, each of its values to whom it names (owner: {alice: U0…}). A
	// pod's processes belong to whom its label names.
	PodLabels map[string]map[string]string `yaml:"pod_labels"`
	// Email is the email of every Unix user Users does not list, with
	// "{user}" where the user name goes: "{user}@example.org".
	Email string `yaml:"email"`
	// PodLabelEmail is the email of whoever a pod label names, when
	// PodLabels does not list the value: the label's key in braces where
	// its value goes, "{owner}@example.org".
	PodLabelEmail string `yaml:"pod_label_email"`
	// Groups are teams: each lead gets the team's digest.
	Groups []Group `yaml:"groups"`
	// Cache is how long what Slack said of a user (the ID an email
	// belongs to, a name, a time zone) is kept; Misses how long "Slack
	// knows no one with this email" is.
	Cache  time.Duration `yaml:"cache"`
	Misses time.Duration `yaml:"cache_misses"`
	// DailyLimit is the most direct messages about alerts one person gets
	// a day (in their zone); past it they are named in the channel only.
	DailyLimit int `yaml:"daily_limit"`
	// QuietHours are hours of each person's day ("22:00-08:00") when a
	// warning does not reach them by direct message or @mention; a
	// critical alert always does.
	QuietHours string `yaml:"quiet_hours"`
	// Digest is the personal digest.
	Digest DigestConfig `yaml:"digest"`
}

// Group is a team: its members are identities (a Unix user, or
// namespace:NAME, or slurm_account:NAME), its leads Slack users.
type Group struct {
	Name    string   `yaml:"name,required"`
	Leads   []string `yaml:"leads,required"`
	Members []string `yaml:"members,required"`
}

// DigestConfig is the personal digest: a direct message to everyone who
// used a GPU, through the bot of a Slack receiver, weekly or daily as each
// person chooses (/gpu digest weekly|daily|off).
type DigestConfig struct {
	// Receiver is the Slack receiver (with the bot token) whose bot sends
	// the digests; "" sends none.
	Receiver string `yaml:"receiver"`
	// Default is what a person who chose nothing gets: weekly, daily or
	// off.
	Default string `yaml:"default"`
	// Weekly and Daily are the schedules (cron, CRON_TZ= allowed).
	Weekly string `yaml:"weekly"`
	Daily  string `yaml:"daily"`
}

// Defaults of the people: section.
const (
	DefaultCache        = 24 * time.Hour
	DefaultMisses       = time.Hour
	DefaultDailyLimit   = 10
	DefaultDigestWeekly = "0 9 * * 1"
	DefaultDigestDaily  = "0 9 * * *"
)

// The personal digest choices.
const (
	DigestWeekly = "weekly"
	DigestDaily  = "daily"
	DigestOff    = "off"
)

// ApplyDefaults fills in what the section leaves out.
func (c *Config) ApplyDefaults() {
	if c.Cache == 0 {
		c.Cache = DefaultCache
	}
	if c.Misses == 0 {
		c.Misses = DefaultMisses
	}
	if c.DailyLimit == 0 {
		c.DailyLimit = DefaultDailyLimit
	}
	if c.Digest.Default == "" {
		c.Digest.Default = DigestWeekly
	}
	if c.Digest.Weekly == "" {
		c.Digest.Weekly = DefaultDigestWeekly
	}
	if c.Digest.Daily == "" {
		c.Digest.Daily = DefaultDigestDaily
	}
}

// Mapped reports whether the section maps anyone: without it gpuwatch
// tells no owner.
func (c *Config) Mapped() bool {
	return len(c.Users) > 0 || len(c.Namespaces) > 0 || len(c.SlurmAccounts) > 0 || c.Email != "" ||
		len(c.PodLabels) > 0 || c.PodLabelEmail != ""
}

// PodLabelKeys are the pod label keys the section maps (PodLabels' and
// PodLabelEmail's), sorted: the labels gpuwatch reads of each pod.
func (c *Config) PodLabelKeys() []string {
	keys := slices.Sorted(maps.Keys(c.PodLabels))
	if key, ok := patternKey(c.PodLabelEmail); ok && !slices.Contains(keys, key) {
		keys = append(keys, key)
		slices.Sort(keys)
	}
	return keys
}

// Target is whom a mapping names: a Slack user ID, or an email to look up.
type Target struct {
	ID    string
	Email string
}

// ParseTarget reads a mapping's value: a Slack user ID (U… or W…, capital
// letters and digits) or an email. The error never quotes the value: it
// may be someone's email.
func ParseTarget(s string) (Target, error) {
	s = strings.TrimSpace(s)
	switch {
	case IsUserID(s):
		return Target{ID: s}, nil
	case isEmail(s):
		return Target{Email: strings.ToLower(s)}, nil
	}
	return Target{}, fmt.Errorf("is neither a Slack user ID (U0123ABCD: Slack profile → ⋯ → Copy member ID) nor an email")
}

// IsUserID reports whether s looks like a Slack user ID: U or W, then
// capital letters and digits ("U0123ABCD").
func IsUserID(s string) bool {
	if len(s) < 3 || len(s) > 20 || (s[0] != 'U' && s[0] != 'W') {
		return false
	}
	for _, c := range s[1:] {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// emailShape is an email as people write them: a local part and a domain
// with a dot, nothing that needs quoting.
var emailShape = regexp.MustCompile(`^[A-Za-z0-9._%+'-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$`)

// maxEmail is the longest email (RFC 5321's limit on a path).
const maxEmail = 254

func isEmail(s string) bool { return len(s) <= maxEmail && emailShape.MatchString(s) }

// userPlaceholder is where an email pattern puts the Unix user.
const userPlaceholder = "{user}"

// EmailOf returns the email a pattern gives a Unix user; false when the
// pattern is empty or the user name does not make an email (a name with
// characters no email has).
func EmailOf(pattern, user string) (string, bool) {
	if pattern == "" || user == "" {
		return "", false
	}
	email := strings.ToLower(strings.Replace(pattern, userPlaceholder, user, 1))
	return email, isEmail(email)
}

// patternKey is the pod label key a pod label email pattern names, in
// braces: "owner" of "{owner}@example.org"; false when it names none.
func patternKey(pattern string) (string, bool) {
	_, rest, ok := strings.Cut(pattern, "{")
	key, _, closed := strings.Cut(rest, "}")
	return key, ok && closed && key != ""
}

// PodLabelEmailOf returns the email a pod label pattern gives a label's
// value; false when the pattern is empty, names another key, or the
// value does not make an email.
func PodLabelEmailOf(pattern, key, value string) (string, bool) {
	k, ok := patternKey(pattern)
	if !ok || k != key || value == "" {
		return "", false
	}
	email := strings.ToLower(strings.Replace(pattern, "{"+key+"}", value, 1))
	return email, isEmail(email)
}

// checkPodLabelPattern says what is wrong with a pod label email
// pattern; "" when nothing.
func checkPodLabelPattern(p string) string {
	key, ok := patternKey(p)
	switch {
	case !ok || strings.Count(p, "{") != 1 || strings.Count(p, "}") != 1:
		return `must hold one pod label key in braces, where the label's value goes: "{owner}@example.org"`
	case !gpu.IsPodLabelKey(key):
		return fmt.Sprintf("names %q, which is not a Kubernetes label key (owner, example.org/owner)", clip(key))
	}
	if _, ok := PodLabelEmailOf(p, key, "alice"); !ok {
		return `does not make an email: write it like "{owner}@example.org"`
	}
	return ""
}

// checkPattern says what is wrong with an email pattern; "" when nothing.
func checkPattern(p string) string {
	switch {
	case strings.Count(p, userPlaceholder) != 1:
		return `must hold {user} once, where the Unix user goes: "{user}@example.org"`
	case strings.Count(p, "{") != 1 || strings.Count(p, "}") != 1:
		return `knows only the placeholder {user}: "{user}@example.org"`
	}
	if _, ok := EmailOf(p, "alice"); !ok {
		return `does not make an email: write it like "{user}@example.org"`
	}
	return ""
}

// Problem is one thing wrong in the section: Path names the setting,
// from the section down ("users", "alice"), Msg says what is wrong.
type Problem struct {
	Path []string
	Msg  string
}

// Check returns every problem of the section, none when it is fine.
// Messages never quote an email. receivers says whether a receiver of
// that name is a Slack receiver with the bot token (the personal digest
// needs one); scheduleErr checks a digest schedule.
func (c *Config) Check(slackBot func(receiver string) (exists, bot bool), scheduleErr func(string) error) []Problem {
	var out []Problem
	add := func(msg string, path ...string) { out = append(out, Problem{Path: path, Msg: msg}) }
	for _, m := range []struct {
		key string
		m   map[string]string
	}{{"users", c.Users}, {"namespaces", c.Namespaces}, {"slurm_accounts", c.SlurmAccounts}} {
		for _, name := range sortedKeys(m.m) {
			if strings.TrimSpace(name) == "" {
				add(fmt.Sprintf("people.%s has an empty name: name the %s", m.key, strings.TrimSuffix(m.key, "s")), m.key)
				continue
			}
			if _, err := ParseTarget(m.m[name]); err != nil {
				add(fmt.Sprintf("people.%s.%s %v", m.key, name, err), m.key, name)
			}
		}
	}
	if c.Email != "" {
		if p := checkPattern(c.Email); p != "" {
			add("people.email "+p, "email")
		}
	}
	out = append(out, c.checkPodLabels()...)
	groups := map[string]bool{}
	for i, g := range c.Groups {
		at := strconv.Itoa(i)
		switch {
		case strings.TrimSpace(g.Name) == "":
			add(fmt.Sprintf("people.groups[%d] needs a name", i), "groups", at)
		case groups[g.Name]:
			add(fmt.Sprintf("people.groups[%d]: group %q is defined twice", i, g.Name), "groups", at, "name")
		}
		groups[g.Name] = true
		for j, l := range g.Leads {
			if _, err := ParseTarget(l); err != nil {
				add(fmt.Sprintf("people.groups[%d].leads[%d] %v", i, j, err), "groups", at, "leads", strconv.Itoa(j))
			}
		}
		for j, m := range g.Members {
			id, err := ParseIdentity(m)
			switch {
			case err != nil:
				add(fmt.Sprintf("people.groups[%d].members[%d]: %v", i, j, err), "groups", at, "members", strconv.Itoa(j))
			case id.Kind == KindPodLabel:
				add(fmt.Sprintf("people.groups[%d].members[%d]: a team's digest counts usage by Unix user and namespace, "+
					"and usage is not kept by pod label: name the pods' namespace:NAME", i, j), "groups", at, "members", strconv.Itoa(j))
			}
		}
	}
	if c.Cache < 0 || c.Misses < 0 {
		add("people.cache and people.cache_misses must be 0 or more", "cache")
	}
	if c.DailyLimit < 0 {
		add(fmt.Sprintf("people.daily_limit %d is negative: the most direct messages a person gets a day, like 10", c.DailyLimit), "daily_limit")
	}
	if c.QuietHours != "" {
		if _, err := ParseQuietHours(c.QuietHours); err != nil {
			add("people.quiet_hours "+err.Error(), "quiet_hours")
		}
	}
	d := c.Digest
	if d.Default != "" && !slices.Contains([]string{DigestWeekly, DigestDaily, DigestOff}, d.Default) {
		add(fmt.Sprintf("people.digest.default %q is not weekly, daily or off", d.Default), "digest", "default")
	}
	if d.Receiver != "" {
		switch exists, bot := slackBot(d.Receiver); {
		case !exists:
			add(fmt.Sprintf("people.digest.receiver %q is not a receiver; define it under receivers:", d.Receiver), "digest", "receiver")
		case !bot:
			add(fmt.Sprintf("people.digest.receiver %q must be a Slack receiver with a channel (and slack.bot_token): personal digests are direct messages", d.Receiver), "digest", "receiver")
		}
	}
	for _, s := range []struct{ key, spec string }{{"weekly", d.Weekly}, {"daily", d.Daily}} {
		if s.spec == "" {
			continue
		}
		if err := scheduleErr(s.spec); err != nil {
			add(fmt.Sprintf("people.digest.%s: %v", s.key, err), "digest", s.key)
		}
	}
	return out
}

// checkPodLabels returns the problems of pod_labels and
// pod_label_email.
func (c *Config) checkPodLabels() []Problem {
	var out []Problem
	add := func(msg string, path ...string) { out = append(out, Problem{Path: path, Msg: msg}) }
	for _, key := range sortedKeys(c.PodLabels) {
		if !gpu.IsPodLabelKey(key) {
			add(fmt.Sprintf("people.pod_labels: %q is not a Kubernetes label key: a name of letters, digits, '-', '_' and '.' (at most 63), "+
				"with an optional DNS prefix and '/', like owner or example.org/owner", clip(key)), "pod_labels", key)
			continue
		}
		values := c.PodLabels[key]
		for _, v := range sortedKeys(values) {
			switch _, err := ParseTarget(values[v]); {
			case v == "" || !gpu.IsPodLabelValue(v):
				add(fmt.Sprintf("people.pod_labels.%s: %q is not a label value: at most 63 letters, digits, '-', '_' and '.'", key, clip(v)),
					"pod_labels", key, v)
			case err != nil:
				add(fmt.Sprintf("people.pod_labels.%s.%s %v", key, v, err), "pod_labels", key, v)
			}
		}
	}
	if c.PodLabelEmail != "" {
		if p := checkPodLabelPattern(c.PodLabelEmail); p != "" {
			add("people.pod_label_email "+p, "pod_label_email")
		}
	}
	if keys := c.PodLabelKeys(); len(keys) > gpu.MaxPodLabels {
		add(fmt.Sprintf("people: pod_labels and pod_label_email name %d label keys, more than the %d gpuwatch reads of a pod", len(keys), gpu.MaxPodLabels),
			"pod_labels")
	}
	return out
}

// QuietHours is a span of each day, in a person's zone: From until To,
// across midnight when To is earlier.
type QuietHours struct{ From, To time.Duration }

// ParseQuietHours reads "22:00-08:00".
func ParseQuietHours(s string) (QuietHours, error) {
	from, to, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		return QuietHours{}, fmt.Errorf("%q is not a span of the day: write it like 22:00-08:00", clip(s))
	}
	f, err1 := parseClock(from)
	t, err2 := parseClock(to)
	if err1 != nil || err2 != nil || f == t {
		return QuietHours{}, fmt.Errorf("%q is not a span of the day: write it like 22:00-08:00", clip(s))
	}
	return QuietHours{From: f, To: t}, nil
}

// parseClock reads "22:00" or "8:30" as the time since midnight.
func parseClock(s string) (time.Duration, error) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || len(m) != 2 || hh < 0 || hh > 23 || mm < 0 || mm > 59 {
		return 0, fmt.Errorf("%q is not a time of day", s)
	}
	return time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute, nil
}

// Holds reports whether the local time at falls in the quiet hours.
func (q QuietHours) Holds(at time.Time) bool {
	h, m, s := at.Clock()
	t := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second
	if q.From < q.To {
		return t >= q.From && t < q.To
	}
	return t >= q.From || t < q.To
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Mapping is one person a setting names: its path in the config
// ("people.users.alice") and whom it names.
type Mapping struct {
	Path   string
	Target Target
}

// Mappings are the people the section names one by one (the email
// pattern aside, which names whoever runs a job), sorted by path: what
// gpuwatch check asks Slack about.
func (c *Config) Mappings() []Mapping {
	var out []Mapping
	for _, m := range []struct {
		key string
		m   map[string]string
	}{{"users", c.Users}, {"namespaces", c.Namespaces}, {"slurm_accounts", c.SlurmAccounts}} {
		for _, name := range sortedKeys(m.m) {
			if t, err := ParseTarget(m.m[name]); err == nil {
				out = append(out, Mapping{Path: "people." + m.key + "." + name, Target: t})
			}
		}
	}
	for _, key := range sortedKeys(c.PodLabels) {
		values := c.PodLabels[key]
		for _, v := range sortedKeys(values) {
			if t, err := ParseTarget(values[v]); err == nil {
				out = append(out, Mapping{Path: "people.pod_labels." + key + "." + v, Target: t})
			}
		}
	}
	for i, g := range c.Groups {
		for j, l := range g.Leads {
			if t, err := ParseTarget(l); err == nil {
				out = append(out, Mapping{Path: fmt.Sprintf("people.groups[%d].leads[%d]", i, j), Target: t})
			}
		}
	}
	return out
}

// Kind says what a target is, for messages that must not quote an email:
// "the user ID U0123ABCD", "an email".
func (t Target) Kind() string {
	if t.ID != "" {
		return "the user ID " + t.ID
	}
	return "an email"
}
