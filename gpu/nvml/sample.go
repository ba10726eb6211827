package nvml

import (
	"context"
	"errors"
	"fmt"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// Sample reads every GPU once and returns the snapshot for time at, with the
// XID errors and lost GPUs since the previous sample. A lost GPU is reported
// once, left out of the snapshot while it stays lost, and sampled again when
// it answers. Sample fails only when ctx is done or the Sampler is closed.
func (s *Sampler) Sample(ctx context.Context, at time.Time) (*gpu.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	snap := &gpu.Snapshot{
		Time:    at,
		Host:    s.host,
		Devices: make([]gpu.Device, 0, len(s.devices)),
	}
	if s.events != nil {
		snap.Events = s.events.drain(s.devices, at, snap.Events)
	}
	for _, d := range s.devices {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("nvml: sample: %w", err)
		}
		slot := len(snap.Devices)
		snap.Devices = append(snap.Devices, gpu.Device{})
		err := s.sampleDevice(d, &snap.Devices[slot])
		if err == nil {
			snap.Devices, err = s.sampleInstances(d, snap.Devices, slot)
		}
		if err == nil {
			if d.lost {
				d.lost = false
				s.log.Info("lost GPU answers again", "gpu", d.index, "uuid", d.uuid)
			}
			continue
		}
		snap.Devices = snap.Devices[:slot]
		if !errors.Is(err, gonvml.ERROR_GPU_IS_LOST) {
			s.log.Debug("GPU not available", "gpu", d.index, "err", err)
			continue
		}
		if !d.lost {
			d.lost = true
			ev := lostEvent(d, at)
			s.log.Warn("GPU lost", "gpu", d.index, "uuid", d.uuid, "detail", ev.Detail)
			snap.Events = append(snap.Events, ev)
		}
	}
	return snap, nil
}

// sampleDevice loads d if Open could not, then reads it into out.
func (s *Sampler) sampleDevice(d *device, out *gpu.Device) error {
	if !d.ready {
		if err := s.load(d); err != nil {
			return err
		}
	}
	return d.read(s.log, s.attr, out)
}

// sampleInstances appends the MIG instances of d, whose reading is
// devices[at], when it is in MIG mode, and forgets them when it left it.
func (s *Sampler) sampleInstances(d *device, devices []gpu.Device, at int) ([]gpu.Device, error) {
	if !devices[at].MIGEnabled {
		if d.mig != nil {
			s.closeMIG(d)
			d.mig = nil
		}
		return devices, nil
	}
	return s.appendInstances(d, devices)
}

// lostEvent reports that d stopped answering.
func lostEvent(d *device, at time.Time) gpu.Event {
	name := fmt.Sprintf("GPU %d", d.index)
	if d.uuid != "" {
		name += " (" + d.uuid + ")"
	}
	return gpu.Event{
		Time:   at,
		Kind:   gpu.EventGPULost,
		GPU:    d.index,
		UUID:   d.uuid,
		Detail: name + " is lost: it fell off the bus or stopped answering NVML; check the kernel log (dmesg) for XID 79, then reset the GPU (nvidia-smi -r) or reboot",
	}
}
