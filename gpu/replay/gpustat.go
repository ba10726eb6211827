package replay

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// gpustatFormat reads gpustat's text (`gpustat >> gpu.log` in cron, or
// `gpustat -i` redirected): a title line with the host, the time and the
// driver version, then a line per GPU with its processes:
//
//	node1                     Sun Nov 29 09:00:00 2026  535.129.03
//	[0] NVIDIA H100 80GB HBM3 | 31°C,   0 % |     4 / 81559 MB |
//	[1] NVIDIA H100 80GB HBM3 | 45°C,  98 %,  612 / 700 W | 40963 / 81559 MB | alice:python/4242(40950M)
//
// Each title starts a sample at its time; the host is the title's. The
// fan (-F), encoder and decoder (-e) readings are not read; power (-P) is.
// Processes name their user, and with -c and -p their command and PID.
type gpustatFormat struct {
	*input
	dateNS   int64
	haveDate bool
	sample   int
}

func newGpustatFormat(in *input) *gpustatFormat { return &gpustatFormat{input: in} }

// isGpustatGPU reports whether t is a GPU's line of gpustat: "[0] NAME |".
func isGpustatGPU(t []byte) bool {
	t = stripEscapes(t)
	end := bytes.IndexByte(t, ']')
	return len(t) > 3 && t[0] == '[' && end > 1 && isDigits(t[1:end]) && bytes.Count(t, []byte{'|'}) >= 2
}

// isGpustatTitle reports whether t is gpustat's title line: host, time,
// driver version.
func isGpustatTitle(t []byte) bool {
	_, _, ok := gpustatTitle(t, &timeParser{loc: time.UTC})
	return ok
}

// gpustatTitle takes the host and time from gpustat's title line.
func gpustatTitle(t []byte, tp *timeParser) (host string, ns int64, ok bool) {
	f := bytes.Fields(stripEscapes(t))
	if len(f) < 4 || !isVersion(f[len(f)-1]) {
		return "", 0, false
	}
	ns, ok = tp.parse(bytes.Join(f[1:len(f)-1], []byte{' '}))
	return string(f[0]), ns, ok
}

// isVersion reports whether b is a driver version: "535.129.03".
func isVersion(b []byte) bool {
	return bytes.IndexByte(b, '.') > 0 && bytes.Trim(b, "0123456789.") == nil
}

func (f *gpustatFormat) next(rw *row) error {
	for {
		line, err := f.lr.next()
		if err != nil {
			return err
		}
		t := trimSpace(stripEscapes(line))
		switch {
		case len(t) == 0:
			continue
		case isGpustatGPU(t):
			return f.gpuLine(t, rw)
		}
		host, ns, ok := gpustatTitle(t, &f.tp)
		if !ok {
			return f.errorAt(&fieldError{1, fmt.Sprintf("%q is neither gpustat's title (host, time, driver version) nor a GPU's line ([0] NAME | ...)",
				clip(t, 40))})
		}
		if f.host == "" {
			f.host = host
		}
		f.dateNS, f.haveDate = ns, true
		f.sample++
	}
}

// gpuLine reads "[0] NAME | 31°C, 0 % [, 60 / 700 W] | 4 / 81559 MB | PROCESSES".
func (f *gpustatFormat) gpuLine(t []byte, rw *row) error {
	if !f.haveDate {
		return f.errorAt(&fieldError{1, "a GPU's line before gpustat's title line (host, time, driver version): keep the title in the log"})
	}
	rw.reset()
	rw.line, rw.ns, rw.col, rw.sample = f.lr.line, f.dateNS, 1, f.sample
	var cells [4][]byte // name, temperature and utilization, memory, processes
	rest := t
	for i := range cells {
		cell, after, found := bytes.Cut(rest, []byte{'|'})
		cells[i], rest = cell, after
		if !found {
			break
		}
	}
	end := bytes.IndexByte(cells[0], ']')
	rw.dev.Index, _ = digits(cells[0][1:end])
	if name := trimSpace(cells[0][end+1:]); len(name) > 0 {
		rw.dev.Name = f.names.intern(name)
	}
	for i, part := 0, cells[1]; len(part) > 0; i++ {
		p, after, _ := bytes.Cut(part, []byte{','})
		part, p = after, trimSpace(p)
		if open := bytes.IndexByte(p, '('); open > 0 { // the codec after the utilization: "80 % (E:   0 %  D:   0 %)"
			p = trimSpace(p[:open])
		}
		switch {
		case i == 0:
			rw.dev.TempC = tableNumber(bytes.TrimRight(p, "°C'"), "")
		case bytes.HasSuffix(p, []byte("W")):
			if used, limit, ok := bytes.Cut(bytes.TrimSuffix(p, []byte("W")), []byte("/")); ok {
				rw.dev.PowerW = tableNumber(trimSpace(used), "")
				rw.dev.PowerLimitW = tableNumber(trimSpace(limit), "")
			}
		case bytes.HasSuffix(p, []byte("%")):
			// The last % is the utilization, after the fan's (-F), which is
			// "??" on cards without a fan: unknown, as a "??" utilization is.
			rw.dev.UtilGPU = tableNumber(trimSpace(bytes.TrimSuffix(p, []byte("%"))), "")
		}
	}
	if mem := trimSpace(cells[2]); len(mem) > 0 {
		used, total, ok := bytes.Cut(bytes.TrimSuffix(mem, []byte("MB")), []byte("/"))
		var m memReading
		m.used, m.haveUsed = gpustatMiB(trimSpace(used))
		m.total, m.haveTotal = gpustatMiB(trimSpace(total))
		if !ok || !m.haveUsed || !m.haveTotal {
			return f.errorAt(&fieldError{1, fmt.Sprintf("memory %q is not USED / TOTAL MB", mem)})
		}
		m.fill(rw)
	}
	for procs := cells[3]; len(procs) > 0; {
		var p []byte
		p, procs = nextWord(procs)
		if proc, ok := f.process(p); ok {
			rw.dev.Processes = append(rw.dev.Processes, proc)
		}
	}
	return nil
}

func gpustatMiB(b []byte) (uint64, bool) {
	n, ok := digits64(b)
	return uint64(n) << 20, ok
}

// process reads a process as gpustat writes it: "alice(40950M)", with -p
// "alice/4242(40950M)", with -c "alice:python/4242(40950M)".
func (f *gpustatFormat) process(b []byte) (gpu.Process, bool) {
	open := bytes.LastIndexByte(b, '(')
	if open <= 0 || !bytes.HasSuffix(b, []byte("M)")) {
		return gpu.Process{}, false
	}
	mib, ok := digits64(b[open+1 : len(b)-2])
	if !ok {
		return gpu.Process{}, false
	}
	p := gpu.Process{MemUsed: uint64(mib) << 20}
	who := b[:open]
	if slash := bytes.LastIndexByte(who, '/'); slash >= 0 {
		p.PID, _ = strconv.Atoi(string(who[slash+1:]))
		who = who[:slash]
	}
	user, cmd, _ := bytes.Cut(who, []byte{':'})
	p.User = f.names.intern(user)
	if len(cmd) > 0 {
		p.Command = f.names.intern(cmd)
	}
	return p, true
}

// stripEscapes drops terminal escape sequences (colours, cursor moves) that
// gpustat -i and watch write.
func stripEscapes(b []byte) []byte {
	if bytes.IndexByte(b, 0x1b) < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != 0x1b {
			out = append(out, b[i])
			continue
		}
		if i+1 < len(b) && b[i+1] == '[' {
			i += 2
			for i < len(b) && (b[i] < '@' || b[i] > '~') {
				i++
			}
			continue
		}
		i++ // a two-byte escape
	}
	return out
}
