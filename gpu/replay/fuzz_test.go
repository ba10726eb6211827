package replay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzReplay feeds arbitrary bytes to the reader, in every format it
// detects: it must never panic, every error must be a *ParseError with a
// position, and what it returns must keep the Source's promises (time
// order, devices sorted by index).
func FuzzReplay(f *testing.F) {
	logs, _ := filepath.Glob("testdata/logs/*.*")
	for _, name := range logs {
		data, err := os.ReadFile(name)
		if err != nil || strings.HasSuffix(name, ".md") {
			continue
		}
		f.Add(data[:min(len(data), 3000)], false) // a few samples of each format
	}
	f.Add([]byte(header10+
		"2026/11/29 09:00:00.000, 0, NVIDIA H100 80GB HBM3, GPU-cd613e30-d8f1-6adf-91b7-584a2265b1f5, 36, 0 %, 0 %, 500 MiB, 81559 MiB, 60.81 W\n"+
		"2026/11/29 09:00:00.004, 1, NVIDIA H100 80GB HBM3, GPU-1e2feb89-414c-343c-1027-c4d1c386bbc4, 36, 0 %, 0 %, 500 MiB, 81559 MiB, 63.47 W\n"), false)
	f.Add([]byte("uuid,timestamp,memory.free [MiB],memory.total [MiB]\nGPU-a,2026/11/29 09:00:00,1,2\nGPU-b,2026/11/29 09:00:00,[N/A],2\n"), true)
	f.Add([]byte("timestamp, index\n2026/11/29 09:00:01, 0\n2026/11/29 09:00:00, 0\n"), true)
	f.Add([]byte("timestamp, index\r\n\r\ntimestamp, index\r\n2026-11-29T09:00:00Z, 1\r\n"), false)
	f.Add([]byte(healthLog), false)
	f.Add([]byte(""), false)
	f.Fuzz(func(t *testing.T, data []byte, skipBad bool) {
		opts := Options{SkipBad: skipBad}
		if skipBad {
			opts.Columns = "timestamp,index,memory.used,utilization.gpu" // read a log without its header, too
			opts.Step = time.Second                                      // and one without times, which a stream cannot date
		}
		r, err := NewReader(bytes.NewReader(data), "fuzz.csv", opts)
		if err != nil {
			if !errors.Is(err, ErrColumns) {
				checkParseError(t, err)
			}
			return
		}
		var last int64
		for n := 0; ; n++ {
			s, err := r.Next(context.Background())
			if err == io.EOF {
				break
			}
			if err != nil {
				if skipBad {
					t.Fatalf("got %v with SkipBad, want bad rows skipped", err)
				}
				checkParseError(t, err)
				continue // the reader resumes after a bad row
			}
			if n > len(data) {
				t.Fatalf("got %d snapshots from %d bytes", n, len(data))
			}
			if len(s.Devices) == 0 {
				t.Fatalf("snapshot %d has no devices", n)
			}
			ns := s.Time.UnixNano()
			if n > 0 && ns < last {
				t.Fatalf("snapshot %d at %v goes back from %v", n, s.Time, last)
			}
			last = ns
			for i := 1; i < len(s.Devices); i++ {
				a, b := &s.Devices[i-1], &s.Devices[i]
				if a.Index > b.Index || a.Index == b.Index && (b.MIG == nil || a.ParentUUID() != b.MIG.ParentUUID) {
					t.Fatalf("snapshot %d: devices not in index order (a MIG instance after its GPU): %s then %s", n, a.Label(), b.Label())
				}
			}
		}
	})
}

func checkParseError(t *testing.T, err error) {
	t.Helper()
	var perr *ParseError
	if !errors.As(err, &perr) {
		t.Fatalf("got %T %v, want a *ParseError", err, err)
	}
	if perr.File != "fuzz.csv" || perr.Line < 1 || perr.Col < 1 || perr.Msg == "" {
		t.Fatalf("got %q, want a file, a line, a column and a message", err)
	}
}

// FuzzColumnName takes arbitrary header labels apart: it must never panic,
// and a label it reads names a reading of a known name.
func FuzzColumnName(f *testing.F) {
	for _, s := range []string{"memory.used [MiB]", "Memory Used (MiB)", "gpu1_util_percent", "metrics-daemon/cuda:0 (gpu:3)/memory_used (MiB)/mean",
		"vram_used_mb", "GPU %", "a/b/c", "gpu_", "(", "[]", "util_gpu12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, label string) {
		n := normalizeName(label)
		kind, _ := lookupColumn(n)
		if kind != colIgnore {
			if _, ok := columnNames[n.key]; !ok {
				t.Fatalf("normalizeName(%q) = %+v, read as %v, but %q is no column name", label, n, kind, n.key)
			}
		}
		if n.gpu < -1 {
			t.Fatalf("normalizeName(%q): GPU %d", label, n.gpu)
		}
	})
}

// FuzzDecodeText feeds arbitrary bytes to the text decoder: what comes out
// is UTF-8 (or the bytes as they were, for text that says no encoding),
// and UTF-16 with a byte order mark turns into what it encodes.
func FuzzDecodeText(f *testing.F) {
	f.Add([]byte("\xff\xfet\x00i\x00m\x00e\x00"))
	f.Add([]byte("\xfe\xff\x00t\x00i"))
	f.Add([]byte("\xef\xbb\xbftimestamp"))
	f.Add([]byte("t\x00i\x00m\x00e\x00"))
	f.Add([]byte("\xff\xfe\x00\xd8"))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := io.ReadAll(decodeText(bytes.NewReader(data)))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) {
			if !utf8.Valid(out) {
				t.Fatalf("decoding %q: got %q, not UTF-8", data, out)
			}
			if units := (len(data) - 2) / 2; utf8.RuneCount(out) > units+1 {
				t.Fatalf("decoding %q: got %d runes from %d UTF-16 units", data, utf8.RuneCount(out), units)
			}
		}
	})
}

// FuzzScreen replays arbitrary bytes as a terminal's screen: it must never
// panic, its frames are UTF-8, and they are never far larger than what
// was replayed.
func FuzzScreen(f *testing.F) {
	if data, err := os.ReadFile("testdata/logs/watch-escapes.log"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("\x1b[H\x1b[2Jtitle\r\nline\x1b[1;7Hx\x1b[2;1H\x1b[Ky\x1b[H"))
	f.Add([]byte("\x1b[?1049h\x1b]0;t\x07\x1b(B\x1b7a\x1b8\x1bMb\x1b[3@c\x1b[2P\x1b[5X\x1b[1J\x1b[0K\x1bc"))
	f.Add([]byte("\x1b[999;999Hx\x1b[H\t\b\x7f\xff\xfe"))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := io.ReadAll(newScreenReader(bufio.NewReader(bytes.NewReader(data))))
		if _, ok := err.(*textError); err != nil && !ok {
			t.Fatalf("got %v, want frames or a *textError", err)
		}
		if !utf8.Valid(out) {
			t.Fatalf("frames are not UTF-8: %q", out)
		}
		if len(out) > maxScreenGrowth*len(data)+1<<20+maxScreenRows*(maxScreenCols*utf8.UTFMax+1)+1 {
			t.Fatalf("got %d bytes of frames from %d bytes", len(out), len(data))
		}
	})
}
