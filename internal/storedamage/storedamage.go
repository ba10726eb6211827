// Package storedamage damages copies of a gpuwatch store file in each of
// the ways a disk, a crash or another program damages one: truncations,
// random bytes, zeroed pages, page headers, meta pages, the freelist and
// overflow counts. The store's tests and the fault-injection run
// (scripts/store-damage) share its list, and check that gpuwatch refuses
// each damaged file with a clear error, or opens it and says what was
// lost, quickly and in little memory.
package storedamage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Outcome is what gpuwatch must do with a damaged store.
type Outcome int

const (
	// Refused: the store is refused (its pages are damaged, or it is not
	// a bbolt file any more), the error says what to do, and the file is
	// left as it was.
	Refused Outcome = iota
	// Recovered: the store is opened, and what the damage cost is said.
	Recovered
)

func (o Outcome) String() string {
	if o == Refused {
		return "refused"
	}
	return "opened, saying what was lost"
}

// Kind is one kind of damage.
type Kind struct {
	Group string // truncation, random bytes, zeroed page, header, meta page, freelist, overflow count
	Name  string
	Want  Outcome
	// Damage returns a damaged copy of the store's bytes.
	Damage func(s *Store) ([]byte, error)
}

// Store is a sound store file and the pages its damage aims at.
type Store struct {
	Data     []byte
	PageSize int
	Active   int    // the meta page bbolt uses: that of the higher transaction
	HWM      uint64 // pages [0, HWM) exist
	Root     uint64 // the root bucket's page
	Freelist uint64
	Leaf     uint64 // a leaf page other than the root
	Branch   uint64
	Free     uint64 // a free page
	InUse    uint64 // a page in use other than the root and the freelist: Leaf
}

// native is bbolt's byte order: the machine's.
var native = binary.NativeEndian

// Load reads a sound store from path and finds the pages to damage. The
// store needs a branch page, a leaf page besides the root, and a free
// page: a store gpuwatch run has written for a while has them.
func Load(path string) (*Store, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		return nil, fmt.Errorf("storedamage: open %s: %w", path, err)
	}
	defer b.Close()
	s := &Store{Data: data, PageSize: b.Info().PageSize}
	if native.Uint64(s.meta(1)[48:]) > native.Uint64(s.meta(0)[48:]) {
		s.Active = 1
	}
	m := s.meta(s.Active)
	s.Root, s.Freelist = native.Uint64(m[16:]), native.Uint64(m[32:])
	err = b.View(func(tx *bolt.Tx) error {
		s.HWM = uint64(tx.Size()) / uint64(s.PageSize)
		for id := 2; uint64(id) < s.HWM; id++ {
			p, err := tx.Page(id)
			if err != nil {
				return err
			}
			switch {
			case p.Type == "branch":
				s.Branch = orFirst(s.Branch, uint64(id))
			case p.Type == "leaf" && uint64(id) != s.Root:
				s.Leaf = orFirst(s.Leaf, uint64(id))
			case p.Type == "free":
				s.Free = orFirst(s.Free, uint64(id))
			}
			id += p.OverflowCount
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storedamage: read the pages of %s: %w", path, err)
	}
	s.InUse = s.Leaf
	switch {
	case s.Branch == 0:
		return nil, errors.New("storedamage: the store has no branch page: let gpuwatch run write more first")
	case s.Leaf == 0:
		return nil, errors.New("storedamage: the store has no leaf page besides its root")
	case s.Free == 0:
		return nil, errors.New("storedamage: the store has no free page")
	}
	return s, nil
}

func orFirst(have, id uint64) uint64 {
	if have != 0 {
		return have
	}
	return id
}

// meta returns the 64 bytes of meta page i's fields (after its header).
func (s *Store) meta(i int) []byte {
	off := i*s.PageSize + 16
	return s.Data[off : off+64]
}

// page returns the bytes of page id.
func page(b []byte, pageSize int, id uint64) []byte {
	return b[int(id)*pageSize : (int(id)+1)*pageSize]
}

// Kinds are the kinds of damage, 37 of them, each with what gpuwatch
// must do about it. Random bytes come from a fixed seed: a run is
// repeatable.
func Kinds() []Kind {
	r := rand.New(rand.NewPCG(19, 37))
	scribble := func(b []byte) {
		for i := range b {
			b[i] = byte(r.Uint32())
		}
	}
	cut := func(size func(s *Store) int) func(s *Store) ([]byte, error) {
		return func(s *Store) ([]byte, error) { return slices.Clone(s.Data[:size(s)]), nil }
	}
	// onPage damages a copy of page which(s).
	onPage := func(which func(s *Store) uint64, f func(p []byte, s *Store)) func(s *Store) ([]byte, error) {
		return func(s *Store) ([]byte, error) {
			b := slices.Clone(s.Data)
			f(page(b, s.PageSize, which(s)), s)
			return b, nil
		}
	}
	// onMeta damages a copy of meta page i's fields (i < 0: the active
	// one), then writes a valid checksum when resum is set, so that only
	// the fields tell.
	onMeta := func(i int, resum bool, f func(m []byte, s *Store)) func(s *Store) ([]byte, error) {
		return func(s *Store) ([]byte, error) {
			if i < 0 {
				i = s.Active
			}
			b := slices.Clone(s.Data)
			m := b[i*s.PageSize+16 : i*s.PageSize+80]
			f(m, s)
			if resum {
				h := fnv.New64a()
				h.Write(m[:56])
				native.PutUint64(m[56:], h.Sum64())
			}
			return b, nil
		}
	}
	root := func(s *Store) uint64 { return s.Root }
	leaf := func(s *Store) uint64 { return s.Leaf }
	branch := func(s *Store) uint64 { return s.Branch }
	freelist := func(s *Store) uint64 { return s.Freelist }
	zero := func(p []byte, _ *Store) { clear(p) }
	header := func(p []byte, _ *Store) { scribble(p[:16]) }
	overflow := func(n uint32) func(p []byte, _ *Store) {
		return func(p []byte, _ *Store) { native.PutUint32(p[12:], n) }
	}
	// firstChild sets the page id of a branch page's first element.
	firstChild := func(id func(s *Store) uint64) func(p []byte, s *Store) {
		return func(p []byte, s *Store) { native.PutUint64(p[16+8:], id(s)) }
	}
	// freelistIDs sets ids of the freelist, from its first on.
	freelistIDs := func(ids func(s *Store) []uint64) func(p []byte, s *Store) {
		return func(p []byte, s *Store) {
			list := ids(s)
			if int(native.Uint16(p[10:])) < len(list) {
				native.PutUint16(p[10:], uint16(len(list)))
			}
			for i, id := range list {
				native.PutUint64(p[16+8*i:], id)
			}
		}
	}
	return []Kind{
		{"truncation", "an empty file (0 bytes)", Recovered, cut(func(*Store) int { return 0 })},
		{"truncation", "cut to 100 bytes", Refused, cut(func(*Store) int { return 100 })},
		{"truncation", "cut to one page", Refused, cut(func(s *Store) int { return s.PageSize })},
		{"truncation", "cut to two pages and 100 bytes", Refused, cut(func(s *Store) int { return 2*s.PageSize + 100 })},
		{"truncation", "cut to half its pages", Refused, cut(func(s *Store) int { return int(s.HWM) / 2 * s.PageSize })},
		{"truncation", "cut one page short", Refused, cut(func(s *Store) int { return int(s.HWM-1) * s.PageSize })},

		{"random bytes", "over meta page 0", Recovered, onMeta(0, false, func(m []byte, _ *Store) { scribble(m) })},
		{"random bytes", "over meta page 1", Recovered, onMeta(1, false, func(m []byte, _ *Store) { scribble(m) })},
		{"random bytes", "over both meta pages", Refused, func(s *Store) ([]byte, error) {
			b := slices.Clone(s.Data)
			scribble(b[16+16 : 16+64])                       // past magic and version: a failed checksum
			scribble(b[s.PageSize+16+16 : s.PageSize+16+64]) // on both
			return b, nil
		}},
		{"random bytes", "over the root page's header", Refused, onPage(root, header)},
		{"random bytes", "over a leaf page's header", Refused, onPage(leaf, header)},
		{"random bytes", "over a branch page's header", Refused, onPage(branch, header)},

		{"zeroed page", "meta page 0", Recovered, onMeta(0, false, func(m []byte, _ *Store) { clear(m) })},
		{"zeroed page", "meta page 1", Recovered, onMeta(1, false, func(m []byte, _ *Store) { clear(m) })},
		{"zeroed page", "the root page", Refused, onPage(root, zero)},
		{"zeroed page", "a branch page", Refused, onPage(branch, zero)},
		{"zeroed page", "a leaf page", Refused, onPage(leaf, zero)},
		{"zeroed page", "the freelist page", Refused, onPage(freelist, zero)},

		{"header", "a leaf page's id", Refused, onPage(leaf, func(p []byte, _ *Store) { native.PutUint64(p, native.Uint64(p)+1) })},
		{"header", "a leaf page's type unknown", Refused, onPage(leaf, func(p []byte, _ *Store) { native.PutUint16(p[8:], 0x40) })},
		{"header", "a leaf page's key count past its end", Refused, onPage(leaf, func(p []byte, _ *Store) { native.PutUint16(p[10:], 0xfffe) })},
		{"header", "a branch page with no keys", Refused, onPage(branch, func(p []byte, _ *Store) { native.PutUint16(p[10:], 0) })},
		{"header", "a branch pointing at a free page", Refused, onPage(branch, firstChild(func(s *Store) uint64 { return s.Free }))},
		{"header", "a branch pointing past the last page", Refused, onPage(branch, firstChild(func(s *Store) uint64 { return s.HWM + 1000 }))},
		{"header", "a branch pointing at itself", Refused, onPage(branch, firstChild(branch))},

		{"meta page", "the root past the last page", Refused, onMeta(-1, true, func(m []byte, s *Store) { native.PutUint64(m[16:], s.HWM+10) })},
		{"meta page", "more pages than the file holds", Refused, onMeta(-1, true, func(m []byte, s *Store) { native.PutUint64(m[40:], s.HWM*4) })},
		{"meta page", "the freelist past the last page", Refused, onMeta(-1, true, func(m []byte, s *Store) { native.PutUint64(m[32:], s.HWM+10) })},
		{"meta page", "both magic numbers wrong", Refused, func(s *Store) ([]byte, error) {
			b := slices.Clone(s.Data)
			native.PutUint32(b[16:], 0xBADC0DE)
			native.PutUint32(b[s.PageSize+16:], 0xBADC0DE)
			return b, nil
		}},

		{"freelist", "a count of 0xFFFF announcing 2^40 ids", Refused, onPage(freelist, func(p []byte, _ *Store) {
			native.PutUint16(p[10:], 0xFFFF)
			native.PutUint64(p[16:], 1<<40)
		})},
		{"freelist", "listing a page in use", Refused, onPage(freelist, freelistIDs(func(s *Store) []uint64 { return []uint64{s.InUse} }))},
		{"freelist", "listing a page past the last", Refused, onPage(freelist, freelistIDs(func(s *Store) []uint64 { return []uint64{s.HWM + 5} }))},
		{"freelist", "listing a page twice", Refused, onPage(freelist, freelistIDs(func(s *Store) []uint64 { return []uint64{s.Free, s.Free} }))},

		{"overflow count", "0x7fffffff on the root page", Refused, onPage(root, overflow(0x7fffffff))},
		{"overflow count", "0x7fffffff on a leaf page", Refused, onPage(leaf, overflow(0x7fffffff))},
		{"overflow count", "1 on a leaf page, over its neighbour", Refused, onPage(leaf, overflow(1))},
		{"overflow count", "0x7fffffff on the freelist page", Refused, onPage(freelist, overflow(0x7fffffff))},
	}
}

// readFile reads the store file whole.
func readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("storedamage: %w", err)
	}
	return b, nil
}
