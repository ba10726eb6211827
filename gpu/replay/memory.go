package replay

import (
	"fmt"
	"strconv"
	"strings"
)

// knownGiB is the memory, in GiB, of GPUs whose name does not say it, by
// the model in the name ("NVIDIA H100 80GB HBM3" says it; "Tesla T4" does
// not). Consumer cards are named by their number after RTX or GTX, "Ti"
// included.
var knownGiB = map[string]int{
	"B200": 180, "GH200": 96, "H200": 141, "H100": 80, "H100 NVL": 94, "H800": 80, "A100": 40, "A800": 40,
	"L40S": 48, "L40": 48, "L4": 24, "A40": 48, "A30": 24, "A10G": 24, "A10": 24, "A16": 16, "A2": 16,
	"A6000": 48, "A5000": 24, "A4500": 20, "A4000": 16, "T4": 16, "V100": 16, "P100": 16, "P40": 24, "P4": 8,
	"K80": 12, "TITAN RTX": 24, "TITAN V": 12, "RTX 6000 Ada": 48,
	"RTX 5090": 32, "RTX 5080": 16, "RTX 4090": 24, "RTX 4080": 16, "RTX 4070 Ti": 12, "RTX 4070": 12,
	"RTX 3090 Ti": 24, "RTX 3090": 24, "RTX 3080 Ti": 12, "RTX 3080": 10, "RTX 3070": 8, "RTX 3060": 12,
	"RTX 2080 Ti": 11, "RTX 2080": 8, "RTX 8000": 48, "RTX 6000": 24, "GTX 1080 Ti": 11, "GTX 1080": 8,
}

// KnownMemory returns the memory of a GPU by its name, as nvidia-smi writes
// it: the size the name states ("NVIDIA A100-SXM4-80GB" has 80 GiB), or the
// size of the model (a "Tesla T4" has 16 GiB). Both are nominal: the driver
// reports a little less. ok is false for a name gpuwatch does not know.
func KnownMemory(name string) (bytes uint64, ok bool) {
	tokens := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool { return r == ' ' || r == '-' || r == '_' })
	for _, t := range tokens {
		if n, ok := strings.CutSuffix(t, "GB"); ok {
			if gib, err := strconv.Atoi(n); err == nil && gib > 0 && gib <= 4096 {
				return uint64(gib) << 30, true
			}
		}
	}
	best := 0
	for i := range tokens {
		for j := min(len(tokens), i+3); j > i; j-- {
			key := strings.Join(tokens[i:j], " ")
			if gib, ok := lookupModel(key); ok && j-i > best {
				best, bytes = j-i, uint64(gib)<<30
			}
		}
	}
	return bytes, best > 0
}

// lookupModel finds a model in knownGiB, whose keys are upper-case but
// for "Ti" and "Ada".
func lookupModel(key string) (int, bool) {
	for k, gib := range knownGiB {
		if strings.EqualFold(k, key) {
			return gib, true
		}
	}
	return 0, false
}

// formatGiB writes an amount of memory in GiB: "80 GiB".
func formatGiB(b uint64) string {
	return fmt.Sprintf("%g GiB", float64(b)/(1<<30))
}

// ParseMemory parses an amount of memory as people write it: "80GiB",
// "81559 MiB", "24GB" (NVIDIA's GB and MB are GiB and MiB).
func ParseMemory(s string) (uint64, error) {
	num, unit := splitUnit([]byte(strings.TrimSpace(s)))
	scale, ok := memoryScale(unit)
	if !ok {
		return 0, fmt.Errorf("want an amount with its unit, as in 80GiB or 24576MiB")
	}
	n, ok := parseBytes(num, scale)
	if !ok || n == 0 {
		return 0, fmt.Errorf("want an amount above 0, as in 80GiB")
	}
	return n, nil
}
