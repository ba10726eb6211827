package digest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// Thresholds of the personal digest's notes.
const (
	// SmallJobUtil and SmallJobBytes: a job that used less of a large card
	// (at least LargeCardBytes) than both could run on a smaller GPU or a
	// MIG slice.
	SmallJobUtil   = 15       // percent
	SmallJobBytes  = 10 << 30 // bytes
	LargeCardBytes = 40 << 30
	// IdlePerDay is how long a day a GPU may sit held idle before the
	// digest suggests freeing it.
	IdlePerDay = 8 * time.Hour
	// MaxPersonalGPUs is how many GPUs a personal digest lists.
	MaxPersonalGPUs = 10
)

// Personal is one person's use of the GPUs over a window: the direct
// message of the personal digest.
type Personal struct {
	Name string `json:"name"` // the digest's name in the config
	// Person names whom it is about ("alice"); Users are the digest's
	// users that are theirs (Unix users, "NAMESPACE/POD").
	Person   string         `json:"person"`
	Users    []string       `json:"users"`
	From     time.Time      `json:"from"`
	To       time.Time      `json:"to"`
	Location *time.Location `json:"-"`
	// GPUHours is their share of the GPUs' time; HeldHours the time their
	// jobs held GPUs, AvgUtil the GPUs' utilization meanwhile (percent,
	// NaN when unknown) and IdleHeldHours how long they held memory on
	// GPUs that computed nothing.
	GPUHours      float64        `json:"gpu_hours"`
	HeldHours     float64        `json:"held_hours"`
	AvgUtil       notifier.Float `json:"avg_util"`
	IdleHeldHours float64        `json:"idle_held_hours"`
	// PeakMem is the most memory their jobs held on one GPU, CardMem that
	// GPU's size (0 when unknown).
	PeakMem uint64 `json:"peak_mem_bytes"`
	CardMem uint64 `json:"card_mem_bytes"`
	// Rank is their place among the window's users by GPU-hours (1 the
	// most), of Ranked users.
	Rank   int `json:"rank"`
	Ranked int `json:"ranked"`
	// GPUs are the GPUs they used, most GPU-hours first.
	GPUs []PersonalGPU `json:"gpus"`
	// Notes say, in plain words, what they could do better.
	Notes []string `json:"notes"`
}

// PersonalGPU is one GPU a person used.
type PersonalGPU struct {
	Host          string         `json:"host,omitempty"`
	GPU           int            `json:"gpu"`
	UUID          string         `json:"uuid"`
	MIG           *gpu.MIG       `json:"mig,omitempty"` // the MIG instance, nil for a whole GPU
	Name          string         `json:"name,omitempty"`
	GPUHours      float64        `json:"gpu_hours"`
	HeldHours     float64        `json:"held_hours"`
	AvgUtil       notifier.Float `json:"avg_util"` // percent while held; NaN (null) when unknown
	IdleHeldHours float64        `json:"idle_held_hours"`
	PeakMem       uint64         `json:"peak_mem_bytes"`
	CardMem       uint64         `json:"card_mem_bytes"`
	Jobs          []string       `json:"jobs,omitempty"` // Slurm jobs ("slurm:4242")
	heldUtil      float64        // utilization-seconds while held
	utilKnown     float64        // seconds of it with utilization known
	hours         map[time.Time][2]float64
	idleByDay     map[string]float64 // seconds held idle, by day in the person's zone ("Tue 24 Nov")
}

// BuildPersonal is the personal digest of whoever the digest's users
// mine are (a person's Unix users and pods), over [o.From, o.To); nil when
// they used no GPU in it.
func BuildPersonal(gpus []GPUHour, users []UserHour, person string, mine []string, o Options) *Personal {
	if o.Location == nil {
		o.Location = time.UTC
	}
	p := &Personal{Name: o.Name, Person: person, Users: mine, From: o.From, To: o.To, Location: o.Location}
	cards := map[slot]GPUHour{}
	for _, g := range gpus {
		if c := cards[slotOf(g.Host, g.GPU, g.MIG)]; g.MemTotal > c.MemTotal || c.Name == "" {
			cards[slotOf(g.Host, g.GPU, g.MIG)] = g
		}
	}
	byUser := map[string]float64{}
	index := map[slot]int{}
	var heldUtil, utilKnown float64
	for i := range users {
		h := &users[i]
		name := cmp.Or(h.User, unknownUser)
		w := instanceShare("", h.MIG) // a MIG instance's hours are its share of its GPU's
		byUser[name] += w * h.GPUSeconds
		if !slices.Contains(mine, h.User) {
			continue
		}
		at := slotOf(h.Host, h.GPU, h.MIG)
		k, ok := index[at]
		if !ok {
			k = len(p.GPUs)
			index[at] = k
			card := cards[at]
			p.GPUs = append(p.GPUs, PersonalGPU{Host: h.Host, GPU: h.GPU, UUID: h.UUID, MIG: h.MIG, Name: card.Name, CardMem: card.MemTotal,
				hours: map[time.Time][2]float64{}, idleByDay: map[string]float64{}})
		}
		g := &p.GPUs[k]
		g.GPUHours += w * h.GPUSeconds / 3600
		g.HeldHours += h.HeldSeconds / 3600
		g.IdleHeldHours += h.IdleHeldSeconds / 3600
		g.idleByDay[h.Hour.In(o.Location).Format("Mon 2 Jan")] += h.IdleHeldSeconds
		g.PeakMem = max(g.PeakMem, h.MemMax, h.IdleHeldMax)
		g.heldUtil += h.HeldUtilSeconds
		g.utilKnown += h.HeldSeconds
		heldUtil += h.HeldUtilSeconds
		utilKnown += h.HeldSeconds
		hour := g.hours[h.Hour]
		g.hours[h.Hour] = [2]float64{hour[0] + h.HeldUtilSeconds, hour[1] + h.HeldSeconds}
		if h.Job != "" && !slices.Contains(g.Jobs, h.Job) {
			g.Jobs = append(g.Jobs, h.Job)
		}
		p.GPUHours += w * h.GPUSeconds / 3600
		p.HeldHours += h.HeldSeconds / 3600
		p.IdleHeldHours += h.IdleHeldSeconds / 3600
		if g.PeakMem > p.PeakMem {
			p.PeakMem, p.CardMem = g.PeakMem, g.CardMem
		}
	}
	if len(p.GPUs) == 0 {
		return nil
	}
	p.AvgUtil = share(100*heldUtil, utilKnown)
	for i := range p.GPUs {
		g := &p.GPUs[i]
		g.AvgUtil = share(100*g.heldUtil, g.utilKnown)
	}
	slices.SortFunc(p.GPUs, func(a, b PersonalGPU) int {
		return cmp.Or(cmp.Compare(b.GPUHours, a.GPUHours), cmp.Compare(a.Host, b.Host), cmp.Compare(a.GPU, b.GPU))
	})
	p.rank(byUser, mine)
	p.Notes = p.notes()
	return p
}

// rank places the person among the users by GPU-hours, their users
// counted as one.
func (p *Personal) rank(byUser map[string]float64, mine []string) {
	type total struct {
		who   string
		hours float64
	}
	var totals []total
	for u, s := range byUser {
		if slices.Contains(mine, u) {
			continue
		}
		totals = append(totals, total{u, s})
	}
	totals = append(totals, total{"\x00me", p.GPUHours * 3600})
	slices.SortFunc(totals, func(a, b total) int { return cmp.Or(cmp.Compare(b.hours, a.hours), cmp.Compare(a.who, b.who)) })
	p.Ranked = len(totals)
	p.Rank = 1 + slices.IndexFunc(totals, func(t total) bool { return t.who == "\x00me" })
}

// notes are the plain-language advice of the window: jobs small for
// their card, GPUs held idle for long.
func (p *Personal) notes() []string {
	var out []string
	for i := range p.GPUs {
		g := &p.GPUs[i]
		where := gpuWhere(g)
		if g.CardMem >= LargeCardBytes && g.PeakMem > 0 && g.PeakMem < SmallJobBytes && g.AvgUtil.Known() && g.AvgUtil < SmallJobUtil && g.HeldHours >= 1 {
			out = append(out, fmt.Sprintf("On %s your jobs used %s of the GPU and at most %s of its %s: they could run on a smaller GPU or a MIG slice, and leave this one to a bigger job.",
				where, percent(float64(g.AvgUtil)), formatBytes(g.PeakMem), formatBytes(g.CardMem)))
		}
		var idleDays []string
		worst := 0.0
		for day, secs := range g.idleByDay {
			if secs > IdlePerDay.Seconds() {
				idleDays = append(idleDays, day)
				worst = max(worst, secs)
			}
		}
		if len(idleDays) > 0 {
			when := "on " + idleDays[0]
			if len(idleDays) > 1 {
				when = fmt.Sprintf("on %d days", len(idleDays))
			}
			out = append(out, fmt.Sprintf("%s sat held but idle for more than %.0f hours a day %s (up to %s): stop the notebook or free its memory when you step away.",
				upperFirst(where), IdlePerDay.Hours(), when, duration(worst)))
		}
	}
	if len(out) == 0 {
		out = append(out, "Nothing to change: the GPUs you held were put to work.")
	}
	return out
}

func gpuWhere(g *PersonalGPU) string {
	where := gpu.Label(g.GPU, g.MIG)
	if g.Host != "" {
		where += " of " + g.Host
	}
	if g.Name != "" {
		where += " (" + g.Name + ")"
	}
	return where
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Title is "Your GPUs, Mon 23 Nov 09:00 – Mon 30 Nov 09:00".
func (p *Personal) Title() string {
	const layout = "Mon 2 Jan 15:04"
	return fmt.Sprintf("Your GPUs, %s – %s", p.From.In(p.Location).Format(layout), p.To.In(p.Location).Format(layout))
}

// lines are the digest's summary, per-GPU and note lines in a style.
func (p *Personal) lines(st style) (summary, gpus, notes []string) {
	util := "utilization unknown"
	if p.AvgUtil.Known() {
		util = percent(float64(p.AvgUtil)) + " utilization while held"
	}
	summary = append(summary,
		fmt.Sprintf("%s, %s (%s)", st.bold(gpuTime(p.GPUHours)), "held "+duration(p.HeldHours*3600), util),
		fmt.Sprintf("Held idle: %s", st.bold(duration(p.IdleHeldHours*3600))))
	if p.PeakMem > 0 {
		peak := "Peak memory: " + st.bold(formatBytes(p.PeakMem))
		if p.CardMem > 0 {
			peak += fmt.Sprintf(" of the card's %s (%s)", formatBytes(p.CardMem), percent(100*float64(p.PeakMem)/float64(p.CardMem)))
		}
		summary = append(summary, peak)
	}
	summary = append(summary, fmt.Sprintf("Rank: %s of %d users by GPU-hours", st.bold(ordinal(p.Rank)), p.Ranked))
	for i := range p.GPUs {
		if i == MaxPersonalGPUs {
			gpus = append(gpus, fmt.Sprintf("… and %d more GPUs", len(p.GPUs)-MaxPersonalGPUs))
			break
		}
		g := &p.GPUs[i]
		line := fmt.Sprintf("%s: %s", st.bold(st.text(gpuWhere(g))), gpuTime(g.GPUHours))
		if g.AvgUtil.Known() {
			line += ", " + percent(float64(g.AvgUtil)) + " busy while held"
		}
		if g.PeakMem > 0 {
			line += ", peak " + formatBytes(g.PeakMem)
		}
		if g.IdleHeldHours*3600 >= MinIdleHeld.Seconds() {
			line += ", idle " + duration(g.IdleHeldHours*3600)
		}
		if j := jobList(g.Jobs); j != "" {
			line += " · " + j
		}
		gpus = append(gpus, line)
	}
	for _, n := range p.Notes {
		notes = append(notes, st.text(n))
	}
	return summary, gpus, notes
}

// Text renders the digest as plain text.
func (p *Personal) Text() string {
	st := plainStyle()
	summary, gpus, notes := p.lines(st)
	var b strings.Builder
	b.WriteString(p.Title() + "\n")
	for _, l := range summary {
		b.WriteString(l + "\n")
	}
	b.WriteString("\nGPUs\n")
	for _, l := range gpus {
		b.WriteString(st.bullet + l + "\n")
	}
	b.WriteString("\nNotes\n")
	for _, l := range notes {
		b.WriteString(st.bullet + l + "\n")
	}
	return b.String()
}

// Blocks renders the digest as Slack Block Kit, within Slack's limits.
func (p *Personal) Blocks() ([]byte, error) {
	st := mrkdwnStyle()
	summary, gpus, notes := p.lines(st)
	blocks := []goslack.Block{
		goslack.NewHeaderBlock(goslack.NewTextBlockObject(goslack.PlainTextType, cut(p.Title(), maxHeaderText), false, false)),
		mrkdwn(cut(strings.Join(summary, "\n"), blockkit.MaxText)),
		goslack.NewDividerBlock(),
	}
	for _, text := range chunks(section{heading: "GPUs", lines: bulleted(gpus)}, true) {
		blocks = append(blocks, mrkdwn(text))
	}
	for _, text := range chunks(section{heading: "Notes", lines: bulleted(notes)}, true) {
		blocks = append(blocks, mrkdwn(text))
	}
	blocks = append(blocks, goslack.NewContextBlock("", goslack.NewTextBlockObject(goslack.MarkdownType,
		"`/gpu digest daily`, `weekly` or `off` chooses this message; `/gpu mine` shows your jobs now", false, false)))
	if len(blocks) > maxBlocks {
		blocks = append(blocks[:maxBlocks-1], mrkdwn("_The rest does not fit in one message._"))
	}
	out, err := json.Marshal(blocks)
	if err != nil {
		return nil, fmt.Errorf("encode the personal digest as Slack blocks: %w", err)
	}
	return out, nil
}

func bulleted(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = mrkdwnStyle().bullet + l
	}
	return out
}

// ordinal writes 1st, 2nd, 3rd, 4th, 11th, 21st.
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// Picture is the person's window as a picture: their utilization while
// held, by the hour, on each GPU they used; the hours they held each and
// held it idle; and the users' GPU-hours, theirs among the most.
func (p *Personal) Picture(users []UserHour) *chart.Day {
	from := p.From.Truncate(time.Hour)
	hours := max(int(math.Ceil(p.To.Sub(from).Hours())), 1)
	oneHost := !slices.ContainsFunc(p.GPUs, func(g PersonalGPU) bool { return g.Host != p.GPUs[0].Host })
	d := &chart.Day{Title: "Your GPUs: " + p.Person, Start: from,
		Subtitle: []string{fmt.Sprintf("%s – %s", p.From.In(p.Location).Format("Mon 2 Jan 15:04"), p.To.In(p.Location).Format("Mon 2 Jan 15:04"))}}
	for i := range p.GPUs {
		if i == MaxPersonalGPUs {
			break
		}
		g := &p.GPUs[i]
		row := chart.DayGPU{Label: gpu.Label(g.GPU, g.MIG), Utilization: make([]float64, hours), HeldHours: g.HeldHours, IdleHeldHours: g.IdleHeldHours}
		if !oneHost && g.Host != "" {
			row.Label = fmt.Sprintf("%s/%d", g.Host, g.GPU) + strings.TrimPrefix(row.Label, gpu.Label(g.GPU, nil))
		}
		for j := range row.Utilization {
			row.Utilization[j] = math.NaN()
		}
		for at, v := range g.hours {
			if col := int(at.Sub(from) / time.Hour); col >= 0 && col < hours && v[1] > 0 {
				row.Utilization[col] = 100 * v[0] / v[1]
			}
		}
		d.GPUs = append(d.GPUs, row)
	}
	byUser := map[string]float64{}
	for _, u := range users {
		who := cmp.Or(u.User, unknownUser)
		if slices.Contains(p.Users, u.User) {
			who = p.Person
		}
		byUser[who] += u.GPUSeconds / 3600
	}
	for who, h := range byUser {
		d.Users = append(d.Users, chart.UserHours{User: who, GPUHours: h})
	}
	slices.SortFunc(d.Users, func(a, b chart.UserHours) int {
		return cmp.Or(cmp.Compare(b.GPUHours, a.GPUHours), cmp.Compare(a.User, b.User))
	})
	if i := slices.IndexFunc(d.Users, func(u chart.UserHours) bool { return u.User == p.Person }); i >= maxPictureUsers {
		d.Users = append(d.Users[:maxPictureUsers-1], d.Users[i])
	} else if len(d.Users) > maxPictureUsers {
		d.Users = d.Users[:maxPictureUsers]
	}
	return d
}

// maxPictureUsers is how many users a personal picture ranks.
const maxPictureUsers = 8

// Notification is the personal digest as a notification for receiver: a
// direct message to the Slack user to.
func (p *Personal) Notification(receiver, to string, at time.Time) (*notifier.Notification, error) {
	blocks, err := p.Blocks()
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode the personal digest as JSON: %w", err)
	}
	return &notifier.Notification{
		Receiver:  receiver,
		GroupKey:  receiver + "/digest/" + p.Name + "/" + to,
		Status:    notifier.StatusDigest,
		CreatedAt: at,
		Digest: &notifier.Digest{Name: p.Name, Title: p.Title(), Text: p.Text(), Markdown: p.Text(),
			Blocks: blocks, Data: data, To: to},
	}, nil
}

// share is a/b, NaN when b is not above 0.
func share(a, b float64) notifier.Float {
	if b <= 0 {
		return notifier.Float(math.NaN())
	}
	return notifier.Float(a / b)
}
