package cli

import (
	"testing"
	"time"
)

func TestDemoStartsAtNineToday(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	tests := []struct {
		now  time.Time
		loc  *time.Location
		want time.Time
	}{
		{time.Date(2026, 3, 10, 15, 4, 0, 0, time.UTC), time.UTC, time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)},
		{time.Date(2026, 3, 10, 6, 0, 0, 0, time.UTC), time.UTC, time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)},
		// 23:30 UTC is already the 11th in Berlin: the demo is of the 11th there.
		{time.Date(2026, 3, 10, 23, 30, 0, 0, time.UTC), berlin, time.Date(2026, 3, 11, 9, 0, 0, 0, berlin)},
	}
	for _, tt := range tests {
		if got := demoStart(tt.now, tt.loc); !got.Equal(tt.want) {
			t.Errorf("demoStart(%v, %v) = %v, want %v", tt.now, tt.loc, got, tt.want)
		}
	}
}
