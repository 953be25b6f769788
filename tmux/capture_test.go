package tmux

import (
	"errors"
	"reflect"
	"testing"
)

func TestParsePaneState(t *testing.T) {
	for _, tt := range []struct {
		give    string
		want    PaneState
		wantErr string
	}{
		{"12|3|24|4242|0|0", PaneState{12, 3, 24, "4242", false, false}, ""},
		{"0|0|24|1|1|1", PaneState{0, 0, 24, "1", true, true}, ""},
		{"5|1|10|99|0", PaneState{5, 1, 10, "99", false, false}, ""},
		{"0|0|0||0", PaneState{}, ""},
		{"1|2|3|a|b|c|d", PaneState{1, 2, 3, "a", false, false}, ""},
		{" 7|+2|1_0|p|0|#{alternate_on}", PaneState{7, 2, 10, "p", false, false}, ""},
		{"x|0|0||0", PaneState{}, `invalid literal for int() with base 10: "x"`},
		{"1|2|3", PaneState{}, "not enough values to unpack (expected 5, got 3)"},
	} {
		got, err := ParsePaneState(tt.give)
		if tt.wantErr != "" {
			var pe *ParseError
			if !errors.As(err, &pe) || err.Error() != tt.wantErr {
				t.Errorf("ParsePaneState(%q) err = %v, want %s", tt.give, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParsePaneState(%q) = %+v, %v; want %+v", tt.give, got, err, tt.want)
		}
	}
}

func TestCaptureArgs(t *testing.T) {
	for _, tt := range []struct {
		target, start, end string
		join               bool
		want               []string
	}{
		{"%1", "", "", false, []string{"capture-pane", "-p", "-t", "%1"}},
		{"%1", "3", "", true, []string{"capture-pane", "-p", "-J", "-t", "%1", "-S", "3"}},
		{"%2", "-", "", false, []string{"capture-pane", "-p", "-t", "%2", "-S", "-"}},
		{"%2", "-100", "5", true, []string{"capture-pane", "-p", "-J", "-t", "%2", "-S", "-100", "-E", "5"}},
	} {
		if got := CaptureArgs(tt.target, tt.start, tt.end, tt.join); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("CaptureArgs = %q, want %q", got, tt.want)
		}
	}
}

func TestShellJoin(t *testing.T) {
	for _, tt := range []struct {
		give []string
		want string
	}{
		{[]string{"tmux", "-L", "dev", "wait-for", "-S", "r_0123456789"}, "tmux -L dev wait-for -S r_0123456789"},
		{[]string{"tmux", "set-option", "-p", "-t", "%1", "@s_ab"}, "tmux set-option -p -t %1 @s_ab"},
		{[]string{"/usr/bin/tmux", "-S", "/tmp/my sock"}, "/usr/bin/tmux -S '/tmp/my sock'"},
		{[]string{"it's", ""}, `'it'"'"'s' ''`},
		{[]string{"a$b", "x;y", "é"}, "'a$b' 'x;y' 'é'"},
		{[]string{"a,b:c+d=e@f%g"}, "a,b:c+d=e@f%g"},
	} {
		if got := shellJoin(tt.give); got != tt.want {
			t.Errorf("shellJoin(%q) = %s, want %s", tt.give, got, tt.want)
		}
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]string{"tmux 3.3a\n": "3.3a", "tmux next-3.4": "next-3.4", " tmux 2.9 \r\n": "2.9", "": ""} {
		if got := ParseVersion([]byte(in)); got != want {
			t.Errorf("ParseVersion(%q) = %q, want %q", in, got, want)
		}
	}
}
