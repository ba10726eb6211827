package chart

import (
	"fmt"
	"math"
	"time"
)

// fixedStart is the fixtures' clock: a Monday afternoon.
var fixedStart = time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC)

// paris is a zone with a name and an abbreviation that differ.
var paris = mustZone("Europe/Paris")

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// series makes a minute series of n points from fixedStart by f.
func series(n int, f func(i int) float64) Series {
	s := Series{Start: fixedStart, Step: time.Minute, Values: make(Values, n)}
	for i := range s.Values {
		s.Values[i] = f(i)
	}
	return s
}

// leakAlert is a job leaking 300 MiB a minute on an 80 GB GPU.
func leakAlert() *Alert {
	const gib = 1 << 30
	mem := series(90, func(i int) float64 {
		switch {
		case i < 20:
			return math.NaN() // before the job, a logger that was off
		case i < 25:
			return 2 * gib
		}
		return 12*gib + float64(i-25)*300*(1<<20) + 400*(1<<20)*math.Sin(float64(i))
	})
	return &Alert{Kind: KindMemory, Alert: "GPUMemoryLeak", Status: "firing", Host: "node1", GPU: 0,
		GPUName: "NVIDIA H100 80GB HBM3", Holder: "pid 4242 · alice · python train.py --epochs 90",
		At: mem.End(), FiredAt: mem.End(), Memory: mem, Ceiling: 79.1 * gib, Growth: 300 * (1 << 20) / 60.0}
}

// hotAlert is a GPU whose fan failed.
func hotAlert() *Alert {
	temp := series(60, func(i int) float64 { return 62 + float64(max(0, i-20)) + 2*math.Sin(float64(i)/3) })
	return &Alert{Kind: KindTemperature, Alert: "GPUHot", Status: "firing", Host: "node1", GPU: 2, GPUName: "NVIDIA A100-SXM4-40GB",
		At: temp.End(), FiredAt: fixedStart.Add(48 * time.Minute), Temperature: temp, Above: 85, Below: 80}
}

// idleAlert is a notebook holding 30 GiB and computing nothing.
func idleAlert() *Alert {
	const gib = 1 << 30
	util := series(90, func(i int) float64 {
		if i < 30 {
			return 70 + 20*math.Sin(float64(i))
		}
		return 0
	})
	mem := series(90, func(int) float64 { return 30 * gib })
	return &Alert{Kind: KindIdle, Alert: "GPUIdleButHeld", Status: "firing", Host: "node2", GPU: 1, Holder: "pid 9001 · bob · jupyter-lab",
		At: mem.End(), FiredAt: mem.End(), Memory: mem, Utilization: util, Ceiling: 39.5 * gib}
}

// lostAlert is a GPU that fell off the bus after a busy hour.
func lostAlert() *Alert {
	const gib = 1 << 30
	n := 50
	mem := series(70, func(i int) float64 {
		if i >= n {
			return math.NaN()
		}
		return 20 * gib
	})
	util := series(70, func(i int) float64 {
		if i >= n {
			return math.NaN()
		}
		return 95
	})
	return &Alert{Kind: KindLost, Alert: "GPULost", Status: "firing", Host: "node3", GPU: 5, At: mem.End(),
		FiredAt: mem.End(), LastReport: mem.At(n - 1), Memory: mem, Utilization: util, Ceiling: 79 * gib}
}

// resolvedLeak is the leak's end: the job died at 99%.
func resolvedLeak() *Alert {
	a := leakAlert()
	const gib = 1 << 30
	fired := a.FiredAt
	for i := 0; i < 30; i++ {
		a.Memory.Values = append(a.Memory.Values, math.Min(a.Memory.Values[len(a.Memory.Values)-1]+1.6*gib, 78.5*gib))
	}
	a.Memory.Values = append(a.Memory.Values, 0.5*gib, 0.5*gib)
	a.Status, a.At, a.FiredAt, a.ResolvedAt = "resolved", a.Memory.End(), fired, a.Memory.End()
	a.Ending = "pid 4242 (alice, python train.py) exited with the GPU at 99% — a CUDA out-of-memory is likely"
	return a
}

// fourGPUs is six hours of a four-GPU host.
func fourGPUs() *History {
	h := &History{Title: "node1 · last 6 h", From: fixedStart, To: fixedStart.Add(6 * time.Hour)}
	for g := range 4 {
		n := 360
		h.GPUs = append(h.GPUs, GPUHistory{Host: "node1", Index: g,
			MemoryPercent: series(n, func(i int) float64 { return math.Min(100, float64(10*g)+float64(i)/float64(6+g)) }),
			Utilization:   series(n, func(i int) float64 { return math.Max(0, 60+30*math.Sin(float64(i+40*g)/25)) }),
			Temperature:   series(n, func(i int) float64 { return 45 + float64(5*g) + 10*math.Sin(float64(i)/40) }),
		})
	}
	h.Alerts = []AlertSpan{{Alert: "GPUMemoryNearFull", Host: "node1", GPU: 3, FiredAt: fixedStart.Add(4 * time.Hour), ResolvedAt: fixedStart.Add(5 * time.Hour)}}
	return h
}

// busyDay is a day of a four-GPU host used by three people.
func busyDay() *Day {
	d := &Day{Title: "GPU usage on node1", Subtitle: []string{"Mon 30 Nov 09:00 – Tue 1 Dec 09:00"}, Start: fixedStart}
	for g := range 4 {
		u := make([]float64, 24)
		for h := range u {
			switch {
			case g == 3 && h < 6:
				u[h] = math.NaN()
			case (h+g*3)%9 < 5:
				u[h] = float64(40 + 15*g + h%7*5)
			default:
				u[h] = float64(h % 3)
			}
		}
		d.GPUs = append(d.GPUs, DayGPU{Label: fmt.Sprintf("GPU %d", g), Utilization: u, HeldHours: float64(20 - 3*g), IdleHeldHours: float64(2 + 2*g)})
	}
	d.Users = []UserHours{{"alice", 31.5}, {"bob", 18}, {"carol", 7.25}}
	return d
}

// node is six hours of a host of n GPUs at work: trainers near full,
// notebooks holding memory idle, free GPUs, each GPU with its own rhythm.
func node(n int) *History {
	h := &History{Title: fmt.Sprintf("node1 · last 6 h · %d GPUs", n), From: fixedStart, To: fixedStart.Add(6 * time.Hour)}
	for g := range n {
		kind := g % 4
		h.GPUs = append(h.GPUs, GPUHistory{Host: "node1", Index: g, Name: "NVIDIA H100 80GB HBM3",
			MemoryPercent: series(360, func(i int) float64 {
				switch kind {
				case 0: // a trainer
					return math.Min(100, 70+float64(g)+5*math.Sin(float64(i+17*g)/30))
				case 1: // a notebook that holds memory
					return 35 + float64(g)
				case 2: // free, then a job
					if i < 120+10*g {
						return 0.6
					}
					return math.Min(95, 20+float64(i-120-10*g)/3)
				}
				return 1 + float64(i%90)/3 // batch jobs, one after another
			}),
			Utilization: series(360, func(i int) float64 {
				switch kind {
				case 0:
					return math.Max(0, 88+10*math.Sin(float64(i+11*g)/7))
				case 1:
					if (i/40+g)%5 == 0 {
						return 45
					}
					return 0
				case 2:
					if i < 120+10*g {
						return 0
					}
					return 60 + 30*math.Sin(float64(i)/20)
				}
				return float64((i % 90) * 90 / 90)
			}),
			Temperature: series(360, func(i int) float64 { return 40 + float64(kind*9) + 6*math.Sin(float64(i+g*13)/45) }),
		})
	}
	return h
}

// eightGPUs is an eight-GPU node whose GPU 5 leaks: two alerts at times
// eleven minutes apart, on one GPU.
func eightGPUs() *History {
	h := node(8)
	h.Alerts = []AlertSpan{
		{Alert: "GPUMemoryLeak", Host: "node1", GPU: 5, FiredAt: fixedStart.Add(4*time.Hour + 30*time.Minute), ResolvedAt: fixedStart.Add(5*time.Hour + 20*time.Minute)},
		{Alert: "GPUOutOfMemorySoon", Host: "node1", GPU: 5, FiredAt: fixedStart.Add(4*time.Hour + 41*time.Minute), ResolvedAt: fixedStart.Add(5*time.Hour + 20*time.Minute)},
	}
	return h
}

// sixteenGPUs is a sixteen-GPU node with two alerts nine minutes apart on
// two GPUs.
func sixteenGPUs() *History {
	h := node(16)
	h.Alerts = []AlertSpan{
		{Alert: "GPUHot", Host: "node1", GPU: 3, FiredAt: fixedStart.Add(3*time.Hour + 10*time.Minute)},
		{Alert: "GPUIdleButHeld", Host: "node1", GPU: 13, FiredAt: fixedStart.Add(3*time.Hour + 19*time.Minute), ResolvedAt: fixedStart.Add(5 * time.Hour)},
	}
	return h
}
