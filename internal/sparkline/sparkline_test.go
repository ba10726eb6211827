package sparkline

import (
	"math"
	"testing"
)

func TestDraw(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		values []float64
		lo, hi float64
		want   string
	}{
		{"percent scale", []float64{0, 12.5, 50, 99.9, 100, 150, -5}, 0, 100, "▁▂▅███▁"},
		{"unknown values are gaps", []float64{10, nan, math.Inf(1), 90}, 0, 100, "▁  █"},
		{"flat series at mid height", []float64{7, 7, 7}, 7, 7, "▄▄▄"},
		{"empty", nil, 0, 100, ""},
	}
	for _, tt := range tests {
		if got := Draw(tt.values, tt.lo, tt.hi); got != tt.want {
			t.Errorf("%s: Draw(%v, %v, %v) = %q, want %q", tt.name, tt.values, tt.lo, tt.hi, got, tt.want)
		}
	}
}

func TestRange(t *testing.T) {
	lo, hi, ok := Range([]float64{math.NaN(), 3, -1, math.Inf(-1), 8})
	if lo != -1 || hi != 8 || !ok {
		t.Errorf("Range = %v, %v, %v; want -1, 8, true", lo, hi, ok)
	}
	if _, _, ok := Range([]float64{math.NaN()}); ok {
		t.Error("Range of only unknown values: ok, want not ok")
	}
}
