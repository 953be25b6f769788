package tmux

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
	"github.com/fleetmux/fleetmux/transport"
)

// unreachableBound is how long a call on a socket where no tmux server
// answers may take before the test calls it stuck: far above the
// default deadline (transport.LocalTimeout), never asserted as a timing.
const unreachableBound = 30 * time.Second

// sockDir is a short directory for test sockets (a unix socket path is
// limited to 107 bytes), readable by every user (the permission row runs
// as another user).
func sockDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "fm-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// versionMessage is a MSG_VERSION from a server of protocol version 7.
func versionMessage() []byte {
	b := binary.NativeEndian.AppendUint32(nil, 12) // MSG_VERSION
	b = binary.NativeEndian.AppendUint16(b, 16)    // the imsg header size
	b = binary.NativeEndian.AppendUint16(b, 0)
	b = binary.NativeEndian.AppendUint32(b, 7)
	return binary.NativeEndian.AppendUint32(b, 0)
}

// stoppedTmux starts a private tmux server on socket path, stops it
// with SIGSTOP and returns the path.
func stoppedTmux(t *testing.T, path string) {
	t.Helper()
	out, err := exec.Command("tmux", "-S", path, "-f", "/dev/null", "new-session", "-d", "-P", "-F", "#{pid}").Output()
	if err != nil {
		t.Fatalf("start tmux: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("tmux pid %q: %v", out, err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		_ = exec.Command("tmux", "-S", path, "kill-server").Run()
	})
}

// listWithin lists sessions on srv with a ctx that has no deadline (the
// runner's default applies) and fails the test if that takes longer than
// unreachableBound.
func listWithin(t *testing.T, srv *Server) ([]Attrs, time.Duration, error) {
	t.Helper()
	type result struct {
		rows []Attrs
		err  error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		rows, err := srv.Sessions(context.Background())
		done <- result{rows, err}
	}()
	select {
	case r := <-done:
		return r.rows, time.Since(start), r.err
	case <-time.After(unreachableBound):
		t.Fatalf("list-sessions on %s had not answered after %s", srv.SocketPath, unreachableBound)
		return nil, 0, nil
	}
}

// TestUnreachableSockets: on a socket where no tmux server answers
// properly, a listing fails with an error that names the socket and the
// cause, through the native client and through the binary alike, within
// the default deadline; only a server that does not exist (no socket
// file, or nobody listening) is the reference's empty listing.
func TestUnreachableSockets(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux not installed")
	}
	dir := sockDir(t)
	garbage := []byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
	cases := []struct {
		name  string
		setup func(t *testing.T, path string)
		empty bool   // the reference's empty answer, no error
		cause string // in the error, besides the socket ("" any)
	}{
		{name: "no socket file", setup: func(*testing.T, string) {}, empty: true},
		{name: "stale socket", empty: true, setup: func(t *testing.T, path string) {
			fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(fd)
			if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "accepts and never answers", cause: "did not answer within", setup: func(t *testing.T, path string) {
			tmuxtest.FakeSocket(t, path, tmuxtest.Hold)
		}},
		{name: "closes at once", cause: "server exited unexpectedly", setup: func(t *testing.T, path string) {
			tmuxtest.FakeSocket(t, path, func(c net.Conn) { _ = c.Close() })
		}},
		{name: "writes garbage and closes", cause: "", setup: func(t *testing.T, path string) {
			tmuxtest.FakeSocket(t, path, func(c net.Conn) { _, _ = c.Write(garbage); _ = c.Close() })
		}},
		{name: "writes garbage and stays", cause: "", setup: func(t *testing.T, path string) {
			tmuxtest.FakeSocket(t, path, func(c net.Conn) { _, _ = c.Write(garbage); tmuxtest.Hold(c) })
		}},
		{name: "answers a version message", cause: "protocol version mismatch", setup: func(t *testing.T, path string) {
			tmuxtest.FakeSocket(t, path, func(c net.Conn) { _, _ = c.Write(versionMessage()); tmuxtest.Hold(c) })
		}},
		{name: "stopped tmux server", cause: "did not answer within", setup: stoppedTmux},
	}
	runners := []struct {
		name string
		new  func() Executor
	}{
		{"native", func() Executor { return NewExecutor(transport.NewLocal()) }},
		{"exec", func() Executor { return execExecutor{r: transport.NewLocal()} }},
	}
	for i, tc := range cases {
		for _, r := range runners {
			t.Run(tc.name+"/"+r.name, func(t *testing.T) {
				t.Parallel()
				path := filepath.Join(dir, fmt.Sprintf("s%d-%s", i, r.name))
				tc.setup(t, path)
				srv := &Server{Executor: r.new(), SocketPath: path}
				rows, took, err := listWithin(t, srv)
				t.Logf("answered in %.1fs: %v", took.Seconds(), err)
				if tc.empty {
					if err != nil || len(rows) != 0 {
						t.Fatalf("want the empty listing, got %v, %v", rows, err)
					}
					return
				}
				if err == nil {
					t.Fatalf("want an error, got the listing %v", rows)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("the error does not name the socket %s: %v", path, err)
				}
				if !strings.Contains(err.Error(), tc.cause) {
					t.Errorf("the error does not say %q: %v", tc.cause, err)
				}
			})
		}
	}
}

// TestUnreachableLabelNamesPath: through the native runner, a stopped
// server reached by -L is named by its socket path.
func TestUnreachableLabelNamesPath(t *testing.T) {
	tmp := sockDir(t)
	t.Setenv("TMUX_TMPDIR", tmp)
	label := fmt.Sprintf("fleetmux-test-stopped-%d", os.Getpid())
	path := filepath.Join(tmp, "tmux-"+strconv.Itoa(os.Getuid()), label)
	out, err := exec.Command("tmux", "-L", label, "-f", "/dev/null", "new-session", "-d", "-P", "-F", "#{socket_path}").Output()
	if err != nil || strings.TrimSpace(string(out)) != path {
		t.Fatalf("start tmux: %q %v", out, err)
	}
	stoppedTmux(t, path) // a second session's server is the same one: stop it
	srv := &Server{Executor: NewExecutor(transport.NewLocal()), SocketName: label}
	_, took, err := listWithin(t, srv)
	t.Logf("answered in %.1fs: %v", took.Seconds(), err)
	want := "tmux server on socket " + path + " did not answer within"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("want %q, got %v", want, err)
	}
}

// TestUnreachablePermissionDenied: a socket another user's process may
// not open is an error naming the socket and the cause, for that user.
// Root bypasses the socket's mode, so the listing runs in a child of this
// test binary as user nobody (setpriv).
func TestUnreachablePermissionDenied(t *testing.T) {
	if os.Getenv("FLEETMUX_TEST_LIST_AS") != "" {
		return // the child's own run: see TestHelperListAs
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to run a child as another user (setpriv)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv not installed (util-linux)")
	}
	dir := sockDir(t)
	bin := filepath.Join(dir, "tmux.test")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"native", "exec"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(dir, "perm-"+mode)
			tmuxtest.FakeSocket(t, path, tmuxtest.Hold)
			if err := os.Chmod(path, 0o700); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
				bin, "-test.run=^TestHelperListAs$", "-test.count=1")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "FLEETMUX_TEST_LIST_AS="+path, "FLEETMUX_TEST_LIST_MODE="+mode, "HOME="+dir, "TMUX=", "TMUX_TMPDIR="+dir)
			out, _ := cmd.CombinedOutput()
			got := string(out)
			if !strings.Contains(got, "LISTING-ERROR:") {
				t.Fatalf("the child did not report an error:\n%s", got)
			}
			if !strings.Contains(got, path) || !strings.Contains(got, "Permission denied") {
				t.Errorf("want an error naming %s and Permission denied:\n%s", path, got)
			}
		})
	}
}

// TestHelperListAs is the child of TestUnreachablePermissionDenied.
func TestHelperListAs(t *testing.T) {
	path := os.Getenv("FLEETMUX_TEST_LIST_AS")
	if path == "" {
		t.Skip("helper for TestUnreachablePermissionDenied")
	}
	ex := localExecutor(os.Getenv("FLEETMUX_TEST_LIST_MODE") == "native")
	rows, _, err := listWithin(t, &Server{Executor: ex, SocketPath: path})
	if err != nil {
		fmt.Printf("LISTING-ERROR: %v\n", err)
		return
	}
	fmt.Printf("LISTING-OK: %v\n", rows)
}
