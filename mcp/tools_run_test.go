package mcp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
)

// shEnv is newEnv with every pane running a plain /bin/sh: the user's
// login shell may run slow start-up files, and these tests type into
// the shell.
func shEnv(t *testing.T, opts ...envOption) *testEnv {
	t.Helper()
	e := newEnv(t, opts...)
	e.tmux("set-option", "-g", "default-shell", "/bin/sh")
	e.tmux("set-option", "-g", "default-command", "")
	e.shRespawn(e.firstPane())
	return e
}

// shRespawn restarts a pane with a fresh /bin/sh and waits for its prompt.
func (e *testEnv) shRespawn(pane string) {
	e.t.Helper()
	e.tmux("respawn-pane", "-k", "-t", pane, "/bin/sh")
	e.tmux("clear-history", "-t", pane)
	waitFor(e.t, "a shell prompt in "+pane, func() bool {
		return strings.TrimSpace(e.shScreen(pane)) != ""
	})
	e.shSettle(pane)
}

// shType types text into a pane and presses Enter.
func (e *testEnv) shType(pane, text string) {
	e.t.Helper()
	e.tmux("send-keys", "-t", pane, "-l", text)
	e.tmux("send-keys", "-t", pane, "Enter")
}

var shSyncSeq int

// shSync runs a shell command line in a pane and returns once the shell
// has finished it and the screen has settled.
func (e *testEnv) shSync(pane, cmdline string) {
	e.t.Helper()
	shSyncSeq++
	ch := fmt.Sprintf("fleetmux_test_sync_%d_%d", time.Now().UnixNano(), shSyncSeq)
	e.shType(pane, cmdline+"; "+tmuxtest.Bin()+" -L "+e.socket+" wait-for -S "+ch)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := tmuxtest.CommandContext(ctx, "-L", e.socket, "wait-for", ch).CombinedOutput(); err != nil {
		e.t.Fatalf("waiting for %q: %v %s", cmdline, err, out)
	}
	e.shSettle(pane)
}

// shSettle waits until the pane's screen and cursor stop changing.
func (e *testEnv) shSettle(pane string) {
	e.t.Helper()
	last, stable := "", 0
	waitFor(e.t, "pane "+pane+" to settle", func() bool {
		cur := e.tmux("display-message", "-p", "-t", pane, "#{cursor_x},#{cursor_y},#{history_size}") + "\n" + e.shScreen(pane)
		if cur == last {
			stable++
		} else {
			last, stable = cur, 0
		}
		return stable >= 4
	})
}

// shScreen is the visible text of a pane.
func (e *testEnv) shScreen(pane string) string {
	return e.tmux("capture-pane", "-p", "-J", "-t", pane)
}

func anyContains(lines []string, sub string) bool {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

func TestRunCommandStatusAndOutput(t *testing.T) {
	e := shEnv(t)
	pane := e.firstPane()
	var r RunCommandResult
	// The echoed command never contains the joined marker, only the output does.
	e.ok("run_command", map[string]any{"command": "printf '%s_%s\\n' RUN OK", "pane_id": pane, "timeout": 5}, &r)
	if r.PaneID != pane || r.ExitStatus == nil || *r.ExitStatus != 0 || r.TimedOut || !anyContains(r.Output, "RUN_OK") {
		t.Fatalf("exit 0: %+v", r)
	}
	if r.EffectiveTimeout != 5 || r.ElapsedSeconds <= 0 || r.OutputTruncated {
		t.Fatalf("exit 0 fields: %+v", r)
	}
	if anyContains(r.Output, "wait-for -S r_") || anyContains(r.Output, "set-option -p -t") {
		t.Fatalf("sync trailer leaked into output: %q", r.Output)
	}
	if got := e.tmux("show-options", "-p", "-t", pane); strings.Contains(got, "@s_") {
		t.Fatalf("status option left behind: %q", got)
	}

	r = RunCommandResult{}
	e.ok("run_command", map[string]any{"command": "printf '%s_%s\\n' RUN FAIL; (exit 3)"}, &r)
	if r.ExitStatus == nil || *r.ExitStatus != 3 || !anyContains(r.Output, "RUN_FAIL") || r.PaneID != pane {
		t.Fatalf("exit 3: %+v", r)
	}

	// The subshell keeps a mangled PATH and set -e away from the trailer.
	for cmd, want := range map[string]int{"PATH=/tmp; true": 0, "set -e; false": 1, "exit 4": 4, "cd /; export X=1; false": 1} {
		r = RunCommandResult{}
		e.ok("run_command", map[string]any{"command": cmd, "pane_id": pane, "timeout": 5}, &r)
		if r.TimedOut || r.ExitStatus == nil || *r.ExitStatus != want {
			t.Fatalf("%q: %+v", cmd, r)
		}
	}

	r = RunCommandResult{}
	e.ok("run_command", map[string]any{"command": "for i in 1 2 3 4 5 6; do printf 'TRUNC_%s\\n' \"$i\"; done", "pane_id": pane, "max_lines": 2}, &r)
	if len(r.Output) != 2 || !r.OutputTruncated || r.OutputTruncatedLines <= 0 || !anyContains(r.Output, "TRUNC_6") {
		t.Fatalf("max_lines=2: %+v", r)
	}
}

func TestRunCommandValidation(t *testing.T) {
	e := shEnv(t)
	pane := e.firstPane()
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"command": "   "}, "command must not be empty"},
		{map[string]any{"command": "echo a\necho b"}, "command must be a single line when suppress_history=True"},
		{map[string]any{"command": "echo a\recho b", "suppress_history": true}, "command must be a single line when suppress_history=True"},
		{map[string]any{"command": "true", "timeout": 0}, "timeout must be positive"},
		{map[string]any{"command": "true", "timeout": -1.5}, "timeout must be positive"},
		{map[string]any{"command": "true", "pane_id": "%9999"}, "Pane not found: Pane not found: %9999"},
	} {
		res := e.fail("run_command", tc.args, tc.want)
		if strings.Contains(text(res), "echo a") {
			t.Fatalf("error echoes the command: %q", text(res))
		}
	}
	// Nothing was typed into the pane by the refused calls.
	if strings.Contains(e.shScreen(pane), "echo") {
		t.Fatalf("refused command reached the pane:\n%s", e.shScreen(pane))
	}

	// Without suppression, both lines of a multiline command run.
	var r RunCommandResult
	e.ok("run_command", map[string]any{"command": "printf '%s_%s\\n' LINE ONE\nprintf '%s_%s\\n' LINE TWO", "suppress_history": false}, &r)
	if r.ExitStatus == nil || *r.ExitStatus != 0 || !anyContains(r.Output, "LINE_ONE") || !anyContains(r.Output, "LINE_TWO") {
		t.Fatalf("multiline: %+v", r)
	}
}

func TestRunCommandTimeout(t *testing.T) {
	e := shEnv(t)
	pane := e.firstPane()
	var r RunCommandResult
	start := time.Now()
	e.ok("run_command", map[string]any{"command": "sleep 1; printf '%s_%s\\n' LATE DONE", "pane_id": pane, "timeout": 0.2}, &r)
	if !r.TimedOut || r.ExitStatus != nil || r.EffectiveTimeout != 0.2 || time.Since(start) > 2*time.Second {
		t.Fatalf("timeout: %+v after %v", r, time.Since(start))
	}
	// The command keeps running and finishes in the shell.
	waitFor(t, "the timed-out command to finish", func() bool {
		return strings.Contains(e.shScreen(pane), "LATE_DONE")
	})
}

func TestRunCommandClamp(t *testing.T) {
	e := shEnv(t, withSettings(Settings{Safety: TierDestructive, SuppressHistory: true, WaitMax: 1}))
	var r RunCommandResult
	start := time.Now()
	e.ok("run_command", map[string]any{"command": "sleep 3", "timeout": 3600}, &r)
	if !r.TimedOut || r.EffectiveTimeout != 1 || time.Since(start) > 3*time.Second {
		t.Fatalf("clamp: %+v after %v", r, time.Since(start))
	}
}

func TestRunCommandCancelKillsWaitChild(t *testing.T) {
	e := shEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "sleep 30", "timeout": 8}})
		done <- err
	}()
	waitFor(t, "the wait-for child", func() bool { return len(waitForChildren(e.socket)) > 0 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled call returned a result")
	}
	waitFor(t, "the wait-for child to go away", func() bool { return len(waitForChildren(e.socket)) == 0 })
}

// waitForChildren lists live tmux clients of <socket> whose command list
// holds "wait-for r_*".
func waitForChildren(socket string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		raw, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		waits := false
		for i := 1; i+1 < len(argv); i++ {
			waits = waits || (argv[i] == "wait-for" && strings.HasPrefix(argv[i+1], "r_"))
		}
		if len(argv) < 2 || filepath.Base(argv[0]) != "tmux" || !waits {
			continue
		}
		if strings.Contains(string(raw), "\x00"+socket+"\x00") {
			found = append(found, ent.Name())
		}
	}
	return found
}
