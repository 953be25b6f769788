package tools

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestOptionValueParsing(t *testing.T) {
	cases := []struct {
		option string
		lines  []string
		want   string
	}{
		{"base-index", []string{"base-index 1"}, `1`},
		{"base-index", []string{"base-index 007"}, `7`},
		{"visual-bell", []string{"visual-bell* on"}, `true`},
		{"status", []string{"status off"}, `false`},
		{"user-keys", []string{"user-keys"}, `null`},
		{"status-left", []string{`status-left "[#{session_name}] "`}, `"[#{session_name}] "`},
		{"x", []string{"x a b c"}, `"a b c"`},
		{"missing", []string{"other 1"}, `null`},
		{"missing", nil, `null`},
		{"status-format", []string{"status-format[0] a b", "status-format[2] c"}, `{"0":"a b","2":"c"}`},
		{"command-alias", []string{"command-alias[0] split-pane=split-window", `command-alias[1] "info=show-messages -JT"`}, `{"split-pane":"split-window","info":"show-messages -JT"}`},
		{"terminal-overrides", []string{"terminal-overrides[0] xterm*:Tc:U8=0", "terminal-overrides[1] xterm*:smcup@"}, `{"xterm*":{"Tc":null,"U8":0,"smcup@":null}}`},
		{"terminal-features", []string{"terminal-features[0] xterm*:clipboard:ccolour", "terminal-features[1] screen*:title"}, `{"0":"xterm*:clipboard:ccolour","1":"screen*:title"}`},
		{"status-format[1]", []string{"status-format[1] on"}, `true`},
	}
	for _, tc := range cases {
		b, err := json.Marshal(optionValue(tc.option, tc.lines))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("optionValue(%q, %q) = %s, want %s", tc.option, tc.lines, b, tc.want)
		}
	}
}

func TestOptionShlexSplit(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  bool
	}{
		{`a b`, []string{"a", "b"}, false},
		{`a "b c"`, []string{"a", "b c"}, false},
		{`a 'b "c'`, []string{"a", `b "c`}, false},
		{`a "x\"y\n"`, []string{"a", `x"y\n`}, false},
		{`a b\ c`, []string{"a", "b c"}, false},
		{`a ""`, []string{"a", ""}, false},
		{`a "open`, nil, true},
		{`a \`, nil, true},
	}
	for _, tc := range cases {
		got, err := pyShlexSplit(tc.in)
		if (err != nil) != tc.err || (!tc.err && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("pyShlexSplit(%q) = %q, %v", tc.in, got, err)
		}
	}
}

func TestHookKeySplit(t *testing.T) {
	cases := []struct {
		key  string
		name string
		idx  int // -1: none
	}{
		{"pane-focus-in[0]", "pane-focus-in", 0},
		{"session-renamed[12]", "session-renamed", 12},
		{"pane-exited", "pane-exited", -1},
		{"odd[x]", "odd[x]", -1},
	}
	for _, tc := range cases {
		name, idx := splitHookKey(tc.key)
		got := -1
		if idx != nil {
			got = *idx
		}
		if name != tc.name || got != tc.idx {
			t.Errorf("splitHookKey(%q) = %q %d", tc.key, name, got)
		}
	}
}
