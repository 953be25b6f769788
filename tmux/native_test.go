package tmux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/tmux/imsg"
	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
	"github.com/fleetmux/fleetmux/transport"
)

var nativeSeq atomic.Int64

// nativeTestServer starts a private tmux server (config /dev/null, panes
// running bash --norc) with a session "main" and returns its -L label.
func nativeTestServer(t testing.TB, env ...string) string {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if testing.Short() {
			t.Skip("tmux not installed")
		}
		t.Fatal("tmux not installed")
	}
	return nativeTestServerBin(t, "tmux", env...)
}

// nativeTestServerBin is nativeTestServer with the tmux binary bin.
func nativeTestServerBin(t testing.TB, bin string, env ...string) string {
	t.Helper()
	label := fmt.Sprintf("fleetmux-test-native-%d-%d", os.Getpid(), nativeSeq.Add(1))
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"-L", label, "-f", "/dev/null"}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("tmux %q: %v: %s", args, err, out)
		}
	}
	run("new-session", "-d", "-s", "main", "-x", "120", "-y", "30", "bash --norc")
	t.Cleanup(func() {
		cmd := exec.Command(bin, "-L", label, "kill-server")
		cmd.Env = append(os.Environ(), env...)
		_ = cmd.Run()
	})
	run("set-option", "-g", "default-command", "bash --norc")
	return label
}

// execTmux runs a tmux command with the binary and fails the test on error.
func execTmux(t testing.TB, s *Server, args ...string) transport.Result {
	t.Helper()
	res, err := transport.NewLocal().Run(context.Background(), s.Argv(args...), nil)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return res
}

func handledBy(ex Executor) int64 { return ex.(nativeExecutor).client.Handled() }

// newNative is a local executor with a client of its own, so that
// handledBy counts only its requests.
func newNative() Executor { return nativeExecutor{client: imsg.New(), next: transport.NewLocal()} }

// runVia runs args (commands separated by lone ";" arguments) on s
// through ex, with stdin on the client's stdin.
func runVia(ctx context.Context, ex Executor, s *Server, args []string, stdin []byte) (transport.Result, error) {
	var cmds []Cmd
	cur := []string{}
	for _, a := range args {
		if a == ";" {
			cmds, cur = append(cmds, cmd(cur...)), []string{}
			continue
		}
		cur = append(cur, a)
	}
	cmds = append(cmds, cmd(cur...))
	if stdin != nil {
		cmds[0].stdin = stdin
	}
	out, err := ex.Execute(ctx, s, Request{Cmds: cmds})
	if out == nil {
		return transport.Result{}, err
	}
	return transport.Result{Stdout: out.Stdout, Stderr: out.Stderr, ExitCode: out.ExitCode}, err
}

// nativeReleaseBin is a tmux binary of the release, for
// TestNativeMatchesExec: 3.3a is the system's (Debian bookworm), 3.5a
// tmuxtest.Version's build of Debian trixie's source. No Debian suite has
// the source of 3.4: it runs when someone has built it from the upstream
// tag into tmuxtest's cache, and is skipped otherwise.
func nativeReleaseBin(t *testing.T, release string) string {
	t.Helper()
	switch release {
	case "3.3a":
		out, err := exec.Command("tmux", "-V").Output()
		if err != nil {
			t.Skipf("tmux 3.3a: no tmux on PATH: %v", err)
		}
		if got := strings.TrimSpace(string(out)); got != "tmux 3.3a" {
			t.Skipf("tmux 3.3a: the tmux on PATH is %q", got)
		}
		p, _ := exec.LookPath("tmux")
		return p
	case "3.5a":
		return tmuxtest.Version(t, release)
	}
	p, ok := tmuxtest.Cached(release)
	if !ok {
		t.Skipf("tmux %s: not built (no Debian suite has its source; build it from the upstream tag %s into %s to run this)", release, release, p)
	}
	return p
}

// TestNativeMatchesExec runs the same command set, with one tmux release
// after the other, through exec of that release's binary and through the
// native client (which must run the command itself, not hand it to the
// binary, except for the cases marked delegated) and compares stdout,
// stderr and exit status byte for byte. Cases that change state run their
// setup again before each path.
func TestNativeMatchesExec(t *testing.T) {
	for _, release := range []string{"3.3a", "3.4", "3.5a"} {
		t.Run(release, func(t *testing.T) {
			bin := nativeReleaseBin(t, release)
			if ok, why := NativeStatus(context.Background(), bin, nil); !ok {
				t.Errorf("NativeStatus(%s) = %v, %q", bin, ok, why)
			} else if want := "native client (tmux " + release + " protocol 8)"; why != want {
				t.Errorf("NativeStatus(%s) = %q, want %q", bin, why, want)
			}
			testNativeMatchesExec(t, bin)
		})
	}
}

func testNativeMatchesExec(t *testing.T, bin string) {
	label := nativeTestServerBin(t, bin)
	s := &Server{Executor: execExecutor{r: transport.NewLocal()}, SocketName: label, Bin: bin}
	execTmux(t, s, "new-window", "-d", "-t", "main:", "-n", "wé")
	// A fixed window name: an automatic one follows the pane's command,
	// which is "tmux" for a moment after the session starts (seen under
	// load: exec and native read it at different moments).
	execTmux(t, s, "new-session", "-d", "-s", "other", "-n", "bash", "-x", "80", "-y", "20")
	execTmux(t, s, "new-window", "-d", "-t", "main:", "-n", "input")
	long := strings.Repeat("0123456789", 30)
	execTmux(t, s, "send-keys", "-t", "main:0.0", "-l", `printf '\033[31mred\033[0m é 日本語 \t tab %s\n' `+long)
	execTmux(t, s, "send-keys", "-t", "main:0.0", "Enter")
	deadline := time.Now().Add(10 * time.Second)
	for !bytes.Contains(execTmux(t, s, "capture-pane", "-p", "-t", "main:0.0").Stdout, []byte("日本語")) {
		if time.Now().After(deadline) {
			t.Fatal("pane content never appeared")
		}
		time.Sleep(20 * time.Millisecond)
	}
	big := strings.Repeat("é-buffer-", 1500) // 16.5 KB: more than one message
	src := filepath.Join(t.TempDir(), "src.conf")
	if err := os.WriteFile(src, []byte("set -g @fm-src 'from a file é'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(t.TempDir(), "saved")
	pwd := filepath.Join(t.TempDir(), "pwd")

	cases := []struct {
		name      string
		setup     [][]string
		args      []string
		stdin     []byte
		file      string // compare this file's contents after each path too
		delegated bool   // the native client hands it to the binary
		quiet     bool   // prints nothing on success
	}{
		{name: "list-sessions default", args: []string{"list-sessions"}},
		{name: "list-sessions tabs", args: []string{"list-sessions", "-F", "#{session_name}\t#{session_windows}\t#{session_attached}"}},
		{name: "list-sessions non-ASCII", args: []string{"list-sessions", "-F", "é—日本 #{session_name} ✓"}},
		{name: "list-windows -a", args: []string{"list-windows", "-a", "-F", "#{session_name}:#{window_index} #{window_name} #{window_panes}"}},
		{name: "list-panes -a", args: []string{"list-panes", "-a", "-F", "#{pane_id} #{pane_width}x#{pane_height} #{pane_current_command}"}},
		{name: "display target", args: []string{"display-message", "-p", "-t", "main:0.0", "#{session_name} #{window_index} #{pane_index} #{window_name}"}},
		{name: "display client", args: []string{"display-message", "-p", "#{client_termname}|#{client_utf8}|#{client_tty}|#{client_flags}|#{client_control_mode}|#{client_session}"}},
		{name: "display version", args: []string{"display-message", "-p", "#{version} #{socket_path} #{pid}"}},
		{name: "display semicolon arg", args: []string{"display-message", "-p", "a;"}},
		{name: "capture-pane", args: []string{"capture-pane", "-p", "-t", "main:0.0"}},
		{name: "capture-pane -e", args: []string{"capture-pane", "-p", "-e", "-t", "main:0.0"}},
		{name: "capture-pane -J", args: []string{"capture-pane", "-p", "-J", "-S", "-", "-t", "main:0.0"}},
		{name: "show-options -g", args: []string{"show-options", "-g"}},
		{name: "show-window-options -g", args: []string{"show-window-options", "-g"}},
		{name: "show-environment -g", args: []string{"show-environment", "-g"}},
		{name: "show-environment session", args: []string{"show-environment", "-t", "main"}},
		{name: "set then show", setup: [][]string{{"set-option", "-gu", "@fm-x"}},
			args: []string{"set-option", "-g", "@fm-x", "välue", ";", "show-options", "-gv", "@fm-x"}},
		{name: "buffers", setup: [][]string{{"set-buffer", "-b", "fmb", "x"}, {"delete-buffer", "-b", "fmb"}},
			args: []string{"set-buffer", "-b", "fmb", "hello é", ";", "show-buffer", "-b", "fmb", ";", "list-buffers", "-F", "#{buffer_name} #{buffer_size}", ";", "delete-buffer", "-b", "fmb"}},
		{name: "big output", setup: [][]string{{"set-buffer", "-b", "fmbig", big}},
			args: []string{"show-buffer", "-b", "fmbig", ";", "show-buffer", "-b", "fmbig"}},
		{name: "missing target", args: []string{"list-windows", "-t", "nosuch"}},
		{name: "unknown command", args: []string{"frobnicate", "-x"}},
		{name: "bad flag", args: []string{"list-sessions", "-Z"}},
		{name: "usage", args: []string{"list-sessions", "extra"}},
		{name: "second command fails", args: []string{"display-message", "-p", "first", ";", "display-message", "-p", "-t", "nosuch:", "second"}},
		{name: "kill-session", setup: [][]string{{"new-session", "-d", "-s", "victim"}}, args: []string{"kill-session", "-t", "victim"}},
		{name: "wait-for -S", args: []string{"wait-for", "-S", "fm-chan"}},
		{name: "has-session missing", args: []string{"has-session", "-t", "nosuch"}},
		{name: "has-session", args: []string{"has-session", "-t", "other"}},
		{name: "run-shell", args: []string{"run-shell", "echo out; echo err >&2; exit 3"}},
		{name: "run-shell in the client's directory", setup: [][]string{{"run-shell", "rm -f " + pwd}},
			args: []string{"run-shell", "pwd > " + pwd}, file: pwd},
		{name: "if-shell", args: []string{"if-shell", "true", "display-message -p yes", "display-message -p no"}},
		{name: "stdin stream", setup: [][]string{{"kill-pane", "-a", "-t", "main:input.0"}},
			args: []string{"split-window", "-d", "-I", "-P", "-F", "#{window_panes}", "-t", "main:input"}},
		{name: "nested source-file", setup: [][]string{{"set-option", "-gu", "@fm-src"}},
			args: []string{"if-shell", "true", "source-file " + src, ";", "show-options", "-gv", "@fm-src"}},
		{name: "nested source-file of a directory", args: []string{"if-shell", "true", "source-file " + filepath.Dir(src), ";", "display-message", "-p", "after"}},
		{name: "nested save-buffer to a file", setup: [][]string{{"set-buffer", "-b", "fms", "saved é"}, {"run-shell", "rm -f " + saved}},
			args: []string{"if-shell", "true", "save-buffer -b fms " + saved}, file: saved},
		{name: "nested save-buffer to stdout", setup: [][]string{{"set-buffer", "-b", "fms", "saved é"}},
			args: []string{"if-shell", "true", "save-buffer -b fms -"}},
		{name: "stdout already taken", setup: [][]string{{"set-buffer", "-b", "fms", "saved é"}},
			args: []string{"display-message", "-p", "first", ";", "if-shell", "true", "save-buffer -b fms -"}},
		{name: "send-keys", args: []string{"send-keys", "-t", "main:input.0", "-l", "# typed é"}, quiet: true},
		{name: "send-keys then capture", setup: [][]string{{"respawn-pane", "-k", "-t", "main:input.0", "cat"}},
			args: []string{"send-keys", "-t", "main:input.0", "-l", "x", ";", "capture-pane", "-p", "-t", "main:input.0", "-S", "0", "-E", "0"}},
		{name: "send-keys missing target", args: []string{"send-keys", "-t", "nosuch:9", "x"}},
		{name: "new-session -d", setup: [][]string{{"kill-session", "-t", "fm-new"}}, delegated: true,
			args: []string{"new-session", "-d", "-s", "fm-new", "-P", "-F", "#{session_name} #{session_windows}"}},
		{name: "new-session duplicate", delegated: true, args: []string{"new-session", "-d", "-s", "main"}},
		{name: "load-buffer from stdin", stdin: []byte("from stdin é\n"), delegated: true,
			setup: [][]string{{"set-buffer", "-b", "fml", "x"}, {"delete-buffer", "-b", "fml"}},
			args:  []string{"load-buffer", "-b", "fml", "-", ";", "show-buffer", "-b", "fml"}},
		{name: "show-buffer", setup: [][]string{{"set-buffer", "-b", "fmshow", "shown é"}}, args: []string{"show-buffer", "-b", "fmshow"}},
		{name: "show-buffer missing", args: []string{"show-buffer", "-b", "fm-no-such-buffer"}},
		{name: "display-message exit code", args: []string{"display-message", "-p", "-t", "nosuch:", "x"}},
	}
	native := newNative()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var results [2]transport.Result
			var files [2]string
			for i := range 2 {
				for _, a := range tc.setup {
					execTmux(t, s, a...)
				}
				before := handledBy(native)
				var res transport.Result
				var err error
				if i == 0 {
					res, err = transport.NewLocal().Run(context.Background(), s.Argv(tc.args...), tc.stdin)
				} else {
					res, err = runVia(context.Background(), native, s, tc.args, tc.stdin)
				}
				if err != nil {
					t.Fatalf("path %d: %v", i, err)
				}
				if got := handledBy(native) - before; i == 1 && tc.delegated && got != 0 {
					t.Errorf("handled natively, want the binary")
				} else if i == 1 && !tc.delegated && got != 1 {
					t.Errorf("not handled natively")
				}
				results[i] = res
				if tc.file != "" {
					b, _ := os.ReadFile(tc.file)
					files[i] = string(b)
				}
			}
			e, n := results[0], results[1]
			if !bytes.Equal(e.Stdout, n.Stdout) || !bytes.Equal(e.Stderr, n.Stderr) || e.ExitCode != n.ExitCode {
				t.Errorf("exec:   stdout %q stderr %q exit %d\nnative: stdout %q stderr %q exit %d", e.Stdout, e.Stderr, e.ExitCode, n.Stdout, n.Stderr, n.ExitCode)
			}
			if files[0] != files[1] {
				t.Errorf("file: exec wrote %q, native %q", files[0], files[1])
			}
			if len(e.Stdout)+len(e.Stderr) == 0 && e.ExitCode == 0 && tc.file == "" && !tc.quiet && !strings.HasPrefix(tc.name, "kill") && !strings.HasPrefix(tc.name, "wait") && tc.name != "has-session" {
				t.Errorf("case printed nothing: not a useful comparison")
			}
		})
	}
}

// TestNativeSockets: -S, -L, $TMUX and $TMUX_TMPDIR pick the socket the
// binary picks; a socket nobody listens on gets the binary's own message.
func TestNativeSockets(t *testing.T) {
	tmpdir := t.TempDir()
	label := nativeTestServer(t, "TMUX_TMPDIR="+tmpdir)
	sock := filepath.Join(tmpdir, fmt.Sprintf("tmux-%d", os.Getuid()), label)
	t.Setenv("TMUX", "")
	native := newNative()
	compare := func(t *testing.T, s *Server, wantNative bool, args ...string) transport.Result {
		t.Helper()
		e, err := transport.NewLocal().Run(context.Background(), s.Argv(args...), nil)
		if err != nil {
			t.Fatal(err)
		}
		before := handledBy(native)
		n, err := runVia(context.Background(), native, s, args, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := handledBy(native) != before; got != wantNative {
			t.Errorf("handled natively = %v, want %v", got, wantNative)
		}
		if !bytes.Equal(e.Stdout, n.Stdout) || !bytes.Equal(e.Stderr, n.Stderr) || e.ExitCode != n.ExitCode {
			t.Errorf("exec:   %q %q %d\nnative: %q %q %d", e.Stdout, e.Stderr, e.ExitCode, n.Stdout, n.Stderr, n.ExitCode)
		}
		return n
	}
	fmtArgs := []string{"display-message", "-p", "#{socket_path} #{session_name}"}

	t.Run("-S", func(t *testing.T) {
		res := compare(t, &Server{SocketPath: sock}, true, fmtArgs...)
		if !strings.Contains(string(res.Stdout), sock) {
			t.Errorf("stdout %q does not name %s", res.Stdout, sock)
		}
	})
	t.Run("-L with TMUX_TMPDIR", func(t *testing.T) {
		t.Setenv("TMUX_TMPDIR", tmpdir)
		compare(t, &Server{SocketName: label}, true, fmtArgs...)
	})
	t.Run("-L and -S", func(t *testing.T) {
		compare(t, &Server{SocketName: "ignored-label", SocketPath: sock}, true, fmtArgs...)
	})
	t.Run("TMUX", func(t *testing.T) {
		t.Setenv("TMUX", sock+",1234,0")
		compare(t, &Server{}, true, fmtArgs...)
	})
	t.Run("-L ignores TMUX", func(t *testing.T) {
		t.Setenv("TMUX", sock+",1234,0")
		t.Setenv("TMUX_TMPDIR", tmpdir)
		compare(t, &Server{SocketName: label + "-none"}, false, fmtArgs...)
	})
	t.Run("no server", func(t *testing.T) {
		res := compare(t, &Server{SocketName: label + "-none"}, false, fmtArgs...)
		if !strings.Contains(string(res.Stderr), "no server running on") && !strings.Contains(string(res.Stderr), "error connecting to") {
			t.Errorf("stderr %q", res.Stderr)
		}
	})
	t.Run("stale socket", func(t *testing.T) {
		stale := filepath.Join(t.TempDir(), "stale")
		l, err := net.Listen("unix", stale)
		if err != nil {
			t.Fatal(err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		_ = l.Close()
		res := compare(t, &Server{SocketPath: stale}, false, fmtArgs...)
		if !strings.Contains(string(res.Stderr), "no server running on "+stale) {
			t.Errorf("stderr %q", res.Stderr)
		}
	})
}

// TestNativeDelegates: what the native client leaves to the binary.
func TestNativeDelegates(t *testing.T) {
	label := nativeTestServer(t)
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "tmux")
	real, _ := exec.LookPath("tmux")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\necho wrapped >&2\nexec "+real+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	native := newNative()
	cases := []struct {
		name  string
		bin   string // "" for tmux on PATH
		args  []string
		stdin []byte
		env   string
	}{
		{name: "stdin", args: []string{"load-buffer", "-b", "fmd", "-"}, stdin: []byte("x")},
		{name: "new-session", args: []string{"new-session", "-d", "-s", "fmd-new"}},
		{name: "new alias", args: []string{"new", "-d", "-s", "fmd-new2"}},
		{name: "unique prefix", args: []string{"new-s", "-d", "-s", "fmd-new3"}},
		{name: "list-keys", args: []string{"list-keys"}},
		{name: "after a separator", args: []string{"display-message", "-p", "x", ";", "start-server"}},
		{name: "save-buffer", args: []string{"save-buffer", "-"}},
		{name: "blocking wait-for", args: []string{"wait-for", "-L", "fmd-lock", ";", "wait-for", "-U", "fmd-lock"}},
		{name: "wrapper script", bin: wrapper, args: []string{"list-sessions"}},
		{name: "kill switch", args: []string{"list-sessions"}, env: "1"},
		{name: "missing binary", bin: "fleetmux-no-such-tmux", args: []string{"list-sessions"}},
		{name: "command too long", args: []string{"display-message", "-p", strings.Repeat("x", 16384)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("FLEETMUX_TMUX_EXEC", tc.env)
			}
			s := &Server{SocketName: label, Bin: tc.bin}
			before := handledBy(native)
			e, eerr := transport.NewLocal().Run(context.Background(), s.Argv(tc.args...), tc.stdin)
			n, nerr := runVia(context.Background(), native, s, tc.args, tc.stdin)
			if handledBy(native) != before {
				t.Errorf("handled natively")
			}
			if (eerr == nil) != (nerr == nil) || (eerr != nil && !errors.Is(nerr, transport.ErrNotFound)) {
				t.Fatalf("errors: exec %v, native %v", eerr, nerr)
			}
			// Both paths ran the binary; creating sessions twice differs.
			if !strings.HasPrefix(tc.name, "new") && tc.name != "unique prefix" && (!bytes.Equal(e.Stdout, n.Stdout) || !bytes.Equal(e.Stderr, n.Stderr) || e.ExitCode != n.ExitCode) {
				t.Errorf("exec:   %q %q %d\nnative: %q %q %d", e.Stdout, e.Stderr, e.ExitCode, n.Stdout, n.Stderr, n.ExitCode)
			}
		})
	}
}

// TestNativeCancel: a cancelled or timed-out command returns at once with
// the context's error and leaves no goroutine behind; the server is fine.
// run-shell without -b holds the client until the job ends; a blocking
// wait-for goes to the binary (its process is what a cancel kills).
func TestNativeCancel(t *testing.T) {
	label := nativeTestServer(t)
	s := &Server{SocketName: label}
	native := newNative()
	if _, err := runVia(context.Background(), native, s, []string{"list-sessions"}, nil); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	for _, tc := range []struct {
		args       []string
		wantNative bool
	}{
		{[]string{"run-shell", "sleep 5"}, true},
		{[]string{"wait-for", "fm-cancel"}, false},
	} {
		handled := handledBy(native)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		_, err := runVia(ctx, native, s, tc.args, nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%q: err = %v, want context canceled", tc.args, err)
		}
		if tc.wantNative && !strings.HasPrefix(err.Error(), "tmux native:") {
			t.Errorf("%q: err = %v, want the tmux native: prefix", tc.args, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%q: returned after %s", tc.args, d)
		}
		if got := handledBy(native) != handled; got != tc.wantNative {
			t.Errorf("%q: handled natively = %v", tc.args, got)
		}
		ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err = runVia(ctx2, native, s, tc.args, nil)
		cancel2()
		if !errors.Is(err, context.DeadlineExceeded) || ctx2.Err() == nil {
			t.Fatalf("%q: deadline: err = %v", tc.args, err)
		}
	}
	execTmux(t, s, "wait-for", "-S", "fm-cancel")
	for deadline := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
	res, err := runVia(context.Background(), native, s, []string{"display-message", "-p", "ok"}, nil)
	if err != nil || string(res.Stdout) != "ok\n" {
		t.Fatalf("after cancel: %q %v", res.Stdout, err)
	}
}

// TestNativeRefusesOwnFiles: a file the server asks the client to write
// by a name that means this process's own descriptors fails the call
// instead of writing there.
func TestNativeRefusesOwnFiles(t *testing.T) {
	label := nativeTestServer(t)
	s := &Server{SocketName: label}
	own, err := os.CreateTemp(t.TempDir(), "own")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	execTmux(t, s, "set-buffer", "-b", "fmo", "secret")
	native := newNative()
	for _, p := range []string{fmt.Sprintf("/dev/fd/%d", own.Fd()), "/proc/self/environ", own.Name()} {
		_, err := runVia(context.Background(), native, s, []string{"if-shell", "true", "save-buffer -b fmo " + p}, nil)
		if err == nil || !strings.HasPrefix(err.Error(), "tmux native:") {
			t.Errorf("%s: err = %v", p, err)
		}
	}
	if b, _ := os.ReadFile(own.Name()); len(b) != 0 {
		t.Errorf("own file written: %q", b)
	}
}

func benchListSessions(b *testing.B, local bool) {
	label := nativeTestServer(b)
	s := &Server{Executor: localExecutor(local), SocketName: label}
	if _, err := s.Exec(context.Background(), ListSessionsPlain()); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		out, err := s.Exec(context.Background(), ListSessionsPlain())
		if err != nil || len(out.Stdout) == 0 {
			b.Fatalf("%q %v", out.Stdout, err)
		}
	}
}

func BenchmarkListSessionsExec(b *testing.B)   { benchListSessions(b, false) }
func BenchmarkListSessionsNative(b *testing.B) { benchListSessions(b, true) }
