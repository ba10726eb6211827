package config

import (
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/digest"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
)

// Digest is a scheduled usage digest: when it is sent, what window it
// covers, to whom, and how it prices energy.
type Digest struct {
	Pos      strictyaml.Pos
	Name     string `yaml:"name,required"`
	Schedule string `yaml:"schedule,required"` // robfig/cron, CRON_TZ= and descriptors
	// Window is how far back the digest looks; zero: since the previous
	// scheduled time.
	Window    time.Duration `yaml:"window"`
	Receivers []string      `yaml:"receivers,required"`
	TopUsers  int           `yaml:"top_users"`
	// PricePerKWh prices energy in Currency; zero: no cost shown.
	PricePerKWh float64 `yaml:"price_per_kwh"`
	Currency    string  `yaml:"currency"`
	// CatchUp is how late a digest missed while gpuwatch was down may
	// still be sent.
	CatchUp time.Duration `yaml:"catch_up"`
}

// PersonalDigestPrefix starts the names of the personal digests' runs
// ("people:weekly"): no digest of the config may be named so.
const PersonalDigestPrefix = "people:"

// Digest defaults.
const (
	DefaultRetention = 35 * 24 * time.Hour
	// MaxRetention is the longest storage.retention: the longest window
	// a digest reports, and draws an hour a column.
	MaxRetention    = 400 * 24 * time.Hour
	DefaultTopUsers = 5
	DefaultCurrency = "EUR"
	DefaultCatchUp  = digest.DefaultCatchUp
)

func (c *Config) digestDefaults() {
	for i := range c.Digests {
		d := &c.Digests[i]
		if d.TopUsers == 0 {
			d.TopUsers = DefaultTopUsers
		}
		if d.PricePerKWh > 0 && d.Currency == "" {
			d.Currency = DefaultCurrency
		}
		if d.CatchUp == 0 {
			d.CatchUp = DefaultCatchUp
		}
	}
}

// checkDigests reports what is wrong with the digests section and with
// storage.retention, each at the value concerned.
func (c *Config) checkDigests(root *yaml.Node, fail func(*yaml.Node, string, ...any)) {
	receivers := map[string]*Receiver{}
	for i := range c.Receivers {
		receivers[c.Receivers[i].Name] = &c.Receivers[i]
	}
	switch {
	case c.Storage.Retention < time.Hour:
		fail(nodePath(root, "storage", "retention"), "storage.retention %v is too short: keep usage rollups at least 1h (default 35d)", c.Storage.Retention)
	case c.Storage.Retention > MaxRetention:
		fail(nodePath(root, "storage", "retention"), "storage.retention %v is longer than %s: a digest of that window would take gigabytes to draw; keep at most 400d (default 35d)",
			c.Storage.Retention, "400d")
	}
	names := map[string]bool{}
	for i := range c.Digests {
		d := &c.Digests[i]
		item := nodeAt(root, "digests", i)
		at := func(key string) *yaml.Node { return nodePath(item, key) }
		// A missing required field is reported by the decoder already.
		has := func(key string) bool { return mappingValue(strictyaml.Resolve(item), key) != nil }
		switch {
		case d.Name == "" && has("name"):
			fail(at("name"), "digests[%d].name is empty: name each digest (daily, weekly)", i)
		case len(d.Name) > MaxNameBytes:
			fail(at("name"), "digest name is %d bytes, the most is %d: name it in a word or two (daily, weekly)", len(d.Name), MaxNameBytes)
		case names[d.Name]:
			fail(at("name"), "digest %q is defined twice: give each digest its own name", d.Name)
		}
		names[d.Name] = true
		if strings.HasPrefix(d.Name, PersonalDigestPrefix) {
			fail(at("name"), "digest %q: names starting %q are the personal digests' (people.digest): name it otherwise", d.Name, PersonalDigestPrefix)
		}
		if _, err := digest.ParseSchedule(d.Schedule); err != nil && has("schedule") {
			fail(at("schedule"), "digest %q: %v", d.Name, err)
		}
		if d.Window > 0 && d.Window < time.Hour {
			fail(at("window"), "digest %q: window %v is shorter than an hour: usage is kept by the hour; use 1h or more (or leave it out: since the previous digest)", d.Name, d.Window)
		}
		if d.Window > c.Storage.Retention {
			fail(at("window"), "digest %q: window %v is longer than storage.retention %v: older usage is pruned; raise storage.retention", d.Name, d.Window, c.Storage.Retention)
		}
		if len(d.Receivers) == 0 && has("receivers") {
			fail(at("receivers"), "digest %q needs at least one receiver, e.g. receivers: [team-slack]", d.Name)
		}
		for j, r := range d.Receivers {
			switch receiver := receivers[r]; {
			case receiver == nil:
				fail(nodeAt(item, "receivers", j), "digest %q sends to receiver %q, which is not defined under receivers:", d.Name, r)
			case receiver.Alertmanager != nil:
				fail(nodeAt(item, "receivers", j), "digest %q sends to receiver %q, an alertmanager receiver, which takes alerts only: send the digest to a slack, webhook or console receiver", d.Name, r)
			}
		}
		if d.TopUsers < 0 {
			fail(at("top_users"), "digest %q: top_users %d is negative: list how many users, like 5", d.Name, d.TopUsers)
		}
		if d.PricePerKWh < 0 {
			fail(at("price_per_kwh"), "digest %q: price_per_kwh %v is negative: write the price of one kWh, like 0.30, or leave it out", d.Name, d.PricePerKWh)
		}
	}
}
