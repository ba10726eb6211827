// Package nvml samples NVIDIA GPUs through NVML, the library the NVIDIA
// driver ships (libnvidia-ml.so), by way of github.com/NVIDIA/go-nvml.
//
// Open initialises NVML and caches what does not change (handles, UUIDs,
// names, which memory call a GPU answers, the PCIe link's and the clocks'
// maxima, the NVLink links). Sample then reads every GPU once: memory,
// utilization, temperature, power, the processes holding memory, its
// health (ECC errors, retired pages and row remapping, the recovery
// action, clock event reasons, PCIe and NVLink errors, fan and clocks: one
// GetFieldValues and six calls), XID errors since the previous sample, and
// GPUs that were lost. A reading a GPU does not provide is NaN or missing,
// never zero, and a call it answers ERROR_NOT_SUPPORTED is not made again.
//
// go-nvml ends the process when a call other than Init is made after Init
// failed, so a Sampler exists only after a successful Init, and no call is
// made after Close.
package nvml

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// ErrLibraryNotFound means the NVML library could not be loaded: there is no
// NVIDIA driver on this machine, or its library is not on the loader's path.
var ErrLibraryNotFound = errors.New("NVML library not found: is the NVIDIA driver installed? To try gpuwatch without a GPU run `gpuwatch demo`")

// ErrClosed is returned by Sample after Close.
var ErrClosed = errors.New("nvml: sampler is closed")

// Attributor fills a process's User, Command and Container from its PID.
// gpu/proc implements it by reading /proc.
type Attributor interface {
	Attribute(p *gpu.Process)
}

// Options configure a Sampler. The zero value is usable.
type Options struct {
	// Host names the machine in every snapshot.
	Host string
	// Attributor, when not nil, is called for every process found on a GPU.
	Attributor Attributor
	// Logger receives warnings about readings a GPU cannot give; nil
	// discards them.
	Logger *slog.Logger
}

// Sampler reads the GPUs of one machine through NVML. It implements
// gpu.Sampler. Sample and Close may be called from different goroutines.
type Sampler struct {
	lib  gonvml.Interface
	host string
	attr Attributor
	log  *slog.Logger

	// throttleReasons: the driver lacks GetCurrentClocksEventReasons, so
	// clock event reasons are read with GetCurrentClocksThrottleReasons.
	throttleReasons bool

	mu      sync.Mutex // serialises Sample and Close: no NVML call after Shutdown
	closed  bool
	devices []*device
	events  *xidEvents // nil when the event set could not be created
}

var _ gpu.Sampler = (*Sampler)(nil)

// OpenSystem opens the NVML library installed with the driver. On a machine
// without it, it returns an error that matches ErrLibraryNotFound.
func OpenSystem(opts Options) (*Sampler, error) {
	return Open(gonvml.New(), opts)
}

// Open initialises lib and caches each GPU's handle, UUID and name. It makes
// no other call on lib when Init fails.
func Open(lib gonvml.Interface, opts Options) (*Sampler, error) {
	if lib == nil {
		return nil, errors.New("nvml: open: no library given")
	}
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		return nil, initError(ret)
	}
	s := &Sampler{
		lib:  lib,
		host: opts.Host,
		attr: opts.Attributor,
		log:  opts.Logger,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if err := s.discover(); err != nil {
		// Init succeeded, so Shutdown is allowed and releases the library.
		if ret := lib.Shutdown(); ret != gonvml.SUCCESS {
			err = errors.Join(err, fmt.Errorf("nvml: shutdown: %w", ret))
		}
		return nil, err
	}
	return s, nil
}

// discover creates the XID event set and loads every GPU's static facts.
func (s *Sampler) discover() error {
	count, ret := s.lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return callError("counting GPUs", ret)
	}
	if count == 0 {
		s.log.Warn("NVML found no GPU on this machine; snapshots will be empty")
	}
	s.events = newXIDEvents(s.lib, s.log)
	// Older drivers lack nvmlDeviceGetMemoryInfo_v2; calling a missing
	// symbol aborts the process, so look it up once instead of trying.
	memV2 := s.lib.Extensions().LookupSymbol("nvmlDeviceGetMemoryInfo_v2") == nil
	s.throttleReasons = s.lib.Extensions().LookupSymbol("nvmlDeviceGetCurrentClocksEventReasons") != nil
	s.devices = make([]*device, count)
	for i := range s.devices {
		d := &device{index: i}
		if !memV2 {
			d.unsupported |= fieldMemV2
		}
		if err := s.load(d); err != nil {
			s.log.Warn("GPU not available; will retry at each sample", "gpu", i, "err", err)
		}
		s.devices[i] = d
	}
	return nil
}

// load reads a device's handle, UUID and name and registers it for XID
// events. It is called at Open and again at each sample until it succeeds.
func (s *Sampler) load(d *device) error {
	h, ret := s.lib.DeviceGetHandleByIndex(d.index)
	if ret != gonvml.SUCCESS {
		return callError("getting GPU handle", ret)
	}
	uuid, ret := h.GetUUID()
	if ret != gonvml.SUCCESS {
		return callError("reading GPU UUID", ret)
	}
	name, ret := h.GetName()
	if ret != gonvml.SUCCESS {
		s.log.Warn("cannot read GPU name", "gpu", d.index, "uuid", uuid, "err", ret.Error())
		name = ""
	}
	d.handle, d.uuid, d.name, d.ready = h, uuid, name, true
	d.health = loadHealth(h, s.throttleReasons)
	if s.events != nil {
		s.events.register(d)
	}
	return nil
}

// Close frees the XID event set and shuts NVML down. Calls after the first
// return nil and do nothing.
func (s *Sampler) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, d := range s.devices {
		s.closeMIG(d)
	}
	var errs []error
	if s.events != nil {
		if err := s.events.free(); err != nil {
			errs = append(errs, err)
		}
	}
	if ret := s.lib.Shutdown(); ret != gonvml.SUCCESS {
		errs = append(errs, fmt.Errorf("nvml: shutdown: %w", ret))
	}
	return errors.Join(errs...)
}

// returnError is a failed NVML call. It unwraps to the gonvml.Return, so
// errors.Is(err, gonvml.ERROR_GPU_IS_LOST) works.
type returnError struct {
	msg string
	ret gonvml.Return
}

func (e *returnError) Error() string { return e.msg }

func (e *returnError) Unwrap() error { return e.ret }

// callError describes a failed call made after a successful Init.
func callError(op string, ret gonvml.Return) error {
	return &returnError{msg: "nvml: " + op + ": " + ret.Error(), ret: ret}
}

// initError explains a failed Init and what to do about it. Its text never
// comes from the library: after a failed Init nothing may call into it, and
// gonvml.Return.Error calls nvmlErrorString once the library is loaded.
func initError(ret gonvml.Return) error {
	if ret == gonvml.ERROR_LIBRARY_NOT_FOUND {
		return ErrLibraryNotFound
	}
	var msg string
	switch ret {
	case gonvml.ERROR_DRIVER_NOT_LOADED:
		msg = "the NVIDIA kernel driver is not loaded (ERROR_DRIVER_NOT_LOADED): load it (`modprobe nvidia`) and check that `nvidia-smi` works"
	case gonvml.ERROR_NO_PERMISSION:
		msg = "no permission to open the GPU devices (ERROR_NO_PERMISSION): run gpuwatch as a user that can read /dev/nvidia*, or in a container started with the NVIDIA runtime"
	case gonvml.ERROR_LIB_RM_VERSION_MISMATCH:
		msg = "the NVML library and the loaded kernel driver have different versions (ERROR_LIB_RM_VERSION_MISMATCH): this happens after a driver upgrade; reboot or reload the nvidia kernel modules"
	case gonvml.ERROR_FUNCTION_NOT_FOUND:
		msg = "the NVML library lacks nvmlInit (ERROR_FUNCTION_NOT_FOUND): the NVIDIA driver is too old or its installation is broken; reinstall the driver"
	default:
		msg = fmt.Sprintf("NVML returned error code %d: check that `nvidia-smi` works", int32(ret))
	}
	return &returnError{msg: "nvml: init: " + msg, ret: ret}
}
