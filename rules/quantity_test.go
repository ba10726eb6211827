package rules

import (
	"math"
	"testing"
)

func TestLookupUnit(t *testing.T) {
	bps := Dimension{Base: Bytes, PerSecond: true}
	tests := []struct {
		unit   string
		dim    Dimension
		factor float64
	}{
		{"B", Dimension{Base: Bytes}, 1},
		{"KiB", Dimension{Base: Bytes}, 1024},
		{"MiB", Dimension{Base: Bytes}, 1 << 20},
		{"GiB", Dimension{Base: Bytes}, 1 << 30},
		{"TiB", Dimension{Base: Bytes}, 1 << 40},
		{"KB", Dimension{Base: Bytes}, 1e3},
		{"MB", Dimension{Base: Bytes}, 1e6},
		{"GB", Dimension{Base: Bytes}, 1e9},
		{"TB", Dimension{Base: Bytes}, 1e12},
		{"%", Dimension{Base: Percent}, 1},
		{"C", Dimension{Base: Celsius}, 1},
		{"W", Dimension{Base: Watts}, 1},
		{"ms", Dimension{Base: Seconds}, 0.001},
		{"s", Dimension{Base: Seconds}, 1},
		{"m", Dimension{Base: Seconds}, 60},
		{"min", Dimension{Base: Seconds}, 60},
		{"h", Dimension{Base: Seconds}, 3600},
		{"d", Dimension{Base: Seconds}, 86400},
		{"MiB/s", bps, 1 << 20},
		{"MiB/min", bps, (1 << 20) / 60.0},
		{"MiB/m", bps, (1 << 20) / 60.0},
		{"GiB/h", bps, (1 << 30) / 3600.0},
		{"KB/ms", bps, 1e6},
		{"B/d", bps, 1 / 86400.0},
		{"%/min", Dimension{Base: Percent, PerSecond: true}, 1 / 60.0},
		{"C/min", Dimension{Base: Celsius, PerSecond: true}, 1 / 60.0},
		{"W/s", Dimension{Base: Watts, PerSecond: true}, 1},
		{"/h", Dimension{Base: Count, PerSecond: true}, 1 / 3600.0},
	}
	for _, tt := range tests {
		u, ok := lookupUnit(tt.unit)
		if !ok {
			t.Errorf("lookupUnit(%q): not found, want %v × %v", tt.unit, tt.dim, tt.factor)
			continue
		}
		if u.dim != tt.dim || math.Abs(u.factor-tt.factor) > 1e-12*tt.factor {
			t.Errorf("lookupUnit(%q): got %v × %v, want %v × %v", tt.unit, u.dim, u.factor, tt.dim, tt.factor)
		}
	}
	for _, bad := range []string{"", "mib", "Mib", "MiB/", "/", "s/min", "MiB/GiB", "MiB/min/s", "c", "w", "KIB", "sec", "MiB/sec", "ns"} {
		if u, ok := lookupUnit(bad); ok {
			t.Errorf("lookupUnit(%q): got %v × %v, want not found", bad, u.dim, u.factor)
		}
	}
}

func TestSuggestUnit(t *testing.T) {
	tests := []struct{ in, want string }{
		{"gib", "GiB"}, {"mib/MIN", "MiB/min"}, {"c", "C"}, {"w/S", "W/s"}, {"foo", ""}, {"S/m", ""}, {"GiB/x", ""},
	}
	for _, tt := range tests {
		if got := suggestUnit(tt.in); got != tt.want {
			t.Errorf("suggestUnit(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDimensionFormat(t *testing.T) {
	tests := []struct {
		dim  Dimension
		v    float64
		want string
	}{
		{Dimension{Base: Bytes}, 19.5 * (1 << 30), "19.5 GiB"},
		{Dimension{Base: Bytes}, 512, "512 B"},
		{Dimension{Base: Bytes}, 0, "0 B"},
		{Dimension{Base: Bytes}, 1536, "1.5 KiB"},
		{Dimension{Base: Bytes}, 80 * (1 << 30), "80 GiB"},
		{Dimension{Base: Bytes}, 1024*(1<<20) - 1, "1 GiB"},
		{Dimension{Base: Bytes}, 3 * (1 << 40), "3 TiB"},
		{Dimension{Base: Bytes}, -2 * (1 << 20), "-2 MiB"},
		{Dimension{Base: Percent}, 97.28, "97.3%"},
		{Dimension{Base: Percent}, 100, "100%"},
		{Dimension{Base: Percent}, 0.5, "0.5%"},
		{Dimension{Base: Celsius}, 86, "86 C"},
		{Dimension{Base: Watts}, 312.2, "312 W"},
		{Dimension{Base: Count}, 3, "3"},
		{Dimension{Base: Bytes, PerSecond: true}, 328 * (1 << 20) / 60.0, "328 MiB/min"},
		{Dimension{Base: Bytes, PerSecond: true}, -(1 << 20) / 60.0, "-1 MiB/min"},
		{Dimension{Base: Percent, PerSecond: true}, 0.02, "1.2%/min"},
		{Dimension{Base: Celsius, PerSecond: true}, 1 / 60.0, "1 C/min"},
		{Dimension{Base: Watts, PerSecond: true}, 2, "120 W/min"},
		{Dimension{Base: Count, PerSecond: true}, 0.05, "3/min"},
		{Dimension{Base: Seconds}, 23*60 + 10, "23m10s"},
		{Dimension{Base: Seconds}, 45, "45s"},
		{Dimension{Base: Seconds}, 3600, "1h"},
		{Dimension{Base: Seconds}, 2*3600 + 5*60 + 7, "2h5m"},
		{Dimension{Base: Seconds}, 3*86400 + 4*3600 + 12*60, "3d4h"},
		{Dimension{Base: Seconds}, 0.35, "350ms"},
		{Dimension{Base: Seconds}, 0, "0s"},
		{Dimension{Base: Seconds}, math.Inf(1), "never"},
		{Dimension{Base: Seconds}, -90, "-1m30s"},
		{Dimension{Base: Seconds}, 1e13, "115740741d"},
		{Dimension{Base: Bytes}, math.NaN(), "n/a"},
		{Dimension{Base: Seconds}, math.NaN(), "n/a"},
		{Dimension{Base: Bytes}, math.Inf(1), "+Inf"},
		{Dimension{Base: Percent, PerSecond: true}, math.Inf(-1), "-Inf"},
	}
	for _, tt := range tests {
		if got := tt.dim.Format(tt.v); got != tt.want {
			t.Errorf("%v.Format(%v): got %q, want %q", tt.dim, tt.v, got, tt.want)
		}
	}
}

func TestDimensionString(t *testing.T) {
	tests := []struct {
		dim  Dimension
		want string
	}{
		{Dimension{Base: Bytes}, "bytes"},
		{Dimension{Base: Bytes, PerSecond: true}, "bytes per second"},
		{Dimension{Base: Percent}, "percent"},
		{Dimension{Base: Celsius}, "degrees Celsius"},
		{Dimension{Base: Watts, PerSecond: true}, "watts per second"},
		{Dimension{Base: Count}, "a count"},
		{Dimension{Base: Seconds}, "seconds"},
		{Dimension{}, "unknown"},
	}
	for _, tt := range tests {
		if got := tt.dim.String(); got != tt.want {
			t.Errorf("%#v.String(): got %q, want %q", tt.dim, got, tt.want)
		}
	}
}
