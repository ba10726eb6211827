package rules

import (
	"slices"
	"time"
)

// CondKind says what a CondNode is.
type CondKind int

// The kinds of condition nodes.
const (
	CondCompare CondKind = iota + 1 // value op quantity
	CondIn                          // value in (numbers)
	CondAnd                         // every operand holds
	CondOr                          // some operand holds
	CondNot                         // the operand does not hold
)

// CondNode is one node of a condition's syntax tree, for tools that carry
// the rule language elsewhere (gpuwatch rules export writes it as PromQL).
// And, Or and Not follow three-valued logic, as Cond.Truth does.
type CondNode struct {
	Kind     CondKind
	Operands []CondNode // And, Or: two or more; Not: one
	Value    CondValue  // Compare, In: the left side
	Op       string     // Compare: > >= < <= == !=
	Quantity float64    // Compare: the right side, in the value's base unit
	Set      []float64  // In: the numbers
}

// CondValue is the left side of a comparison: a metric read directly, or
// a window function of it.
type CondValue struct {
	Metric Metric
	Fn     string        // "" for the metric itself, else avg, min, max, slope, trend, time_to_full, rate, active or count
	Window time.Duration // the function's window
	// Longest is the longest time scale of a trend or time_to_full over
	// several (see Trend); 0 for one.
	Longest time.Duration
	// Test is, for count, the XID test whose events it counts (a Compare
	// or In on xid, xid.fault or xid.action); nil otherwise.
	Test *CondNode
}

// Dimension returns what the value measures.
func (v CondValue) Dimension() Dimension {
	f, _ := lookupFn(v.Fn)
	return (&valueNode{metric: v.Metric, fn: f}).dimension()
}

// Tree returns the condition's syntax tree. Its first comparison, depth
// first, is the one whose left side an alert reports (Value).
func (c *Cond) Tree() CondNode {
	if c == nil || c.root == nil {
		return CondNode{}
	}
	return c.root.tree()
}

func (n *junction) tree() CondNode {
	out := CondNode{Kind: CondOr, Operands: make([]CondNode, len(n.xs))}
	if n.stop == triFalse {
		out.Kind = CondAnd
	}
	for i, x := range n.xs {
		out.Operands[i] = x.tree()
	}
	return out
}

func (n *notNode) tree() CondNode {
	return CondNode{Kind: CondNot, Operands: []CondNode{n.x.tree()}}
}

func (n *leaf) tree() CondNode {
	v := CondValue{Metric: n.val.metric, Fn: n.val.fn.String(), Window: n.val.span, Longest: n.val.longest}
	if n.val.test != nil {
		t := n.val.test.tree()
		v.Test = &t
	}
	if n.op == opIn {
		return CondNode{Kind: CondIn, Value: v, Set: slices.Clone(n.set)}
	}
	return CondNode{Kind: CondCompare, Value: v, Op: n.op.String(), Quantity: n.q}
}
