package tmux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/transport"
)

// TestNativeMatchesExec: the same argv through the tmux binary and
// through the native client gives the same stdout, stderr and exit
// status, and the native client did run it.
func TestNativeMatchesExec(t *testing.T) {
	srv := testServer(t, "native")
	ctx := context.Background()
	if _, err := srv.Cmd(ctx, "send-keys", "-t", "s", "-l", "printf 'héllo\\twörld %s\\n' $((6*7)); printf '%0200d\\n' 0"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Cmd(ctx, "send-keys", "-t", "s", "Enter"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	exe := transport.NewLocal()
	nat := NewNative(transport.NewLocal()).(*native)
	cases := [][]string{
		{"list-sessions"},
		{"list-sessions", "-F", "#{session_id}\t#{session_name} ü"},
		{"list-windows", "-a", "-F", "#{window_id} #{window_name} #{window_layout}"},
		{"list-panes", "-a", "-F", Format(PaneFields)},
		{"display-message", "-p", "-t", "s", "#{pane_id} #{cursor_x},#{cursor_y} %H"},
		{"capture-pane", "-p", "-t", "s"},
		{"capture-pane", "-p", "-J", "-t", "s"},
		{"capture-pane", "-p", "-e", "-S", "-10", "-t", "s"},
		{"show-options", "-g"},
		{"show-environment", "-g"},
		{"set-option", "-g", "@native", "x y"},
		{"show-options", "-g", "-v", "@native"},
		{"set-buffer", "-b", "nb", "buffer text"},
		{"show-buffer", "-b", "nb"},
		{"list-buffers", "-F", "#{buffer_name} #{buffer_size}"},
		{"set-buffer", "-b", "nb2", "x", ";", "delete-buffer", "-b", "nb2"},
		{"show-buffer", "-b", "nb2"},
		{"save-buffer", "-b", "nb", os.DevNull},
		{"display-message", "-p", "-t", "nosuch", "x"},
		{"has-session", "-t", "nosuch"},
		{"no-such-command"},
		{"list-sessions", "-Z"},
		{"display-message", "-p", "one", ";", "display-message", "-p", "-t", "%999", "two", ";", "display-message", "-p", "three"},
		{"run-shell", "-C", "display-message -p 'from run-shell'"},
	}
	for _, args := range cases {
		argv := srv.Argv(args...)
		want, err := exe.Run(ctx, argv, nil)
		if err != nil {
			t.Fatal(args, err)
		}
		before := nat.handled
		got, err := nat.Run(ctx, argv, nil)
		if err != nil {
			t.Fatal(args, err)
		}
		if nat.handled != before+1 {
			t.Errorf("%q was not run natively", args)
		}
		if string(got.Stdout) != string(want.Stdout) || string(got.Stderr) != string(want.Stderr) || got.ExitCode != want.ExitCode {
			t.Errorf("%q:\nexec   %d %q %q\nnative %d %q %q", args, want.ExitCode, want.Stdout, want.Stderr, got.ExitCode, got.Stdout, got.Stderr)
		}
	}
}

// TestNativeDelegates: no server, a missing binary, stdin and server-
// starting commands go to the tmux binary (its own error texts).
func TestNativeDelegates(t *testing.T) {
	ctx := context.Background()
	nat := NewNative(transport.NewLocal()).(*native)
	gone := &Server{Runner: nat, SocketName: fmt.Sprintf("fleetmux-test-native-none-%d", os.Getpid())}
	out, err := gone.Run(ctx, "list-sessions")
	if err != nil || out.ExitCode != 1 || len(out.Stderr) == 0 {
		t.Fatalf("no server: %+v %v", out, err)
	}
	missing := &Server{Runner: nat, Bin: "/nonexistent/tmux"}
	if _, err := missing.Run(ctx, "list-sessions"); !errors.Is(err, ErrBinaryNotFound) {
		t.Fatalf("missing binary: %v", err)
	}
	if nat.handled != 0 {
		t.Fatalf("%d handled natively", nat.handled)
	}
	srv := testServer(t, "native-deleg")
	srv.Runner = nat
	if _, err := srv.Cmd(ctx, "new-session", "-d", "-s", "made"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.RunInput(ctx, []byte("from stdin"), "load-buffer", "-b", "in", "-"); err != nil {
		t.Fatal(err)
	}
	if nat.handled != 0 {
		t.Fatalf("%d handled natively", nat.handled)
	}
	out, err = srv.Run(ctx, "show-buffer", "-b", "in")
	if err != nil || string(out.Stdout) != "from stdin" || nat.handled != 1 {
		t.Fatalf("show-buffer: %q %v %d", out.Stdout, err, nat.handled)
	}
}

// TestNativeCancel: a command that blocks (wait-for) ends with the
// context, and the output limit holds.
func TestNativeCancel(t *testing.T) {
	srv := testServer(t, "native-cancel")
	srv.Runner = NewNative(transport.NewLocal())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := srv.Run(ctx, "wait-for", "native-never")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 2*time.Second {
		t.Fatalf("wait-for: %v after %v", err, time.Since(t0))
	}
	old := nativeMaxOutput
	nativeMaxOutput = 100
	defer func() { nativeMaxOutput = old }()
	if _, err := srv.Run(context.Background(), "list-panes", "-a", "-F", Format(PaneFields)); !errors.Is(err, transport.ErrOutputTooLarge) {
		t.Fatalf("limit: %v", err)
	}
	_ = exec.Command("tmux", "-L", srv.SocketName, "wait-for", "-S", "native-never").Run()
}

// FuzzParseImsg: any bytes split into messages without a panic.
func FuzzParseImsg(f *testing.F) {
	f.Add(imsg(msgExit, 0, int32Bytes(1)))
	f.Add([]byte{1, 2, 3})
	f.Add(append(imsg(msgWrite, 0, []byte{1, 0, 0, 0, 'x'}), 0, 0, 0, 0, 3, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		for len(b) > 0 {
			_, _, n, ok, err := parseImsg(b)
			if err != nil || !ok {
				return
			}
			b = b[n:]
		}
	})
}

func BenchmarkListSessionsExec(b *testing.B)   { benchListSessions(b, transport.NewLocal()) }
func BenchmarkListSessionsNative(b *testing.B) { benchListSessions(b, NewNative(transport.NewLocal())) }

func benchListSessions(b *testing.B, r transport.Runner) {
	sock := fmt.Sprintf("fleetmux-test-nbench-%d", os.Getpid())
	if out, err := exec.Command("tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "s").CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	b.Cleanup(func() { _ = exec.Command("tmux", "-L", sock, "kill-server").Run() })
	srv := &Server{Runner: r, SocketName: sock}
	for b.Loop() {
		if _, err := srv.Cmd(context.Background(), "list-sessions"); err != nil {
			b.Fatal(err)
		}
	}
}
