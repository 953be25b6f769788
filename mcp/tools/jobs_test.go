package tools

import (
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"90m", now.Add(-90 * time.Minute), true},
		{"7d", now.Add(-7 * 24 * time.Hour), true},
		{"1d12h", now.Add(-36 * time.Hour), true},
		{"2026-02-01T00:00:00Z", time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), true},
		{"", time.Time{}, false},
		{"d", time.Time{}, false},
		{"-1h", time.Time{}, false},
		{"xd", time.Time{}, false},
		{"yesterday", time.Time{}, false},
	} {
		got, err := parseSince(tc.in, now)
		if (err == nil) != tc.ok || (tc.ok && !got.Equal(tc.want)) {
			t.Errorf("parseSince(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestParseJobStatus(t *testing.T) {
	started := time.Unix(1000, 500)
	now := time.Unix(2000, 0)
	for _, tc := range []struct {
		in   string
		exit int
		end  time.Time
		ok   bool
	}{
		{"0:1500", 0, time.Unix(1500, 0), true},
		{"130:1500.250000000\n", 130, time.Unix(1500, 250000000), true},
		{"3:1500.25", 3, time.Unix(1500, 250000000), true},
		{"3:1500.N", 3, time.Unix(1500, 0), true},  // BSD date has no %N
		{"4:1500.%N", 4, time.Unix(1500, 0), true}, // nor Debian's busybox date
		{"7:", 7, now, true},                       // date failed
		{"1:999", 1, started, true},                // the host's clock is behind
		{"", 0, time.Time{}, false},
		{"x:1", 0, time.Time{}, false},
		{"1:2:3", 0, time.Time{}, false},
		{"99999999999999999999:1", 0, time.Time{}, false},
	} {
		exit, end, ok := parseJobStatus(tc.in, started, now)
		if ok != tc.ok || exit != tc.exit || !end.Equal(tc.end) {
			t.Errorf("parseJobStatus(%q) = %d %v %v", tc.in, exit, end, ok)
		}
	}
}
