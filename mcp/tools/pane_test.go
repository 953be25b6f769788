package tools

import (
	"strings"
	"testing"
)

func TestPaneTailLines(t *testing.T) {
	lines := []string{"a", "b", "c"}
	n := func(i int) *int { return &i }
	for _, tt := range []struct {
		limit   *int
		kept    string
		trunc   bool
		dropped int
	}{
		{nil, "abc", false, 0},
		{n(5), "abc", false, 0},
		{n(3), "abc", false, 0},
		{n(2), "bc", true, 1},
		{n(0), "abc", true, 3},
		{n(-1), "bc", true, 4},
		{n(-5), "", true, 8},
	} {
		kept, trunc, dropped := paneTailLines(lines, tt.limit)
		if strings.Join(kept, "") != tt.kept || trunc != tt.trunc || dropped != tt.dropped {
			t.Errorf("limit %v: got %q %v %d, want %q %v %d", tt.limit, kept, trunc, dropped, tt.kept, tt.trunc, tt.dropped)
		}
	}
}
