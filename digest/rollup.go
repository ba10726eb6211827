package digest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// Rollup limits and names.
const (
	// MaxBridgedGap is the longest time between two samples of a GPU that
	// still counts as covered; a longer gap (gpuwatch down, GPU lost) adds
	// nothing.
	MaxBridgedGap = 5 * time.Minute
	// GapIntervals is how many of a GPU's previous sampling interval a gap
	// may last and still be bridged.
	GapIntervals = 3
	// RollupUnknownUser is the user that processes without an attributed
	// owner (an empty gpu.Process.Owner: no user, no pod) are counted
	// under; a pod the source names without its user counts as its
	// "NAMESPACE/POD".
	RollupUnknownUser = "unknown"
)

// Bridged reports whether gap, the time between two samples of a GPU,
// counts as covered: at most MaxBridgedGap, and at most GapIntervals times
// previous, the GPU's interval before (0 when unknown). Time integrals
// (usage, energy) add nothing over a gap that is not bridged.
func Bridged(gap, previous time.Duration) bool {
	return bridged(gap, previous, MaxBridgedGap)
}

// bridged is Bridged with the longest gap bridged as a parameter.
func bridged(gap, previous, maxGap time.Duration) bool {
	return gap > 0 && gap <= maxGap && (previous <= 0 || gap <= GapIntervals*previous)
}

// MaxGapFor is the longest gap bridged in a log sampled every step: a
// sample stands for the time since the previous one, up to GapIntervals
// steps (a cron job that missed two runs), and never less than
// MaxBridgedGap. A log sampled every 30 minutes bridges 1h30m.
func MaxGapFor(step time.Duration) time.Duration {
	return max(MaxBridgedGap, GapIntervals*step)
}

// Kinds of records in a checkpoint key.
const (
	recordGPU   = "gpu"
	recordUser  = "user"
	recordAlert = "alert"
)

// noHour marks a GPU or user state that has no hour bucket yet.
const noHour = math.MinInt64

// Rollups keeps hourly usage rollups per GPU, per user and GPU, and per
// alert rule, updated from every snapshot. A GPU is its host's GPU: the
// snapshots of many hosts (a hub's fleet) keep apart GPUs whose indexes,
// or even UUIDs, repeat across hosts. It is safe for concurrent use.
//
// A sample covers the time since the previous sample of the same GPU (its
// dt), and that time counts in the hour of the sample. Time integrals use the
// readings of the sample (utilization × dt, memory × dt); energy uses the
// trapezoid of the power of the two samples. A gap longer than GapIntervals
// times the GPU's previous interval, or longer than MaxBridgedGap (or the
// gap SetMaxGap allows a sparse log), is not bridged: that sample adds no
// time, only its peaks. A bridged gap longer than MaxBridgedGap (a log
// sampled every 30 minutes) is spread over the hours it spans. A sample not
// later than the previous one of its GPU is ignored. Unknown (NaN) readings
// add nothing.
//
// Dirty encodes changed hour buckets as records for the store; Load restores
// them, so a restart loses at most the samples not yet checkpointed.
type Rollups struct {
	mu     sync.Mutex
	maxGap time.Duration          // the longest gap bridged: MaxBridgedGap, or more for a sparse log
	step   time.Duration          // a log's step between bursts of samples, or 0
	hours  map[int64]*hourBucket  // by the hour's start, Unix seconds
	gpus   map[string]*gpuState   // by gpuKey
	order  map[string][]*gpuState // by host: the GPUs of its last snapshot, by position
}

// hourBucket holds one clock hour's records.
type hourBucket struct {
	start  int64
	dirty  bool
	gpus   map[string]*gpuRecord   // by gpuKey
	users  map[userKey]*userRecord // by gpuKey and user
	alerts map[string]*alertRecord // by alert name
}

type userKey struct{ gpu, user string }

type gpuRecord struct {
	GPUHour
	dirty bool
}

type userRecord struct {
	UserHour
	dirty bool
}

type alertRecord struct {
	AlertHour
	dirty bool
}

// gpuState is what Update remembers of a GPU between samples.
type gpuState struct {
	key   string
	host  string
	uuid  string
	index int

	seen      bool
	lastNS    int64   // time of the previous sample, Unix nanoseconds
	lastGapNS int64   // interval before the previous sample; 0 when unknown
	lastPower float64 // watts at the previous sample; NaN when unknown
	// rest is the GPU's resting level: what is in use above it is held.
	rest gpu.RestingLevel
	// busyNS is the time of the GPU's latest busy sample, Unix
	// nanoseconds; 0 before one. quiet is whether none came within
	// IdleWindow of the current sample.
	busyNS int64
	quiet  bool

	mig    *gpu.MIG // the MIG instance, nil for a whole GPU
	hour   int64    // the hour of rec
	bucket *hourBucket
	rec    *gpuRecord

	gen   uint64 // counts samples with processes, to reset users' sums
	users []userState
}

// userState is one user's running sum on a GPU within one sample, and the
// user's current hour record.
type userState struct {
	name    string
	gen     uint64
	mem     uint64
	procs   int
	largest uint64 // memory of the user's largest process in the sample
	command string // its command line
	job     string // and its Slurm job
	hour    int64
	rec     *userRecord
}

// NewRollups returns empty rollups.
func NewRollups() *Rollups {
	return &Rollups{
		maxGap: MaxBridgedGap,
		hours:  make(map[int64]*hourBucket),
		gpus:   make(map[string]*gpuState),
		order:  make(map[string][]*gpuState),
	}
}

// SetMaxGap sets the longest gap between two samples of a GPU that is
// bridged (MaxBridgedGap by default), for a log sampled every few minutes
// or hours (see MaxGapFor): each sample then stands for the time since the
// previous one, up to maxGap, and a gap longer than MaxBridgedGap is spread
// over the clock hours it spans.
func (r *Rollups) SetMaxGap(maxGap time.Duration) {
	r.mu.Lock()
	r.maxGap = max(maxGap, MaxBridgedGap)
	r.mu.Unlock()
}

// SetStep says how often a log sampled in bursts (several samples within
// a second, then a pause) was sampled, burst to burst: the gap after a
// burst is bridged as a gap after a sample a step before would be, up to
// GapIntervals steps, not measured against the burst's fraction of a
// second.
func (r *Rollups) SetStep(step time.Duration) {
	r.mu.Lock()
	r.step = step
	r.mu.Unlock()
}

// Update adds a snapshot to the rollups. It uses s.Time only and, for the
// same GPUs and users within one hour, costs O(1) per GPU and allocates
// nothing.
func (r *Rollups) Update(s *gpu.Snapshot) {
	if s == nil {
		return
	}
	ns := s.Time.UnixNano()
	hour := hourStart(s.Time.Unix())
	r.mu.Lock()
	order := r.order[s.Host]
	for i := range s.Devices {
		d := &s.Devices[i]
		var st *gpuState
		st, order = r.state(order, i, s.Host, d)
		r.updateGPU(st, d, s.Host, ns, hour)
	}
	r.order[s.Host] = order
	r.mu.Unlock()
}

// state finds the GPU's state, first at its position in its host's last
// snapshot (order), which it updates and returns.
func (r *Rollups) state(order []*gpuState, i int, host string, d *gpu.Device) (*gpuState, []*gpuState) {
	if i < len(order) {
		if st := order[i]; st != nil && st.uuid == d.UUID && st.index == d.Index {
			return st, order
		}
	}
	key := gpuKey(host, d.UUID, d.Index)
	st := r.gpus[key]
	if st == nil {
		st = &gpuState{key: key, host: host, uuid: d.UUID, lastPower: math.NaN(), hour: noHour}
		r.gpus[key] = st
	}
	st.index = d.Index
	for len(order) <= i {
		order = append(order, nil)
	}
	order[i] = st
	return st, order
}

func (r *Rollups) updateGPU(st *gpuState, d *gpu.Device, host string, ns, hour int64) {
	dt := 0.0
	if st.seen {
		gap := ns - st.lastNS
		if gap <= 0 {
			return
		}
		if bridged(time.Duration(gap), max(time.Duration(st.lastGapNS), r.step), r.maxGap) {
			dt = float64(gap) / 1e9
		}
		st.lastGapNS = gap
	}
	// A long bridged gap (a sparse log) is spread over the hours it spans:
	// the sample's readings held since the one before.
	if dt > MaxBridgedGap.Seconds() {
		for from := st.lastNS; hourStart(from/1e9) < hour; {
			end := min((hourStart(from/1e9)+3600)*1e9, ns)
			part := float64(end-from) / 1e9
			r.account(st, d, host, hourStart(from/1e9), part)
			dt -= part
			from = end
		}
	}
	if hour != st.hour {
		r.enterHour(st, d, host, hour)
	}
	st.rec.Samples++
	if math.IsNaN(d.UtilGPU) {
		st.rec.UtilMissing++
	}
	if !d.MemUsedKnown() {
		st.rec.MemMissing++
	}
	st.rest.Observe(d)
	if d.UtilGPU >= BusyPercent {
		st.busyNS = ns
	}
	st.quiet = st.busyNS == 0 || ns-st.busyNS >= int64(IdleWindow)
	r.account(st, d, host, hour, dt)
	st.lastPower = d.PowerW
	st.lastNS = ns
	st.seen = true
}

// account adds dt seconds of the device's readings to the GPU's record of
// hour, and to its users'.
func (r *Rollups) account(st *gpuState, d *gpu.Device, host string, hour int64, dt float64) {
	if hour != st.hour {
		r.enterHour(st, d, host, hour)
	}
	st.bucket.dirty = true
	st.rec.dirty = true
	h := &st.rec.GPUHour
	h.Seconds += dt

	util := d.UtilGPU
	idle := false
	if math.IsNaN(util) {
		h.UtilMissingSeconds += dt
	} else {
		idle = util < BusyPercent
		h.UtilSeconds += util / 100 * dt
		h.UtilMax = max(h.UtilMax, util)
		if !idle {
			h.BusySeconds += dt
		}
	}
	if d.MemUsedKnown() {
		h.MemMax = max(h.MemMax, d.MemUsed)
		if d.MemTotal > 0 {
			h.MemTotal = d.MemTotal
		}
		held := st.rest.Above(d) >= HeldBytes
		if idle && st.quiet && held {
			h.IdleHeldSeconds += dt
		}
		if held && !math.IsNaN(util) {
			h.HeldSeconds += dt
			h.HeldUtilSeconds += util / 100 * dt
		}
	}
	if !math.IsNaN(d.TempC) {
		h.TempMax = max(h.TempMax, d.TempC)
	}
	if dt > 0 && !math.IsNaN(d.PowerW) && !math.IsNaN(st.lastPower) {
		h.EnergyJoules += (d.PowerW + st.lastPower) / 2 * dt
	}
	if len(d.Processes) > 0 {
		r.updateUsers(st, d.Processes, dt, idle && st.quiet, util)
	}
}

// enterHour points the GPU's state at its record for hour, making it if
// needed, and forgets users not seen in the GPU's previous hour.
func (r *Rollups) enterHour(st *gpuState, d *gpu.Device, host string, hour int64) {
	b := r.bucket(hour)
	rec := b.gpus[st.key]
	if rec == nil {
		rec = &gpuRecord{GPUHour: GPUHour{Hour: hourTime(hour), GPU: d.Index, UUID: d.UUID, MIG: d.MIG}}
		b.gpus[st.key] = rec
	}
	rec.Name, rec.Host, rec.MIGEnabled = d.Name, host, d.MIGEnabled
	st.mig = d.MIG
	prev := st.hour
	st.users = slices.DeleteFunc(st.users, func(u userState) bool { return u.hour != prev })
	st.hour, st.bucket, st.rec = hour, b, rec
}

func (r *Rollups) bucket(hour int64) *hourBucket {
	b := r.hours[hour]
	if b == nil {
		b = &hourBucket{
			start:  hour,
			gpus:   make(map[string]*gpuRecord),
			users:  make(map[userKey]*userRecord),
			alerts: make(map[string]*alertRecord),
		}
		r.hours[hour] = b
	}
	return b
}

// updateUsers shares the sample's dt among the users of the GPU's
// processes by their memory, or equally per process when none holds any;
// util is the GPU's utilization (NaN when unknown).
func (r *Rollups) updateUsers(st *gpuState, procs []gpu.Process, dt float64, idle bool, util float64) {
	st.gen++
	var total uint64
	for i := range procs {
		p := &procs[i]
		u := &st.users[st.user(p.Owner())]
		if u.gen != st.gen {
			u.gen, u.mem, u.procs, u.largest, u.command, u.job = st.gen, 0, 0, 0, "", ""
		}
		u.mem += p.MemUsed
		u.procs++
		if p.MemUsed >= u.largest && p.Command != "" {
			u.largest = p.MemUsed
			// Written only when they change: a string written is a
			// pointer the collector must be told of, at every sample.
			if u.command != p.Command || u.job != p.Job {
				u.command, u.job = p.Command, p.Job
			}
		}
		total += p.MemUsed
	}
	for i := range st.users {
		u := &st.users[i]
		if u.gen != st.gen {
			continue
		}
		share := float64(u.procs) / float64(len(procs))
		if total > 0 {
			share = float64(u.mem) / float64(total)
		}
		if u.hour != st.hour {
			u.rec, u.hour = r.userRecord(st, u.name), st.hour
		}
		u.rec.dirty = true
		h := &u.rec.UserHour
		if u.command != "" && (h.Command != u.command || h.Job != u.job) {
			h.Command, h.Job = u.command, u.job
		}
		h.GPUSeconds += share * dt
		h.MemMax = max(h.MemMax, u.mem)
		if !math.IsNaN(util) {
			h.HeldSeconds += dt
			h.HeldUtilSeconds += util / 100 * dt
		}
		h.ByteSeconds += float64(u.mem) * dt
		if idle && u.mem >= HeldBytes {
			h.IdleHeldSeconds += dt
			h.IdleHeldMax = max(h.IdleHeldMax, u.mem)
		}
	}
}

// user returns the index of the named user's state on the GPU, adding one.
func (st *gpuState) user(name string) int {
	if name == "" {
		name = RollupUnknownUser
	}
	for i := range st.users {
		if st.users[i].name == name {
			return i
		}
	}
	st.users = append(st.users, userState{name: name, hour: noHour})
	return len(st.users) - 1
}

func (r *Rollups) userRecord(st *gpuState, user string) *userRecord {
	k := userKey{st.key, user}
	rec := st.bucket.users[k]
	if rec == nil {
		rec = &userRecord{UserHour: UserHour{Hour: hourTime(st.hour), User: user, GPU: st.index, UUID: st.uuid, MIG: st.mig, Host: st.host}}
		st.bucket.users[k] = rec
	}
	return rec
}

// RecordAlert counts an alert of the rule that fired at firedAt in that
// hour, and keeps the longest duration of the hour's alerts.
func (r *Rollups) RecordAlert(alert string, firedAt time.Time, duration time.Duration) {
	hour := hourStart(firedAt.Unix())
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.bucket(hour)
	rec := b.alerts[alert]
	if rec == nil {
		rec = &alertRecord{AlertHour: AlertHour{Hour: hourTime(hour), Alert: alert}}
		b.alerts[alert] = rec
	}
	rec.Fired++
	rec.LongestSeconds = max(rec.LongestSeconds, duration.Seconds())
	rec.dirty, b.dirty = true, true
}

// Window returns copies of the hours whose start lies in [from truncated to
// the hour, to), sorted by hour, then host and GPU (and user), or alert
// name.
func (r *Rollups) Window(from, to time.Time) (gpus []GPUHour, users []UserHour, alerts []AlertHour) {
	lo := hourStart(from.Unix())
	r.mu.Lock()
	for start, b := range r.hours {
		if start < lo || !hourTime(start).Before(to) {
			continue
		}
		for _, rec := range b.gpus {
			gpus = append(gpus, rec.GPUHour)
		}
		for _, rec := range b.users {
			users = append(users, rec.UserHour)
		}
		for _, rec := range b.alerts {
			alerts = append(alerts, rec.AlertHour)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(gpus, func(a, b GPUHour) int {
		return cmp.Or(a.Hour.Compare(b.Hour), cmp.Compare(a.Host, b.Host), cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.UUID, b.UUID))
	})
	slices.SortFunc(users, func(a, b UserHour) int {
		return cmp.Or(a.Hour.Compare(b.Hour), cmp.Compare(a.Host, b.Host), cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.UUID, b.UUID),
			cmp.Compare(a.User, b.User))
	})
	slices.SortFunc(alerts, func(a, b AlertHour) int {
		return cmp.Or(a.Hour.Compare(b.Hour), cmp.Compare(a.Alert, b.Alert))
	})
	return gpus, users, alerts
}

// Dirty returns the records changed since the last call, for the daemon to
// checkpoint into the store. A key is the hour, the kind and the record's
// identity:
//
//	2026-11-30T09/gpu/HOST/GPU-UUID
//	2026-11-30T09/user/HOST/GPU-UUID/alice
//	2026-11-30T09/alert/rule-name
//
// (a GPU without a UUID is "#INDEX"); a value is the compact JSON of the
// record's GPUHour, UserHour or AlertHour. The current hour's records come
// back at every call while samples arrive. Records written before hosts
// were part of the key (2026-11-30T09/gpu/GPU-UUID) still load, under
// their own keys.
func (r *Rollups) Dirty() map[string][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]byte)
	for _, b := range r.hours {
		if !b.dirty {
			continue
		}
		b.dirty = false
		b.eachRecord(func(key string, dirty *bool, rec any) {
			if *dirty {
				*dirty = false
				out[key] = mustJSON(rec)
			}
		})
	}
	return out
}

// eachRecord calls fn with the key, dirty flag and record of each of the
// bucket's records.
func (b *hourBucket) eachRecord(fn func(key string, dirty *bool, rec any)) {
	prefix := hourKey(b.start)
	for k, rec := range b.gpus {
		fn(prefix+recordGPU+"/"+k, &rec.dirty, &rec.GPUHour)
	}
	for k, rec := range b.users {
		fn(prefix+recordUser+"/"+k.gpu+"/"+k.user, &rec.dirty, &rec.UserHour)
	}
	for k, rec := range b.alerts {
		fn(prefix+recordAlert+"/"+k, &rec.dirty, &rec.AlertHour)
	}
}

// mustJSON encodes a record; the records hold only strings, integers,
// finite floats and times, which always encode.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("digest: encoding a rollup record: %v", err))
	}
	return b
}

// Load restores records that Dirty returned, replacing records with the
// same key. A record whose key or value does not decode, or whose value
// does not match its key, is left out; the others are loaded, and the
// error (a *LoadError) names every record left out and why.
func (r *Rollups) Load(records map[string][]byte) error {
	keys := make([]string, 0, len(records))
	for k := range records {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	r.mu.Lock()
	defer r.mu.Unlock()
	var bad map[string]error
	for _, k := range keys {
		if err := r.load(k, records[k]); err != nil {
			if bad == nil {
				bad = map[string]error{}
			}
			bad[k] = err
		}
	}
	if bad != nil {
		return &LoadError{Records: bad}
	}
	return nil
}

// LoadError is the error of a Load that left out records it could not
// read: Records maps each one's key to why.
type LoadError struct {
	Records map[string]error
}

func (e *LoadError) Error() string {
	parts := make([]string, 0, len(e.Records))
	for _, k := range slices.Sorted(maps.Keys(e.Records)) {
		parts = append(parts, fmt.Sprintf("%q: %v", k, e.Records[k]))
	}
	return fmt.Sprintf("digest: %d rollup records cannot be read, their hours miss from digests: %s", len(parts), strings.Join(parts, "; "))
}

func (r *Rollups) load(key string, value []byte) error {
	hourPart, rest, ok := strings.Cut(key, "/")
	if !ok {
		return fmt.Errorf("key is not HOUR/KIND/ID")
	}
	t, err := time.Parse(hourKeyLayout, hourPart)
	if err != nil {
		return fmt.Errorf("key's hour %q is not like 2026-11-30T09", hourPart)
	}
	hour := t.Unix()
	kind, id, _ := strings.Cut(rest, "/")
	var want string
	switch kind {
	case recordGPU:
		var rec gpuRecord
		if err := decodeRecord(value, &rec.GPUHour, hour); err != nil {
			return err
		}
		want = gpuKey(rec.Host, rec.UUID, rec.GPU)
		if id == want || id == gpuKey("", rec.UUID, rec.GPU) {
			b := r.bucket(hour)
			if old := b.gpus[id]; old != nil {
				old.GPUHour = rec.GPUHour // live states point at old
			} else {
				b.gpus[id] = &rec
			}
			return nil
		}
	case recordUser:
		var rec userRecord
		if err := decodeRecord(value, &rec.UserHour, hour); err != nil {
			return err
		}
		k := userKey{gpuKey(rec.Host, rec.UUID, rec.GPU), rec.User}
		want = k.gpu + "/" + k.user
		if id == want {
			b := r.bucket(hour)
			if old := b.users[k]; old != nil {
				old.UserHour = rec.UserHour
			} else {
				b.users[k] = &rec
			}
			return nil
		}
	case recordAlert:
		var rec alertRecord
		if err := decodeRecord(value, &rec.AlertHour, hour); err != nil {
			return err
		}
		want = rec.Alert
		if id == want {
			b := r.bucket(hour)
			if old := b.alerts[id]; old != nil {
				old.AlertHour = rec.AlertHour
			} else {
				b.alerts[id] = &rec
			}
			return nil
		}
	default:
		return fmt.Errorf("unknown record kind %q, want %s, %s or %s", kind, recordGPU, recordUser, recordAlert)
	}
	return fmt.Errorf("key names %q but the record is for %q", id, want)
}

// decodeRecord decodes a record's JSON strictly and checks that its hour is
// the key's.
func decodeRecord[T GPUHour | UserHour | AlertHour](value []byte, v *T, hour int64) error {
	dec := json.NewDecoder(strings.NewReader(string(value)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("value does not decode: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("value has data after the record")
	}
	var h time.Time
	switch rec := any(v).(type) {
	case *GPUHour:
		h = rec.Hour
		rec.Hour = hourTime(hour)
	case *UserHour:
		h = rec.Hour
		rec.Hour = hourTime(hour)
	case *AlertHour:
		h = rec.Hour
		rec.Hour = hourTime(hour)
	}
	if h.Unix() != hour {
		return fmt.Errorf("record's hour %s is not the key's %s", h.UTC().Format(time.RFC3339), hourTime(hour).Format(time.RFC3339))
	}
	return nil
}

// Prune drops the hours that ended by before and returns the keys of their
// records, for the daemon to delete from the store.
func (r *Rollups) Prune(before time.Time) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var keys []string
	for start, b := range r.hours {
		if hourTime(start + 3600).After(before) {
			continue
		}
		b.eachRecord(func(key string, _ *bool, _ any) { keys = append(keys, key) })
		delete(r.hours, start)
		for _, st := range r.gpus {
			if st.hour == start {
				st.hour, st.bucket, st.rec = noHour, nil, nil
			}
			for i := range st.users {
				if st.users[i].hour == start {
					st.users[i].hour, st.users[i].rec = noHour, nil
				}
			}
		}
	}
	slices.Sort(keys)
	return keys
}

const hourKeyLayout = "2006-01-02T15"

// hourKey is the prefix of an hour's record keys, "2026-11-30T09/".
func hourKey(start int64) string {
	return hourTime(start).Format(hourKeyLayout) + "/"
}

// gpuKey identifies a GPU: its host, then its UUID or "#INDEX" when it
// has none ("node1/GPU-UUID", "node1/#0"). Without a host it is the key
// records had before hosts were part of it ("GPU-UUID").
func gpuKey(host, uuid string, index int) string {
	id := uuid
	if id == "" {
		id = "#" + strconv.Itoa(index)
	}
	if host == "" {
		return id
	}
	return host + "/" + id
}

// hourStart is the start of the UTC hour of a Unix time, in Unix seconds.
func hourStart(unix int64) int64 {
	m := unix % 3600
	if m < 0 {
		m += 3600
	}
	return unix - m
}

func hourTime(start int64) time.Time { return time.Unix(start, 0).UTC() }
