package replay

import "strings"

// GPU-Z (TechPowerUp, Windows) logs its sensors of one GPU, once per
// refresh, to "GPU-Z Sensor Log.txt", a CSV whose values are padded with
// blanks and whose lines end in a comma:
//
//	        Date        , GPU Clock [MHz] , Memory Clock [MHz] , GPU Temperature [°C] , Memory Used [MB] , GPU Load [%] , Board Power Draw [W] ,
//	2026-11-29 09:00:00 ,          1905.0 ,            9501.0 ,                 45.0 ,             8595 ,           45 ,               250.4 ,
//
// It is read as a CSV with GPU-Z's names (columns.go): "Memory Used
// (Dedicated) [MB]" or "Memory Used [MB]" is the memory used (GPU-Z logs
// no total: the GPU's name, or --memory-total, gives it), "GPU Load" the
// utilization, "Memory Controller Load" the memory's, "Board Power Draw"
// the power. Its times say seconds, and at a refresh of a second or less
// two rows can share one: they are samples of the one GPU, spread over
// their second (bursts.go), never a second GPU.

// formatGPUZ names GPU-Z's log for people.
const formatGPUZ = "GPU-Z sensor log"

// gpuzColumns are columns only GPU-Z writes, one of which, beside a first
// column "Date", tells its log.
var gpuzColumns = []string{"GPU Clock [MHz]", "GPU Load [%]", "Memory Controller Load [%]", "Board Power Draw [W]",
	"Memory Used (Dedicated) [MB]", "PerfCap Reason []"}

// isGPUZHeader reports whether a CSV header is GPU-Z's.
func isGPUZHeader(h *header) bool {
	if len(h.cols) < 3 || h.cols[0].label != "Date" {
		return false
	}
	for i := range h.cols {
		for _, g := range gpuzColumns {
			if strings.EqualFold(h.cols[i].label, g) {
				return true
			}
		}
	}
	return false
}
