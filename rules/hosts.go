package rules

import (
	"cmp"
	"slices"
)

// place notes that GPU gs reports from host, keeping Engine.hosts, the
// GPUs of each host in the order they first reported: an evaluation of a
// host's snapshot visits the host's GPUs only, so a hub's engine costs
// the same per GPU whatever the size of its fleet. A GPU that moves to
// another host (its UUID reported elsewhere) moves with it.
func (e *Engine) place(gs *gpuState, host string) {
	if gs.host == host && gs.placed {
		return
	}
	if gs.placed {
		e.unplace(gs)
	}
	list := e.hosts[host]
	i, _ := slices.BinarySearchFunc(list, gs.seq, func(g *gpuState, seq int) int { return cmp.Compare(g.seq, seq) })
	e.hosts[host] = slices.Insert(list, i, gs)
	gs.host, gs.placed = host, true
}

// unplace takes GPU gs off its host's list in Engine.hosts.
func (e *Engine) unplace(gs *gpuState) {
	list := e.hosts[gs.host]
	if i := slices.Index(list, gs); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	if len(list) == 0 {
		delete(e.hosts, gs.host)
	} else {
		e.hosts[gs.host] = list
	}
}
