package mcp

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/tmux"
)

// TestRunCommandShells runs run_command in panes whose shell is bash,
// zsh, fish and tcsh: the POSIX shells and fish report the command's
// exit status and output without waiting for the timeout; tcsh is
// refused before anything is typed, with an error naming it. Before the
// wrapper followed the shell, fish answered "Unsupported use of '='" and
// the call timed out.
func TestRunCommandShells(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "tcsh"} {
		if _, err := exec.LookPath(sh); err != nil {
			t.Fatalf("%s is required (the README's test command installs it): %v", sh, err)
		}
	}
	e := newEnv(t)
	// Not t.TempDir: the shells may still write their history and
	// config there while the test's cleanup removes it.
	home, err := os.MkdirTemp("", "fleetmux-shells-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	env := "env HOME=" + home + " XDG_CONFIG_HOME=" + filepath.Join(home, "c") + " XDG_DATA_HOME=" + filepath.Join(home, "d") + " "
	for _, tc := range []struct {
		shell, start, refused string
	}{
		{"bash", "bash --norc --noprofile -i", ""},
		{"zsh", "zsh -f -i", ""},
		{"fish", "fish --no-config -i", ""},
		{"tcsh", "tcsh -f", "csh, whose syntax"},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			_, pane := e.paneNewWindow(env + tc.start)
			waitFor(t, tc.shell+" running", func() bool {
				return strings.HasSuffix(e.paneAttr(pane, "#{pane_current_command}"), strings.TrimPrefix(tc.shell, "t"))
			})
			waitFor(t, tc.shell+" prompt", func() bool { return strings.TrimSpace(e.paneCapture(pane)) != "" })
			e.shSettle(pane)
			args := map[string]any{"pane_id": pane, "command": "printf '%s\\n' out-1 'out 2'; sh -c 'exit 3'", "timeout": 15}
			if tc.refused != "" {
				before := e.shScreen(pane)
				e.fail("run_command", args, tc.refused)
				e.shSettle(pane)
				if after := e.shScreen(pane); after != before {
					t.Fatalf("%s: refused run_command typed into the pane:\n%s", tc.shell, after)
				}
				return
			}
			var r RunCommandResult
			e.ok("run_command", args, &r)
			if r.TimedOut || r.ExitStatus == nil || *r.ExitStatus != 3 {
				t.Fatalf("%s: exit %v timed out %v, output %q", tc.shell, r.ExitStatus, r.TimedOut, r.Output)
			}
			if !anyContains(r.Output, "out-1") || !anyContains(r.Output, "out 2") || anyContains(r.Output, "set-option") || anyContains(r.Output, "Unsupported") {
				t.Fatalf("%s: output %q", tc.shell, r.Output)
			}
			// The shell is usable afterwards: a second call works too.
			args["command"] = "echo again"
			e.ok("run_command", args, &r)
			if r.TimedOut || r.ExitStatus == nil || *r.ExitStatus != 0 || !anyContains(r.Output, "again") {
				t.Fatalf("%s: second call exit %v output %q", tc.shell, r.ExitStatus, r.Output)
			}
		})
	}
}

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
