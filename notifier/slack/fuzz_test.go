package slack

import (
	"strings"
	"testing"
)

// FuzzConfigCheck feeds Check arbitrary blocks: it never panics, and New
// refuses exactly the blocks Check finds problems with.
func FuzzConfigCheck(f *testing.F) {
	f.Add("#gpu-alerts", "", "", true)
	f.Add("", "https://hooks.slack.com/services/T0/B0/X", "gpuwatch", false)
	f.Add("#a", "http://[::1]:80/x", "", true)
	f.Add("# ", "https://%zz", "\x00", false)
	f.Fuzz(func(t *testing.T, channel, hook, username string, token bool) {
		c := Config{Channel: channel, WebhookURL: hook, Username: username}
		problems := c.Check(token)
		for _, p := range problems {
			if p == "" || strings.HasSuffix(p, ".") {
				t.Errorf("got problem %q, want a sentence without a trailing period", p)
			}
		}
		tok := ""
		if token {
			tok = "xoxb-1"
		}
		if _, err := New("r", c, Options{BotToken: tok}); (err == nil) != (len(problems) == 0) {
			t.Errorf("New: got %v with problems %q, want an error exactly when Check finds problems", err, problems)
		}
	})
}

// FuzzDecodeRecord feeds decodeRecord what a damaged store might hold: it
// never panics, and what it accepts survives a round trip.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"channel":"C123","ts":"1764409265.000001","alerts":[{"key":"node1/GPUMemoryLeak/GPU-1","status":"firing","value":null}]}`))
	f.Add([]byte(`{"channel":"C1","ts":"1.2","alerts":[],"replied":{"k":"2026-11-29T09:41:05Z"}}`))
	f.Add([]byte(`{"channel":"","ts":""}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"alerts":[{"history":[1,null,"x"]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err != nil {
			return
		}
		enc, err := encodeRecord(r)
		if err != nil {
			t.Fatalf("encode of a decoded record: %v", err)
		}
		again, err := decodeRecord(enc)
		if err != nil {
			t.Fatalf("decode of an encoded record: %v", err)
		}
		if again.Channel != r.Channel || again.TS != r.TS || len(again.Alerts) != len(r.Alerts) {
			t.Errorf("round trip: got %q %q %d alerts, want %q %q %d", again.Channel, again.TS, len(again.Alerts), r.Channel, r.TS, len(r.Alerts))
		}
		render(r.Alerts, r.Replied[""]) // any stored record renders without panicking
	})
}
