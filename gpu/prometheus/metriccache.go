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
	seed maphash.Seed
	// chunks hold the entries, cacheChunk each: the cache grows without
	// copying what it holds (a fleet's is tens of megabytes), and an
	// entry stays where it is.
	chunks [][]cachedMetric
	size   int // the entries held
	next   int // the place of the series being read
}

// cacheChunk is how many entries a chunk of the cache holds.
const cacheChunk = 1024

// entry is the entry at place i, which the cache holds (i < size).
func (c *metricCache) entry(i int) *cachedMetric { return &c.chunks[i/cacheChunk][i%cacheChunk] }

// add makes the entry at place size, empty.
func (c *metricCache) add() {
	if c.size == len(c.chunks)*cacheChunk {
		c.chunks = append(c.chunks, make([]cachedMetric, cacheChunk))
	}
	c.size++
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
	for ; c.size > c.next; c.size-- {
		*c.entry(c.size - 1) = cachedMetric{}
	}
	kept := (c.size + cacheChunk - 1) / cacheChunk
	clear(c.chunks[kept:])
	c.chunks = c.chunks[:kept]
}

// cachedLabels reads the "metric" object of the series at the cache's
// next place: from the cache where the text is the same as last time,
// else by reading it, and keeps it for the next answer. d.cur is the
// cache's label set then, which the series' reader may note where it
// filed the series in (labelSet.filed), for the next answer.
func (d *decoder) cachedLabels() error {
	c := d.metrics
	i := c.next
	c.next++
	if d.peek() != '{' {
		return d.freshLabels()
	}
	if i < c.size && c.entry(i).length > 0 {
		e := c.entry(i)
		for len(d.buf)-d.pos < e.length {
			if _, ok := d.fill(d.pos); !ok {
				break
			}
		}
		if len(d.buf)-d.pos >= e.length && d.buf[d.pos+e.length-1] == '}' && maphash.Bytes(c.seed, d.buf[d.pos:d.pos+e.length]) == e.hash {
			d.cur = &e.labels
			d.pos += e.length
			return nil
		}
	}
	for c.size <= i {
		c.add()
	}
	e := c.entry(i)
	*e = cachedMetric{} // until read whole
	n, ok := d.objectLength()
	if !ok {
		// Not a flat object of strings, or a long one: read it as it
		// comes, and let the reader say what is wrong with it.
		return d.freshLabels()
	}
	hash := maphash.Bytes(c.seed, d.buf[d.pos:d.pos+n])
	if err := d.freshLabels(); err != nil || d.bad.label != "" {
		return err // a series left out is read again each time, to say so
	}
	*e = cachedMetric{hash: hash, length: n, labels: d.ls}
	d.cur = &e.labels
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
