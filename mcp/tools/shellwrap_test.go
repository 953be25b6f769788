package tools

import (
	"reflect"
	"testing"

	"github.com/fleetmux/fleetmux/tmux"
)

func TestShellSyntax(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want shellSyntax
	}{
		{"bash", syntaxPOSIX}, {"-bash", syntaxPOSIX}, {"zsh", syntaxPOSIX}, {"sh", syntaxPOSIX},
		{"dash", syntaxPOSIX}, {"ash", syntaxPOSIX}, {"vim", syntaxPOSIX}, {"", syntaxPOSIX},
		{"fish", syntaxFish}, {"-fish", syntaxFish}, {"/usr/bin/fish", syntaxFish},
		{"tcsh", syntaxUnsupported}, {"-csh", syntaxUnsupported}, {"nu", syntaxUnsupported},
	} {
		if got := syntaxOf(paneShell(tc.cmd)); got != tc.want {
			t.Errorf("syntaxOf(%q) = %v, want %v", tc.cmd, got, tc.want)
		}
	}
}

// TestRunCommandPayloads: the POSIX payload is the reference's, byte for
// byte; the fish payload quotes for fish.
func TestRunCommandPayloads(t *testing.T) {
	srv := &tmux.Server{SocketName: "s o'c\\k"}
	got := runCommandPayload(srv, "%1", "r_0123456789", "@s_0123456789", "echo hi  ", true)
	want := " (\necho hi\n); s=$?; tmux -L 's o'\"'\"'c\\k' set-option -p -t %1 @s_0123456789 \"$s\"; tmux -L 's o'\"'\"'c\\k' wait-for -S r_0123456789"
	if got != want {
		t.Errorf("POSIX payload\n got %q\nwant %q", got, want)
	}
	got = fishPayload(srv, "%1", "r_0123456789", "@s_0123456789", "echo hi  ", false)
	want = "begin\necho hi\nend; set s $status; tmux -L 's o\\'c\\\\k' set-option -p -t %1 @s_0123456789 \"$s\"; tmux -L 's o\\'c\\\\k' wait-for -S r_0123456789"
	if got != want {
		t.Errorf("fish payload\n got %q\nwant %q", got, want)
	}
}

func TestCommandPrinted(t *testing.T) {
	const ch = "r_0123456789"
	trailer := "> ); s=$?; tmux set-option -p -t %1 @s_0123456789 \"$s\"; tmux wait-for -S " + ch
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string
	}{
		{"bash", []string{"old", "u@h:~$ (", "> echo same", trailer, "same", "", ""}, []string{"same"}},
		{"multi-line prompt", []string{"┌ u@h ~", "└$ (", "> echo same", trailer, "same", ""}, []string{"same"}},
		{"no output", []string{"$ (", "> true", trailer, "", ""}, []string{}},
		{"blank rows inside", []string{trailer, "a", "", "b", "  "}, []string{"a", "", "b"}},
		{"scrolled off", []string{"x1", "x2"}, []string{"x1", "x2"}},
		{"zsh breaks the trailer", []string{"subsh> ); s=$?; tmux wait-for -S r_", "0123456789", "same", ""}, []string{"same"}},
		{"broken trailer's tail at the top", []string{"456789", "same"}, []string{"same"}},
		{"two calls, the last counts", []string{trailer, "first", "$ (", trailer, "second"}, []string{"second"}},
	} {
		if got := commandPrinted(tc.lines, ch); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %q want %q", tc.name, got, tc.want)
		}
	}
}
