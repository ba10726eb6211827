package nvml

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

func TestOpenInitFailure(t *testing.T) {
	tests := []struct {
		name     string
		ret      gonvml.Return
		want     error  // errors.Is target
		wantText string // substring of the message
	}{
		{"library not found", gonvml.ERROR_LIBRARY_NOT_FOUND, ErrLibraryNotFound, "NVML library not found: is the NVIDIA driver installed? To try gpuwatch without a GPU run `gpuwatch demo`"},
		{"driver not loaded", gonvml.ERROR_DRIVER_NOT_LOADED, gonvml.ERROR_DRIVER_NOT_LOADED, "kernel driver is not loaded"},
		{"no permission", gonvml.ERROR_NO_PERMISSION, gonvml.ERROR_NO_PERMISSION, "/dev/nvidia*"},
		{"version mismatch", gonvml.ERROR_LIB_RM_VERSION_MISMATCH, gonvml.ERROR_LIB_RM_VERSION_MISMATCH, "reboot"},
		{"unknown", gonvml.ERROR_UNKNOWN, gonvml.ERROR_UNKNOWN, "error code 999"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Only InitFunc is set: any other call would panic in the mock,
			// as it would kill the process with the real library.
			lib := &mock.Interface{InitFunc: func() gonvml.Return { return tt.ret }}
			s, err := Open(lib, Options{})
			if s != nil {
				t.Errorf("Open: got a Sampler, want nil")
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("Open: got error %v, want one matching %v", err, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Open: got message %q, want it to contain %q", err, tt.wantText)
			}
			if got := callsMade(lib); len(got) != 1 || got["Init"] != 1 {
				t.Errorf("calls made: got %v, want only Init once", got)
			}
		})
	}
}

func TestLibraryNotFoundMessage(t *testing.T) {
	lib := &mock.Interface{InitFunc: func() gonvml.Return { return gonvml.ERROR_LIBRARY_NOT_FOUND }}
	_, err := Open(lib, Options{})
	want := "NVML library not found: is the NVIDIA driver installed? To try gpuwatch without a GPU run `gpuwatch demo`"
	if err == nil || err.Error() != want {
		t.Errorf("Open: got error %v, want %q", err, want)
	}
}

func TestOpenSystemWithoutLibrary(t *testing.T) {
	s, err := OpenSystem(Options{})
	if err == nil {
		_ = s.Close()
		t.Skip("this machine has an NVIDIA driver; the no-library path cannot be tested here")
	}
	if !errors.Is(err, ErrLibraryNotFound) {
		t.Errorf("OpenSystem: got error %v, want ErrLibraryNotFound", err)
	}
}

func TestOpenNilLibrary(t *testing.T) {
	if _, err := Open(nil, Options{}); err == nil {
		t.Errorf("Open(nil): got no error, want one")
	}
}

func TestOpenDeviceCountFailureShutsDown(t *testing.T) {
	h := newFakeHost(&fakeGPU{uuid: "GPU-0"})
	h.lib.DeviceGetCountFunc = func() (int, gonvml.Return) { return 0, gonvml.ERROR_UNKNOWN }
	_, err := Open(h.lib, Options{})
	if !errors.Is(err, gonvml.ERROR_UNKNOWN) {
		t.Errorf("Open: got error %v, want ERROR_UNKNOWN", err)
	}
	if got := len(h.lib.ShutdownCalls()); got != 1 {
		t.Errorf("Shutdown calls: got %d, want 1", got)
	}
}

func TestCloseShutsDownOnce(t *testing.T) {
	h := newFakeHost(&fakeGPU{uuid: "GPU-0"})
	s, err := Open(h.lib, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	for i := range 2 {
		if err := s.Close(); err != nil {
			t.Errorf("Close #%d: got error %v, want none", i+1, err)
		}
	}
	if got := len(h.lib.ShutdownCalls()); got != 1 {
		t.Errorf("Shutdown calls: got %d, want 1", got)
	}
	if got := len(h.set.FreeCalls()); got != 1 {
		t.Errorf("EventSet.Free calls: got %d, want 1", got)
	}
	before := callsMade(h.devices[0])
	if _, err := s.Sample(context.Background(), time.Unix(0, 0)); !errors.Is(err, ErrClosed) {
		t.Errorf("Sample after Close: got error %v, want ErrClosed", err)
	}
	if after := callsMade(h.devices[0]); !maps.Equal(after, before) {
		t.Errorf("device calls after Close: got %v, want %v (no call after Shutdown)", after, before)
	}
	if got := len(h.set.WaitCalls()); got != 0 {
		t.Errorf("EventSet.Wait calls after Close: got %d, want 0", got)
	}
}

func TestCloseReportsShutdownFailure(t *testing.T) {
	h := newFakeHost(&fakeGPU{uuid: "GPU-0"})
	h.lib.ShutdownFunc = func() gonvml.Return { return gonvml.ERROR_UNKNOWN }
	s, err := Open(h.lib, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Close(); !errors.Is(err, gonvml.ERROR_UNKNOWN) {
		t.Errorf("Close: got error %v, want ERROR_UNKNOWN", err)
	}
}

// TestOpenSystemSample runs only where the NVIDIA driver is installed: it
// samples the real GPUs twice.
func TestOpenSystemSample(t *testing.T) {
	s, err := OpenSystem(Options{Host: "live"})
	if errors.Is(err, ErrLibraryNotFound) {
		t.Skip("no NVML library on this machine")
	}
	if err != nil {
		t.Fatalf("OpenSystem: %v", err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	for i := range 2 {
		snap, err := s.Sample(context.Background(), time.Unix(int64(i), 0))
		if err != nil {
			t.Fatalf("Sample: %v", err)
		}
		if len(snap.Devices) == 0 {
			t.Fatalf("sample %d: got no GPU, want at least one", i)
		}
		for _, d := range snap.Devices {
			t.Logf("GPU %d %s %q mem %d/%d util %v/%v temp %v power %v/%v procs %d",
				d.Index, d.UUID, d.Name, d.MemUsed, d.MemTotal, d.UtilGPU, d.UtilMem, d.TempC, d.PowerW, d.PowerLimitW, len(d.Processes))
			if !strings.HasPrefix(d.UUID, "GPU-") || d.MemTotal == 0 || d.MemUsed > d.MemTotal {
				t.Errorf("sample %d: GPU %d: got UUID %q memory %d/%d, want a GPU- UUID and known memory", i, d.Index, d.UUID, d.MemUsed, d.MemTotal)
			}
		}
	}
}
