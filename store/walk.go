package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// The walk below reads a bbolt file with plain reads, before bbolt maps
// it: bbolt trusts every page header it meets, and a damaged one sends it
// far astray. An overflow count of 0x7fffffff in one header made its
// consistency check (Tx.Check) record two billion pages in a map, and a
// branch that points back at its parent makes its page walk recurse
// without end; a freelist count past its page makes it copy gigabytes.
// The walk follows every page bbolt would reach from the meta page bbolt
// would pick, checks that each lies inside the file, is reached once and
// is not also free, and stops at the first page that is not so. It holds
// two bits per page of the file, a stack of at most one entry per page
// and one page's element headers at a time, and it stops when its
// context ends. After it, bbolt's own check runs within those bounds.

// The layout of bbolt's pages (go.etcd.io/bbolt/internal/common), in the
// machine's byte order, as bbolt writes it.
const (
	pageHeaderSize  = 16 // id u64, flags u16, count u16, overflow u32
	elementSize     = 16 // branch: pos u32, ksize u32, pgid u64; leaf: flags u32, pos u32, ksize u32, vsize u32
	bucketValueSize = 16 // root pgid u64, sequence u64; an inline bucket's page follows
	metaSize        = 64 // magic, version, page size, flags, root bucket, freelist, pgid, txid, checksum

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagFreelist = 0x10
	leafIsBucket = 0x01

	boltMagic    = 0xED0CDAED
	boltVersion  = 2
	noFreelist   = ^uint64(0)
	freelistMore = 0xFFFF // a freelist count that says the first id is the count
	// maxDepth is deeper than any tree bbolt builds (a tree of 4 KiB pages
	// holds billions of keys in ten levels): a deeper one is damaged.
	maxDepth = 64
	// checkEvery is how many pages the walk reads between looks at its
	// context.
	checkEvery = 256
)

var native = binary.NativeEndian

// meta is a bbolt meta page, decoded.
type meta struct {
	pageSize uint32
	root     uint64 // the root bucket's page
	freelist uint64
	pgid     uint64 // the high-water mark: pages below it are in use or free
	txid     uint64
	err      error // why the page is not valid; nil when it is
}

// readMeta decodes the meta page whose header starts at off.
func readMeta(f io.ReaderAt, off int64) meta {
	var b [pageHeaderSize + metaSize]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		return meta{err: fmt.Errorf("cannot be read: %w", err)}
	}
	m := b[pageHeaderSize:]
	h := fnv.New64a()
	h.Write(m[:56])
	out := meta{pageSize: native.Uint32(m[8:]), root: native.Uint64(m[16:]), freelist: native.Uint64(m[32:]),
		pgid: native.Uint64(m[40:]), txid: native.Uint64(m[48:])}
	switch {
	case native.Uint32(m[0:]) != boltMagic:
		out.err = errors.New("its magic number is wrong")
	case native.Uint32(m[4:]) != boltVersion:
		out.err = fmt.Errorf("its format version is %d, not %d", native.Uint32(m[4:]), boltVersion)
	case native.Uint64(m[56:]) != h.Sum64():
		out.err = errors.New("its checksum fails")
	}
	return out
}

// metas reads both meta pages, finding the second as bbolt does when the
// first is unreadable (at 1 KiB, 2 KiB, … 16 MiB), and returns the one
// bbolt uses (the valid one of the higher transaction), which, and the
// page size. It fails when neither is valid.
func metas(f io.ReaderAt, size int64) (use meta, which int, other meta, pageSize int64, err error) {
	m0 := readMeta(f, 0)
	var m1 meta
	if m0.err == nil && validPageSize(m0.pageSize) {
		pageSize = int64(m0.pageSize)
		m1 = readMeta(f, pageSize)
	} else {
		m1 = meta{err: errors.New("it was not found")}
		for i := range 15 {
			pos := int64(1024) << i
			if pos >= size-1024 {
				break
			}
			if m := readMeta(f, pos); m.err == nil && validPageSize(m.pageSize) && int64(m.pageSize) == pos {
				m1, pageSize = m, pos
				break
			}
		}
	}
	switch {
	case m0.err != nil && m1.err != nil:
		return meta{}, 0, meta{}, 0, errBothMetas
	case m1.err != nil, m0.err == nil && m0.txid >= m1.txid:
		return m0, 0, m1, pageSize, nil
	}
	return m1, 1, m0, pageSize, nil
}

var errBothMetas = errors.New("both of its meta pages are damaged")

func validPageSize(n uint32) bool { return n >= 1024 && n <= 1<<24 && n&(n-1) == 0 }

// walker walks the pages of one file.
type walker struct {
	ctx      context.Context
	f        io.ReaderAt
	pageSize int64
	hwm      uint64   // pages [0, hwm) exist
	reached  []uint64 // bit per page: reached from the meta page
	queued   []uint64 // bit per page: on the stack or reached
	freed    []uint64 // bit per page: in the freelist
	stack    []walkItem
	buf      []byte // a page header, a bucket's value, freelist ids
	first    []byte // the first pageSize bytes of the page being checked
	elems    []byte // a page's element headers, when they do not fit in first
	pages    int
}

type walkItem struct {
	id    uint64
	depth int
	from  uint64 // the page that points at it, for messages
}

func bitOn(bits []uint64, i uint64) bool { return bits[i/64]&(1<<(i%64)) != 0 }
func setBit(bits []uint64, i uint64)     { bits[i/64] |= 1 << (i % 64) }

// walkPages checks the structure of the store file f, of size bytes,
// from the meta page m. It returns the first problem it finds, or the
// context's error.
func walkPages(ctx context.Context, f io.ReaderAt, size int64, m meta, pageSize int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if m.pgid < 2 {
		return fmt.Errorf("its meta page says it has %d pages, fewer than its own two", m.pgid)
	}
	if want := int64(m.pgid) * pageSize; m.pgid > uint64(size/pageSize) || size < want {
		return fmt.Errorf("the file has %d bytes, its pages need %d: it was cut short", size, int64(m.pgid)*pageSize)
	}
	words := (m.pgid + 63) / 64
	w := &walker{ctx: ctx, f: f, pageSize: pageSize, hwm: m.pgid,
		reached: make([]uint64, words), queued: make([]uint64, words), freed: make([]uint64, words)}
	setBit(w.reached, 0)
	setBit(w.reached, 1)
	if m.freelist != noFreelist {
		if err := w.freelist(m.freelist); err != nil {
			return err
		}
	}
	if err := w.push(m.root, 0, 0); err != nil {
		return err
	}
	for len(w.stack) > 0 {
		it := w.stack[len(w.stack)-1]
		w.stack = w.stack[:len(w.stack)-1]
		if err := w.page(it); err != nil {
			return err
		}
	}
	return nil
}

// span checks that page id, running over overflow more pages, lies inside
// the file and meets no page reached or freed before, and marks it
// reached. It returns the span's size in bytes.
func (w *walker) span(id uint64, overflow uint32, what func() string) (int64, error) {
	if w.pages++; w.pages%checkEvery == 0 {
		if err := w.ctx.Err(); err != nil {
			return 0, err
		}
	}
	if id < 2 || id >= w.hwm {
		return 0, fmt.Errorf("%s is page %d, outside the store's pages 2 to %d", what(), id, w.hwm-1)
	}
	if uint64(overflow) >= w.hwm-id {
		return 0, fmt.Errorf("page %d says it runs over %d more pages, past the store's last page (%d)", id, overflow, w.hwm-1)
	}
	for p := id; p <= id+uint64(overflow); p++ {
		switch {
		case bitOn(w.reached, p):
			return 0, fmt.Errorf("page %d is used twice (again as %s)", p, what())
		case bitOn(w.freed, p):
			return 0, fmt.Errorf("page %d is in use (as %s) and free at once", p, what())
		}
		setBit(w.reached, p)
		setBit(w.queued, p)
	}
	return (int64(overflow) + 1) * w.pageSize, nil
}

// read reads n bytes at off into the walker's buffer, which it returns.
func (w *walker) read(off, n int64) ([]byte, error) {
	if cap(w.buf) < int(n) {
		w.buf = make([]byte, n)
	}
	b := w.buf[:n]
	if _, err := w.f.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("cannot read %d bytes at %d: %w", n, off, err)
	}
	return b, nil
}

// header reads the header of page id.
func (w *walker) header(id uint64) (flags, count uint16, overflow uint32, err error) {
	b, err := w.read(int64(id)*w.pageSize, pageHeaderSize)
	if err != nil {
		return 0, 0, 0, err
	}
	if got := native.Uint64(b); got != id {
		return 0, 0, 0, fmt.Errorf("page %d's header says it is page %d: it was overwritten or zeroed", id, got)
	}
	return native.Uint16(b[8:]), native.Uint16(b[10:]), native.Uint32(b[12:]), nil
}

// freelist reads the freelist page id and marks the pages it lists free.
func (w *walker) freelist(id uint64) error {
	if id < 2 || id >= w.hwm {
		return fmt.Errorf("its freelist is page %d, outside the store's pages 2 to %d", id, w.hwm-1)
	}
	flags, count, overflow, err := w.header(id)
	if err != nil {
		return fmt.Errorf("freelist: %w", err)
	}
	if flags != flagFreelist {
		return fmt.Errorf("page %d should be the freelist but its type is %#x", id, flags)
	}
	size, err := w.span(id, overflow, func() string { return "the freelist" })
	if err != nil {
		return err
	}
	off := int64(id)*w.pageSize + pageHeaderSize
	n := int64(count)
	if count == freelistMore {
		b, err := w.read(off, 8)
		if err != nil {
			return fmt.Errorf("freelist: %w", err)
		}
		off += 8
		if c := native.Uint64(b); c > uint64(size/8) {
			n = size // too many: caught below
		} else {
			n = int64(c)
		}
	}
	if pageHeaderSize+8*n > size-(off-int64(id)*w.pageSize-pageHeaderSize) {
		return fmt.Errorf("the freelist (page %d) lists %d pages, more than its %d bytes hold", id, n, size)
	}
	const chunk = 4096 // ids read at once
	for done := int64(0); done < n; done += chunk {
		k := min(chunk, n-done)
		b, err := w.read(off+8*done, 8*k)
		if err != nil {
			return fmt.Errorf("freelist: %w", err)
		}
		for i := range k {
			p := native.Uint64(b[8*i:])
			switch {
			case p < 2 || p >= w.hwm:
				return fmt.Errorf("the freelist lists page %d, outside the store's pages 2 to %d", p, w.hwm-1)
			case bitOn(w.freed, p):
				return fmt.Errorf("the freelist lists page %d twice", p)
			case bitOn(w.reached, p):
				return fmt.Errorf("the freelist lists page %d, which holds the freelist itself", p)
			}
			setBit(w.freed, p)
		}
	}
	return nil
}

// push puts page id, pointed at by page from, on the stack.
func (w *walker) push(id uint64, depth int, from uint64) error {
	switch {
	case depth > maxDepth:
		return fmt.Errorf("page %d is %d levels deep: its branches loop", id, depth)
	case id < 2 || id >= w.hwm:
		return fmt.Errorf("page %d points at page %d, outside the store's pages 2 to %d", from, id, w.hwm-1)
	case bitOn(w.queued, id):
		return fmt.Errorf("page %d is pointed at twice (again from page %d)", id, from)
	case bitOn(w.freed, id):
		return fmt.Errorf("page %d points at page %d, which is free", from, id)
	}
	setBit(w.queued, id)
	w.stack = append(w.stack, walkItem{id: id, depth: depth, from: from})
	return nil
}

// page checks one branch or leaf page and puts the pages it points at on
// the stack.
func (w *walker) page(it walkItem) error {
	// One read of the page's first pageSize bytes holds its header and,
	// but in the largest pages, its element headers.
	base := int64(it.id) * w.pageSize
	if w.first == nil {
		w.first = make([]byte, w.pageSize)
	}
	if _, err := w.f.ReadAt(w.first, base); err != nil {
		return fmt.Errorf("cannot read page %d: %w", it.id, err)
	}
	if got := native.Uint64(w.first); got != it.id {
		return fmt.Errorf("page %d's header says it is page %d: it was overwritten or zeroed", it.id, got)
	}
	flags, count, overflow := native.Uint16(w.first[8:]), native.Uint16(w.first[10:]), native.Uint32(w.first[12:])
	if flags != flagBranch && flags != flagLeaf {
		return fmt.Errorf("page %d (pointed at from page %d) should hold keys but its type is %#x", it.id, it.from, flags)
	}
	size, err := w.span(it.id, overflow, func() string { return fmt.Sprintf("a page pointed at from page %d", it.from) })
	if err != nil {
		return err
	}
	if flags == flagBranch && count == 0 {
		return fmt.Errorf("branch page %d is empty", it.id)
	}
	if pageHeaderSize+elementSize*int64(count) > size {
		return fmt.Errorf("page %d says it has %d keys, more than its %d bytes hold", it.id, count, size)
	}
	n := elementSize * int64(count)
	elems := w.first[pageHeaderSize:min(pageHeaderSize+n, w.pageSize)] // apart from w.buf: bucket values are read into it below
	if int64(len(elems)) < n {
		if cap(w.elems) < int(n) {
			w.elems = make([]byte, n)
		}
		elems = w.elems[:n]
		if _, err := w.f.ReadAt(elems, base+pageHeaderSize); err != nil {
			return fmt.Errorf("cannot read the keys of page %d: %w", it.id, err)
		}
	}
	return w.elements(elems, flags, it, base, size)
}

// elements checks the elements of a page (or of an inline bucket's page,
// when base is -1 and inline holds it) and follows what they point at.
func (w *walker) elements(elems []byte, flags uint16, it walkItem, base, size int64) error {
	for i := int64(0); i*elementSize < int64(len(elems)); i++ {
		e := elems[i*elementSize:]
		at := pageHeaderSize + i*elementSize // the element's offset in its page
		if flags == flagBranch {
			pos, ksize := int64(native.Uint32(e[0:])), int64(native.Uint32(e[4:]))
			if at+pos+ksize > size {
				return fmt.Errorf("key %d of page %d lies past the page's end", i, it.id)
			}
			if err := w.push(native.Uint64(e[8:]), it.depth+1, it.id); err != nil {
				return err
			}
			continue
		}
		eflags, pos, ksize, vsize := native.Uint32(e[0:]), int64(native.Uint32(e[4:])), int64(native.Uint32(e[8:])), int64(native.Uint32(e[12:]))
		if at+pos+ksize+vsize > size {
			return fmt.Errorf("key %d of page %d lies past the page's end", i, it.id)
		}
		if eflags&leafIsBucket == 0 {
			continue
		}
		if vsize < bucketValueSize {
			return fmt.Errorf("bucket %d of page %d has a header of %d bytes, not %d", i, it.id, vsize, bucketValueSize)
		}
		if base < 0 {
			return fmt.Errorf("an inline bucket in page %d holds another bucket, which bbolt never writes", it.id)
		}
		b, err := w.read(base+at+pos+ksize, vsize)
		if err != nil {
			return err
		}
		if root := native.Uint64(b); root != 0 {
			if err := w.push(root, it.depth+1, it.id); err != nil {
				return err
			}
			continue
		}
		if vsize-bucketValueSize > w.pageSize {
			return fmt.Errorf("an inline bucket in page %d takes %d bytes, more than a page", it.id, vsize-bucketValueSize)
		}
		if err := w.inline(append([]byte(nil), b[bucketValueSize:]...), it); err != nil {
			return err
		}
	}
	return nil
}

// inline checks the page of an inline bucket, held in its parent's value.
func (w *walker) inline(p []byte, it walkItem) error {
	if len(p) < pageHeaderSize {
		return fmt.Errorf("an inline bucket in page %d is cut short", it.id)
	}
	flags, count := native.Uint16(p[8:]), native.Uint16(p[10:])
	if flags != flagLeaf {
		return fmt.Errorf("an inline bucket in page %d has a page of type %#x", it.id, flags)
	}
	if pageHeaderSize+elementSize*int(count) > len(p) {
		return fmt.Errorf("an inline bucket in page %d says it has %d keys, more than its %d bytes hold", it.id, count, len(p))
	}
	return w.elements(p[pageHeaderSize:pageHeaderSize+elementSize*int(count)], flagLeaf, it, -1, int64(len(p)))
}

// fileSize is the size of an open file.
func fileSize(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
