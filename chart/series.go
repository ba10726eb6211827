package chart

import (
	"encoding/json"
	"math"
	"time"
)

// Series is a metric at even steps: Values[i] is the reading at
// Start + i·Step, NaN where unknown. It encodes to JSON with null for NaN,
// so a chart's data can wait in the outbox and the store.
type Series struct {
	Start  time.Time     `json:"start"`
	Step   time.Duration `json:"step"`
	Values Values        `json:"values"`
}

// At is the time of point i.
func (s *Series) At(i int) time.Time { return s.Start.Add(time.Duration(i) * s.Step) }

// End is the time of the last point; Start when there is none.
func (s *Series) End() time.Time {
	if len(s.Values) == 0 {
		return s.Start
	}
	return s.At(len(s.Values) - 1)
}

// Known reports whether any point is known.
func (s *Series) Known() bool {
	for _, v := range s.Values {
		if finite(v) {
			return true
		}
	}
	return false
}

// Last returns the last known value and its time; ok is false when no
// point is known.
func (s *Series) Last() (at time.Time, v float64, ok bool) {
	for i := len(s.Values) - 1; i >= 0; i-- {
		if finite(s.Values[i]) {
			return s.At(i), s.Values[i], true
		}
	}
	return time.Time{}, math.NaN(), false
}

// Max returns the largest known value, NaN when none is known.
func (s *Series) Max() float64 {
	out := math.NaN()
	for _, v := range s.Values {
		if finite(v) && !(v <= out) {
			out = v
		}
	}
	return out
}

// Values are a series' readings; JSON null stands for NaN.
type Values []float64

// MarshalJSON writes the values, null where a value is not finite.
func (v Values) MarshalJSON() ([]byte, error) {
	out := make([]byte, 0, 8*len(v)+2)
	out = append(out, '[')
	for i, x := range v {
		if i > 0 {
			out = append(out, ',')
		}
		if !finite(x) {
			out = append(out, "null"...)
			continue
		}
		b, err := json.Marshal(x)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return append(out, ']'), nil
}

// UnmarshalJSON reads values; null becomes NaN.
func (v *Values) UnmarshalJSON(b []byte) error {
	var raw []*float64
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(Values, len(raw))
	for i, p := range raw {
		out[i] = math.NaN()
		if p != nil {
			out[i] = *p
		}
	}
	*v = out
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
