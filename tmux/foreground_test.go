package tmux

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fgPanes is a server with panes in known states for the foreground
// checks: busy runs sleep in the foreground of its shell, decoy likewise
// (a process that must never be signalled through another pane's job),
// idle is a shell at its prompt, dead a remain-on-exit pane whose shell
// exited with status 7.
type fgPanes struct {
	srv                     *Server
	busy, decoy, idle, dead string
	nested                  string         // a shell the pane's command started
	pid                     map[string]int // pane process
}

func newFgPanes(t *testing.T) *fgPanes {
	t.Helper()
	srv := testServer(t, "fg-"+t.Name())
	ctx := context.Background()
	run := func(args ...string) string {
		t.Helper()
		out, err := srv.Do(ctx, cmd(args...))
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return strings.Join(out, "\n")
	}
	p := &fgPanes{srv: srv, pid: map[string]int{}}
	p.busy = run("display-message", "-p", "-t", "s:0.0", "#{pane_id}")
	p.decoy = run("split-window", "-t", p.busy, "-P", "-F", "#{pane_id}", "bash --norc --noprofile")
	p.idle = run("split-window", "-t", p.busy, "-P", "-F", "#{pane_id}", "bash --norc --noprofile")
	p.nested = run("split-window", "-t", p.busy, "-P", "-F", "#{pane_id}", "sh -c 'sh; exit 0'")
	run("set-option", "-g", "remain-on-exit", "on")
	p.dead = run("split-window", "-t", p.busy, "-P", "-F", "#{pane_id}", "sh -c 'exit 7'")
	for _, pane := range []string{p.busy, p.decoy, p.idle, p.dead} {
		p.pid[pane], _ = strconv.Atoi(run("display-message", "-p", "-t", pane, "#{pane_pid}"))
	}
	run("send-keys", "-t", p.busy, "sleep 1000", "Enter")
	run("send-keys", "-t", p.decoy, "sleep 1001", "Enter")
	deadline := time.Now().Add(20 * time.Second)
	for {
		state := run("display-message", "-p", "-t", p.busy, "#{pane_current_command}") + " " +
			run("display-message", "-p", "-t", p.decoy, "#{pane_current_command}") + " " +
			run("display-message", "-p", "-t", p.dead, "#{pane_dead}")
		if state == "sleep sleep 1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("panes never settled: %s", state)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

// foreground is the foreground process group of pane's terminal.
func (p *fgPanes) foreground(t *testing.T, pane string) int {
	t.Helper()
	out, err := exec.Command("ps", "-o", "tpgid=", "-p", strconv.Itoa(p.pid[pane])).Output()
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	g, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return g
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// TestSignalForegroundConfirms: a signal goes only to the live foreground
// group of the pane whose process is the one given; a stale pid (here the
// decoy pane's shell, as a reused pid would be), a dead pane, a missing
// pane or a pane at its prompt get nothing.
func TestSignalForegroundConfirms(t *testing.T) {
	p := newFgPanes(t)
	ctx := context.Background()
	decoyGroup := p.foreground(t, p.decoy)
	busyGroup := p.foreground(t, p.busy)
	for _, tc := range []struct {
		name string
		pane string
		pid  int
		sent bool
	}{
		{"another pane's pid", p.busy, p.pid[p.decoy], false},
		{"dead pane", p.dead, p.pid[p.dead], false},
		{"dead pane, decoy's pid", p.dead, p.pid[p.decoy], false},
		{"missing pane", "%999", p.pid[p.decoy], false},
		{"shell at its prompt", p.idle, p.pid[p.idle], false},
		{"no pid recorded", p.busy, 0, false},
		{"the pane's own process", p.busy, p.pid[p.busy], true},
	} {
		replies, err := p.srv.Batch(ctx, SignalForeground(tc.pane, tc.pid, "TERM"))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		sent := len(replies[0].Lines) == 1 && replies[0].Lines[0] == SignalSent
		if sent != tc.sent {
			t.Errorf("%s: sent %v (%+v), want %v", tc.name, sent, replies[0], tc.sent)
		}
		if !alive(decoyGroup) {
			t.Fatalf("%s: the decoy pane's sleep was signalled", tc.name)
		}
		if !alive(p.pid[p.idle]) || !alive(p.pid[p.busy]) {
			t.Fatalf("%s: a shell was signalled", tc.name)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); alive(busyGroup); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the busy pane's sleep survived SIGTERM")
		}
	}
}

// TestIdleShellGuard: the commands after the guard run only in a live pane
// whose shell is at its prompt.
func TestIdleShellGuard(t *testing.T) {
	p := newFgPanes(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		pane string
		ran  bool
	}{
		{"shell at its prompt", p.idle, true},
		{"shell started by the pane's command", p.nested, true},
		{"sleep in the foreground", p.busy, false},
		{"dead pane", p.dead, false},
		{"missing pane", "%999", false},
	} {
		cmds := append(IdleShell(tc.pane, "@fleetmux_idle_test"), cmd("display-message", "-p", "after"))
		replies, err := p.srv.Batch(ctx, cmds...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		last := replies[len(replies)-1]
		ran := last.Ran && last.Err == nil && strings.Join(last.Lines, "") == "after"
		if ran != tc.ran {
			t.Errorf("%s: ran %v, want %v (%+v)", tc.name, ran, tc.ran, replies)
		}
		if tc.ran && replies[1].Err != nil || !tc.ran && replies[1].Err == nil && tc.pane != "%999" {
			t.Errorf("%s: guard %+v", tc.name, replies[1])
		}
	}
	if out, _ := p.srv.Do(ctx, cmd("show-options", "-p", "-t", p.idle)); strings.Contains(strings.Join(out, " "), "@fleetmux_idle") {
		t.Errorf("the guard's option stayed: %q", out)
	}
}
