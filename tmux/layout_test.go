package tmux

import (
	"fmt"
	"strings"
	"testing"
)

func withSum(body string) string { return fmt.Sprintf("%04x,%s", LayoutChecksum(body), body) }

func TestCheckLayout(t *testing.T) {
	cases := []struct {
		in string
		ok bool
	}{
		{"tiled", true},
		{"even-horizontal", true},
		{"main-vertical", true},
		{"bogus", false},
		{"", false},
		{withSum("80x24,0,0,1"), true},
		{withSum("80x24,0,0{40x24,0,0,1,39x24,41,0,2}"), true},
		{withSum("80x24,0,0[80x12,0,0,1,80x11,0,13{40x11,0,13,2,39x11,41,13,3}]"), true},
		{"abcd,80x24,0,0,1", false},
		{withSum("80x24,0,0{40x24,0,0,1"), false},
		{withSum("80x24"), false},
		{"zzzz,80x24,0,0,1", false},
		{withSum("10000x10000,0,0,123456"), true}, // pane ids may be large
		{withSum("999999x999999,0,0,1"), false},
		{withSum("80x24,0,0{40x24,0,0,1,10001x24,41,0,2}"), false},
		{withSum("80x24,0,0,1" + strings.Repeat(" ", 8200)), false},
	}
	for _, tc := range cases {
		err := CheckLayout(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("CheckLayout(%q) = %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}

func FuzzCheckLayout(f *testing.F) {
	f.Add("tiled")
	f.Add(withSum("80x24,0,0{40x24,0,0,1,39x24,41,0,2}"))
	f.Fuzz(func(t *testing.T, s string) { _ = CheckLayout(s) })
}
