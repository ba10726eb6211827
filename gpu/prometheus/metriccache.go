package prometheus

import (
	"bytes"
	"hash/maphash"
)

// metricCache remembers the label sets of the last instant answer's
// series, by their place in it, with the length and a hash of the text
// each was read from. An evaluation's answer lists the same series, in
// the same order, as the last one: where the text at a series' place is
// the same length and hashes the same, its labels are taken from the
// cache without reading them (a fleet of 10,000 GPUs answers 100,000
// series, each with some eight labels). The hash is seeded anew each run,
// so that no answer can be made to collide with another.
type metricCache struct {
	seed    maphash.Seed
	entries []cachedMetric
	next    int // the place of the series being read
}

type cachedMetric struct {
	hash   uint64
	length int
	labels labelSet
}

func newMetricCache() *metricCache { return &metricCache{seed: maphash.MakeSeed()} }

// start begins an answer.
func (c *metricCache) start() { c.next = 0 }

// finish ends an answer: the places after its last series are let go.
func (c *metricCache) finish() {
	if c.next < len(c.entries) {
		clear(c.entries[c.next:])
		c.entries = c.entries[:c.next]
	}
}

// cachedLabels reads the "metric" object of the series at the cache's
// next place into ls: from the cache where the text is the same as last
// time, else by reading it, and keeps it for the next answer.
func (d *decoder) cachedLabels(ls *labelSet) error {
	c := d.metrics
	i := c.next
	c.next++
	if d.peek() != '{' {
		return d.labels(ls)
	}
	if i < len(c.entries) && c.entries[i].length > 0 {
		e := &c.entries[i]
		for len(d.buf)-d.pos < e.length {
			if _, ok := d.fill(d.pos); !ok {
				break
			}
		}
		if len(d.buf)-d.pos >= e.length && d.buf[d.pos+e.length-1] == '}' && maphash.Bytes(c.seed, d.buf[d.pos:d.pos+e.length]) == e.hash {
			*ls = e.labels
			d.pos += e.length
			return nil
		}
	}
	for len(c.entries) <= i {
		c.entries = append(c.entries, cachedMetric{})
	}
	c.entries[i] = cachedMetric{} // until read whole
	n, ok := d.objectLength()
	if !ok {
		// Not a flat object of strings, or a long one: read it as it
		// comes, and let the reader say what is wrong with it.
		return d.labels(ls)
	}
	hash := maphash.Bytes(c.seed, d.buf[d.pos:d.pos+n])
	if err := d.labels(ls); err != nil || d.bad.label != "" {
		return err // a series left out is read again each time, to say so
	}
	c.entries[i] = cachedMetric{hash: hash, length: n, labels: *ls}
	return nil
}

// maxCachedObject is the longest "metric" object the cache keeps: a
// series' labels are a few hundred bytes; a longer object is read as it
// arrives (see decoder.str), not held whole.
const maxCachedObject = 8 << 10

// objectLength makes the object of string values at d.pos whole in the
// buffer and returns its length, braces included; false when it is not
// such an object, or longer than maxCachedObject.
func (d *decoder) objectLength() (int, bool) {
	i := d.pos + 1 // after {
	for {
		if i-d.pos > maxCachedObject {
			return 0, false
		}
		for i >= len(d.buf) {
			shift, ok := d.fill(d.pos)
			i -= shift
			if !ok {
				return 0, false
			}
		}
		switch d.buf[i] {
		case '}':
			return i + 1 - d.pos, true
		case ':', ',', ' ', '\t', '\r', '\n':
			i++
		case '"':
			end, ok := d.stringEnd(i)
			if !ok {
				return 0, false
			}
			i = end + 1
		default:
			return 0, false
		}
	}
}

// stringEnd is where the string whose opening quote is at open ends (its
// closing quote), read into the buffer, which keeps d.pos on; false when
// it ends past maxCachedObject from d.pos, or not at all.
func (d *decoder) stringEnd(open int) (int, bool) {
	from := open + 1
	for {
		if j := bytes.IndexByte(d.buf[from:], '"'); j >= 0 {
			end := from + j
			if escapedQuote(d.buf[open+1 : end]) {
				from = end + 1
				continue
			}
			return end, true
		}
		from = len(d.buf)
		if from-d.pos > maxCachedObject {
			return 0, false
		}
		shift, ok := d.fill(d.pos)
		open, from = open-shift, from-shift
		if !ok {
			return 0, false
		}
	}
}
