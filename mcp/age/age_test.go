package age

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/quick"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
		err  string // in the error; "" for none
	}{
		{"0", 0, true, ""},
		{"90m", 90 * time.Minute, true, ""},
		{"72h", 72 * time.Hour, true, ""},
		{"7d", 7 * 24 * time.Hour, true, ""},
		{"1d12h", 36 * time.Hour, true, ""},
		{"0d", 0, true, ""},
		{"", 0, false, ""},
		{"d", 0, false, ""},
		{"xd", 0, false, ""},
		{"1.5d", 0, false, ""},
		{"wed", 0, false, ""},
		{"yesterday", 0, false, ""},
		{"5", 0, false, ""},
		{"2026-03-01", 0, false, ""},
		{"2dx", 0, true, "bad duration"},
		{"1d5", 0, true, "bad duration"},
		{"-1h", 0, true, "negative"},
		{"-1d", 0, true, "negative"},
		{"1d-1h", 0, true, "negative"},
		{"200000d", 0, true, "more than 100000 days"},
	} {
		got, ok, err := Parse(tc.in)
		if ok != tc.ok || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) || (err == nil && got != tc.want) {
			t.Errorf("Parse(%q) = %v, %v, %v; want %v, %v, %q", tc.in, got, ok, err, tc.want, tc.ok, tc.err)
		}
	}
	if _, _, err := Parse("-2h"); !errors.Is(err, ErrNegative) {
		t.Errorf("-2h: %v, want ErrNegative", err)
	}
}

// Any days and any whole seconds, written as "<days>d<h>h<m>m<s>s", read
// back to the same duration.
func TestParseRoundTrip(t *testing.T) {
	f := func(days uint16, secs uint32) bool {
		dd := int(days) % (MaxDays + 1)
		h, m, s := secs/3600, secs/60%60, secs%60
		text := fmt.Sprintf("%dd%dh%dm%ds", dd, h, m, s)
		want := time.Duration(dd)*24*time.Hour + time.Duration(secs)*time.Second
		got, ok, err := Parse(text)
		return ok && err == nil && got == want
	}
	if err := quick.Check(f, nil); err != nil {
		t.Error(err)
	}
}
