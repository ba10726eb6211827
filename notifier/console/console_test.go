package console

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

var _ notifier.Notifier = (*Notifier)(nil)

var at = time.Date(2026, 11, 29, 9, 41, 5, 0, time.UTC)

func leak() notifier.Alert {
	return notifier.Alert{
		At: at, Name: "GPUMemoryLeak", Status: notifier.StatusFiring, Severity: "warning",
		Host: "node1", GPU: 0, GPUName: "NVIDIA H100 80GB HBM3",
		Value: 2.29e7, ValueText: "21.8 MiB/s", Trend: 2.29e7, TrendText: "+1.31 GiB/min",
		TimeToFull: 720, StartsAt: at, Summary: "GPU 0 memory keeps growing",
		Processes: []gpu.Process{
			{PID: 4242, User: "alice", Command: "python train.py", Container: "docker:3f2a9c1b7e4d", MemUsed: 60 << 30},
			{PID: 7, User: "bob", Command: "jupyter", MemUsed: 1 << 30},
			{PID: 8, MemUsed: 1 << 20},
			{PID: 9, MemUsed: 1 << 20},
		},
	}
}

func TestNotifyFormats(t *testing.T) {
	resolved := leak()
	resolved.Status, resolved.EndsAt, resolved.At = notifier.StatusResolved, at.Add(18*time.Minute+5*time.Second), at.Add(18*time.Minute+5*time.Second)
	resolved.Value, resolved.ValueText = 0, "0 B"
	resolved.Summary, resolved.FiringSummary = "GPU 0 on node1: memory.used is 0 B now, under 1 GiB", "GPU 0 memory keeps growing"
	resolved.Exit = &notifier.Exit{At: resolved.At, MemoryPercent: 99.2, OOMLikely: true,
		Text: "pid 4242 (alice, python train.py) exited with the GPU at 99.2% — a CUDA out-of-memory is likely"}
	cooled := hot()
	cooled.Status, cooled.EndsAt, cooled.At = notifier.StatusResolved, at.Add(20*time.Minute), at.Add(20*time.Minute)
	cooled.Value, cooled.ValueText = 79, "79 C"
	cooled.Summary, cooled.FiringSummary = "GPU 1 on node1: temperature is 79 C now, under 80 C", "GPU 1 at 88 C on node1"
	repeat := leak()
	repeat.Repeat, repeat.TimeToFull = true, notifier.Float(math.NaN())
	lost := notifier.Alert{At: at, Name: "GPULost", Status: notifier.StatusFiring, Severity: "critical",
		Host: "node1", GPU: 3, GPUName: "NVIDIA H100 80GB HBM3", Value: 65, ValueText: "1m5s",
		TimeToFull: notifier.Float(math.NaN()), Trend: notifier.Float(math.NaN()), StartsAt: at,
		Summary: "GPU 3 on node1 stopped reporting", LastReport: at.Add(-65 * time.Second),
		Processes: []gpu.Process{{PID: 5150, User: "carol", Command: "python eval.py", MemUsed: 30 << 30}}}
	band := hot() // fired at 83 C, 86 C a minute before made temperature > 85 true
	band.ValueAt, band.Value, band.ValueText, band.NowText = at.Add(-time.Minute), 86, "86 C", "83 C"
	band.Summary = "GPU 1 at 86 C on node1"
	soon := leak() // the value is the time to full, said once
	soon.Name, soon.Severity, soon.Summary, soon.Processes = "GPUOutOfMemorySoon", "critical", "GPU 0 will run out of memory in 12m", nil
	soon.Value, soon.ValueText, soon.ValueExpr, soon.TrendText = 720, "12m0s", "time_to_full(memory.used, 40m)", "+1.31 GiB/min"
	var buf bytes.Buffer
	n := New(&buf, nil)
	retry, err := n.Notify(context.Background(), &notifier.Notification{Alerts: []notifier.Alert{leak(), resolved, cooled, repeat, lost, band, soon}})
	if err != nil || retry {
		t.Fatalf("Notify: retry %v err %v", retry, err)
	}
	want := `2026-11-29 09:41:05 UTC  FIRING   GPUMemoryLeak [warning] node1 GPU 0 (NVIDIA H100 80GB HBM3)
    GPU 0 memory keeps growing
    value 21.8 MiB/s · trend +1.31 GiB/min · full in 12m0s (around 09:53)
    pid 4242 alice  60 GiB  python train.py  (docker:3f2a9c1b7e4d)
    pid 7 bob  1 GiB  jupyter
    pid 8 -  1 MiB  -
    … and 1 more processes
2026-11-29 09:59:10 UTC  RESOLVED GPUMemoryLeak [warning] node1 GPU 0 (NVIDIA H100 80GB HBM3)
    GPU 0 on node1: memory.used is 0 B now, under 1 GiB
    pid 4242 (alice, python train.py) exited with the GPU at 99.2% — a CUDA out-of-memory is likely
    resolved after 18m5s
2026-11-29 10:01:05 UTC  RESOLVED GPUHot [critical] node1 GPU 1 (NVIDIA H100 80GB HBM3)
    GPU 1 on node1: temperature is 79 C now, under 80 C
    resolved after 20m0s
2026-11-29 09:41:05 UTC  STILL FIRING GPUMemoryLeak [warning] node1 GPU 0 (NVIDIA H100 80GB HBM3)
    GPU 0 memory keeps growing
    value 21.8 MiB/s · trend +1.31 GiB/min
    pid 4242 alice  60 GiB  python train.py  (docker:3f2a9c1b7e4d)
    pid 7 bob  1 GiB  jupyter
    pid 8 -  1 MiB  -
    … and 1 more processes
2026-11-29 09:41:05 UTC  FIRING   GPULost [critical] node1 GPU 3 (NVIDIA H100 80GB HBM3)
    GPU 3 on node1 stopped reporting
    value 1m5s · no report since 09:40:00
    last known processes:
    pid 5150 carol  30 GiB  python eval.py
2026-11-29 09:41:05 UTC  FIRING   GPUHot [critical] node1 GPU 1 (NVIDIA H100 80GB HBM3)
    GPU 1 at 86 C on node1
    value 86 C at 09:40:05 (now 83 C)
2026-11-29 09:41:05 UTC  FIRING   GPUOutOfMemorySoon [critical] node1 GPU 0 (NVIDIA H100 80GB HBM3)
    GPU 0 will run out of memory in 12m
    value 12m0s (full around 09:53) · trend +1.31 GiB/min
`
	if got := buf.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func hot() notifier.Alert {
	return notifier.Alert{At: at, Name: "GPUHot", Status: notifier.StatusFiring, Severity: "critical",
		Host: "node1", GPU: 1, GPUName: "NVIDIA H100 80GB HBM3", Value: 88, ValueText: "88 C",
		Trend: notifier.Float(math.NaN()), TimeToFull: notifier.Float(math.NaN()), StartsAt: at,
		Summary: "GPU 1 at 88 C on node1"}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestNotifyReportsWriteErrorsWithoutRetry(t *testing.T) {
	retry, err := New(failingWriter{}, time.UTC).Notify(context.Background(), &notifier.Notification{Alerts: []notifier.Alert{leak()}})
	if err == nil || retry {
		t.Errorf("got retry %v err %v, want the write error and no retry", retry, err)
	}
}

func TestNotifyDigest(t *testing.T) {
	tests := []struct {
		name    string
		m       *notifier.Notification
		want    string
		wantErr bool
	}{
		{"title and text", &notifier.Notification{Status: notifier.StatusDigest, Digest: &notifier.Digest{
			Name: "daily", Title: "GPU usage on node1", Markdown: "*not this*",
			Text: "GPU 0  avg 61%\nalice 20.5 GPU-hours\n"}},
			"GPU usage on node1\n==================\nGPU 0  avg 61%\nalice 20.5 GPU-hours\n\n", false},
		{"no title", &notifier.Notification{Status: notifier.StatusDigest, Digest: &notifier.Digest{Name: "daily", Text: "x"}},
			"gpuwatch digest daily\n=====================\nx\n\n", false},
		{"no digest", &notifier.Notification{Status: notifier.StatusDigest}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			retry, err := New(&buf, nil).Notify(context.Background(), tt.m)
			if retry || (err != nil) != tt.wantErr {
				t.Fatalf("got retry=%v err %v, want retry=false and error %v", retry, err, tt.wantErr)
			}
			if got := buf.String(); got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestAlertNotAboutAGPU: the console leaves the GPU out of an alert with
// GPU -1 (a hub's GPUWatchSourceDown).
func TestAlertNotAboutAGPU(t *testing.T) {
	for _, status := range []notifier.Status{notifier.StatusFiring, notifier.StatusResolved} {
		var b strings.Builder
		Format(&b, &notifiertest.SourceDown(status).Alerts[0], time.UTC)
		want := "GPUWatchSourceDown [critical] hub\n"
		if got := b.String(); notifiertest.NamesAGPU(got) || !strings.Contains(got, want) {
			t.Errorf("%s: got\n%s\nwant a first line ending %q", status, got, want)
		}
	}
}
