package sim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// CSVHeader is the header line nvidia-smi writes for
//
//	nvidia-smi --query-gpu=timestamp,index,name,uuid,temperature.gpu,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw --format=csv -l 5
//
// the layout of the reference traces and of WriteCSV.
const CSVHeader = "timestamp, index, name, uuid, temperature.gpu, utilization.gpu [%], utilization.memory [%], memory.used [MiB], memory.total [MiB], power.draw [W]"

// CSVHeaderReserved is CSVHeader with memory.reserved added to the query,
// the memory the driver keeps: the layout of WriteCSV for GPUs that
// reserve memory.
const CSVHeaderReserved = CSVHeader + ", memory.reserved [MiB]"

// csvTime is nvidia-smi's timestamp layout (local wall-clock time, no zone).
const csvTime = "2006/01/02 15:04:05.000"

// notAvailable is what nvidia-smi prints for a reading it does not have.
const notAvailable = "[N/A]"

// WriteCSV writes every snapshot of src, until io.EOF, as nvidia-smi writes
// them with the query of CSVHeader (CSVHeaderReserved when a GPU of the
// first snapshot reserves memory): one row per GPU per snapshot, the GPUs of
// one snapshot a few milliseconds apart, unknown readings (NaN; memory when
// MemTotal is 0) as nvidia-smi marks them: N/A in square brackets. It does
// not close src. A looping source never ends; give it a source that does.
func WriteCSV(w io.Writer, src gpu.Source) error {
	bw := bufio.NewWriter(w)
	ctx := context.Background()
	reserved := false
	for n := 0; ; n++ {
		snap, err := src.Next(ctx)
		if errors.Is(err, io.EOF) && n == 0 {
			snap, err = &gpu.Snapshot{}, nil // no snapshot: the header alone
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("sim: csv snapshot %d: %w", n, err)
		}
		if n == 0 {
			header := CSVHeader
			if reserved = slices.ContainsFunc(snap.Devices, func(d gpu.Device) bool { return d.MemReserved > 0 }); reserved {
				header = CSVHeaderReserved
			}
			if _, err := fmt.Fprintln(bw, header); err != nil {
				return fmt.Errorf("sim: write csv header: %w", err)
			}
		}
		for i := range snap.Devices {
			if err := writeRow(bw, snap.Time.Add(rowOffset(snap.Time, i)), &snap.Devices[i], reserved); err != nil {
				return fmt.Errorf("sim: write csv row: %w", err)
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("sim: write csv: %w", err)
	}
	return nil
}

// rowOffset spreads the rows of one snapshot over a few milliseconds, as
// nvidia-smi's one-GPU-after-the-other queries do: 3 ms a GPU, with 0–2 ms of
// jitter derived from the time so that output is reproducible.
func rowOffset(t time.Time, i int) time.Duration {
	h := uint64(t.UnixMilli())*0x9e3779b97f4a7c15 + uint64(i)*0xbf58476d1ce4e5b9
	return time.Duration(3*i)*time.Millisecond + time.Duration((h>>61)%3)*time.Millisecond
}

// writeRow writes one device's row, with its reserved memory if reserved.
func writeRow(w io.Writer, t time.Time, d *gpu.Device, reserved bool) error {
	mem, total, kept := notAvailable, notAvailable, notAvailable
	if d.MemKnown() {
		mem = fmt.Sprintf("%d MiB", d.MemUsed/mib)
		total = fmt.Sprintf("%d MiB", d.MemTotal/mib)
		kept = fmt.Sprintf("%d MiB", d.MemReserved/mib)
	}
	_, err := fmt.Fprintf(w, "%s, %d, %s, %s, %s, %s, %s, %s, %s, %s",
		t.Format(csvTime), d.Index, d.Name, d.UUID,
		reading(d.TempC, "%.0f"), reading(d.UtilGPU, "%.0f %%"), reading(d.UtilMem, "%.0f %%"),
		mem, total, reading(d.PowerW, "%.2f W"))
	if err == nil && reserved {
		_, err = fmt.Fprintf(w, ", %s", kept)
	}
	if err == nil {
		_, err = fmt.Fprintln(w)
	}
	return err
}

// reading formats v, or [N/A] when it is unknown.
func reading(v float64, format string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return notAvailable
	}
	return fmt.Sprintf(format, v)
}
