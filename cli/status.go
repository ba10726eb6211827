package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/plural"
	"github.com/gpuwatch/gpuwatch/rules"
)

func statusCommand(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "status", "[--config FILE] [--server ADDR]", `
One look at the GPUs now: memory (with a bar), utilization, temperature,
power, and the processes on each GPU with their users and commands, and the
active alerts when gpuwatch run is running here. Reads NVML, or with
--config or --server the last sample and alerts of the gpuwatch run
answering there (with the credentials its server section asks for), or,
when none runs, the source of --config (a sim source works without a GPU).`)
	api := serverFlagsFor(fs, "config file of the running gpuwatch, to ask it at its server.listen, or, when none runs, whose source to read (default: NVML on this machine)")
	args, err := parseFlags(env, fs, args)
	if err != nil {
		return err
	}
	if err := noArgs("status", args); err != nil {
		return err
	}
	logger, err := newLogger(env.Stderr, "warn")
	if err != nil {
		return err
	}
	c, err := api.client(env)
	if err != nil {
		return err
	}
	if *api.config == "" && *api.server == "" {
		s, err := openNVML(hostName(nil), nil, logger)
		if err != nil {
			return err
		}
		defer s.Close()
		snap, err := s.Sample(ctx, time.Now())
		if err != nil {
			return fmt.Errorf("sample: %w", err)
		}
		printStatus(env.Stdout, snap, env.Location)
		printDaemonAlerts(ctx, env, c)
		return nil
	}
	// The running daemon's view, when there is one: its last sample and
	// its alerts are of one moment (a simulation of its own here would
	// show another).
	view, err := daemonStatus(ctx, c)
	switch {
	case err == nil:
		for i, snap := range view.snapshots() {
			if i > 0 {
				fmt.Fprintln(env.Stdout)
			}
			printStatus(env.Stdout, snap, env.Location)
		}
		fmt.Fprintf(env.Stdout, "\n(the last sample of gpuwatch run at %s)\n", strings.TrimPrefix(strings.TrimPrefix(c.base, "http://"), "https://"))
		printAlerts(env, view.Alerts)
		return nil
	case *api.config == "": // --server names a daemon, which does not answer
		return err
	}
	cfg, err := loadConfigParts(*api.config, env, config.PartServer, config.PartHost, config.PartSource)
	if err != nil {
		return err
	}
	cfg.Source.Sim.Speed, cfg.Source.Replay.Speed = 0, 0
	src, err := openSource(cfg, env, logger)
	if err != nil {
		return err
	}
	defer src.Close()
	snap, err := src.Next(ctx)
	if err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	printStatus(env.Stdout, snap, env.Location)
	return nil
}

// statusView is what GET /api/v1/status answers.
type statusView daemon.StatusJSON

// daemonStatus asks the daemon for its last sample and alerts, waiting a
// second at most; an error when none answers, or it has no sample yet.
func daemonStatus(ctx context.Context, c *apiClient) (*statusView, error) {
	var view statusView
	if err := c.waiting(time.Second).do(ctx, "GET", "/api/v1/status", nil, &view); err != nil {
		return nil, err
	}
	if view.Time == nil {
		return nil, fmt.Errorf("gpuwatch at %s has not sampled the GPUs yet: try again in a few seconds", c.base)
	}
	return &view, nil
}

// snapshots turn the API's answer back into the snapshots it describes:
// the latest one, or, from a hub, the latest of every host.
func (v *statusView) snapshots() []*gpu.Snapshot {
	if len(v.Hosts) <= 1 {
		return []*gpu.Snapshot{snapshotOf(v.Host, *v.Time, v.GPUs)}
	}
	out := make([]*gpu.Snapshot, len(v.Hosts))
	for i, h := range v.Hosts {
		out[i] = snapshotOf(h.Host, h.Time, h.GPUs)
	}
	return out
}

// snapshotOf is a host's snapshot as the API shows it.
func snapshotOf(host string, at time.Time, gpus []daemon.GPUJSON) *gpu.Snapshot {
	s := &gpu.Snapshot{Host: host, Time: at}
	for _, g := range gpus {
		d := gpu.Device{Index: g.Index, UUID: g.UUID, Name: g.Name, MIGEnabled: g.MIGEnabled, MIG: g.MIG, UtilGPU: float64(g.UtilizationGPU),
			UtilMem: float64(g.UtilizationMemory), TempC: float64(g.TemperatureC), PowerW: float64(g.PowerW),
			PowerLimitW: float64(g.PowerLimitW), Processes: g.Processes}
		if g.MemoryUsedBytes != nil && g.MemoryTotalBytes != nil {
			d.MemUsed, d.MemTotal = *g.MemoryUsedBytes, *g.MemoryTotalBytes
		}
		s.Devices = append(s.Devices, d)
	}
	return s
}

// printDaemonAlerts lists the running daemon's pending and firing alerts;
// without a daemon to ask, it prints nothing: status works on its own.
func printDaemonAlerts(ctx context.Context, env *Env, c *apiClient) {
	var alerts []daemon.AlertJSON
	if err := c.waiting(time.Second).do(ctx, "GET", "/api/v1/alerts", nil, &alerts); err != nil {
		return
	}
	printAlerts(env, alerts)
}

// printAlerts lists a daemon's pending and firing alerts.
func printAlerts(env *Env, alerts []daemon.AlertJSON) {
	if len(alerts) == 0 {
		fmt.Fprintln(env.Stdout, "\nno active alerts")
		return
	}
	fmt.Fprintln(env.Stdout, "\nactive alerts:")
	for _, a := range alerts {
		where := gpu.Label(a.GPU, a.MIG)
		if a.Process != nil {
			where += ", " + a.Process.Holder()
		}
		switch {
		case a.GPU < 0: // not about a GPU: gpuwatch's own, such as GPUWatchSourceDown
			where = a.Host
		case a.Host != "":
			where = a.Host + " " + where
		}
		state := a.State
		if a.Silenced != nil && state == "firing" {
			state = "silenced"
		}
		fmt.Fprintf(env.Stdout, "  %-8s %s [%s] %s since %s: %s\n", strings.ToUpper(state), a.Alert, a.Severity, where,
			a.Since.In(env.Location).Format(timeLayout), a.ValueText)
		if s := a.Silenced; s != nil {
			by := s.CreatedBy
			if by == "" {
				by = "someone"
			}
			fmt.Fprintf(env.Stdout, "           silenced until %s by %s (silence %s)", s.EndsAt.In(env.Location).Format(timeLayout), by, s.ID)
			if s.Comment != "" {
				fmt.Fprintf(env.Stdout, ": %s", s.Comment)
			}
			fmt.Fprintln(env.Stdout)
		}
	}
}

// printStatus writes the status view of a snapshot: each GPU, and a GPU
// split into MIG instances with its instances under it, indented.
func printStatus(w io.Writer, s *gpu.Snapshot, loc *time.Location) {
	gpus, instances := 0, 0
	for i := range s.Devices {
		if s.Devices[i].MIG != nil {
			instances++
		} else {
			gpus++
		}
	}
	head := plural.Count(gpus, "GPU")
	if instances > 0 {
		head += " · " + plural.Count(instances, "MIG instance")
	}
	fmt.Fprintf(w, "%s · %s · %s\n", s.Host, s.Time.In(loc).Format(timeLayout), head)
	for i := range s.Devices {
		d := &s.Devices[i]
		if d.MIG != nil {
			printInstance(w, d)
			continue
		}
		fmt.Fprintf(w, "\n%s  %s  %s\n", d.Label(), d.Name, d.UUID)
		if d.MIGEnabled {
			fmt.Fprintf(w, "  MIG mode: memory and processes are its instances'\n")
			fmt.Fprintf(w, "  temp %s  power %s\n", orNA(d.TempC, "%.0f C"), powerText(d))
			continue
		}
		fmt.Fprintf(w, "  memory  %s %s\n", bar(d.MemUsedPercent(), 24), memoryText(d))
		fmt.Fprintf(w, "  util %s  mem util %s  temp %s  power %s\n",
			percentText(d.UtilGPU), percentText(d.UtilMem), orNA(d.TempC, "%.0f C"), powerText(d))
		printProcesses(w, d, "  ")
	}
}

// printInstance writes a MIG instance under its GPU: its label, memory,
// utilization and processes; the card's readings are the GPU's.
func printInstance(w io.Writer, d *gpu.Device) {
	fmt.Fprintf(w, "  %s  %s\n", d.Label(), d.UUID)
	fmt.Fprintf(w, "    memory  %s %s\n", bar(d.MemUsedPercent(), 20), memoryText(d))
	fmt.Fprintf(w, "    util %s  mem util %s\n", percentText(d.UtilGPU), percentText(d.UtilMem))
	printProcesses(w, d, "    ")
}

// printProcesses writes a device's five largest processes, indented.
func printProcesses(w io.Writer, d *gpu.Device, indent string) {
	procs := slices.Clone(d.Processes)
	slices.SortFunc(procs, func(a, b gpu.Process) int { return int(b.MemUsed>>20) - int(a.MemUsed>>20) })
	if len(procs) == 0 {
		fmt.Fprintln(w, indent+"no processes")
	}
	for j, p := range procs {
		if j == 5 {
			fmt.Fprintf(w, "%s… and %d more\n", indent, len(procs)-5)
			break
		}
		fmt.Fprintf(w, "%spid %-7d %-10s %10s  %s", indent, p.PID, orDash(p.Who()), bytesText(float64(p.MemUsed)), orDash(p.Command))
		if p.Container != "" {
			fmt.Fprintf(w, "  (%s)", p.Container)
		}
		fmt.Fprintln(w)
	}
}

func bar(percent float64, width int) string {
	if math.IsNaN(percent) {
		return "[" + strings.Repeat("?", width) + "]"
	}
	full := int(math.Round(min(max(percent, 0), 100) / 100 * float64(width)))
	return "[" + strings.Repeat("█", full) + strings.Repeat("░", width-full) + "]"
}

func memoryText(d *gpu.Device) string {
	if !d.MemKnown() {
		return "n/a"
	}
	return fmt.Sprintf("%s / %s (%.0f%%)", bytesText(float64(d.MemUsed)), bytesText(float64(d.MemTotal)), d.MemUsedPercent())
}

func powerText(d *gpu.Device) string {
	if math.IsNaN(d.PowerLimitW) {
		return orNA(d.PowerW, "%.0f W")
	}
	return orNA(d.PowerW, "%.0f W") + fmt.Sprintf(" / %.0f W", d.PowerLimitW)
}

func bytesText(v float64) string   { return rules.Dimension{Base: rules.Bytes}.Format(v) }
func percentText(v float64) string { return orNA(v, "%.0f%%") }
func orNA(v float64, f string) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf(f, v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
