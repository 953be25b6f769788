package tmux

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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

func handledBy(r transport.Runner) int64 { return r.(*native).handled.Load() }

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
	s := &Server{Runner: transport.NewLocal(), SocketName: label, Bin: bin}
	execTmux(t, s, "new-window", "-d", "-t", "main:", "-n", "wé")
	execTmux(t, s, "new-session", "-d", "-s", "other", "-x", "80", "-y", "20")
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
	native := NewNative(transport.NewLocal())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var results [2]transport.Result
			var files [2]string
			for i, r := range []transport.Runner{transport.NewLocal(), native} {
				for _, a := range tc.setup {
					execTmux(t, s, a...)
				}
				before := handledBy(native)
				res, err := r.Run(context.Background(), s.Argv(tc.args...), tc.stdin)
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
	native := NewNative(transport.NewLocal())
	compare := func(t *testing.T, s *Server, wantNative bool, args ...string) transport.Result {
		t.Helper()
		e, err := transport.NewLocal().Run(context.Background(), s.Argv(args...), nil)
		if err != nil {
			t.Fatal(err)
		}
		before := handledBy(native)
		n, err := native.Run(context.Background(), s.Argv(args...), nil)
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
	s := &Server{SocketName: label}
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "tmux")
	real, _ := exec.LookPath("tmux")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\necho wrapped >&2\nexec "+real+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	native := NewNative(transport.NewLocal())
	cases := []struct {
		name  string
		argv  []string
		stdin []byte
		env   string
	}{
		{name: "stdin", argv: s.Argv("load-buffer", "-b", "fmd", "-"), stdin: []byte("x")},
		{name: "new-session", argv: s.Argv("new-session", "-d", "-s", "fmd-new")},
		{name: "new alias", argv: s.Argv("new", "-d", "-s", "fmd-new2")},
		{name: "unique prefix", argv: s.Argv("new-s", "-d", "-s", "fmd-new3")},
		{name: "list-keys", argv: s.Argv("list-keys")},
		{name: "after a separator", argv: s.Argv("display-message", "-p", "x", ";", "start-server")},
		{name: "trailing separator", argv: append(s.Argv("display-message", "-p", "x"), "source-file;")},
		{name: "save-buffer", argv: s.Argv("save-buffer", "-")},
		{name: "blocking wait-for", argv: s.Argv("wait-for", "-L", "fmd-lock", ";", "wait-for", "-U", "fmd-lock")},
		{name: "not Server.Argv", argv: []string{"tmux", "-L", label, "list-sessions"}},
		{name: "wrapper script", argv: append([]string{wrapper}, s.Argv("list-sessions")[1:]...)},
		{name: "kill switch", argv: s.Argv("list-sessions"), env: "1"},
		{name: "missing binary", argv: append([]string{"fleetmux-no-such-tmux"}, s.Argv("list-sessions")[1:]...)},
		{name: "command too long", argv: s.Argv("display-message", "-p", strings.Repeat("x", maxImsgSize))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("FLEETMUX_TMUX_EXEC", tc.env)
			}
			before := handledBy(native)
			e, eerr := transport.NewLocal().Run(context.Background(), tc.argv, tc.stdin)
			n, nerr := native.Run(context.Background(), tc.argv, tc.stdin)
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

func TestNativeCmdFind(t *testing.T) {
	for name, want := range map[string]string{
		"new": "new-session", "new-s": "new-session", "new-w": "new-window", "ls": "list-sessions",
		"list-k": "list-keys", "a": "attach-session", "attach": "attach-session", "start": "start-server",
		"n": "", "list": "", "source": "source-file", "nosuch": "", "kill-server": "kill-server",
		"clear": "", "show-p": "show-prompt-history", "serv": "server-access",
	} {
		if got := nativeCmdFind(name); got != want {
			t.Errorf("nativeCmdFind(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestNativeProtocols: the version table is what each release's client
// sends and understands: the first identify message (MSG_IDENTIFY_FLAGS
// with an int before 3.5, MSG_IDENTIFY_LONGFLAGS with 64 bits from 3.5),
// MSG_READ_CANCEL (ignored before 3.4; from 3.4 a cancel of a stream the
// client read is answered already, of an unknown one a protocol error),
// and which `tmux -V` outputs name a release the native client serves.
func TestNativeProtocols(t *testing.T) {
	call := nativeCall{flags: clientUTF8 | clientDefaultSocket, term: "xterm", cwd: "/", args: []string{"ls"}}
	for _, tc := range []struct {
		release    string
		firstType  uint32
		firstLen   int
		readCancel bool
	}{
		{"3.3", msgIdentifyFlags, 4, false},
		{"3.3a", msgIdentifyFlags, 4, false},
		{"3.4", msgIdentifyFlags, 4, true},
		{"3.5", msgIdentifyLongFlags, 8, true},
		{"3.5a", msgIdentifyLongFlags, 8, true},
	} {
		t.Run(tc.release, func(t *testing.T) {
			p := nativeProtocolOf(tc.release)
			if p == nil || p.protocol != nativeProtocolVersion {
				t.Fatalf("nativeProtocolOf(%q) = %+v", tc.release, p)
			}
			call.proto = p
			first, _ := nativeIdentify(call)
			typ, data, size, err := parseImsg(first)
			if err != nil || size == 0 || typ != tc.firstType || len(data) != tc.firstLen {
				t.Errorf("first message: type %d, %d bytes, err %v; want type %d, %d bytes", typ, len(data), err, tc.firstType, tc.firstLen)
			}
			if got := binary.NativeEndian.Uint32(data); got != uint32(call.flags) {
				t.Errorf("first message flags %#x, want %#x", got, call.flags)
			}
			typ, data, _, _ = parseImsg(first[size:])
			if typ != msgIdentifyLongFlags || len(data) != 8 || binary.NativeEndian.Uint64(data) != call.flags {
				t.Errorf("second message: type %d %x", typ, data)
			}

			var out bytes.Buffer
			cv := newNativeConv(&out, p)
			cv.open = func(string, int) (*os.File, syscall.Errno, error) { return nil, syscall.ENOENT, nil }
			if err := cv.dispatch(msgReadOpen, append(i32(5), i32(0)...)); err != nil {
				t.Fatal(err)
			}
			_ = cv.flush()
			answered := out.Len()
			err = cv.dispatch(msgReadCancel, i32(5))
			_ = cv.flush()
			if err != nil || out.Len() != answered {
				t.Errorf("cancel of a stream read to its end: err %v, %d more bytes sent", err, out.Len()-answered)
			}
			err = cv.dispatch(msgReadCancel, i32(9))
			if tc.readCancel != (err != nil) {
				t.Errorf("cancel of an unknown stream: err %v, want an error: %v", err, tc.readCancel)
			}
			if tc.readCancel && !errors.Is(err, ErrProtocol) {
				t.Errorf("cancel of an unknown stream: err %v, want ErrProtocol", err)
			}
		})
	}
	for out, want := range map[string]string{
		"tmux 3.5a\n": "3.5a", "tmux 3.3a\n": "3.3a", "tmux-3.3a 3.3a\n": "3.3a", "tmux 3.4\n": "3.4",
		"tmux 3.6\n": "", "tmux next-3.6\n": "", "tmux 3.1c\n": "", "tmux 3.2a\n": "", "wrapper 3.3a\n": "", "tmux\n": "",
	} {
		got := ""
		if r, ok := nativeRelease("/opt/bin/tmux-3.3a", []byte(out)); ok && nativeProtocolOf(r) != nil {
			got = r
		}
		if got != want {
			t.Errorf("-V %q: served as %q, want %q", out, got, want)
		}
	}
}

// TestNativeCancel: a cancelled or timed-out command returns at once with
// the context's error and leaves no goroutine behind; the server is fine.
// run-shell without -b holds the client until the job ends; a blocking
// wait-for goes to the binary (its process is what a cancel kills).
func TestNativeCancel(t *testing.T) {
	label := nativeTestServer(t)
	s := &Server{SocketName: label}
	native := NewNative(transport.NewLocal())
	if _, err := native.Run(context.Background(), s.Argv("list-sessions"), nil); err != nil {
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
		_, err := native.Run(ctx, s.Argv(tc.args...), nil)
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
		_, err = native.Run(ctx2, s.Argv(tc.args...), nil)
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
	res, err := native.Run(context.Background(), s.Argv("display-message", "-p", "ok"), nil)
	if err != nil || string(res.Stdout) != "ok\n" {
		t.Fatalf("after cancel: %q %v", res.Stdout, err)
	}
}

// TestNativeOutputLimit: more output than the limit fails with
// ErrOutputTooLarge.
func TestNativeOutputLimit(t *testing.T) {
	label := nativeTestServer(t)
	s := &Server{SocketName: label}
	old := nativeMaxOutput
	nativeMaxOutput = 4096
	t.Cleanup(func() { nativeMaxOutput = old })
	native := NewNative(transport.NewLocal())
	x := strings.Repeat("x", 3000)
	if res, err := native.Run(context.Background(), s.Argv("display-message", "-p", x), nil); err != nil || len(res.Stdout) != 3001 {
		t.Fatalf("under the limit: %d bytes, %v", len(res.Stdout), err)
	}
	_, err := native.Run(context.Background(), s.Argv("display-message", "-p", x, ";", "display-message", "-p", x), nil)
	if !errors.Is(err, transport.ErrOutputTooLarge) {
		t.Fatalf("err = %v, want ErrOutputTooLarge", err)
	}
	if handledBy(native) != 2 {
		t.Errorf("handled %d natively, want 2", handledBy(native))
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
	native := NewNative(transport.NewLocal())
	for _, p := range []string{fmt.Sprintf("/dev/fd/%d", own.Fd()), "/proc/self/environ", own.Name()} {
		_, err := native.Run(context.Background(), s.Argv("if-shell", "true", "save-buffer -b fmo "+p), nil)
		if err == nil || !strings.HasPrefix(err.Error(), "tmux native:") {
			t.Errorf("%s: err = %v", p, err)
		}
	}
	if b, _ := os.ReadFile(own.Name()); len(b) != 0 {
		t.Errorf("own file written: %q", b)
	}
}

// fakeServer listens on a unix socket and answers each client, once it
// has sent its command, with reply (then closes).
func fakeServer(t *testing.T, reply func(c net.Conn)) (path string, accepted *atomic.Int64) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "fake")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	accepted = &atomic.Int64{}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			buf := make([]byte, 0, 1<<16)
			tmp := make([]byte, 1<<16)
		read:
			for {
				n, err := c.Read(tmp)
				buf = append(buf, tmp[:n]...)
				for len(buf) >= imsgHeaderSize {
					typ := binary.NativeEndian.Uint32(buf)
					l := int(binary.NativeEndian.Uint16(buf[4:]))
					if len(buf) < l {
						break
					}
					buf = buf[l:]
					if typ == msgCommand {
						break read
					}
				}
				if err != nil {
					break
				}
			}
			reply(c)
			_ = c.Close()
		}
	}()
	return path, accepted
}

type recordRunner struct{ calls atomic.Int64 }

func (r *recordRunner) Run(ctx context.Context, argv []string, stdin []byte) (transport.Result, error) {
	r.calls.Add(1)
	return transport.Result{Stdout: []byte("from next\n")}, nil
}

// TestNativeProtocolSurprises: a server of another protocol version ran
// nothing, so the call goes to next and later calls go there at once; a
// server that hangs up after the command gets the binary's "server exited
// unexpectedly"; garbage is an error, never a second run.
func TestNativeProtocolSurprises(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	msg := func(typ uint32, version uint32, data []byte) []byte {
		b := appendImsg(nil, typ, false, data)
		binary.NativeEndian.PutUint32(b[8:], version)
		return b
	}
	t.Run("version", func(t *testing.T) {
		path, accepted := fakeServer(t, func(c net.Conn) { _, _ = c.Write(msg(msgVersion, 7, nil)) })
		next := &recordRunner{}
		native := NewNative(next)
		for i := 1; i <= 3; i++ {
			res, err := native.Run(context.Background(), (&Server{SocketPath: path}).Argv("list-sessions"), nil)
			if err != nil || string(res.Stdout) != "from next\n" || next.calls.Load() != int64(i) {
				t.Fatalf("call %d: %q %v, next called %d times", i, res.Stdout, err, next.calls.Load())
			}
		}
		if accepted.Load() != 1 {
			t.Errorf("server saw %d connections, want 1", accepted.Load())
		}
	})
	t.Run("hang up", func(t *testing.T) {
		path, _ := fakeServer(t, func(c net.Conn) {})
		next := &recordRunner{}
		res, err := NewNative(next).Run(context.Background(), (&Server{SocketPath: path}).Argv("list-sessions"), nil)
		if err != nil || string(res.Stderr) != "server exited unexpectedly\n" || res.ExitCode != 1 || next.calls.Load() != 0 {
			t.Fatalf("%q %q %d %v, next called %d times", res.Stdout, res.Stderr, res.ExitCode, err, next.calls.Load())
		}
	})
	t.Run("exit message", func(t *testing.T) {
		path, _ := fakeServer(t, func(c net.Conn) {
			_, _ = c.Write(msg(msgWriteOpen, 8, append(i32(1), append(i32(1), i32(0)...)...)))
			_, _ = c.Write(msg(msgWrite, 8, append(i32(1), "out\n"...)))
			_, _ = c.Write(msg(msgExit, 8, append(i32(2), "access not allowed\x00"...)))
			// Read what the client answers until it hangs up, as tmux
			// does: closing with the client's MSG_WRITE_READY unread
			// resets the connection, and the reset can discard the
			// messages above before the client has read them.
			_, _ = io.Copy(io.Discard, c)
		})
		res, err := NewNative(&recordRunner{}).Run(context.Background(), (&Server{SocketPath: path}).Argv("list-sessions"), nil)
		if err != nil || string(res.Stdout) != "out\n" || string(res.Stderr) != "access not allowed\n" || res.ExitCode != 2 {
			t.Fatalf("%q %q %d %v", res.Stdout, res.Stderr, res.ExitCode, err)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		path, _ := fakeServer(t, func(c net.Conn) { _, _ = c.Write(bytes.Repeat([]byte{0xff}, 64)) })
		next := &recordRunner{}
		_, err := NewNative(next).Run(context.Background(), (&Server{SocketPath: path}).Argv("list-sessions"), nil)
		if !errors.Is(err, errNativeProtocol) || next.calls.Load() != 0 {
			t.Fatalf("err = %v, next called %d times", err, next.calls.Load())
		}
	})
}

// FuzzNativeDecode feeds arbitrary server bytes to the client's decoder
// and dispatcher: no input may panic it.
func FuzzNativeDecode(f *testing.F) {
	m := func(typ uint32, data ...[]byte) []byte { return appendImsg(nil, typ, false, data...) }
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	f.Add(cat(m(msgWriteOpen, i32(1), i32(1), i32(0)), m(msgWrite, i32(1), []byte("hi\n")), m(msgExit, i32(0))))
	f.Add(cat(m(msgWriteOpen, i32(2), i32(2), i32(0)), m(msgWrite, i32(2), []byte("err\n")), m(msgExit, i32(1), []byte("bye\x00"))))
	f.Add(cat(m(msgReadOpen, i32(3), i32(0)), m(msgReadOpen, i32(4), i32(-1), []byte("/nonexistent\x00")), m(msgExited)))
	f.Add(cat(m(msgWriteOpen, i32(3), i32(-1), i32(0), []byte("/x\x00")), m(msgWrite, i32(3), []byte("d")), m(msgWriteClose, i32(3))))
	f.Add(cat(m(msgFlags, make([]byte, 8)), m(msgDetach, []byte("s\x00")), m(msgShutdown)))
	f.Add(m(msgVersion))
	f.Add(m(msgExit, []byte{1, 2}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		cv := newNativeConv(io.Discard, nativeProtocolOf("3.5a"))
		cv.open = func(string, int) (*os.File, syscall.Errno, error) { return nil, syscall.ENOENT, nil }
		for !cv.done {
			typ, data, size, err := parseImsg(b)
			if err != nil || size == 0 {
				break
			}
			b = b[size:]
			if cv.dispatch(typ, data) != nil {
				break
			}
			_ = cv.flush()
		}
		if !cv.done {
			cv.lost()
		}
		_, _ = cv.result()
		cv.closeAll()
	})
}

func benchListSessions(b *testing.B, r transport.Runner) {
	label := nativeTestServer(b)
	argv := (&Server{SocketName: label}).Argv("list-sessions")
	if _, err := r.Run(context.Background(), argv, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := r.Run(context.Background(), argv, nil)
		if err != nil || len(res.Stdout) == 0 {
			b.Fatalf("%q %v", res.Stdout, err)
		}
	}
}

func BenchmarkListSessionsExec(b *testing.B)   { benchListSessions(b, transport.NewLocal()) }
func BenchmarkListSessionsNative(b *testing.B) { benchListSessions(b, NewNative(transport.NewLocal())) }
