package gpu

import "math"

// RestingMax is the most a GPU's resting level can be: more memory in use
// that no process accounts for belongs to a job whose processes the
// source does not name (a log), not to the card.
const RestingMax = 2 << 30

// RestingLevel follows a GPU's resting level: the memory it holds with no
// job on it (a few MiB, or 1 GiB and more where a display, a persistence
// daemon or the driver keeps some). It is the least memory the GPU has
// held that no process accounts for (all the memory in use, for a source
// that names no process), counting only what is at most RestingMax, and 0
// until such a sample was seen. The zero RestingLevel has seen nothing.
type RestingLevel struct {
	bytes float64
	known bool
}

// Observe lowers the resting level to what no process accounts for in d,
// when that is a resting level: a GPU first seen held by a job of a source
// that names no process rests at 0 until the job leaves.
func (r *RestingLevel) Observe(d *Device) {
	if !d.MemUsedKnown() {
		return
	}
	own := float64(d.MemUsed)
	for i := range d.Processes {
		own -= float64(d.Processes[i].MemUsed)
	}
	own = max(own, 0)
	if own <= RestingMax && (!r.known || own < r.bytes) {
		r.bytes, r.known = own, true
	}
}

// Bytes is the resting level, in bytes; 0 until it is known.
func (r *RestingLevel) Bytes() float64 { return r.bytes }

// Above is the memory d has in use above the resting level, in bytes
// (memory.held); NaN when d's memory is unknown.
func (r *RestingLevel) Above(d *Device) float64 {
	if !d.MemUsedKnown() {
		return math.NaN()
	}
	return max(float64(d.MemUsed)-r.bytes, 0)
}
