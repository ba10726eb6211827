package config

import (
	"maps"
	"testing"
	"time"
)

// digestFailures are the bad digest configs, checked by TestLoadFailure
// with the others.
var digestFailures = map[string][]string{
	"digest_schedule.bad.yaml": {
		`7:15: digest "daily": schedule "CRON_TZ=UTC" needs the five fields after CRON_TZ=UTC, e.g. CRON_TZ=Europe/Berlin 0 9 * * 1-5`,
		`10:15: digest "hourly": schedule "0 9 * *": expected exactly 5 fields, found 4: [0 9 * *]: write five fields (minute hour day-of-month month day-of-week, e.g. 0 9 * * 1-5) or a descriptor (@daily, @every 6h), optionally after CRON_TZ=Zone`,
		`13:15: digest "often": schedule "@every 0s": @every needs a duration of at least 1s, e.g. @every 6h`,
	},
	"digest_fields.bad.yaml": {
		`3:14: storage.retention 30m0s is too short: keep usage rollups at least 1h (default 35d)`,
		`10:13: digests[0].window: "-1h" is negative: durations must be 0 or more`,
		`11:23: digest "daily" sends to receiver "ops", which is not defined under receivers:`,
		`12:16: digest "daily": top_users -1 is negative: list how many users, like 5`,
		`13:20: digest "daily": price_per_kwh -0.3 is negative: write the price of one kWh, like 0.30, or leave it out`,
		`14:15: digests[0].catch_up: "-5m" is negative: durations must be 0 or more`,
		`15:11: digest "daily" is defined twice: give each digest its own name`,
		`17:16: digest "daily" needs at least one receiver, e.g. receivers: [team-slack]`,
	},
	"digest_required.bad.yaml": {
		`6:5: digests[0] needs the field "schedule"`,
		`6:5: digests[0] needs the field "receivers"`,
		`8:5: digests[1] needs the field "name"`,
		`10:5: unknown field "colour" in digests[1]; valid fields: name, schedule, window, receivers, top_users, price_per_kwh, currency, catch_up`,
	},
	"digest_alertmanager.bad.yaml": {
		`11:23: digest "daily" sends to receiver "am", an alertmanager receiver, which takes alerts only: send the digest to a slack, webhook or console receiver`,
	},
	"digest_window.bad.yaml": {
		`10:13: digest "monthly": window 720h0m0s is longer than storage.retention 168h0m0s: older usage is pruned; raise storage.retention`,
		`14:13: digest "half-hourly": window 30m0s is shorter than an hour: usage is kept by the hour; use 1h or more (or leave it out: since the previous digest)`,
	},
}

func init() { maps.Copy(configFailures, digestFailures) }

func TestDigestDefaults(t *testing.T) {
	const file = `
receivers:
  - name: team
    console: {}
route: {receiver: team}
digests:
  - name: daily
    schedule: "CRON_TZ=Europe/Berlin 0 9 * * 1-5"
    window: 24h
    receivers: [team]
    price_per_kwh: 0.30
  - name: weekly
    schedule: "@weekly"
    receivers: [team]
    top_users: 10
    price_per_kwh: 0.25
    currency: USD
    catch_up: 3h
`
	c, err := Parse("digests.yaml", []byte(file), noEnv)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got, want := c.Storage.Retention, 840*time.Hour; got != want {
		t.Errorf("storage.retention: got %v, want %v", got, want)
	}
	want := []Digest{
		{Name: "daily", Schedule: "CRON_TZ=Europe/Berlin 0 9 * * 1-5", Window: 24 * time.Hour, Receivers: []string{"team"},
			TopUsers: 5, PricePerKWh: 0.30, Currency: "EUR", CatchUp: time.Hour},
		{Name: "weekly", Schedule: "@weekly", Receivers: []string{"team"},
			TopUsers: 10, PricePerKWh: 0.25, Currency: "USD", CatchUp: 3 * time.Hour},
	}
	if len(c.Digests) != len(want) {
		t.Fatalf("got %d digests, want %d", len(c.Digests), len(want))
	}
	for i, w := range want {
		g := c.Digests[i]
		if g.Name != w.Name || g.Schedule != w.Schedule || g.Window != w.Window || len(g.Receivers) != 1 || g.Receivers[0] != w.Receivers[0] ||
			g.TopUsers != w.TopUsers || g.PricePerKWh != w.PricePerKWh || g.Currency != w.Currency || g.CatchUp != w.CatchUp {
			t.Errorf("digest %d: got %+v, want %+v", i, g, w)
		}
	}
	if got := c.Digests[0].Pos.Line; got != 7 {
		t.Errorf("digest 0 position: got line %d, want 7", got)
	}
}

func TestDigestNoPriceNoCurrency(t *testing.T) {
	const file = "receivers: [{name: team, console: {}}]\nroute: {receiver: team}\nstorage: {retention: 90d}\n" +
		"digests: [{name: d, schedule: '@daily', receivers: [team]}]\n"
	c, err := Parse("digests.yaml", []byte(file), noEnv)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got := c.Digests[0].Currency; got != "" {
		t.Errorf("currency without a price: got %q, want none", got)
	}
	if got, want := c.Storage.Retention, 90*24*time.Hour; got != want {
		t.Errorf("storage.retention: got %v, want %v", got, want)
	}
}
