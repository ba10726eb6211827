package replay

const (
	maxInterned = 4096 // distinct names and UUIDs kept; more means garbage input
	numRecent   = 8    // strings tried before the map
)

// interner returns the same string for the same bytes, so the names and
// UUIDs of thousands of snapshots share memory and compare fast. The
// strings seen last are tried before the map: a log cycles through the
// same few GPUs, and comparing is cheaper than hashing.
type interner struct {
	strs   map[string]string
	recent [numRecent]string
}

func (in *interner) intern(b []byte) string {
	for _, s := range in.recent {
		if s == string(b) {
			return s
		}
	}
	if in.strs == nil {
		in.strs = make(map[string]string)
	}
	s, ok := in.strs[string(b)]
	if !ok {
		s = string(b)
		if len(in.strs) < maxInterned {
			in.strs[s] = s
		}
	}
	copy(in.recent[1:], in.recent[:numRecent-1])
	in.recent[0] = s
	return s
}
