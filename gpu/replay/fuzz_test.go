package replay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

// FuzzReplay feeds arbitrary bytes to the reader: it must never panic, every
// error must be a *ParseError with a position, and what it returns must keep
// the Source's promises (time order, devices sorted by index).
func FuzzReplay(f *testing.F) {
	f.Add([]byte(header10+
		"2026/11/29 09:00:00.000, 0, NVIDIA H100 80GB HBM3, GPU-cd613e30-d8f1-6adf-91b7-584a2265b1f5, 36, 0 %, 0 %, 500 MiB, 81559 MiB, 60.81 W\n"+
		"2026/11/29 09:00:00.004, 1, NVIDIA H100 80GB HBM3, GPU-1e2feb89-414c-343c-1027-c4d1c386bbc4, 36, 0 %, 0 %, 500 MiB, 81559 MiB, 63.47 W\n"), false)
	f.Add([]byte("uuid,timestamp,memory.free [MiB],memory.total [MiB]\nGPU-a,2026/11/29 09:00:00,1,2\nGPU-b,2026/11/29 09:00:00,[N/A],2\n"), true)
	f.Add([]byte("timestamp, index\n2026/11/29 09:00:01, 0\n2026/11/29 09:00:00, 0\n"), true)
	f.Add([]byte("timestamp, index\r\n\r\ntimestamp, index\r\n2026-11-29T09:00:00Z, 1\r\n"), false)
	f.Add([]byte(""), false)
	f.Fuzz(func(t *testing.T, data []byte, skipBad bool) {
		r, err := NewReader(bytes.NewReader(data), "fuzz.csv", Options{SkipBad: skipBad})
		if err != nil {
			checkParseError(t, err)
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
				if s.Devices[i-1].Index >= s.Devices[i].Index {
					t.Fatalf("snapshot %d: devices not in index order: %d then %d", n, s.Devices[i-1].Index, s.Devices[i].Index)
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
