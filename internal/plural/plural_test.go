package plural

import "testing"

func TestCount(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{{0, "0 receivers"}, {1, "1 receiver"}, {2, "2 receivers"}, {-1, "-1 receivers"}}
	for _, tt := range tests {
		if got := Count(tt.n, "receiver"); got != tt.want {
			t.Errorf("Count(%d): got %q, want %q", tt.n, got, tt.want)
		}
	}
}
