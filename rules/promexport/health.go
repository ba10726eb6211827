package promexport

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/healthseries"
	"github.com/gpuwatch/gpuwatch/rules"
)

// healthForm is how the schema computes a health metric: from the agents'
// series of its reading, or from dcgm-exporter's under either generation
// of its names (the renamed one of 4.9 where the legacy one is absent).
// A throttle.* flag tests its bit of the clock event reasons' mask; a
// *_below_max metric is the maximum less the reading.
func (s schema) healthForm(m rules.Metric, src rules.HealthSource) form {
	reading, ok := s.healthReading(src.Reading, src.Scale)
	if !ok {
		return form{kind: formNone, why: fmt.Sprintf("dcgm-exporter does not export %s", m)}
	}
	switch {
	case src.Throttle != 0:
		bit := strconv.FormatUint(uint64(src.Throttle), 10)
		return form{kind: formDerived, inst: bin(call("floor", bin(reading.inst, "/", raw(bit))), "%", raw("2"))}
	case src.BelowMax:
		most, ok := s.healthReading(src.Max, src.Scale)
		if !ok {
			return form{kind: formNone, why: fmt.Sprintf("dcgm-exporter does not export %s", m)}
		}
		return form{kind: formDerived, inst: call("clamp_min", bin(most.inst, "-", reading.inst), raw("0"))}
	}
	return reading
}

// healthReading is reading r, in its unit × metricScale, per GPU.
func (s schema) healthReading(r gpu.HealthReading, metricScale float64) (form, bool) {
	i := slices.IndexFunc(healthseries.All(), func(h healthseries.Series) bool { return h.Reading == r })
	if i < 0 {
		return form{}, false
	}
	h := healthseries.All()[i]
	if s.name == SchemaGPUWatch {
		return s.rawForm(h.Name, metricScale/h.Scale), true
	}
	var gens []expr
	for _, gen := range []healthseries.Generation{healthseries.DCGMLegacy, healthseries.DCGM49} {
		var sum []expr
		for _, f := range h.DCGM {
			if f.Gen != gen {
				continue
			}
			e := s.perGPU(s.sel(f.Name))
			if k := metricScale / f.Scale; k != 1 {
				e = bin(number(k), "*", e)
			}
			if f.Sum && len(sum) > 0 {
				// Both parts, or the one reported, counting the other as 0.
				prev := sum[len(sum)-1]
				sum[len(sum)-1] = bin(bin(prev, "or", bin(raw("0"), "*", e)), "+", bin(e, "or", bin(raw("0"), "*", prev)))
				continue
			}
			sum = append(sum, e)
		}
		gens = append(gens, join("or", sum...))
	}
	if len(gens) == 0 || len(h.DCGM) == 0 {
		return form{}, false
	}
	return form{kind: formDerived, inst: join("or", gens...),
		note: fmt.Sprintf("%s reads dcgm-exporter's %s, or its 4.9 name where that is absent", r, h.DCGM[0].Name)}, true
}

// xidCodes is the set of catalogued XID codes that pass an xid.fault or
// xid.action test, as an xid in (…) test; false when codes outside the
// catalogue pass it too (xid.fault == "unknown"), which PromQL cannot
// list.
func xidCodes(n rules.CondNode) (rules.CondNode, bool) {
	test := func(code uint64) bool {
		var v float64
		if n.Value.Metric == rules.MetricXIDFault {
			v = float64(gpu.XIDFaultOf(code))
		} else {
			v = float64(gpu.XIDActionOf(code))
		}
		if n.Kind == rules.CondIn {
			return slices.Contains(n.Set, v)
		}
		return holds(v, n.Op, n.Quantity)
	}
	if test(1 << 31) { // a code no catalogue holds
		return rules.CondNode{}, false
	}
	out := rules.CondNode{Kind: rules.CondIn, Value: rules.CondValue{Metric: rules.MetricXID}}
	for _, x := range gpu.XIDCatalogue() {
		if test(x.Code) {
			out.Set = append(out.Set, float64(x.Code))
		}
	}
	return out, len(out.Set) > 0
}

// holds applies a comparison to v.
func holds(v float64, op string, q float64) bool {
	switch op {
	case ">":
		return v > q
	case ">=":
		return v >= q
	case "<":
		return v < q
	case "<=":
		return v <= q
	case "==":
		return v == q
	}
	return v != q
}

// testText writes an XID test as the rule language does: xid in (13, 31),
// xid.fault == "application".
func testText(n rules.CondNode) string {
	value := func(v float64) string {
		if names := n.Value.Metric.States(); names != nil && int(v) >= 0 && int(v) < len(names) {
			return strconv.Quote(names[int(v)])
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	if n.Kind == rules.CondIn {
		parts := make([]string, len(n.Set))
		for i, v := range n.Set {
			parts[i] = value(v)
		}
		return n.Value.Metric.String() + " in (" + strings.Join(parts, ", ") + ")"
	}
	return n.Value.Metric.String() + " " + n.Op + " " + value(n.Quantity)
}
