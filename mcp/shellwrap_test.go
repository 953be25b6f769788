package mcp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
