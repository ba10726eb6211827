// Package people maps the identities gpuwatch sees on a GPU (a Unix user,
// a Kubernetes namespace or pod label, a Slurm account) to the people
// behind them: Slack
// users gpuwatch can tell about their jobs. A person is resolved, not
// sampled: the config's people: section names each identity's Slack user
// ID or email, or an email pattern every Unix user follows; emails are
// looked up with Slack's users.lookupByEmail and names and time zones with
// users.info, and both are cached in the store, misses too.
//
// The package also keeps what each person asked for (the manners): muted
// until when, which personal digest, how many direct messages today, and
// quiet hours in their zone. The rules engine and the GPU sources know
// nothing of people; routing asks this package who owns an alert's
// holders, the digest whom to send a personal digest, and the Slack app
// who is pressing a button.
package people

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// Person is a Slack user gpuwatch can tell: by direct message, or by an
// @mention in a channel.
type Person struct {
	// ID is the Slack user ID ("U0123ABCD"), which never changes.
	ID string `json:"id"`
	// Name is how Slack shows the user (display name, else real name,
	// else user name); "" when Slack did not say.
	Name string `json:"name,omitempty"`
	// Zone is the user's IANA time zone ("Europe/Berlin"); "" when unknown.
	// Offset is its offset from UTC in seconds, for a zone this host does
	// not know.
	Zone   string `json:"zone,omitempty"`
	Offset int    `json:"offset,omitempty"`
}

// String names the person for records read outside Slack too (answers
// to alerts, the log): "alice (U0123ABCD)", or the ID alone.
func (p Person) String() string {
	if p.Name == "" {
		return p.ID
	}
	return p.Name + " (" + p.ID + ")"
}

// Mention is the person as a Slack message @mentions them: "<@U0123ABCD>".
func (p Person) Mention() string { return "<@" + p.ID + ">" }

// Display is the person's name for text that must not notify them
// (a message sent during their quiet hours): the name, else the ID.
func (p Person) Display() string {
	if p.Name != "" {
		return p.Name
	}
	return p.ID
}

// Location is the person's time zone; UTC when unknown.
func (p Person) Location() *time.Location {
	if p.Zone != "" {
		if loc, err := time.LoadLocation(p.Zone); err == nil {
			return loc
		}
		return time.FixedZone(p.Zone, p.Offset)
	}
	if p.Offset != 0 {
		return time.FixedZone("", p.Offset)
	}
	return time.UTC
}

// KnowsZone reports whether the person's time zone is known.
func (p Person) KnowsZone() bool { return p.Zone != "" || p.Offset != 0 }

// Kind is the kind of identity a process has.
type Kind string

// The kinds of identity, as the people: section names their maps.
const (
	// KindUser is a Unix user: the real uid of the process.
	KindUser Kind = "user"
	// KindNamespace is the Kubernetes namespace of the process's pod.
	KindNamespace Kind = "namespace"
	// KindSlurmAccount is the Slurm account the process's job charges.
	KindSlurmAccount Kind = "slurm_account"
	// KindPodLabel is a label of the process's Kubernetes pod, named
	// KEY=VALUE: "owner=alice".
	KindPodLabel Kind = "pod_label"
)

// Identity is one thing gpuwatch knows about whoever runs a process.
type Identity struct {
	Kind Kind
	Name string
}

// String returns "user:alice", "namespace:vision", "slurm_account:physics",
// "pod_label:owner=alice".
func (i Identity) String() string { return string(i.Kind) + ":" + i.Name }

// ParseIdentity reads an identity as String writes it, or a bare name as
// a Unix user (how groups list their members).
func ParseIdentity(s string) (Identity, error) {
	kind, name, ok := strings.Cut(s, ":")
	if !ok {
		kind, name = string(KindUser), s
	}
	const kinds = "write a Unix user (alice), namespace:NAME, slurm_account:NAME or pod_label:KEY=VALUE"
	switch Kind(kind) {
	case KindUser, KindNamespace, KindSlurmAccount, KindPodLabel:
	default:
		return Identity{}, fmt.Errorf("%q is not an identity: %s", clip(s), kinds)
	}
	if name == "" {
		return Identity{}, fmt.Errorf("%q names no one: %s", clip(s), kinds)
	}
	if Kind(kind) == KindPodLabel {
		key, value, ok := strings.Cut(name, "=")
		if !ok || !gpu.IsPodLabelKey(key) || value == "" || !gpu.IsPodLabelValue(value) {
			return Identity{}, fmt.Errorf("%q is not a pod label: write pod_label:KEY=VALUE, like pod_label:owner=alice", clip(s))
		}
	}
	return Identity{Kind: Kind(kind), Name: name}, nil
}

// IdentitiesOf returns what gpuwatch knows of whoever runs p, the most
// particular first: the Slurm account of its job, the labels of its pod
// (by key, in order), the namespace of its pod, its Unix user. A mapping
// of an earlier one wins: a job charged to an account belongs to whom the
// account names; a pod's process (often root inside the container) to
// whom its owner label names, else to whom its namespace names, which a
// team often shares.
func IdentitiesOf(p *gpu.Process) []Identity {
	var out []Identity
	if p.Account != "" {
		out = append(out, Identity{KindSlurmAccount, p.Account})
	}
	for key, value := range p.PodLabels.All() {
		out = append(out, Identity{KindPodLabel, key + "=" + value})
	}
	if ns, _, ok := p.NamedPod(); ok {
		out = append(out, Identity{KindNamespace, ns})
	}
	if p.User != "" && !isNumeric(p.User) {
		out = append(out, Identity{KindUser, p.User})
	}
	return out
}

// isNumeric reports whether a user is a bare uid, which the passwd file
// does not name: no email pattern fits it.
func isNumeric(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// clip shortens text quoted in an error.
func clip(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}
