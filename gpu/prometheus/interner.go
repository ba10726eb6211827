package prometheus

// interner shares the strings of label values: one copy of each, across
// evaluations. An evaluation's answer lists the same series in the same
// order as the last one, so the interner first compares a value with the
// one it handed out at the same place of the last evaluation, and looks
// it up in its map only when they differ. Every forgetEvery evaluations
// the map keeps only the values of the last one, so that values that are
// gone (processes that ended, hosts removed) are let go.
type interner struct {
	known map[string]string
	// last and now are the values handed out, in order, in the last
	// evaluation and in this one; kept only once next has been called, as
	// a backfill's answers are not read in evaluations.
	last, now   []string
	evaluations int // how many times next was called
}

// forgetEvery is how many evaluations the interner keeps values it no
// longer hands out.
const forgetEvery = 16

func newInterner() *interner {
	return &interner{known: map[string]string{}}
}

// of returns the string of raw, shared.
func (in *interner) of(raw []byte) string {
	i := len(in.now)
	if i < len(in.last) && in.last[i] == string(raw) {
		in.now = append(in.now, in.last[i])
		return in.last[i]
	}
	s, ok := in.known[string(raw)]
	if !ok {
		s = string(raw)
		in.known[s] = s
	}
	if in.evaluations > 0 {
		in.now = append(in.now, s)
	}
	return s
}

// next starts an evaluation.
func (in *interner) next() {
	in.last, in.now = in.now, in.last[:0]
	if in.evaluations++; in.evaluations%forgetEvery == 0 {
		in.known = make(map[string]string, len(in.last))
		for _, s := range in.last {
			in.known[s] = s
		}
	}
}
