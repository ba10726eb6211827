package strictyaml

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// Aliases let a small file stand for a huge one (`&a [*b, *b, …]` nested
// a few levels deep is a "billion laughs" bomb), and an alias inside the
// value of its own anchor stands for an endless one. Decoding follows
// aliases, so Parse refuses both before anything is decoded.

// MaxExpandedNodes is how many nodes a document may stand for, aliases
// followed, beyond ten times the nodes written in it: generous for
// anchors that share a route or a matcher list, far below what takes
// seconds and gigabytes to decode.
const MaxExpandedNodes = 100_000

// checkAliases returns an *Error when the document's aliases make it
// stand for more than its share of nodes, or when one is inside its own
// anchor's value.
func checkAliases(file string, root *yaml.Node) error {
	c := &aliasCheck{sizes: map[*yaml.Node]int{}, open: map[*yaml.Node]bool{}}
	total := c.size(root)
	if c.cycle != nil {
		return &Error{File: file, Pos: PosOf(c.cycle), Msg: fmt.Sprintf(
			"alias *%s is inside the value of its own anchor &%s: it would stand for an endless document; write the value out", c.cycle.Value, c.cycle.Value)}
	}
	limit := 10*c.written + MaxExpandedNodes
	if total <= limit {
		return nil
	}
	return &Error{File: file, Pos: PosOf(c.biggest), Msg: fmt.Sprintf(
		"the aliases of this file make its %d nodes stand for %d, more than %d: alias *%s alone stands for %d; "+
			"write the values out or use fewer aliases of aliases",
		c.written, total, limit, c.biggest.Value, c.sizes[c.biggest.Alias])}
}

// aliasCheck measures a document's nodes with aliases followed, each
// anchored value measured once.
type aliasCheck struct {
	sizes   map[*yaml.Node]int  // nodes a value stands for, aliases followed
	open    map[*yaml.Node]bool // values being measured: an alias to one is a cycle
	written int                 // nodes written in the document
	biggest *yaml.Node          // the alias that stands for the most nodes
	cycle   *yaml.Node          // the first alias inside its own anchor's value
}

// size is how many nodes n stands for, aliases followed; it saturates so
// that a bomb's count does not overflow.
func (c *aliasCheck) size(n *yaml.Node) int {
	if n == nil || c.cycle != nil {
		return 0
	}
	if n.Kind == yaml.AliasNode {
		c.written++
		if n.Alias == nil {
			return 1
		}
		if c.open[n.Alias] {
			c.cycle = n
			return 0
		}
		s, measured := c.sizes[n.Alias]
		if !measured {
			s = c.measure(n.Alias)
		}
		if c.biggest == nil || s > c.sizes[c.biggest.Alias] {
			c.biggest = n
		}
		return s
	}
	c.written++
	return c.measure(n)
}

// measure sizes n's own node and children and remembers the result.
func (c *aliasCheck) measure(n *yaml.Node) int {
	c.open[n] = true
	total := 1
	for _, child := range n.Content {
		total = min(total+c.size(child), 1<<50)
	}
	delete(c.open, n)
	c.sizes[n] = total
	return total
}
