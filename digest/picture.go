package digest

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
)

// Pictures draws a window's hours as one picture per host: utilization of
// each GPU by the hour, the hours memory was held (and held idle), and
// the GPU-hours of each user. Hosts are in name order.
func Pictures(gpus []GPUHour, users []UserHour, o Options) []*chart.Day {
	if o.Location == nil {
		o.Location = time.UTC
	}
	from, to := o.From, o.To
	if from.IsZero() || to.IsZero() {
		from, to = span(gpus)
	}
	from = from.Truncate(time.Hour)
	hours := max(int(math.Ceil(to.Sub(from).Hours())), 1)
	byHost := map[string]map[int]*chart.DayGPU{}
	for _, h := range gpus {
		col := int(h.Hour.Sub(from) / time.Hour)
		if col < 0 || col >= hours {
			continue
		}
		host := byHost[h.Host]
		if host == nil {
			host = map[int]*chart.DayGPU{}
			byHost[h.Host] = host
		}
		g := host[h.GPU]
		if g == nil {
			g = &chart.DayGPU{Label: fmt.Sprintf("GPU %d", h.GPU), Utilization: make([]float64, hours)}
			for i := range g.Utilization {
				g.Utilization[i] = math.NaN()
			}
			host[h.GPU] = g
		}
		if logged := h.Seconds - h.UtilMissingSeconds; logged > 0 {
			g.Utilization[col] = 100 * h.UtilSeconds / logged // an hour without a utilization logged stays a gap
		}
		g.HeldHours += h.HeldSeconds / 3600
		g.IdleHeldHours += h.IdleHeldSeconds / 3600
	}
	userHours := map[string]map[string]float64{} // host → user → GPU-hours
	for _, u := range users {
		if u.Hour.Before(from) || !u.Hour.Before(from.Add(time.Duration(hours)*time.Hour)) {
			continue
		}
		if userHours[u.Host] == nil {
			userHours[u.Host] = map[string]float64{}
		}
		userHours[u.Host][cmp.Or(u.User, unknownUser)] += u.GPUSeconds / 3600
	}
	var out []*chart.Day
	for _, host := range sortedKeys(byHost) {
		d := &chart.Day{Title: "GPU usage on " + cmp.Or(host, o.Host, "this host"), Start: from,
			Subtitle: []string{fmt.Sprintf("%s – %s", from.In(o.Location).Format("Mon 2 Jan 15:04"), to.In(o.Location).Format("Mon 2 Jan 15:04"))}}
		for _, index := range sortedKeys(byHost[host]) {
			d.GPUs = append(d.GPUs, *byHost[host][index])
		}
		// User hours of records that name no host belong to a lone host.
		hoursOf := userHours[host]
		if len(byHost) == 1 && userHours[""] != nil && host != "" {
			hoursOf = mergeHours(hoursOf, userHours[""])
		}
		for user, h := range hoursOf {
			d.Users = append(d.Users, chart.UserHours{User: user, GPUHours: h})
		}
		slices.SortFunc(d.Users, func(a, b chart.UserHours) int {
			return cmp.Or(cmp.Compare(b.GPUHours, a.GPUHours), cmp.Compare(a.User, b.User))
		})
		out = append(out, d)
	}
	return out
}

func mergeHours(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range a {
		out[k] += v
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
