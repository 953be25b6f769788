package tools

import (
	"reflect"
	"testing"
)

func TestBufferSplitLines(t *testing.T) {
	cases := map[string][]string{
		"":             {},
		"a":            {"a"},
		"a\n":          {"a"},
		"a\n\nb":       {"a", "", "b"},
		"a\r\nb\rc":    {"a", "b", "c"},
		"a\x0bb\x0cc":  {"a", "b", "c"},
		"a\u2028b\n\n": {"a", "b", ""},
	}
	for in, want := range cases {
		if got := pySplitLines(in); !reflect.DeepEqual(got, want) {
			t.Errorf("pySplitLines(%q) = %q, want %q", in, got, want)
		}
	}
}
