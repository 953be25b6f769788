package tools

import (
	"reflect"
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/tmux"
)

func TestRunCommandPayload(t *testing.T) {
	got := runCommandPayload(&tmux.Server{SocketName: "my sock"}, "%3", "r_0123456789", "@s_0123456789", "echo hi  \t", true)
	want := " (\necho hi\n); s=$?; tmux -L 'my sock' set-option -p -t %3 @s_0123456789 \"$s\"; tmux -L 'my sock' wait-for -S r_0123456789"
	if got != want {
		t.Fatalf("payload\n got %q\nwant %q", got, want)
	}
	if got := runCommandPayload(&tmux.Server{}, "%3", "r_a", "@s_a", "x", false); !strings.HasPrefix(got, "(\nx\n); s=$?; tmux set-option") {
		t.Fatalf("unsuppressed payload %q", got)
	}
}

func TestRunCommandFilter(t *testing.T) {
	const (
		curLong   = "deadbeefdeadbeefdeadbeefdeadbeef"
		prevLong  = "feedfacefeedfacefeedfacefeedface"
		curShort  = "e743e5084b"
		prevShort = "f00dbeef12"
	)
	longCh, longOpt := "libtmux_mcp_run_"+curLong, "@libtmux_mcp_status_"+curLong
	shortCh, shortOpt := "r_"+curShort, "@s_"+curShort
	keep := []string{
		"grep -n mcp_status app.log",
		`echo "tmux set-option -p x"`,
		"run tmux wait-for -S done first",
		"ns=libtmux_mcp_ is reserved",
		"s=$?; tmux set-option -p @s_myapp_status 1",
		"s=$?; tmux set-option -p @s_ 1",
	}
	for _, l := range keep {
		if got := filterRunCommandLines([]string{l}, shortCh, shortOpt); !reflect.DeepEqual(got, []string{l}) {
			t.Errorf("dropped legitimate line %q", l)
		}
		if got := filterRunCommandLines([]string{l}, longCh, longOpt); !reflect.DeepEqual(got, []string{l}) {
			t.Errorf("dropped legitimate line %q (long markers)", l)
		}
	}
	sync := "}; __libtmux_mcp_status=$?; tmux set-option -p " + longOpt + ` "$__libtmux_mcp_status"; tmux wait-for -S ` + longCh
	if got := filterRunCommandLines([]string{"RUN_OK", sync}, longCh, longOpt); !reflect.DeepEqual(got, []string{"RUN_OK"}) {
		t.Errorf("sync line kept: %q", got)
	}
	shortSync := `); s=$?; tmux set-option -p ` + shortOpt + ` "$s"; tmux wait-for -S ` + shortCh
	for _, out := range [][]string{{"abcdef1234", "DONE"}, {"abcdef1234", "feedface99", "DONE"}} {
		if got := filterRunCommandLines(append([]string{shortSync}, out...), shortCh, shortOpt); !reflect.DeepEqual(got, out) {
			t.Errorf("hex output after sync line: got %q want %q", got, out)
		}
	}
	for name, tc := range map[string]struct {
		lines       []string
		ch, opt     string
		description string
	}{
		"current_wrapped_long": {[]string{"RUN_OK",
			"∙ }; __libtmux_mcp_status=$?; tmux set-option -p @libtmux_mcp_status_" + curLong[:10],
			curLong[10:] + ` "$__libtmux_mcp_status"; tmux wait-for -S libtmux_mcp_run_`,
			curLong}, longCh, longOpt, ""},
		"previous_wrapped_long": {[]string{"RUN_OK",
			"∙ }; __libtmux_mcp_status=$?; tmux set-option -p @libtmux_mcp_status_" + prevLong[:10],
			prevLong[10:] + ` "$__libtmux_mcp_status"; tmux wait-for -S libtmux_mcp_run_`,
			prevLong}, longCh, longOpt, ""},
		"current_short": {[]string{"RUN_OK",
			`∙ }; s=$?; tmux set-option -p @s_` + curShort + ` "$s"; tmux wait-for -S r_` + curShort}, shortCh, shortOpt, ""},
		"previous_wrapped_short": {[]string{"RUN_OK",
			"∙ }; s=$?; tmux set-option -p @s_" + prevShort[:6],
			prevShort[6:] + ` "$s"; tmux wait-for -S r_` + prevShort}, shortCh, shortOpt, ""},
		"previous_targeted_short": {[]string{"RUN_OK",
			"∙ }; s=$?; tmux -L dev set-option -p -t %1 @s_" + prevShort[:6],
			prevShort[6:] + ` "$s"; tmux -L dev wait-for -S r_` + prevShort}, shortCh, shortOpt, ""},
	} {
		if got := filterRunCommandLines(tc.lines, tc.ch, tc.opt); !reflect.DeepEqual(got, []string{"RUN_OK"}) {
			t.Errorf("%s: got %q", name, got)
		}
	}
}

func TestTailLinesSliceSemantics(t *testing.T) {
	lines := []string{"a", "b", "c"}
	for _, tc := range []struct {
		max       *int
		want      []string
		truncated bool
		dropped   int
	}{
		{nil, lines, false, 0},
		{intRef(2), []string{"b", "c"}, true, 1},
		{intRef(5), lines, false, 0},
		{intRef(0), lines, true, 3},
		{intRef(-1), []string{"b", "c"}, true, 4},
		{intRef(-5), []string{}, true, 8},
	} {
		got, tr, d := tailLines(lines, tc.max)
		if !reflect.DeepEqual(got, tc.want) || tr != tc.truncated || d != tc.dropped {
			t.Errorf("tailLines(%v) = %q %v %d", tc.max, got, tr, d)
		}
	}
}

func intRef(n int) *int { return &n }
