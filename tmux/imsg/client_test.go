package imsg

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
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/fleetmux/fleetmux/transport"
)

// lsOn is list-sessions on the server at socket path.
func lsOn(path string) Request {
	return Request{Bin: "tmux", SocketPath: path, Cmds: [][]string{{"list-sessions"}}}
}

var testSeq atomic.Int64

// testServer starts a private tmux server (config /dev/null) and returns
// its -L label.
func testServer(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux not installed")
	}
	label := fmt.Sprintf("fleetmux-test-imsg-%d-%d", os.Getpid(), testSeq.Add(1))
	if out, err := exec.Command("tmux", "-L", label, "-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", "120", "-y", "30", "cat").CombinedOutput(); err != nil {
		t.Fatalf("start tmux: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", label, "kill-server").Run() })
	return label
}

func TestNativeCmdFind(t *testing.T) {
	for name, want := range map[string]string{
		"new": "new-session", "new-s": "new-session", "new-w": "new-window", "ls": "list-sessions",
		"list-k": "list-keys", "a": "attach-session", "attach": "attach-session", "start": "start-server",
		"n": "", "list": "", "source": "source-file", "nosuch": "", "kill-server": "kill-server",
		"clear": "", "show-p": "show-prompt-history", "serv": "server-access",
	} {
		if got := cmdFind(name); got != want {
			t.Errorf("cmdFind(%q) = %q, want %q", name, got, want)
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

// TestNativeOutputLimit: more output than the limit fails with
// ErrOutputTooLarge.
func TestNativeOutputLimit(t *testing.T) {
	label := testServer(t)
	old := nativeMaxOutput
	nativeMaxOutput = 4096
	t.Cleanup(func() { nativeMaxOutput = old })
	c := New()
	x := strings.Repeat("x", 3000)
	req := Request{Bin: "tmux", SocketName: label, Cmds: [][]string{{"display-message", "-p", x}}}
	if res, ran, err := c.Run(context.Background(), req); err != nil || !ran || len(res.Stdout) != 3001 {
		t.Fatalf("under the limit: %d bytes, ran %v, %v", len(res.Stdout), ran, err)
	}
	req.Cmds = append(req.Cmds, req.Cmds[0])
	_, _, err := c.Run(context.Background(), req)
	if !errors.Is(err, transport.ErrOutputTooLarge) {
		t.Fatalf("err = %v, want ErrOutputTooLarge", err)
	}
	if c.Handled() != 2 {
		t.Errorf("handled %d natively, want 2", c.Handled())
	}
}

// TestWantsBinary: the commands the client declines, read from the
// command list as data.
func TestWantsBinary(t *testing.T) {
	for _, tc := range []struct {
		cmds [][]string
		want bool
	}{
		{[][]string{{"list-sessions"}}, false},
		{[][]string{{"display-message", "-p", "new"}}, false},
		{[][]string{{"new", "-d"}}, true},
		{[][]string{{"display-message", "-p", "x"}, {"start-server"}}, true},
		{[][]string{{"load-buffer", "-b", "x", "-"}}, true},
		{[][]string{{"wait-for", "chan"}}, true},
		{[][]string{{"wait-for", "-L", "chan"}}, true},
		{[][]string{{"wait-for", "-S", "chan"}}, false},
		{[][]string{{"wait-for", "-U", "chan"}}, false},
		{[][]string{{"wait-for"}}, true},
	} {
		if got := wantsBinary(tc.cmds); got != tc.want {
			t.Errorf("wantsBinary(%q) = %v, want %v", tc.cmds, got, tc.want)
		}
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

// TestNativeProtocolSurprises: a server of another protocol version ran
// nothing, so the client declines the call and later calls at once; a
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
		c := New()
		for i := 1; i <= 3; i++ {
			_, ran, err := c.Run(context.Background(), lsOn(path))
			if err != nil || ran {
				t.Fatalf("call %d: ran %v, %v", i, ran, err)
			}
		}
		if accepted.Load() != 1 {
			t.Errorf("server saw %d connections, want 1", accepted.Load())
		}
	})
	t.Run("hang up", func(t *testing.T) {
		path, _ := fakeServer(t, func(c net.Conn) {})
		res, ran, err := New().Run(context.Background(), lsOn(path))
		if err != nil || string(res.Stderr) != "server exited unexpectedly\n" || res.ExitCode != 1 || !ran {
			t.Fatalf("%q %q %d %v, ran %v", res.Stdout, res.Stderr, res.ExitCode, err, ran)
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
		res, _, err := New().Run(context.Background(), lsOn(path))
		if err != nil || string(res.Stdout) != "out\n" || string(res.Stderr) != "access not allowed\n" || res.ExitCode != 2 {
			t.Fatalf("%q %q %d %v", res.Stdout, res.Stderr, res.ExitCode, err)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		path, _ := fakeServer(t, func(c net.Conn) { _, _ = c.Write(bytes.Repeat([]byte{0xff}, 64)) })
		_, ran, err := New().Run(context.Background(), lsOn(path))
		if !errors.Is(err, errNativeProtocol) || !ran {
			t.Fatalf("err = %v, ran %v", err, ran)
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
