package prometheus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// answer is an answer of the query API, decoded: its status and, on
// success, its series with the labels gpuwatch reads and their samples
// (one for an instant query's vector, a series for a range query's
// matrix). An instant query's series are not kept: decodeAnswer hands
// each to its caller as it reads it.
type answer struct {
	status, errorType, errorMsg string
	resultType                  string
	series                      []seriesAnswer
	warnings                    []string
	// refused describes the first series left out for a label too long
	// to read (see MaxLabelBytes), refusedCount counts them all.
	refused      []string
	refusedCount int
}

type seriesAnswer struct {
	labels  labelSet
	samples []sample
}

type sample struct {
	t int64 // milliseconds since the Unix epoch
	v float64
}

// labelSet holds the labels of a series that gpuwatch reads; the others
// are skipped.
type labelSet struct {
	name                             string // __name__
	host, hostname, instance, job    string // host (gpuwatch), Hostname or hostname (dcgm-exporter), the scrape target
	gpu, uuid, uuidDCGM, gpuInstance string // gpu, uuid, UUID, GPU_I_ID
	gpuName, modelName               string // name, modelName
	// A MIG instance: dcgm-exporter's GPU_I_PROFILE; gpuwatch_gpu_mig_info's
	// parent_uuid, gpu_instance, compute_instance and profile.
	profileDCGM, parentUUID, migGI, migCI, profile string
	namespace, pod, container                      string
	xid, pid, user, command                        string
	window                                         string // window_size_in_ms, of dcgm-exporter's XID count
	// podLabels are the values of the pod labels the decoder reads
	// (decoder.podNames), in their order: dcgm-exporter's
	// (--kubernetes-enable-pod-labels), then gpuwatch's label_KEY; nil
	// until the series has one (a fleet's label sets are cached, and most
	// fleets ask for none).
	podLabels *podLabelValues
	// filed is where the builder filed the series at an earlier
	// evaluation: kept with the label sets a metricCache holds, so that an
	// evaluation's series whose labels are the same as the last one's go
	// to their GPU without looking it up.
	filed filing
}

// same reports whether two label sets hold the same labels, wherever
// they were filed.
func (ls *labelSet) same(o *labelSet) bool {
	a, b := *ls, *o
	a.filed, b.filed = filing{}, filing{}
	pa, pb := a.podLabels, b.podLabels
	a.podLabels, b.podLabels = nil, nil
	var none podLabelValues
	if pa == nil {
		pa = &none
	}
	if pb == nil {
		pb = &none
	}
	return a == b && *pa == *pb
}

// podLabelValues are the values of a series' pod labels.
type podLabelValues [2 * gpu.MaxPodLabels]string

// pods are the series' pod labels of keys, their values from podLabels[from:].
func (ls *labelSet) pods(keys []string, from int) gpu.PodLabels {
	if ls.podLabels == nil || len(keys) == 0 {
		return ""
	}
	return gpu.PodLabelsOf(keys, ls.podLabels[from:from+len(keys)])
}

// field is the labelSet field a label name fills; nil for a label
// gpuwatch does not read.
func (ls *labelSet) field(key []byte) *string {
	switch string(key) {
	case "__name__":
		return &ls.name
	case "host":
		return &ls.host
	case "Hostname", "hostname": // dcgm-exporter 3 and 4 spell it differently
		return &ls.hostname
	case "instance":
		return &ls.instance
	case "job":
		return &ls.job
	case "gpu":
		return &ls.gpu
	case "uuid":
		return &ls.uuid
	case "UUID":
		return &ls.uuidDCGM
	case "GPU_I_ID":
		return &ls.gpuInstance
	case "GPU_I_PROFILE":
		return &ls.profileDCGM
	case "parent_uuid":
		return &ls.parentUUID
	case "gpu_instance":
		return &ls.migGI
	case "compute_instance":
		return &ls.migCI
	case "profile":
		return &ls.profile
	case "name":
		return &ls.gpuName
	case "modelName":
		return &ls.modelName
	case "namespace":
		return &ls.namespace
	case "pod":
		return &ls.pod
	case "container":
		return &ls.container
	case "xid":
		return &ls.xid
	case "window_size_in_ms":
		return &ls.window
	case "pid":
		return &ls.pid
	case "user":
		return &ls.user
	case "command":
		return &ls.command
	}
	return nil
}

// maxDepth bounds the nesting of values an answer may have.
const maxDepth = 64

// parseAnswer decodes a whole answer held in memory, keeping its series.
func parseAnswer(data []byte) (*answer, error) {
	return decodeAnswer(bytes.NewReader(data), int64(len(data)), nil, newInterner(), nil, nil, nil)
}

// decodeAnswer reads an answer of /api/v1/query or /api/v1/query_range
// from r, at most limit bytes of it, as it arrives: nothing but the
// series being read is held. It reads the few fields gpuwatch needs in
// one pass, without a value per JSON node. With each set, every series
// is handed to it as soon as it is read (the labelSet and samples are
// reused after it returns) and not kept in the answer; without, the
// answer keeps them. Label values are interned: the same host, model and
// job repeat in every series of a GPU, and in every evaluation. The
// labels podNames names (at most 2 × gpu.MaxPodLabels) are read into
// labelSet.podLabels. buf, when not nil, is the buffer to read through,
// kept for the next answer; metrics, when not nil, the label sets of the
// last answer's series.
func decodeAnswer(r io.Reader, limit int64, buf *[]byte, strs *interner, podNames []string, metrics *metricCache, each func(ls *labelSet, samples []sample) error) (*answer, error) {
	d := &decoder{r: r, limit: limit, strs: strs, podNames: podNames[:min(len(podNames), 2*gpu.MaxPodLabels)], each: each, metrics: metrics}
	if metrics != nil {
		metrics.start()
		defer metrics.finish()
	}
	if buf != nil && *buf != nil {
		d.buf = (*buf)[:0]
	} else {
		d.buf = make([]byte, 0, min(limit+1, readBuffer))
	}
	if buf != nil {
		defer func() { *buf = d.buf }()
	}
	a := &answer{}
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "status":
			return d.stringInto(&a.status)
		case "errorType":
			return d.stringInto(&a.errorType)
		case "error":
			return d.stringInto(&a.errorMsg)
		case "warnings":
			return d.array(func() error {
				var w string
				if err := d.stringInto(&w); err != nil || len(a.warnings) == maxWarnings {
					return err
				}
				a.warnings = append(a.warnings, w)
				return nil
			})
		case "data":
			return d.result(a)
		}
		return d.skip(0)
	})
	if err == nil && d.peek() != 0 {
		err = d.errorf("unexpected text after the answer")
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// decoder reads JSON from a reader through a buffer: buf[pos:] is not
// read yet, and base is where buf starts in the answer.
type decoder struct {
	r     io.Reader
	limit int64
	buf   []byte
	pos   int
	base  int64
	eof   bool
	err   error // what the reader failed with, or the answer being too big
	strs  *interner
	each  func(*labelSet, []sample) error
	// metrics, when set, has the label sets of the last answer's series
	// (an instant query's, every evaluation).
	metrics *metricCache
	// podNames are the names of the pod labels read, as series carry
	// them (gpu.PodLabelSeriesName).
	podNames []string

	ls   labelSet
	prev labelSet // the series read into ls before it
	// cur is the labels of the series being read: ls, or the cache's.
	cur     *labelSet
	samples []sample
	// lastTime is the text of the last sample time parsed, lastTimeMillis
	// its value.
	lastTime       []byte
	lastTimeMillis int64
	// key holds the key of the object field being read (see object).
	key []byte
	// noPrev stands for a pod label of the series before that had none.
	noPrev string
	bad    badLabel // the first label of ls too long to read; zero when none
	count  int      // the series read so far
}

// readBuffer is the size of the buffer an answer is read through: a
// fleet's answer is tens of megabytes, read in as few reads of the
// socket as that takes.
const readBuffer = 1 << 20

// minRead is the least room fill reads into.
const minRead = 32 << 10

// fill reads more of the answer, keeping buf[keep:] (keep ≤ pos), which
// moves to the front of buf: it returns by how much, and whether more
// bytes came.
func (d *decoder) fill(keep int) (shift int, ok bool) {
	if d.eof {
		return 0, false
	}
	n := copy(d.buf[:cap(d.buf)], d.buf[keep:])
	d.base += int64(keep)
	d.pos -= keep
	d.buf = d.buf[:n]
	if cap(d.buf)-n < minRead {
		grown := make([]byte, n, 2*cap(d.buf)+minRead)
		copy(grown, d.buf)
		d.buf = grown
	}
	for {
		m, err := d.r.Read(d.buf[n:cap(d.buf)])
		d.buf = d.buf[:n+m]
		if d.base+int64(n+m) > d.limit {
			d.eof, d.err = true, fmt.Errorf("the answer has more than the %d bytes gpuwatch reads: narrow source.prometheus.selector", d.limit)
			return keep, false
		}
		if err != nil {
			d.eof = true
			if err != io.EOF {
				d.err = err
			}
			return keep, m > 0
		}
		if m > 0 {
			return keep, true
		}
	}
}

func (d *decoder) errorf(format string, args ...any) error {
	if d.err != nil {
		return fmt.Errorf("reading the answer: %w", d.err)
	}
	return fmt.Errorf("the answer is not Prometheus's JSON: at byte %d: %s", d.base+int64(d.pos), fmt.Sprintf(format, args...))
}

// peek is the next byte after white space; 0 at the end.
func (d *decoder) peek() byte {
	for {
		for d.pos < len(d.buf) {
			switch c := d.buf[d.pos]; c {
			case ' ', '\t', '\r', '\n':
				d.pos++
			default:
				return c
			}
		}
		if _, ok := d.fill(d.pos); !ok {
			return 0
		}
	}
}

func (d *decoder) expect(c byte) error {
	if d.peek() != c {
		return d.errorf("expected %q", c)
	}
	d.pos++
	return nil
}

// object reads an object, calling field for each key with the decoder
// at the key's value, which field must consume. The key is valid until
// field reads an object itself: every object's keys are read into one
// buffer.
func (d *decoder) object(field func(key []byte) error) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	if d.peek() == '}' {
		d.pos++
		return nil
	}
	for {
		raw, size, err := d.str(maxKey)
		if err != nil {
			return err
		}
		key := d.key[:0]
		if size <= maxKey { // a longer key is none gpuwatch reads
			key = append(key, raw...)
			d.key = key
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return nil
		default:
			return d.errorf("expected , or } in an object")
		}
	}
}

// array reads an array, calling item for each element.
func (d *decoder) array(item func() error) error {
	if err := d.expect('['); err != nil {
		return err
	}
	if d.peek() == ']' {
		d.pos++
		return nil
	}
	for {
		if err := item(); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return nil
		default:
			return d.errorf("expected , or ] in an array")
		}
	}
}

// Bounds on the strings of an answer: how much of one is held in memory.
const (
	// MaxLabelBytes is the longest label value gpuwatch reads (host, uuid,
	// gpu, user, command, …): a series with a longer one is left out, and
	// logged once, so that no store key is made of an exporter's text.
	MaxLabelBytes = gpu.MaxNameBytes
	// maxHeldString is the most of any other string held: a longer one
	// (a label gpuwatch does not read) is read as it arrives and dropped.
	maxHeldString = 64 << 10
	// maxMessage is the most of Prometheus's status, error and warnings
	// kept; the rest is clipped.
	maxMessage = 4 << 10
	// maxQuoted is how much of a string too long to hold a message quotes.
	maxQuoted = 64
	// maxKey is the longest object key read: a longer one is none
	// gpuwatch reads.
	maxKey = 256
	// maxWarnings is how many of Prometheus's warnings are kept.
	maxWarnings = 10
)

// rawString reads a string and returns its text, escapes decoded; the
// bytes are valid until the next read. A string longer than
// maxHeldString is read and dropped: text is its start, as sent, and long
// is set.
func (d *decoder) rawString() (text []byte, long bool, err error) {
	text, size, err := d.str(maxHeldString)
	return text, size > maxHeldString, err
}

// str reads a string. One of at most max bytes, as sent, comes back with
// its escapes decoded, valid until the next read. Of a longer one only
// its first maxQuoted bytes, as sent, are held, and the rest is read as it
// arrives and dropped, so that memory stays bounded whatever an exporter
// put in a label: size, its length as sent, is then more than max. The
// closing quote is looked for with bytes.IndexByte, a word at a time:
// label values are most of an answer's bytes.
func (d *decoder) str(max int) (text []byte, size int64, err error) {
	if d.peek() != '"' {
		return nil, 0, d.errorf("expected a string")
	}
	start := d.pos
	from := start + 1 // where the closing quote may be
	for {
		if i := bytes.IndexByte(d.buf[from:], '"'); i >= 0 {
			end := from + i
			if escapedQuote(d.buf[start+1 : end]) {
				from = end + 1
				continue
			}
			if end-start-1 > max {
				return d.longString(start)
			}
			d.pos = end + 1
			text, err := d.stringText(d.buf[start : end+1])
			return text, int64(end - start - 1), err
		}
		if len(d.buf)-start-1 > max {
			return d.longString(start)
		}
		from = len(d.buf)
		shift, ok := d.fill(start)
		start, from = start-shift, from-shift
		if !ok {
			d.pos = from
			return nil, 0, d.errorf("a string without its closing quote")
		}
	}
}

// longString reads the string that starts at buf[start] as it arrives,
// without holding it: it returns its first maxQuoted bytes and its
// length, as sent.
func (d *decoder) longString(start int) ([]byte, int64, error) {
	begin := d.base + int64(start) + 1 // where its text starts in the answer
	quoted := bytes.Clone(d.buf[start+1 : min(len(d.buf), start+1+maxQuoted)])
	p, backslashes := start+1, 0 // backslashes: how many come just before p
	for {
		for ; p < len(d.buf); p++ {
			switch c := d.buf[p]; {
			case c == '"' && backslashes%2 == 0:
				d.pos = p + 1
				return quoted, d.base + int64(p) - begin, nil
			case c == '\\':
				backslashes++
				continue
			case c < 0x20:
				d.pos = p
				return nil, 0, d.errorf("a control character in a string")
			}
			backslashes = 0
		}
		d.pos = p
		if _, ok := d.fill(p); !ok {
			return nil, 0, d.errorf("a string without its closing quote")
		}
		p = d.pos
	}
}

// escapedQuote is whether text, a string's bytes up to a quote, ends in
// an odd number of backslashes: the quote is part of the string.
func escapedQuote(text []byte) bool {
	n := 0
	for n < len(text) && text[len(text)-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

// stringText is the text of quoted, a whole JSON string with its quotes.
func (d *decoder) stringText(quoted []byte) ([]byte, error) {
	text := quoted[1 : len(quoted)-1]
	escaped := false
	for _, c := range text {
		if c < 0x20 {
			return nil, d.errorf("a control character in a string")
		}
		escaped = escaped || c == '\\'
	}
	if !escaped {
		return text, nil
	}
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return nil, d.errorf("a string with an invalid escape")
	}
	return []byte(s), nil
}

// stringInto reads a string into dst, interned; one longer than
// maxMessage is clipped.
func (d *decoder) stringInto(dst *string) error {
	raw, size, err := d.str(maxMessage)
	switch {
	case err != nil:
	case size > maxMessage:
		*dst = string(raw) + "…"
	default:
		*dst = d.strs.of(raw)
	}
	return err
}

// numberText reads the text of a JSON number.
func (d *decoder) numberText() []byte {
	d.peek()
	start := d.pos
	for {
		for d.pos < len(d.buf) {
			c := d.buf[d.pos]
			if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
				if d.pos-start == maxNumber {
					return nil // no number is that long: held no further
				}
				d.pos++
				continue
			}
			return d.buf[start:d.pos]
		}
		shift, ok := d.fill(start)
		start -= shift
		if !ok {
			return d.buf[start:d.pos]
		}
	}
}

// maxNumber is the longest number read.
const maxNumber = 64

// number reads a JSON number.
func (d *decoder) number() (float64, error) {
	text := d.numberText()
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil || len(text) == 0 {
		return 0, d.errorf("expected a number")
	}
	return f, nil
}

// skip reads any value and forgets it.
func (d *decoder) skip(depth int) error {
	if depth > maxDepth {
		return d.errorf("values nested more than %d deep", maxDepth)
	}
	switch c := d.peek(); {
	case c == '{':
		return d.object(func([]byte) error { return d.skip(depth + 1) })
	case c == '[':
		return d.array(func() error { return d.skip(depth + 1) })
	case c == '"':
		_, _, err := d.rawString()
		return err
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			for len(d.buf)-d.pos < len(lit) {
				if _, ok := d.fill(d.pos); !ok {
					break
				}
			}
			if bytes.HasPrefix(d.buf[d.pos:], []byte(lit)) {
				d.pos += len(lit)
				return nil
			}
		}
		return d.errorf("expected a value")
	default:
		_, err := d.number()
		return err
	}
}

// result reads the data of a successful answer: resultType and result.
func (d *decoder) result(a *answer) error {
	return d.object(func(key []byte) error {
		switch string(key) {
		case "resultType":
			return d.stringInto(&a.resultType)
		case "result":
			if d.peek() != '[' {
				return d.skip(0) // a scalar or string result: not series
			}
			return d.array(func() error {
				if err := d.series(); err != nil {
					return err
				}
				if d.count++; d.count > MaxSeries {
					return fmt.Errorf("the answer has more than %d series, the most gpuwatch reads (a fleet of 10,000 GPUs answers some 250,000): "+
						"narrow source.prometheus.selector, or split the fleet between hubs", MaxSeries)
				}
				if d.bad.label != "" {
					a.refuse(d.bad.describe(d.cur))
					return nil
				}
				if d.each != nil {
					return d.each(d.cur, d.samples)
				}
				a.series = append(a.series, seriesAnswer{labels: *d.cur, samples: append([]sample(nil), d.samples...)})
				return nil
			})
		}
		return d.skip(0)
	})
}

// series reads one series of a vector ("value") or a matrix ("values")
// into d.ls and d.samples.
func (d *decoder) series() error {
	d.cur, d.samples, d.bad = nil, d.samples[:0], badLabel{}
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "metric":
			if d.metrics != nil {
				return d.cachedLabels()
			}
			return d.freshLabels()
		case "value":
			v, err := d.sample()
			d.samples = append(d.samples, v)
			return err
		case "values":
			return d.array(func() error {
				if len(d.samples) > MaxPoints { // a range of MaxPoints steps has one more
					return d.errorf("a series of more than %d points, the most gpuwatch asks for", MaxPoints+1)
				}
				v, err := d.sample()
				d.samples = append(d.samples, v)
				return err
			})
		}
		return d.skip(0)
	})
	if d.cur == nil { // a series without its "metric"
		d.prev, d.ls = d.ls, labelSet{}
		d.cur = &d.ls
	}
	return err
}

// freshLabels reads a series' label set into ls.
func (d *decoder) freshLabels() error {
	d.prev, d.ls = d.ls, labelSet{}
	d.cur = &d.ls
	return d.labels(&d.ls)
}

// sample reads [time, "value"]: seconds as a number, the value as a
// string ("NaN", "+Inf" and "-Inf" included).
func (d *decoder) sample() (sample, error) {
	var out sample
	if err := d.expect('['); err != nil {
		return out, err
	}
	if err := d.sampleTime(&out); err != nil {
		return out, err
	}
	if err := d.expect(','); err != nil {
		return out, err
	}
	text, size, err := d.str(maxNumber)
	if err != nil {
		return out, err
	}
	var ok bool
	if out.v, ok = parseValue(text); !ok || size > maxNumber {
		return out, d.errorf("the value %q is not a number", clip(string(text), 20))
	}
	return out, d.expect(']')
}

// sampleTime reads a sample's time, in seconds, into out.t. Every sample
// of an instant answer has the same time: the text of the last time read
// is kept with its value, and taken without parsing when it repeats.
func (d *decoder) sampleTime(out *sample) error {
	text := d.numberText()
	if len(text) > 0 && bytes.Equal(text, d.lastTime) {
		out.t = d.lastTimeMillis
		return nil
	}
	t, err := strconv.ParseFloat(string(text), 64)
	if err != nil || len(text) == 0 {
		return d.errorf("expected a number")
	}
	if math.IsNaN(t) || math.IsInf(t, 0) || math.Abs(t) > 1e15 {
		return d.errorf("the time %v is out of range", t)
	}
	out.t = int64(math.Round(t * 1000))
	d.lastTime, d.lastTimeMillis = append(d.lastTime[:0], text...), out.t
	return nil
}

// parseValue reads a sample's value as Prometheus writes it: a float's
// text, "NaN", "+Inf" or "-Inf". Most are whole numbers (counts, bytes,
// 0 and 1), read without strconv.
func parseValue(text []byte) (float64, bool) {
	if n := len(text); n > 0 && n <= 15 {
		var v uint64
		for _, c := range text {
			if c < '0' || c > '9' {
				f, err := strconv.ParseFloat(string(text), 64)
				return f, err == nil
			}
			v = v*10 + uint64(c-'0')
		}
		return float64(v), true // below 10^15: exact
	}
	f, err := strconv.ParseFloat(string(text), 64)
	return f, err == nil
}

// validUTF8 replaces each byte of b that is not UTF-8 with U+FFFD, as
// encoding/json reads it: a label value is text that Slack and the page
// show.
func validUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// field is the labelSet field a label fills, and the same field of the
// series before; nil for a label gpuwatch does not read.
func (d *decoder) field(ls *labelSet, key []byte) (dst, prev *string) {
	if dst := ls.field(key); dst != nil {
		return dst, d.prev.field(key)
	}
	for i, name := range d.podNames {
		if name == string(key) {
			if ls.podLabels == nil {
				ls.podLabels = new(podLabelValues)
			}
			if d.prev.podLabels == nil {
				d.noPrev = ""
				return &ls.podLabels[i], &d.noPrev
			}
			return &ls.podLabels[i], &d.prev.podLabels[i]
		}
	}
	return nil, nil
}

// labels reads a series' label set, keeping the labels gpuwatch reads. A
// value the series before had too is taken from it: Prometheus answers
// in label order, so the series of one family and GPU index come
// together, with the same name, job and model, and only the map lookups
// of what changes are made. A value gpuwatch reads that is longer than
// MaxLabelBytes is not held: it marks the series bad (d.bad).
func (d *decoder) labels(ls *labelSet) error {
	return d.object(func(key []byte) error {
		dst, prev := d.field(ls, key)
		if dst == nil {
			if d.peek() != '"' {
				return d.errorf("label %s has a value that is not a string", clip(string(key), 40))
			}
			_, _, err := d.rawString()
			return err
		}
		raw, size, err := d.str(MaxLabelBytes)
		if err != nil {
			return err
		}
		if size > MaxLabelBytes {
			if d.bad.label == "" {
				d.bad = badLabel{label: string(key), size: size, start: string(raw)}
			}
			return nil
		}
		if !utf8.Valid(raw) {
			raw = validUTF8(raw)
		}
		if *prev == string(raw) {
			*dst = *prev
		} else {
			*dst = d.strs.of(raw)
		}
		return nil
	})
}
