package webhook

import (
	"encoding/json"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// genericVersion is the version of the generic schema; it changes only
// when a field changes meaning or goes away.
const genericVersion = "1"

// genericMessage is the generic format's body, documented in the package
// comment and in README.md. It is its own type, not notifier.Notification,
// so the schema users build on changes only on purpose.
type genericMessage struct {
	Version  string         `json:"version"`
	Receiver string         `json:"receiver"`
	Status   string         `json:"status"`
	GroupKey string         `json:"group_key"`
	Alerts   []genericAlert `json:"alerts"`
}

type genericAlert struct {
	Key      string `json:"key"`
	Alert    string `json:"alert"`
	Status   string `json:"status"`
	Repeat   bool   `json:"repeat"`
	Severity string `json:"severity"`
	Host     string `json:"host"`
	GPU      *int   `json:"gpu"` // null for an alert not about a GPU
	UUID     string `json:"uuid"`
	GPUName  string `json:"gpu_name"`
	// GPULabel names the GPU for people: "GPU 0", "GPU 0 · MIG 3 (1g.10gb)".
	GPULabel string      `json:"gpu_label,omitempty"`
	MIG      *genericMIG `json:"mig,omitempty"` // the MIG instance; absent for a whole GPU
	// Process is the process of a rule that runs per process; absent for
	// an alert about a GPU.
	Process *genericProcess   `json:"process,omitempty"`
	Labels  map[string]string `json:"labels"`
	Summary string            `json:"summary"`
	// FiringSummary, on a resolve, is the summary the alert fired with.
	FiringSummary string           `json:"firing_summary,omitempty"`
	Description   string           `json:"description"`
	Value         notifier.Float   `json:"value"`
	ValueText     string           `json:"value_text"`
	ValueExpr     string           `json:"value_expr,omitempty"`
	ValueAt       *time.Time       `json:"value_at,omitempty"`
	NowText       string           `json:"now_text,omitempty"`
	Trend         notifier.Float   `json:"trend"`
	TrendText     string           `json:"trend_text"`
	TimeToFull    notifier.Float   `json:"time_to_full_seconds"`
	StartsAt      time.Time        `json:"starts_at"`
	EndsAt        *time.Time       `json:"ends_at"`
	At            time.Time        `json:"at"`
	Processes     []genericProcess `json:"processes"`
	Exit          *notifier.Exit   `json:"exit,omitempty"`
	LastReport    *time.Time       `json:"last_report,omitempty"`
	// ChartURL links the alert's picture on gpuwatch's API, under its
	// authentication, when server.external_url is set.
	ChartURL string `json:"chart_url,omitempty"`
}

// genericMIG is the MIG instance an alert is about.
type genericMIG struct {
	ParentUUID      string `json:"parent_uuid"`
	GPUInstance     int    `json:"gpu_instance"`
	ComputeInstance int    `json:"compute_instance"`
	Profile         string `json:"profile"`
}

type genericProcess struct {
	PID         int    `json:"pid"`
	User        string `json:"user"`
	Command     string `json:"command"`
	Container   string `json:"container"`
	MemoryBytes uint64 `json:"memory_bytes"`
}

func encodeGeneric(receiver string, m *notifier.Notification, link func(*notifier.Alert) string) ([]byte, error) {
	msg := genericMessage{Version: genericVersion, Receiver: receiver, Status: string(m.Status),
		GroupKey: m.GroupKey, Alerts: make([]genericAlert, 0, len(m.Alerts))}
	for _, a := range m.Alerts {
		g := genericAlert{Key: a.Key, Alert: a.Name, Status: string(a.Status), Repeat: a.Repeat,
			Severity: a.Severity, Host: a.Host, UUID: a.UUID, GPUName: a.GPUName,
			Labels: a.Labels, Summary: a.Summary, FiringSummary: a.FiringSummary, Description: a.Description,
			Value: a.Value, ValueText: a.ValueText, ValueExpr: a.ValueExpr, NowText: a.NowText,
			Trend: a.Trend, TrendText: a.TrendText,
			TimeToFull: a.TimeToFull, StartsAt: a.StartsAt.UTC(), At: a.At.UTC(),
			Processes: make([]genericProcess, 0, len(a.Processes))}
		if a.OnGPU() {
			index := a.GPU
			g.GPU, g.GPULabel = &index, a.Label()
		}
		if m := a.MIG; m != nil {
			g.MIG = &genericMIG{ParentUUID: m.ParentUUID, GPUInstance: m.GPUInstance, ComputeInstance: m.ComputeInstance, Profile: m.Profile}
		}
		if p := a.Process; p != nil {
			g.Process = &genericProcess{PID: p.PID, User: p.User, Command: p.Command, Container: p.Container, MemoryBytes: p.MemUsed}
		}
		if g.Labels == nil {
			g.Labels = map[string]string{}
		}
		if !a.EndsAt.IsZero() {
			ends := a.EndsAt.UTC()
			g.EndsAt = &ends
		}
		if a.ValueEarlier() {
			at := a.ValueAt.UTC()
			g.ValueAt = &at
		}
		if !a.LastReport.IsZero() {
			last := a.LastReport.UTC()
			g.LastReport = &last
		}
		g.Exit = a.Exit
		g.ChartURL = link(&a)
		for _, p := range a.Processes {
			g.Processes = append(g.Processes, genericProcess{PID: p.PID, User: p.User, Command: p.Command,
				Container: p.Container, MemoryBytes: p.MemUsed})
		}
		msg.Alerts = append(msg.Alerts, g)
	}
	return json.Marshal(msg)
}
