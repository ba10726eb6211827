package daemon

import (
	"slices"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/prometheus"
	"github.com/gpuwatch/gpuwatch/rules"
)

// TestPastNeededReadsTheHealthTheRulesRead: a hub just started reads the
// health readings its rules' windows read (active(), rate(), a reading
// below its maximum: both) over their spans, and the XIDs over a count's,
// so that those windows are full at its first evaluation.
func TestPastNeededReadsTheHealthTheRulesRead(t *testing.T) {
	rs, err := rules.ParseFile("r.yaml", []byte(`rules:
  - alert: Slowdown
    when: active(throttle.hw_slowdown, 5m) >= 4m
  - alert: NVLink
    when: rate(nvlink.crc_errors, 15m) > 10/min
  - alert: Narrow
    when: min(pcie.link.width_below_max, 20m) > 0
  - alert: AppXIDs
    when: count(xid.fault == "application", 10m) >= 3
`))
	if err != nil {
		t.Fatal(err)
	}
	past := pastNeeded(rules.NewEngine(rs, rules.Options{}).Lookbacks(), 0)
	for _, want := range []prometheus.Need{
		{Reading: prometheus.ReadingHealth(gpu.ClockEventReasons), Span: 5 * time.Minute},
		{Reading: prometheus.ReadingHealth(gpu.NVLinkCRCErrors), Span: 15 * time.Minute},
		{Reading: prometheus.ReadingHealth(gpu.PCIeLinkWidth), Span: 20 * time.Minute},
		{Reading: prometheus.ReadingHealth(gpu.PCIeLinkWidthMax), Span: 20 * time.Minute},
		{Reading: prometheus.ReadingXIDs, Span: 10 * time.Minute},
	} {
		if !slices.Contains(past, want) {
			t.Errorf("the past read is %+v: want %+v in it", past, want)
		}
	}
	if slices.ContainsFunc(past, func(n prometheus.Need) bool { return n.Reading == prometheus.ReadingHealth(gpu.ECCUncorrectedVolatile) }) {
		t.Errorf("the past read is %+v: no rule reads the ECC errors", past)
	}
}
