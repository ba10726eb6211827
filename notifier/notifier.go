// Package notifier turns alert transitions into notifications and delivers
// them: it routes alerts to receivers, applies silences, groups alerts of one
// rule, repeats long-firing ones, and delivers through a durable outbox with
// retries. Each integration (console, Slack, webhooks) lives in a subpackage
// and implements the one-method Notifier interface.
package notifier

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// Notifier delivers one notification to one place. retry reports whether a
// failure is worth trying again (a timeout, a 5xx, a 429) rather than
// permanent (a rejected request); it is meaningless when err is nil. An
// error may be a *RetryAfterError to say when to try again.
type Notifier interface {
	Notify(ctx context.Context, n *Notification) (retry bool, err error)
}

// Status is "firing" or "resolved".
type Status string

// The statuses of an alert in a notification.
const (
	StatusFiring   Status = "firing"
	StatusResolved Status = "resolved"
)

// Notification is what one receiver gets at once: one or more alerts of
// one rule with the same status (alerts of a rule on several GPUs within
// the route's group_wait travel together).
type Notification struct {
	// ID is the notification's place in its receiver's outbox.
	ID        uint64    `json:"id"`
	Receiver  string    `json:"receiver"`
	GroupKey  string    `json:"group_key"` // receiver, rule and status
	Status    Status    `json:"status"`
	Alerts    []Alert   `json:"alerts"`
	CreatedAt time.Time `json:"created_at"`
	// Digest, when set, makes this a scheduled usage report instead of
	// alerts (Status is StatusDigest and Alerts is empty).
	Digest *Digest `json:"digest,omitempty"`
	// Owners, when set, tells the receiver to tell the people who own
	// the alerts' holders too, as the route's owners: block says.
	Owners *Owners `json:"owners,omitempty"`
	// Event, when set, makes this news about the owners of its one alert
	// (an answer, an escalation, a question asked again) rather than a
	// transition of it.
	Event *OwnerEvent `json:"event,omitempty"`
}

// StatusDigest marks a notification that carries a usage digest.
const StatusDigest Status = "digest"

// Digest is a usage report, already rendered in each form receivers take.
type Digest struct {
	Name     string          `json:"name"`             // the digest's name in the config
	Title    string          `json:"title"`            // "GPU usage on node1, Mon 30 Nov 09:00 – Tue 1 Dec 09:00"
	Text     string          `json:"text"`             // plain text, for the console and fallbacks
	Markdown string          `json:"markdown"`         // for chat webhooks (Discord, Teams, Feishu, …)
	Blocks   json.RawMessage `json:"blocks,omitempty"` // Slack Block Kit blocks
	Data     json.RawMessage `json:"data,omitempty"`   // the report as JSON, for the generic webhook
	// Charts name the pictures of the day, one per host (see Charts).
	Charts []string `json:"charts,omitempty"`
	// To, when set, makes this a personal digest: a direct message to
	// one Slack user, by ID.
	To string `json:"to,omitempty"`
}

// Alert is one alert (a rule on a GPU) as receivers see it: what is wrong,
// where, how bad, since when, and who is behind it.
type Alert struct {
	// Key identifies the alert across transitions and restarts:
	// "host/rule/GPU-uuid". Receivers use it to deduplicate (PagerDuty's
	// dedup_key) and to find the message to update (Slack).
	Key      string `json:"key"`
	Name     string `json:"alert"`
	Status   Status `json:"status"`
	Repeat   bool   `json:"repeat,omitempty"` // a reminder of an alert still firing
	Severity string `json:"severity"`
	Host     string `json:"host"`
	GPU      int    `json:"gpu"`
	UUID     string `json:"uuid"` // the GPU's, or the MIG instance's
	GPUName  string `json:"gpu_name"`
	// MIG is the MIG instance the alert is about; nil for a whole GPU.
	MIG *gpu.MIG `json:"mig,omitempty"`
	// Process is, for a rule that runs per process, the process the alert
	// is about (whose job leaks on a shared GPU): its owner is the one to
	// tell. nil for an alert about a GPU.
	Process *gpu.Process      `json:"process,omitempty"`
	Labels  map[string]string `json:"labels"` // rule labels plus alert, severity, host, gpu, uuid
	// Summary says what is wrong; on a resolve, what is true now, and
	// FiringSummary what was wrong.
	Summary       string `json:"summary"`
	FiringSummary string `json:"firing_summary,omitempty"`
	Description   string `json:"description,omitempty"`
	// Value is, for a firing, the value that made the rule's condition
	// true, in its base unit (bytes, percent, C, W, seconds; rates per
	// second): the left side ValueExpr of the comparison that decided it,
	// read at ValueAt. ValueAt is zero when that is At; otherwise the
	// condition stopped holding while the alert waited (clear_when,
	// keep_firing_for) and NowText is what ValueExpr shows at At. On a
	// resolve, Value is the left side of the comparison that resolved it,
	// now. ValueText formats Value with its unit.
	Value     Float     `json:"value"`
	ValueText string    `json:"value_text"`
	ValueExpr string    `json:"value_expr,omitempty"`
	ValueAt   time.Time `json:"value_at,omitzero"`
	NowText   string    `json:"now_text,omitempty"`
	// Trend is the alert metric's rate of change per second over the last
	// 30 minutes; TrendText formats it ("+1.5 GiB/min").
	Trend     Float  `json:"trend"`
	TrendText string `json:"trend_text,omitempty"`
	// TimeToFull is, for memory alerts, the seconds until memory is full at
	// the current trend; null when unknown or not growing.
	TimeToFull Float     `json:"time_to_full_seconds"`
	StartsAt   time.Time `json:"starts_at"`        // when it fired
	EndsAt     time.Time `json:"ends_at,omitzero"` // when it resolved
	At         time.Time `json:"at"`               // when this transition happened
	// Processes on the GPU at the time, largest first.
	Processes []gpu.Process `json:"processes"`
	// History is the alert's metric over the last 30 minutes, oldest first,
	// at even steps; unknown steps are null. For sparklines.
	History []Float `json:"history,omitempty"`
	// HistoryUnit names History's dimension ("bytes", "percent", …).
	HistoryUnit string `json:"history_unit,omitempty"`
	// AcknowledgedBy is who acknowledged the firing alert ("alice
	// (U0123ABCD)"), if anyone did: a message redrawn keeps saying so.
	AcknowledgedBy string `json:"acknowledged_by,omitempty"`
	// Idle says the alert is about a GPU held idle: its owners are asked
	// whether they still use it, rather than told to watch their job.
	Idle bool `json:"idle,omitempty"`
	// Answer is what an owner answered about the firing alert, if one
	// did: a message redrawn keeps saying so.
	Answer *Answer `json:"answer,omitempty"`
	// Owners are the owners of its holders as a message names them
	// ("<@U0123ABCD>", or a name where they must not be notified); set by
	// a receiver that tells owners.
	Owners []string `json:"owners,omitempty"`
	// Exit, on a resolve, is the job that left the GPU while the alert
	// fired: its memory freed or the GPU taken over.
	Exit *Exit `json:"exit,omitempty"`
	// LastReport is when a GPU that stopped reporting last did (Processes
	// are then the ones it reported last); zero while it reports.
	LastReport time.Time `json:"last_report,omitzero"`
	// Chart names the picture of this transition (memory climbing to the
	// ceiling, a temperature against its thresholds, …), kept by the
	// daemon and drawn on demand; "" when it has none. See Charts.
	Chart string `json:"chart,omitempty"`
}

// Charts draws the pictures notifications name (Alert.Chart,
// Digest.Charts) as PNG. The daemon implements it; a receiver that shows
// pictures takes one.
type Charts interface {
	ChartPNG(id string) ([]byte, error)
}

// ValueEarlier reports whether the value was read before the transition:
// the condition that it made true no longer holds (NowText says what
// ValueExpr shows now).
func (a *Alert) ValueEarlier() bool { return !a.ValueAt.IsZero() && a.ValueAt.Before(a.At) }

// ValueIsTimeToFull reports whether the value is a time_to_full, which
// TimeToFull repeats: a message says that number once.
func (a *Alert) ValueIsTimeToFull() bool { return strings.HasPrefix(a.ValueExpr, "time_to_full(") }

// OnGPU reports whether the alert is about a GPU. gpuwatch's own alerts
// (GPUWatchSourceDown: a hub cannot read its Prometheus) have GPU -1 and
// no UUID, and notifications leave the GPU out of them.
func (a *Alert) OnGPU() bool { return a.GPU >= 0 }

// Label names the alert's GPU (gpu.Label): "GPU 0", "GPU 0 · MIG 3
// (1g.10gb)"; "" for an alert not about a GPU.
func (a *Alert) Label() string {
	if !a.OnGPU() {
		return ""
	}
	return gpu.Label(a.GPU, a.MIG)
}

// GPUText names the alert's GPU with its model, "GPU 0 (NVIDIA H100 80GB
// HBM3)", "GPU 0 · MIG 3 (1g.10gb) (NVIDIA A100-SXM4-80GB)", or "" for an
// alert not about a GPU.
func (a *Alert) GPUText() string {
	if a.GPUName == "" {
		return a.Label()
	}
	return a.Label() + " (" + a.GPUName + ")"
}

// Subject names what the alert is about: its GPU, and for a rule that
// runs per process the process ("GPU 0, pid 4242"); "" for an alert not
// about a GPU.
func (a *Alert) Subject() string {
	if a.Process == nil || !a.OnGPU() {
		return a.Label()
	}
	return a.Label() + ", " + a.Process.Holder()
}

// Exit is a job leaving a GPU, as a resolve notice tells it.
type Exit struct {
	At            time.Time `json:"at"`
	MemoryPercent Float     `json:"memory_percent"` // the GPU's memory in use at the job's last sample
	OOMLikely     bool      `json:"oom_likely"`     // it probably died of CUDA out-of-memory
	// Text says it for people: "pid 4242 (alice, python train.py) exited
	// with the GPU at 99% — a CUDA out-of-memory is likely".
	Text string `json:"text"`
}

// Float is a float64 that encodes NaN and ±Inf as JSON null.
type Float float64

// MarshalJSON encodes the number, or null when it is not finite.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON decodes a number; null becomes NaN.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}

// Known reports whether the number is finite.
func (f Float) Known() bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }
