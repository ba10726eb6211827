package cli_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	root "github.com/gpuwatch/gpuwatch"
	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
	"github.com/gpuwatch/gpuwatch/rules"
)

// reading is one sample of one GPU, as a text about it is checked against.
type reading struct {
	at                  time.Time
	memUsed, memPercent float64 // bytes; percent of what jobs can allocate
	util, temp          float64
	health              gpu.Health
}

// readings are a GPU's samples, oldest first.
type readings []reading

// within returns the samples in (from, until].
func (rs readings) within(from, until time.Time) readings {
	lo, _ := slices.BinarySearchFunc(rs, from, func(r reading, t time.Time) int { return r.at.Compare(t.Add(1)) })
	hi, _ := slices.BinarySearchFunc(rs, until, func(r reading, t time.Time) int { return r.at.Compare(t.Add(1)) })
	return rs[lo:hi]
}

// textCheck checks the summary of a firing of one rule against the
// samples of its GPU; it returns what is not so, or "".
type textCheck struct {
	summary *regexp.Regexp
	check   func(tr *rules.Transition, m []string, rs readings) string
}

// idleUtil is the utilization below which the example rules call a GPU idle.
const idleUtil = 5

// label matches a GPU as a summary names it (gpu.Label): "GPU 0", or
// "GPU 0 · MIG 3 (1g.10gb)".
const label = `GPU \d+(?: · MIG \d+ \([^)]+\))?`

// seriesKey is the key of the samples a transition speaks of: its GPU's
// (or MIG instance's) UUID, with the PID of the process of a rule that
// runs per process.
func seriesKey(uuid string, p *gpu.Process) string {
	if p != nil {
		return uuid + "/pid/" + strconv.Itoa(p.PID)
	}
	return uuid
}

// textChecks say, per rule of the example config, what its summary claims
// and how the samples show it.
func textChecks() map[string]textCheck {
	return map[string]textCheck{
		// "computed nothing": no sample at idleUtil or more in the span it
		// names, and it holds what it says.
		"GPUIdleButHeld": {regexp.MustCompile(`^` + label + ` holds (.+) but has computed nothing for (\S+)$`), func(tr *rules.Transition, m []string, rs readings) string {
			held, _, ok1 := parseQuantity(m[1])
			span, _, ok2 := parseQuantity(m[2])
			if !ok1 || !ok2 || span <= 0 {
				return "names no memory or no span"
			}
			for _, r := range rs.within(spanStart(tr, span), tr.ValueAt) {
				if r.util >= idleUtil {
					return fmt.Sprintf("it computed %.0f%% at %s, within the %s it names", r.util, r.at.Format(time.TimeOnly), m[2])
				}
			}
			if now := rs.within(tr.ValueAt.Add(-time.Second), tr.ValueAt); len(now) == 0 || now[0].memUsed < held*0.99 {
				return "it does not hold what it says"
			}
			return ""
		}},
		// "nearly full and will run out": above 80 % and memory rose in
		// the last minutes.
		"GPUMemoryFillingFast": {regexp.MustCompile(`^` + label + ` is nearly full and will run out of memory in (\S+) at this rate$`), func(tr *rules.Transition, m []string, rs readings) string {
			last := rs.within(tr.At.Add(-time.Minute), tr.At)
			before := rs.within(tr.At.Add(-4*time.Minute), tr.At.Add(-3*time.Minute))
			if len(last) == 0 || len(before) == 0 {
				return "no samples around it"
			}
			if hi, lo := maxOf(last, memUsed), minOf(before, memUsed); !(hi > lo) {
				return fmt.Sprintf("memory did not rise in the last minutes (%.0f MiB now, %.0f MiB 3 minutes before)", hi/(1<<20), lo/(1<<20))
			}
			if p := last[len(last)-1].memPercent; !(p > 80) {
				return fmt.Sprintf("it is %.1f%% full, not nearly full", p)
			}
			return ""
		}},
		// "keeps growing", "will run out at this rate": the floor of memory
		// is higher now than in the hours it looked at.
		"GPUMemoryLeak":      {regexp.MustCompile(`^` + label + ` memory keeps growing: full in (\S+)$`), grew},
		"GPUOutOfMemorySoon": {regexp.MustCompile(`^` + label + ` will run out of memory in (\S+) at this rate$`), grew},
		// "<holder> (<user>) keeps growing": the process it names is the
		// alert's, and its own memory's floor grew.
		"ProcessMemoryLeak": {regexp.MustCompile(`^(.+) \((\S*)\) on ` + label + ` keeps growing: the GPU is full in (\S+)$`), func(tr *rules.Transition, m []string, rs readings) string {
			if p := tr.Process; p == nil || m[1] != p.Holder() || m[2] != p.User {
				return fmt.Sprintf("it is not the alert's process (%+v)", tr.Process)
			}
			return grew(tr, m, rs)
		}},
		// "up to X, above 85 C within every 2 minutes for D".
		"GPUHot": {regexp.MustCompile(`^` + label + ` on \S+ runs hot: up to (\S+ C), above 85 C within every 2 minutes for (\S+)$`), func(tr *rules.Transition, m []string, rs readings) string {
			peak, _, ok1 := parseQuantity(m[1])
			span, _, ok2 := parseQuantity(m[2])
			if !ok1 || !ok2 {
				return "names no temperature or no span"
			}
			if got := maxOf(rs.within(tr.ValueAt.Add(-2*time.Minute), tr.ValueAt), temp); got != peak {
				return fmt.Sprintf("the last 2 minutes reached %.0f C", got)
			}
			for end := spanStart(tr, span); !end.After(tr.ValueAt); end = end.Add(5 * time.Second) {
				if maxOf(rs.within(end.Add(-2*time.Minute), end), temp) <= 85 {
					return fmt.Sprintf("nothing above 85 C in the 2 minutes to %s", end.Format(time.TimeOnly))
				}
			}
			return ""
		}},
		// "died of CUDA out-of-memory N times in the last hour": N times the
		// GPU went from 95 % full or more to free in the last hour.
		"GPUOutOfMemoryLoop": {regexp.MustCompile(`^The job on ` + label + ` died of CUDA out-of-memory (\d+) times in the last hour, started again each time$`), func(tr *rules.Transition, m []string, rs readings) string {
			n, _ := strconv.Atoi(m[1])
			last := rs.within(tr.At.Add(-time.Hour-time.Minute), tr.At)
			deaths := 0
			for i := 1; i < len(last); i++ {
				if last[i-1].memPercent >= 95 && last[i].memUsed < 1<<30 && last[i].at.After(tr.At.Add(-time.Hour)) {
					deaths++
				}
			}
			if deaths < n {
				return fmt.Sprintf("the GPU went from nearly full to free %d times in the last hour", deaths)
			}
			return ""
		}},
		"GPUMemoryNearFull": {regexp.MustCompile(`^` + label + ` memory at (\S+%) on \S+$`), func(tr *rules.Transition, m []string, rs readings) string {
			pct, _, _ := parseQuantity(m[1])
			if got := minOf(rs.within(tr.ValueAt.Add(-90*time.Second), tr.ValueAt), memPercent); got < pct-0.05 {
				return fmt.Sprintf("memory was at %.1f%% within the 90 s before", got)
			}
			return ""
		}},
		"GPULost": {regexp.MustCompile(`^` + label + ` on \S+ stopped reporting$`), func(tr *rules.Transition, _ []string, rs readings) string {
			if len(rs.within(tr.At.Add(-time.Minute), tr.At)) > 0 {
				return "it reported within the last minute"
			}
			return ""
		}},
		"GPUMemoryUncorrectable": {regexp.MustCompile(`^` + label + ` on \S+ has had uncorrectable memory errors \((\d+) since the driver loaded\): drain it and reset it \(nvidia-smi -r -i \d+\)$`),
			func(_ *rules.Transition, m []string, rs readings) string {
				return lastHealth(rs, gpu.ECCUncorrectedVolatile, m[1])
			}},
		"GPURowRemapFailed": {regexp.MustCompile(`^` + label + ` on \S+ failed to remap a damaged memory row: drain it and call NVIDIA support to replace it$`),
			func(_ *rules.Transition, _ []string, rs readings) string {
				return lastHealth(rs, gpu.RowRemapFailed, "1")
			}},
		"GPURowRemapPending": {regexp.MustCompile(`^` + label + ` on \S+ has a row remap pending: reset it \(nvidia-smi -r -i \d+\) when its job ends$`),
			func(_ *rules.Transition, _ []string, rs readings) string {
				return lastHealth(rs, gpu.RowRemapPending, "1")
			}},
		"GPUHardwareSlowdown": {regexp.MustCompile(`^` + label + ` on \S+ was slowed down in hardware for (\S+) of the last 5 minutes: check its cooling and the server's power supplies$`),
			func(tr *rules.Transition, _ []string, rs readings) string {
				for _, r := range rs.within(tr.At.Add(-5*time.Minute), tr.At) {
					if e, ok := r.health.ClockEvents(); ok && e.Hardware() {
						return ""
					}
				}
				return "no sample of the last 5 minutes has a hardware slowdown"
			}},
		"GPUPCIeLinkDegraded": {regexp.MustCompile(`^` + label + ` on \S+ runs its PCIe link (\d+) lanes narrower than it can: reseat the GPU, check its riser and slot$`),
			func(_ *rules.Transition, m []string, rs readings) string {
				return lastHealth(rs, gpu.PCIeLinkWidthMax, fmt.Sprint(rs[len(rs)-1].health.Value(gpu.PCIeLinkWidth)+mustFloat(m[1])))
			}},
		"GPUNVLinkErrors": {regexp.MustCompile(`^` + label + ` on \S+ has NVLink errors rising or a link down \(([^)]+)\): drain the node and have the link checked \(nvidia-smi nvlink -e\)$`),
			func(tr *rules.Transition, _ []string, rs readings) string {
				last := rs.within(tr.At.Add(-5*time.Minute), tr.At)
				if len(last) > 1 && last[len(last)-1].health.Value(gpu.NVLinkCRCErrors) > last[0].health.Value(gpu.NVLinkCRCErrors) ||
					rs[len(rs)-1].health.Value(gpu.NVLinkLinksDown) > 0 {
					return ""
				}
				return "its NVLink errors did not rise in the last 5 minutes, and no link is down"
			}},
		"GPUFanStopped": {regexp.MustCompile(`^` + label + ` on \S+ is warm with its fan at (\S+): free or replace the fan before the GPU overheats$`),
			func(_ *rules.Transition, _ []string, rs readings) string {
				if v := rs[len(rs)-1].health.Value(gpu.FanSpeed); !(v < 5) {
					return fmt.Sprintf("its fan is at %v%%", v)
				}
				return ""
			}},
		"GPUHardwareXID": {regexp.MustCompile(`^` + label + ` on \S+: XID (\d+): .+$`),
			func(_ *rules.Transition, m []string, _ readings) string {
				if f := gpu.XIDFaultOf(uint64(mustFloat(m[1]))); f != gpu.FaultHardware {
					return "the catalogue puts XID " + m[1] + " on the " + f.String()
				}
				return ""
			}},
		"GPUApplicationXIDs": {regexp.MustCompile(`^` + label + ` on \S+: (\d+) application XIDs in 10 minutes(?: from .+)?: the job crashes on its own errors; its owner should fix it \(the GPU is fine\)$`),
			func(_ *rules.Transition, m []string, _ readings) string {
				if mustFloat(m[1]) < 3 {
					return "fewer than 3 XIDs fire it"
				}
				return ""
			}},
	}
}

// lastHealth checks that the GPU's latest health reading r reads want.
func lastHealth(rs readings, r gpu.HealthReading, want string) string {
	if len(rs) == 0 {
		return "no sample"
	}
	if got := fmt.Sprint(rs[len(rs)-1].health.Value(r)); got != want {
		return fmt.Sprintf("%s is %s", r, got)
	}
	return ""
}

// mustFloat reads a number a summary's pattern matched.
func mustFloat(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// spanStart is where the span of seconds a summary names, ending when its
// value was read, begins: the summary writes it to the second, samples
// come a few milliseconds late, so the span counts from a second later.
func spanStart(tr *rules.Transition, span float64) time.Time {
	return tr.ValueAt.Add(time.Second - time.Duration(span*float64(time.Second)))
}

// grew checks a leak's "keeps growing": the floor of memory over the last
// five minutes is above the lowest it was at from six hours to 20 minutes
// before (the leak rules look at 40 minutes and longer, once half of 40
// minutes is in).
func grew(tr *rules.Transition, _ []string, rs readings) string {
	now := minOf(rs.within(tr.At.Add(-5*time.Minute), tr.At), memUsed)
	then := minOf(rs.within(tr.At.Add(-6*time.Hour), tr.At.Add(-20*time.Minute)), memUsed)
	if !(now > then) {
		return fmt.Sprintf("memory did not grow: %.0f MiB now, at least %.0f MiB before", now/(1<<20), then/(1<<20))
	}
	return ""
}

func memUsed(r reading) float64    { return r.memUsed }
func memPercent(r reading) float64 { return r.memPercent }
func temp(r reading) float64       { return r.temp }

func maxOf(rs readings, f func(reading) float64) float64 {
	out := math.Inf(-1)
	for _, r := range rs {
		if v := f(r); !math.IsNaN(v) {
			out = max(out, v)
		}
	}
	return out
}

func minOf(rs readings, f func(reading) float64) float64 {
	out := math.Inf(1)
	for _, r := range rs {
		if v := f(r); !math.IsNaN(v) {
			out = min(out, v)
		}
	}
	return out
}

// TestAlertTextsAreTrue plays every scenario of the simulator (two seeds
// each, one of those that run for days) through the example rules and checks every firing's and reminder's
// summary against the samples it speaks of: "computed nothing for 45m" is
// no sample at 5 % or more in those 45 minutes, "nearly full and will run
// out" is memory that rose in the last minutes, "died of CUDA
// out-of-memory 3 times" is three deaths in the last hour, and so on. A
// summary of a rule without a check here fails the test.
func TestAlertTextsAreTrue(t *testing.T) {
	if testing.Short() {
		t.Skip("plays every scenario of the simulator")
	}
	cfg, err := config.Parse("config.example.yaml", root.ExampleConfig, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	checks := textChecks()
	for _, scenario := range sim.Scenarios() {
		seeds := []uint64{1, 2}
		if slices.Contains(sim.DayScenarios(), scenario) {
			seeds = seeds[:1] // days of samples
		}
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed%d", scenario, seed), func(t *testing.T) {
				t.Parallel()
				src, err := sim.New(sim.Config{Scenario: scenario, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				engine := rules.NewEngine(cfg.Rules, rules.Options{RepeatInterval: 4 * time.Hour})
				samples := map[string]readings{} // by seriesKey
				for {
					s, err := src.Next(context.Background())
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					for i := range s.Devices {
						d := &s.Devices[i]
						k := seriesKey(d.UUID, nil)
						samples[k] = append(samples[k], readingOf(s.Time, d))
						for _, p := range d.Processes {
							k := seriesKey(d.UUID, &p)
							samples[k] = append(samples[k], reading{at: s.Time, memUsed: float64(p.MemUsed), memPercent: math.NaN(), util: math.NaN(), temp: math.NaN()})
						}
					}
					for _, tr := range engine.Eval(s) {
						if tr.Resolved() {
							continue
						}
						c, ok := checks[tr.Alert]
						if !ok {
							t.Fatalf("%s fired, and this test does not know how to check what it says", tr.Alert)
						}
						m := c.summary.FindStringSubmatch(tr.Summary)
						if m == nil {
							t.Errorf("%s on %s at %s: %q is not what the rule says (%s)", tr.Alert, tr.UUID, tr.At.Format(time.DateTime), tr.Summary, c.summary)
							continue
						}
						if bad := c.check(&tr, m, samples[seriesKey(tr.UUID, tr.Process)]); bad != "" {
							t.Errorf("%s on %s at %s says %q, but %s", tr.Alert, seriesKey(tr.UUID, tr.Process), tr.At.Format(time.DateTime), tr.Summary, bad)
						}
					}
				}
			})
		}
	}
}

// readingOf is d's sample at at.
func readingOf(at time.Time, d *gpu.Device) reading {
	r := reading{at: at, memUsed: math.NaN(), memPercent: math.NaN(), util: d.UtilGPU, temp: d.TempC, health: d.Health}
	if d.MemUsedKnown() {
		r.memUsed = float64(d.MemUsed)
	}
	if d.MemKnown() {
		r.memPercent = 100 * float64(d.MemUsed) / float64(d.MemAllocatable())
	}
	return r
}
