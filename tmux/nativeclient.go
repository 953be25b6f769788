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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fleetmux/fleetmux/transport"
)

// The native client runs a tmux command the way the tmux binary's own
// client does (tmux 3.2 and later: imsg over the server's socket,
// protocol version 8), without starting a process: connect, identify,
// send the command, collect what the server writes to the client's
// stdout and stderr, read the exit status. Nothing about it is visible to
// the server's other clients (a command client never attaches). Local
// only: the protocol passes file descriptors.
//
// Unlike tmux control mode, which must attach a client to a session (an
// unattached client exits after its command) and so changes
// session_attached, fires client hooks and can destroy a
// destroy-unattached session when it leaves.

const (
	protocolVersion = 8
	imsgHeaderSize  = 16
	maxImsgSize     = 16384
	imsgHasFD       = 1

	msgVersion        = 12
	msgIdentifyFlags  = 100
	msgIdentifyTerm   = 101
	msgIdentifyTTY    = 102
	msgIdentifyStdin  = 104
	msgIdentifyEnv    = 105
	msgIdentifyDone   = 106
	msgIdentifyPID    = 107
	msgIdentifyCwd    = 108
	msgIdentifyFeat   = 109
	msgIdentifyStdout = 110
	msgIdentifyLong   = 111
	msgCommand        = 200
	msgDetach         = 201
	msgDetachKill     = 202
	msgExit           = 203
	msgExited         = 204
	msgExiting        = 205
	msgReady          = 207
	msgShell          = 209
	msgShutdown       = 210
	msgExec           = 214
	msgFlags          = 215
	msgReadOpen       = 300
	msgReadData       = 301
	msgReadDone       = 302
	msgWriteOpen      = 303
	msgWrite          = 304
	msgWriteReady     = 305
	msgWriteClose     = 306

	clientUTF8          = 0x10000
	clientDefaultSocket = 0x8000000
)

// nativeDelegated are the commands left to the tmux binary: those that
// may start a server (tmux's CMD_STARTSERVER, decided by the client
// before it connects) or need a terminal. Any argument equal to one of
// them sends the whole request to the binary (a false alarm costs only
// speed).
var nativeDelegated = map[string]bool{
	"new-session": true, "new": true, "start-server": true, "start": true,
	"kill-server": true, "attach-session": true, "attach": true, "a": true,
	"list-keys": true, "lsk": true,
	// A blocking wait-for stays a process that a cancelled call kills
	// (run_command, wait_for_channel), as on every other path.
	"wait-for": true, "wait": true,
}

// errNativeVersion: the server speaks another protocol version; it ran
// nothing.
var errNativeVersion = errors.New("tmux native: protocol version mismatch")

// errNativeGone: the server closed the connection before answering
// anything (it was exiting).
var errNativeGone = errors.New("tmux native: server closed the connection")

// nativeMaxOutput bounds what one command may write (tests lower it).
var nativeMaxOutput = transport.MaxOutput

// native is the Runner NewNative returns.
type native struct {
	next     transport.Runner
	mu       sync.Mutex
	resolved map[string]bool // PATH and binary → found
	mismatch map[string]bool // sockets whose server speaks another version
	handled  int             // commands run natively (tests)
}

// NewNative returns a Runner that runs tmux commands over the server's
// socket when it safely can and hands everything else to next (normally
// transport.NewLocal()): commands with stdin, commands that may start a
// server, argvs not built by Server.Argv, a socket nobody answers on (so
// tmux's own "no server running" text is printed). FLEETMUX_TMUX_EXEC=1
// turns it off.
func NewNative(next transport.Runner) transport.Runner {
	if os.Getenv("FLEETMUX_TMUX_EXEC") == "1" {
		return next
	}
	return &native{next: next, resolved: map[string]bool{}, mismatch: map[string]bool{}}
}

// Run implements transport.Runner.
func (n *native) Run(ctx context.Context, argv []string, stdin []byte) (transport.Result, error) {
	sock, flags, args, ok := nativeTarget(argv)
	if !ok || stdin != nil || !n.found(argv[0]) {
		return n.next.Run(ctx, argv, stdin)
	}
	for _, a := range args {
		if nativeDelegated[a] {
			return n.next.Run(ctx, argv, stdin)
		}
	}
	packed := 4
	for _, a := range args {
		packed += len(a) + 1
	}
	n.mu.Lock()
	skip := n.mismatch[sock]
	n.mu.Unlock()
	if skip || packed > maxImsgSize-imsgHeaderSize {
		return n.next.Run(ctx, argv, stdin)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return n.next.Run(ctx, argv, stdin)
	}
	conn := c.(*net.UnixConn)
	defer conn.Close()
	res, err := nativeExchange(ctx, conn, flags, args)
	switch {
	case errors.Is(err, errNativeVersion):
		n.mu.Lock()
		n.mismatch[sock] = true
		n.mu.Unlock()
		return n.next.Run(ctx, argv, stdin)
	case errors.Is(err, errNativeGone):
		// The server closed the connection without a word (it is
		// exiting): tmux's own client says what that looks like.
		return n.next.Run(ctx, argv, stdin)
	}
	if err == nil {
		n.mu.Lock()
		n.handled++
		n.mu.Unlock()
	}
	return res, err
}

// found reports whether the binary exists and is a compiled program
// (the exec path reports transport.ErrNotFound otherwise, and callers
// rely on it; a script, such as a wrapper in LIBTMUX_TMUX_BIN, may do
// more than tmux and is always run).
func (n *native) found(bin string) bool {
	key := os.Getenv("PATH") + "\x00" + bin
	n.mu.Lock()
	ok, seen := n.resolved[key]
	n.mu.Unlock()
	if !seen {
		ok = false
		if path, err := exec.LookPath(bin); err == nil {
			if f, err := os.Open(path); err == nil {
				magic := make([]byte, 4)
				_, rerr := io.ReadFull(f, magic)
				ok = rerr == nil && string(magic) == "\x7fELF"
				f.Close()
			}
		}
		n.mu.Lock()
		n.resolved[key] = ok
		n.mu.Unlock()
	}
	return ok
}

// nativeTarget reads an argv of Server.Argv's shape, [bin -u (-L name)?
// (-S path)? args...], into the socket path tmux would use, the client
// flags and the command's arguments.
func nativeTarget(argv []string) (sock string, flags uint64, args []string, ok bool) {
	if len(argv) < 3 || argv[1] != "-u" || !strings.Contains(filepath.Base(argv[0]), "tmux") {
		return "", 0, nil, false
	}
	rest := argv[2:]
	label, path := "", ""
	for len(rest) >= 2 && (rest[0] == "-L" || rest[0] == "-S") {
		if rest[0] == "-L" {
			label = rest[1]
		} else {
			path = rest[1]
		}
		rest = rest[2:]
	}
	if len(rest) == 0 || len(rest[0]) > 0 && rest[0][0] == '-' {
		return "", 0, nil, false
	}
	flags = clientUTF8
	if path == "" && label == "" {
		if s := os.Getenv("TMUX"); s != "" && s[0] != ',' {
			path, _, _ = strings.Cut(s, ",")
		}
	}
	if path == "" {
		if label == "" {
			label = "default"
		}
		dir := os.Getenv("TMUX_TMPDIR")
		if dir == "" {
			dir = "/tmp"
		}
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			dir = r
		} else if dir != "/tmp" {
			return "", 0, nil, false
		}
		base := filepath.Join(dir, "tmux-"+strconv.Itoa(os.Getuid()))
		if r, err := filepath.EvalSymlinks(base); err == nil {
			base = r
		}
		path = base + "/" + label
		flags |= clientDefaultSocket
	}
	return path, flags, rest, true
}

// imsg builds one message.
func imsg(typ uint32, flags uint16, data []byte) []byte {
	b := make([]byte, imsgHeaderSize, imsgHeaderSize+len(data))
	binary.NativeEndian.PutUint32(b[0:], typ)
	binary.NativeEndian.PutUint16(b[4:], uint16(imsgHeaderSize+len(data)))
	binary.NativeEndian.PutUint16(b[6:], flags)
	binary.NativeEndian.PutUint32(b[8:], protocolVersion)
	binary.NativeEndian.PutUint32(b[12:], uint32(os.Getpid()))
	return append(b, data...)
}

func int32Bytes(v int32) []byte {
	b := make([]byte, 4)
	binary.NativeEndian.PutUint32(b, uint32(v))
	return b
}

func cstr(s string) []byte { return append([]byte(s), 0) }

// nativeExchange identifies as a client, sends the command and reads
// the server's answer until it exits the client.
func nativeExchange(ctx context.Context, conn *net.UnixConn, flags uint64, args []string) (transport.Result, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	heardAny := false // the server answered something
	fail := func(err error) (transport.Result, error) {
		if ctx.Err() == nil && (errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)) && !heardAny {
			return transport.Result{}, errNativeGone
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			<-ctx.Done() // only the context sets a deadline on conn
		}
		if ctx.Err() != nil {
			return transport.Result{}, fmt.Errorf("tmux native: %w", ctx.Err())
		}
		return transport.Result{}, fmt.Errorf("tmux native: %w", err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return fail(err)
	}
	defer devnull.Close()
	cwd, err := os.Getwd()
	if err != nil {
		if cwd = os.Getenv("HOME"); cwd == "" {
			cwd = "/"
		}
	}
	long := make([]byte, 8)
	binary.NativeEndian.PutUint64(long, flags)
	var head bytes.Buffer
	head.Write(imsg(msgIdentifyFlags, 0, int32Bytes(int32(flags))))
	head.Write(imsg(msgIdentifyLong, 0, long))
	head.Write(imsg(msgIdentifyTerm, 0, cstr(os.Getenv("TERM"))))
	head.Write(imsg(msgIdentifyFeat, 0, int32Bytes(0)))
	head.Write(imsg(msgIdentifyTTY, 0, cstr("")))
	head.Write(imsg(msgIdentifyCwd, 0, cstr(cwd)))
	if _, err := conn.Write(head.Bytes()); err != nil {
		return fail(err)
	}
	rights := syscall.UnixRights(int(devnull.Fd()))
	for _, typ := range []uint32{msgIdentifyStdin, msgIdentifyStdout} {
		if _, _, err := conn.WriteMsgUnix(imsg(typ, imsgHasFD, nil), rights, nil); err != nil {
			return fail(err)
		}
	}
	var tail bytes.Buffer
	tail.Write(imsg(msgIdentifyPID, 0, int32Bytes(int32(os.Getpid()))))
	for _, kv := range os.Environ() {
		if len(kv)+1 > maxImsgSize-imsgHeaderSize {
			continue
		}
		tail.Write(imsg(msgIdentifyEnv, 0, cstr(kv)))
	}
	tail.Write(imsg(msgIdentifyDone, 0, nil))
	cmdData := int32Bytes(int32(len(args)))
	for _, a := range args {
		cmdData = append(cmdData, cstr(a)...)
	}
	tail.Write(imsg(msgCommand, 0, cmdData))
	if _, err := conn.Write(tail.Bytes()); err != nil {
		return fail(err)
	}

	var res transport.Result
	out := map[int32]*bytes.Buffer{1: {}, 2: {}}
	streams := map[int32]*nativeStream{}
	total := 0
	r := &imsgReader{conn: conn}
	exited := false
	for {
		typ, data, err := r.next()
		if err != nil {
			if exited && errors.Is(err, errImsgEOF) {
				break
			}
			if !heardAny && ctx.Err() == nil && errors.Is(err, errImsgEOF) {
				return transport.Result{}, errNativeGone
			}
			return fail(err)
		}
		heardAny = true
		switch typ {
		case msgVersion:
			return transport.Result{}, errNativeVersion
		case msgWriteOpen:
			// {stream, fd, flags} and a path: fd 1 or 2 is the client's
			// stdout or stderr, -1 a file the client writes itself.
			if len(data) < 12 {
				return fail(errors.New("bad MSG_WRITE_OPEN"))
			}
			stream := int32(binary.NativeEndian.Uint32(data))
			fd := int32(binary.NativeEndian.Uint32(data[4:]))
			errno := int32(0)
			switch {
			case streams[stream] != nil:
				errno = int32(syscall.EBADF)
			case fd == 1 || fd == 2:
				streams[stream] = &nativeStream{buf: out[fd]}
			case fd == -1:
				path := "-"
				if len(data) > 12 {
					path, _, _ = strings.Cut(string(data[12:]), "\x00")
				}
				mode := int(int32(binary.NativeEndian.Uint32(data[8:])))
				f, err := os.OpenFile(path, mode|os.O_WRONLY|os.O_CREATE, 0o644)
				if err != nil {
					errno = int32(errnoOf(err))
				} else {
					streams[stream] = &nativeStream{file: f}
					defer f.Close()
				}
			default:
				errno = int32(syscall.EBADF)
			}
			reply := append(int32Bytes(stream), int32Bytes(errno)...)
			if _, err := conn.Write(imsg(msgWriteReady, 0, reply)); err != nil {
				return fail(err)
			}
		case msgWrite:
			if len(data) < 4 {
				return fail(errors.New("bad MSG_WRITE"))
			}
			st := streams[int32(binary.NativeEndian.Uint32(data))]
			switch {
			case st == nil:
			case st.file != nil:
				_, _ = st.file.Write(data[4:]) // as the tmux client: write errors are not reported
			default:
				total += len(data) - 4
				if total > nativeMaxOutput {
					return transport.Result{}, fmt.Errorf("tmux native: %w", transport.ErrOutputTooLarge)
				}
				st.buf.Write(data[4:])
			}
		case msgWriteClose:
			if len(data) >= 4 {
				stream := int32(binary.NativeEndian.Uint32(data))
				if st := streams[stream]; st != nil && st.file != nil {
					_ = st.file.Close()
				}
				delete(streams, stream)
			}
		case msgReadOpen:
			// {stream, fd} and a path: stdin is /dev/null, as on the exec
			// path (EOF); a path is a file the client reads and sends.
			if len(data) < 8 {
				return fail(errors.New("bad MSG_READ_OPEN"))
			}
			if err := nativeRead(conn, data); err != nil {
				return fail(err)
			}
		case msgExit, msgShutdown:
			if len(data) >= 4 {
				res.ExitCode = int(int32(binary.NativeEndian.Uint32(data)))
			}
			if len(data) > 4 {
				msg, _, _ := bytes.Cut(data[4:], []byte{0})
				out[2].Write(msg)
				out[2].WriteByte('\n')
			}
			exited = true
			if _, err := conn.Write(imsg(msgExiting, 0, nil)); err != nil {
				// The server may already have let the client go.
				goto done
			}
		case msgExited:
			goto done
		case msgFlags:
		case msgReady, msgShell, msgExec, msgDetach, msgDetachKill:
			return fail(fmt.Errorf("unexpected message %d for a command client", typ))
		}
	}
done:
	res.Stdout, res.Stderr = out[1].Bytes(), out[2].Bytes()
	return res, nil
}

// nativeStream is where a write stream of the server goes: one of the
// client's outputs or a file.
type nativeStream struct {
	buf  *bytes.Buffer
	file *os.File
}

// nativeRead answers MSG_READ_OPEN as the tmux client does: the file's
// contents in MSG_READ chunks (at most transport.MaxOutput), then
// MSG_READ_DONE with 0 or an errno; stdin (fd 0) reads as /dev/null.
func nativeRead(conn *net.UnixConn, open []byte) error {
	stream := open[:4]
	fd := int32(binary.NativeEndian.Uint32(open[4:]))
	errno := int32(0)
	if fd == -1 {
		path := ""
		if len(open) > 8 {
			path, _, _ = strings.Cut(string(open[8:]), "\x00")
		}
		f, err := os.Open(path)
		if err != nil {
			errno = int32(errnoOf(err))
		} else {
			defer f.Close()
			chunk := make([]byte, maxImsgSize-imsgHeaderSize-4)
			sent := 0
			for sent <= transport.MaxOutput {
				k, err := f.Read(chunk)
				if k > 0 {
					if _, werr := conn.Write(imsg(msgReadData, 0, append(append([]byte(nil), stream...), chunk[:k]...))); werr != nil {
						return werr
					}
					sent += k
				}
				if err != nil {
					if !errors.Is(err, io.EOF) {
						errno = int32(errnoOf(err))
					}
					break
				}
			}
		}
	} else if fd != 0 {
		errno = int32(syscall.EBADF)
	}
	_, err := conn.Write(imsg(msgReadDone, 0, append(append([]byte(nil), stream...), int32Bytes(errno)...)))
	return err
}

// errnoOf is err's errno, or EIO.
func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.EIO
}

var errImsgEOF = errors.New("server closed the connection")

// imsgReader splits the byte stream into messages.
type imsgReader struct {
	conn *net.UnixConn
	buf  []byte
}

func (r *imsgReader) next() (uint32, []byte, error) {
	for {
		if typ, data, n, ok, err := parseImsg(r.buf); err != nil {
			return 0, nil, err
		} else if ok {
			r.buf = r.buf[n:]
			return typ, data, nil
		}
		chunk := make([]byte, 64<<10)
		oob := make([]byte, syscall.CmsgSpace(4*4))
		k, oobn, _, _, err := r.conn.ReadMsgUnix(chunk, oob)
		if oobn > 0 {
			closeRights(oob[:oobn]) // the server sends none to a command client
		}
		if k > 0 {
			r.buf = append(r.buf, chunk[:k]...)
			continue
		}
		if err == nil {
			err = errImsgEOF
		}
		return 0, nil, err
	}
}

// parseImsg reads one message from the front of b: ok false when b
// holds only part of one.
func parseImsg(b []byte) (typ uint32, data []byte, n int, ok bool, err error) {
	if len(b) < imsgHeaderSize {
		return 0, nil, 0, false, nil
	}
	size := int(binary.NativeEndian.Uint16(b[4:]))
	if size < imsgHeaderSize {
		return 0, nil, 0, false, fmt.Errorf("bad message length %d", size)
	}
	if len(b) < size {
		return 0, nil, 0, false, nil
	}
	return binary.NativeEndian.Uint32(b), b[imsgHeaderSize:size], size, true, nil
}

func closeRights(oob []byte) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return
	}
	for _, m := range msgs {
		if fds, err := syscall.ParseUnixRights(&m); err == nil {
			for _, fd := range fds {
				_ = syscall.Close(fd)
			}
		}
	}
}
