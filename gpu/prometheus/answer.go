package prometheus

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// answer is an answer of the query API, decoded: its status and, on
// success, its series with the labels gpuwatch reads and their samples
// (one for an instant query's vector, a series for a range query's
// matrix).
type answer struct {
	status, errorType, errorMsg string
	resultType                  string
	series                      []seriesAnswer
	warnings                    []string
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
	host, hostname, instance         string // host (gpuwatch), Hostname (dcgm-exporter), instance
	gpu, uuid, uuidDCGM, gpuInstance string // gpu, uuid, UUID, GPU_I_ID
	gpuName, modelName               string // name, modelName
	namespace, pod, container        string
	xid, pid, user, command          string
}

// maxDepth bounds the nesting of values an answer may have.
const maxDepth = 64

// parseAnswer decodes an answer of /api/v1/query or /api/v1/query_range.
// It reads the few fields gpuwatch needs in one pass, without a value per
// JSON node: a fleet's answer holds tens of thousands of series. Label
// values are interned, as the same host, model and job repeat in every
// series of a GPU.
func parseAnswer(data []byte) (*answer, error) {
	p := &parser{data: data, intern: map[string]string{}}
	a := &answer{}
	err := p.object(func(key string) error {
		switch key {
		case "status":
			return p.stringInto(&a.status)
		case "errorType":
			return p.stringInto(&a.errorType)
		case "error":
			return p.stringInto(&a.errorMsg)
		case "warnings":
			return p.array(func() error {
				var w string
				if err := p.stringInto(&w); err != nil {
					return err
				}
				a.warnings = append(a.warnings, w)
				return nil
			})
		case "data":
			return p.result(a)
		}
		return p.skip(0)
	})
	if err == nil {
		p.space()
		if p.pos < len(p.data) {
			err = p.errorf("unexpected text after the answer")
		}
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

type parser struct {
	data   []byte
	pos    int
	intern map[string]string
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("the answer is not Prometheus's JSON: at byte %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\r', '\n':
			p.pos++
		default:
			return
		}
	}
}

// peek is the next byte after white space; 0 at the end.
func (p *parser) peek() byte {
	p.space()
	if p.pos >= len(p.data) {
		return 0
	}
	return p.data[p.pos]
}

func (p *parser) expect(c byte) error {
	if p.peek() != c {
		return p.errorf("expected %q", c)
	}
	p.pos++
	return nil
}

// object reads an object, calling field for each key with the parser at
// the key's value, which field must consume.
func (p *parser) object(field func(key string) error) error {
	if err := p.expect('{'); err != nil {
		return err
	}
	if p.peek() == '}' {
		p.pos++
		return nil
	}
	for {
		raw, err := p.rawString()
		if err != nil {
			return err
		}
		if err := p.expect(':'); err != nil {
			return err
		}
		if err := field(raw); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return nil
		default:
			return p.errorf("expected , or } in an object")
		}
	}
}

// array reads an array, calling item for each element.
func (p *parser) array(item func() error) error {
	if err := p.expect('['); err != nil {
		return err
	}
	if p.peek() == ']' {
		p.pos++
		return nil
	}
	for {
		if err := item(); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return nil
		default:
			return p.errorf("expected , or ] in an array")
		}
	}
}

// rawString reads a string; the result may share the answer's bytes'
// interned copy, so it is cheap to keep.
func (p *parser) rawString() (string, error) {
	if p.peek() != '"' {
		return "", p.errorf("expected a string")
	}
	start := p.pos
	p.pos++
	escaped := false
	for p.pos < len(p.data) {
		switch c := p.data[p.pos]; {
		case c == '"':
			p.pos++
			raw := p.data[start+1 : p.pos-1]
			if !escaped {
				if s, ok := p.intern[string(raw)]; ok {
					return s, nil
				}
				s := string(raw)
				p.intern[s] = s
				return s, nil
			}
			var s string
			if err := json.Unmarshal(p.data[start:p.pos], &s); err != nil {
				return "", p.errorf("a string with an invalid escape")
			}
			return s, nil
		case c == '\\':
			escaped = true
			p.pos += 2
		case c < 0x20:
			return "", p.errorf("a control character in a string")
		default:
			p.pos++
		}
	}
	return "", p.errorf("a string without its closing quote")
}

func (p *parser) stringInto(dst *string) error {
	s, err := p.rawString()
	*dst = s
	return err
}

// number reads a JSON number.
func (p *parser) number() (float64, error) {
	p.space()
	start := p.pos
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.pos++
			continue
		}
		break
	}
	f, err := strconv.ParseFloat(string(p.data[start:p.pos]), 64)
	if err != nil || start == p.pos {
		return 0, p.errorf("expected a number")
	}
	return f, nil
}

// skip reads any value and forgets it.
func (p *parser) skip(depth int) error {
	if depth > maxDepth {
		return p.errorf("values nested more than %d deep", maxDepth)
	}
	switch c := p.peek(); {
	case c == '{':
		return p.object(func(string) error { return p.skip(depth + 1) })
	case c == '[':
		return p.array(func() error { return p.skip(depth + 1) })
	case c == '"':
		_, err := p.rawString()
		return err
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if string(p.data[p.pos:min(p.pos+len(lit), len(p.data))]) == lit {
				p.pos += len(lit)
				return nil
			}
		}
		return p.errorf("expected a value")
	default:
		_, err := p.number()
		return err
	}
}

// result reads the data of a successful answer: resultType and result.
func (p *parser) result(a *answer) error {
	return p.object(func(key string) error {
		switch key {
		case "resultType":
			return p.stringInto(&a.resultType)
		case "result":
			if p.peek() != '[' {
				return p.skip(0) // a scalar or string result: not series
			}
			return p.array(func() error {
				s, err := p.series()
				a.series = append(a.series, s)
				return err
			})
		}
		return p.skip(0)
	})
}

// series reads one series of a vector ("value") or a matrix ("values").
func (p *parser) series() (seriesAnswer, error) {
	var s seriesAnswer
	err := p.object(func(key string) error {
		switch key {
		case "metric":
			return p.labels(&s.labels)
		case "value":
			v, err := p.sample()
			s.samples = append(s.samples, v)
			return err
		case "values":
			return p.array(func() error {
				v, err := p.sample()
				s.samples = append(s.samples, v)
				return err
			})
		}
		return p.skip(0)
	})
	return s, err
}

// sample reads [time, "value"]: seconds as a number, the value as a
// string ("NaN", "+Inf" and "-Inf" included).
func (p *parser) sample() (sample, error) {
	var out sample
	if err := p.expect('['); err != nil {
		return out, err
	}
	t, err := p.number()
	if err != nil {
		return out, err
	}
	if err := p.expect(','); err != nil {
		return out, err
	}
	text, err := p.rawString()
	if err != nil {
		return out, err
	}
	if out.v, err = strconv.ParseFloat(text, 64); err != nil {
		return out, p.errorf("the value %q is not a number", clip(text, 20))
	}
	if math.IsNaN(t) || math.IsInf(t, 0) || math.Abs(t) > 1e15 {
		return out, p.errorf("the time %v is out of range", t)
	}
	out.t = int64(math.Round(t * 1000))
	return out, p.expect(']')
}

// labels reads a series' label set, keeping the labels gpuwatch reads.
func (p *parser) labels(ls *labelSet) error {
	return p.object(func(key string) error {
		var dst *string
		switch key {
		case "__name__":
			dst = &ls.name
		case "host":
			dst = &ls.host
		case "Hostname":
			dst = &ls.hostname
		case "instance":
			dst = &ls.instance
		case "gpu":
			dst = &ls.gpu
		case "uuid":
			dst = &ls.uuid
		case "UUID":
			dst = &ls.uuidDCGM
		case "GPU_I_ID":
			dst = &ls.gpuInstance
		case "name":
			dst = &ls.gpuName
		case "modelName":
			dst = &ls.modelName
		case "namespace":
			dst = &ls.namespace
		case "pod":
			dst = &ls.pod
		case "container":
			dst = &ls.container
		case "xid":
			dst = &ls.xid
		case "pid":
			dst = &ls.pid
		case "user":
			dst = &ls.user
		case "command":
			dst = &ls.command
		default:
			if p.peek() != '"' {
				return p.errorf("label %s has a value that is not a string", clip(key, 40))
			}
			_, err := p.rawString()
			return err
		}
		return p.stringInto(dst)
	})
}
