// Package imsg is a tmux command client that speaks tmux's own client
// protocol (imsg over the server's unix socket) instead of starting the
// tmux binary. It receives commands as data (Request) and reproduces the
// client of the releases listed in protocols; callers run the binary for
// whatever it declines (Client.Run reports that nothing ran).
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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fleetmux/fleetmux/transport"
)

// The native client runs a tmux command the way the tmux binary's own
// client does, without starting a process: connect to the server's unix
// socket, send the identify messages and the command (imsg, protocol
// version 8), answer the server's requests to open the client's stdout
// and stderr, collect what it writes there and read the exit status. It
// is a plain command client, like `tmux list-sessions` run from a script:
// it never attaches, so unlike a control-mode client it changes no
// session's attached count, fires no client hooks and cannot destroy a
// destroy-unattached session.
//
// What is emulated is the client of the binary's own release (client.c,
// file.c): the same identify messages in the same order, the same file
// handling (stdin is /dev/null and stdout and stderr are pipes, exactly as
// transport.Local runs the binary), the same messages it prints itself
// ("server exited unexpectedly") and the same exit status. Only binaries
// whose `tmux -V` names a release of nativeProtocols are replaced;
// everything else goes to the binary.

// nativeMaxOutput bounds stdout and stderr together (tests lower it).
var nativeMaxOutput = transport.MaxOutput

// nativeCommands is tmux 3.3a's command table (cmd.c; the same in 3.3 to
// 3.5a), in its order: name
// and alias. cmd_find's lookup (alias, exact name, unique prefix) is
// reproduced to recognise the commands left to the binary.
var nativeCommands = [...][2]string{
	{"attach-session", "attach"}, {"bind-key", "bind"}, {"break-pane", "breakp"},
	{"capture-pane", "capturep"}, {"choose-buffer", ""}, {"choose-client", ""},
	{"choose-tree", ""}, {"clear-history", "clearhist"}, {"clear-prompt-history", "clearphist"},
	{"clock-mode", ""}, {"command-prompt", ""}, {"confirm-before", "confirm"},
	{"copy-mode", ""}, {"customize-mode", ""}, {"delete-buffer", "deleteb"},
	{"detach-client", "detach"}, {"display-menu", "menu"}, {"display-message", "display"},
	{"display-popup", "popup"}, {"display-panes", "displayp"}, {"find-window", "findw"},
	{"has-session", "has"}, {"if-shell", "if"}, {"join-pane", "joinp"},
	{"kill-pane", "killp"}, {"kill-server", ""}, {"kill-session", ""},
	{"kill-window", "killw"}, {"last-pane", "lastp"}, {"last-window", "last"},
	{"link-window", "linkw"}, {"list-buffers", "lsb"}, {"list-clients", "lsc"},
	{"list-commands", "lscm"}, {"list-keys", "lsk"}, {"list-panes", "lsp"},
	{"list-sessions", "ls"}, {"list-windows", "lsw"}, {"load-buffer", "loadb"},
	{"lock-client", "lockc"}, {"lock-server", "lock"}, {"lock-session", "locks"},
	{"move-pane", "movep"}, {"move-window", "movew"}, {"new-session", "new"},
	{"new-window", "neww"}, {"next-layout", "nextl"}, {"next-window", "next"},
	{"paste-buffer", "pasteb"}, {"pipe-pane", "pipep"}, {"previous-layout", "prevl"},
	{"previous-window", "prev"}, {"refresh-client", "refresh"}, {"rename-session", "rename"},
	{"rename-window", "renamew"}, {"resize-pane", "resizep"}, {"resize-window", "resizew"},
	{"respawn-pane", "respawnp"}, {"respawn-window", "respawnw"}, {"rotate-window", "rotatew"},
	{"run-shell", "run"}, {"save-buffer", "saveb"}, {"select-layout", "selectl"},
	{"select-pane", "selectp"}, {"select-window", "selectw"}, {"send-keys", "send"},
	{"send-prefix", ""}, {"server-access", ""}, {"set-buffer", "setb"},
	{"set-environment", "setenv"}, {"set-hook", ""}, {"set-option", "set"},
	{"set-window-option", "setw"}, {"show-buffer", "showb"}, {"show-environment", "showenv"},
	{"show-hooks", ""}, {"show-messages", "showmsgs"}, {"show-options", "show"},
	{"show-prompt-history", "showphist"}, {"show-window-options", "showw"}, {"source-file", "source"},
	{"split-window", "splitw"}, {"start-server", "start"}, {"suspend-client", "suspendc"},
	{"swap-pane", "swapp"}, {"swap-window", "swapw"}, {"switch-client", "switchc"},
	{"unbind-key", "unbind"}, {"unlink-window", "unlinkw"}, {"wait-for", "wait"},
}

// delegated are the commands always left to the binary:
//   - those with CMD_STARTSERVER (new-session, attach-session,
//     start-server, list-keys, list-commands): the binary decides before
//     connecting whether it may start a server, and new-session and
//     attach-session are the commands that want a terminal;
//   - those that open files by name in the client (save-buffer,
//     load-buffer, source-file): a name such as /dev/stdout means the
//     client process's own descriptors, which this process does not have.
//
// A blocking wait-for is left to the binary too (wantsBinary).
var delegated = map[string]bool{
	"new-session": true, "attach-session": true, "start-server": true,
	"list-keys": true, "list-commands": true,
	"save-buffer": true, "load-buffer": true, "source-file": true,
}

// cmdFind is tmux's cmd_find: the command name would resolve to,
// "" when it is unknown or ambiguous.
func cmdFind(name string) string {
	found, ambiguous := "", false
	for _, e := range nativeCommands {
		if e[1] != "" && e[1] == name {
			return e[0]
		}
		if !strings.HasPrefix(e[0], name) {
			continue
		}
		if found != "" {
			ambiguous = true
		}
		found = e[0]
		if e[0] == name {
			break
		}
	}
	if ambiguous {
		return ""
	}
	return found
}

// wantsBinary reports whether a command of the list is one the binary
// must run: one of delegated, or a wait-for that blocks (wait-for [-L]
// channel), which stays a tmux process a cancelled call kills, as on
// every other path (fleetmux's wait_for_channel and run_command rely on
// it).
func wantsBinary(cmds [][]string) bool {
	for _, c := range cmds {
		if len(c) == 0 {
			continue
		}
		switch name := cmdFind(c[0]); {
		case delegated[name]:
			return true
		case name == "wait-for" && (len(c) < 2 || (c[1] != "-S" && c[1] != "-U")):
			return true
		}
	}
	return false
}

// Request is one tmux client invocation, as data: the binary the exec
// path would run, the -L / -S socket selection, and the command list
// (tmux's "a ; b"), each command its name then its arguments exactly as
// the binary's command line carries them.
type Request struct {
	Bin        string // a path or a name on PATH
	SocketName string // -L, "" for none
	SocketPath string // -S, "" for none
	Cmds       [][]string
	Stdin      []byte // the client's stdin; the native client takes none
	// Unnested: the client runs with TMUX removed from its environment
	// (new-session); the caller passes the socket TMUX named as -S.
	Unnested bool
}

// argv is the command list as the client sends it after the global
// flags: the commands separated by a lone ";".
func (r Request) argv() []string {
	var args []string
	for i, c := range r.Cmds {
		if i > 0 {
			args = append(args, ";")
		}
		args = append(args, c...)
	}
	return args
}

// Client runs requests over the server's socket when it safely can.
// Results are the ones the tmux binary gives for the same request:
// stdout, stderr and exit status byte for byte. It is safe for
// concurrent use; one Client serves every server of a process.
type Client struct {
	paths    transport.PathCache // resolves the binary like transport.Local
	mu       sync.Mutex
	mismatch map[nativeSock]bool // sockets whose server answered MSG_VERSION

	handled atomic.Int64 // commands run over the socket (tests)
}

// nativeSock identifies one server socket: its path and the socket file
// (a server started again on the same path is another server).
type nativeSock struct {
	path     string
	dev, ino uint64
}

// New returns a Client.
//
// It runs a request natively only with no stdin, for a binary that is
// an ELF executable of a release in protocols (checked once per binary
// with `tmux -V`; wrapper scripts always run). Commands that may start a
// server or open files by name in the client are declined (see
// delegated), as is every request when the socket does not accept a
// connection, so the binary prints its own "no server running on ..." or
// "error connecting to ...". A command is never run twice: once it is
// sent, only a server that refused the protocol version (and so ran
// nothing) declines it.
//
// FLEETMUX_TMUX_EXEC=1 in the environment declines every request.
func New() *Client {
	return &Client{mismatch: map[nativeSock]bool{}}
}

// Handled is how many requests the client ran over a socket.
func (n *Client) Handled() int64 { return n.handled.Load() }

// nativeCall is one command the native client can run.
type nativeCall struct {
	proto  *nativeProtocol // the binary's release
	socket string
	flags  uint64
	env    []string
	cwd    string
	term   string
	args   []string
}

// TMUXSocket is the socket $TMUX names (its first field), "" when it
// names none: the server a client without -L or -S reaches, which a
// client run with TMUX removed must be given with -S.
func TMUXSocket() string {
	t, _ := lastEnv(nativeEnv(os.Environ()), "TMUX")
	if t == "" || t[0] == ',' {
		return ""
	}
	if i := strings.IndexByte(t, ','); i >= 0 {
		t = t[:i]
	}
	return t
}

// lastEnv is the value of k in env (its last entry).
func lastEnv(env []string, k string) (string, bool) {
	for j := len(env) - 1; j >= 0; j-- {
		if v, ok := strings.CutPrefix(env[j], k+"="); ok {
			return v, true
		}
	}
	return "", false
}

// SocketOf is the socket path req reaches, as tmux picks it, else
// "-L name", else "default".
func SocketOf(req Request) string {
	env := nativeEnv(os.Environ())
	getenv := func(k string) (string, bool) { return lastEnv(env, k) }
	if p, _, ok := socketPath(req, getenv); ok {
		return p
	}
	if req.SocketName != "" {
		return "-L " + req.SocketName
	}
	return "default"
}

// Run runs req over the server's socket. ran is false, with a nil error,
// when the client declined req or the server ran nothing: the caller
// then runs the binary, which reports in its own words. An error with
// ran false means ctx ended while the command was being sent.
func (n *Client) Run(ctx context.Context, req Request) (res transport.Result, ran bool, err error) {
	call, ok := n.prepare(ctx, req)
	if !ok {
		return res, false, nil
	}
	sock := nativeSock{path: call.socket}
	var st syscall.Stat_t
	if syscall.Stat(call.socket, &st) == nil {
		sock.dev, sock.ino = uint64(st.Dev), st.Ino
	}
	n.mu.Lock()
	skip := n.mismatch[sock]
	n.mu.Unlock()
	if skip {
		return res, false, nil
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", call.socket)
	if err != nil {
		return res, false, nil // nothing was sent
	}
	res, outcome, err := nativeExchange(ctx, c.(*net.UnixConn), call)
	switch outcome {
	case nativeMismatch:
		n.mu.Lock()
		n.mismatch[sock] = true
		n.mu.Unlock()
		return res, false, nil
	case nativeNotSent:
		return res, false, err // err: ctx ended while the command was being sent
	}
	n.handled.Add(1)
	if errors.Is(err, errNativeProtocol) {
		err = fmt.Errorf("tmux server on socket %s: %w", call.socket, err)
	}
	return res, true, err
}

// What became of a command nativeExchange was given.
const (
	nativeRan      = iota // the server had it (whatever the result)
	nativeMismatch        // the server refused the protocol version: it ran nothing
	nativeNotSent         // the server hung up before the command was complete
)

// prepare decides whether req can run natively and gathers what the
// tmux client would send.
func (n *Client) prepare(ctx context.Context, req Request) (nativeCall, bool) {
	var call nativeCall
	if req.Stdin != nil || len(req.Cmds) == 0 || os.Getenv("FLEETMUX_TMUX_EXEC") == "1" {
		return call, false
	}
	call.args = req.argv()
	for _, a := range call.args {
		if strings.IndexByte(a, 0) >= 0 {
			return call, false
		}
	}
	if len(call.args) == 0 || strings.HasPrefix(call.args[0], "-") {
		return call, false
	}
	// The command as client.c packs it must fit one message; a longer
	// one gets the binary's own "command too long".
	size := 4
	for _, a := range call.args {
		size += len(a) + 1
	}
	if size > nativeMaxData {
		return call, false
	}
	bin := req.Bin
	if bin == "" || strings.HasPrefix(bin, "-") { // a login client (CLIENT_LOGIN)
		return call, false
	}
	resolved, err := n.paths.LookPath(bin)
	if err != nil {
		return call, false
	}
	if call.proto, _ = nativeBinary(ctx, resolved); call.proto == nil || wantsBinary(req.Cmds) {
		return call, false
	}

	var unset []string
	if req.Unnested {
		unset = []string{"TMUX"}
	}
	call.env = nativeEnv(transport.EnvWithout(os.Environ(), unset...))
	getenv := func(k string) (string, bool) { return lastEnv(call.env, k) }
	call.flags = clientUTF8
	socket, def, ok := socketPath(req, getenv)
	if !ok || strings.HasPrefix(socket, "@") || len(socket) >= 108 {
		return call, false
	}
	call.socket = socket
	if def {
		call.flags |= clientDefaultSocket
	}
	call.cwd, ok = nativeCwd(getenv)
	if !ok {
		return call, false
	}
	call.term, _ = getenv("TERM")
	if len(call.cwd)+1 > nativeMaxData || len(call.term)+1 > nativeMaxData {
		return call, false
	}
	return call, true
}

// nativeBinKey identifies one binary file.
type nativeBinKey struct {
	path        string
	dev, ino    uint64
	size, mtime int64
}

// nativeBins caches, per binary file, the release whose client native
// reproduces (nil: none) and why.
var nativeBins = struct {
	sync.Mutex
	probed map[nativeBinKey]nativeProbe
}{probed: map[nativeBinKey]nativeProbe{}}

type nativeProbe struct {
	proto *nativeProtocol
	why   string
}

// nativeBinary is the entry of nativeProtocols for the binary at path,
// nil when it is not an ELF executable (a wrapper script would do
// something else with the command) printing such a release for -V. why
// says which path its commands take and why, for people: "native client
// (tmux 3.5a protocol 8)", "exec: tmux 3.6 not known to the native
// client".
func nativeBinary(ctx context.Context, path string) (proto *nativeProtocol, why string) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return nil, fmt.Sprintf("exec: %s: %v", path, err)
	}
	key := nativeBinKey{path, uint64(st.Dev), st.Ino, st.Size, st.Mtim.Nano()}
	nativeBins.Lock()
	defer nativeBins.Unlock()
	if p, seen := nativeBins.probed[key]; seen {
		return p.proto, p.why
	}
	p, final := probeBinary(ctx, path)
	if final {
		nativeBins.probed[key] = p
	}
	return p.proto, p.why
}

func probeBinary(ctx context.Context, path string) (p nativeProbe, final bool) {
	f, err := os.Open(path)
	if err != nil {
		return nativeProbe{why: fmt.Sprintf("exec: %s: %v", path, err)}, false
	}
	magic := make([]byte, 4)
	_, err = f.ReadAt(magic, 0)
	_ = f.Close()
	if err != nil || string(magic) != "\x7fELF" {
		return nativeProbe{why: fmt.Sprintf("exec: %s is not an ELF executable (a wrapper script runs as itself)", path)}, err == nil
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(vctx, path, "-V").Output()
	if err != nil {
		return nativeProbe{why: fmt.Sprintf("exec: %s -V failed: %v", path, err)}, ctx.Err() == nil && vctx.Err() == nil
	}
	release, ok := nativeRelease(path, out)
	if !ok {
		return nativeProbe{why: fmt.Sprintf("exec: %s -V printed %q, not a tmux release", path, strings.TrimSpace(string(out)))}, true
	}
	proto := nativeProtocolOf(release)
	if proto == nil {
		return nativeProbe{why: fmt.Sprintf("exec: tmux %s not known to the native client", release)}, true
	}
	return nativeProbe{proto: proto, why: fmt.Sprintf("native client (tmux %s protocol %d)", release, proto.protocol)}, true
}

// nativeRelease reads `tmux -V`: "tmux 3.5a" (3.5 on), or the program's
// name and the release ("tmux 3.3a"; getprogname(), so a binary run as
// tmux-3.3a prints "tmux-3.3a 3.3a").
func nativeRelease(path string, out []byte) (string, bool) {
	f := strings.Fields(string(out))
	if len(f) != 2 || (f[0] != "tmux" && f[0] != filepath.Base(path)) {
		return "", false
	}
	return f[1], true
}

// Status says which path a Client takes for requests run with the tmux
// binary bin (a path or a name on PATH), and why, in
// words for a log line or fleetmux doctor: "native client (tmux 3.5a
// protocol 8)", "exec: tmux 3.6 not known to the native client",
// "exec: FLEETMUX_TMUX_EXEC=1". getenv (nil: os.Getenv) reads the
// FLEETMUX_TMUX_EXEC switch.
func Status(ctx context.Context, bin string, getenv func(string) string) (native bool, why string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if getenv("FLEETMUX_TMUX_EXEC") == "1" {
		return false, "exec: FLEETMUX_TMUX_EXEC=1"
	}
	path := bin
	if !strings.Contains(bin, "/") {
		p, err := exec.LookPath(bin)
		if err != nil {
			return false, fmt.Sprintf("exec: %s not found on PATH", bin)
		}
		path = p
	}
	proto, why := nativeBinary(ctx, path)
	return proto != nil, why
}

// nativeEnv is the environment exec.Cmd gives the binary: the last entry
// of each name kept, in order (os/exec's dedupEnv).
func nativeEnv(env []string) []string {
	saw := make(map[string]bool, len(env))
	out := make([]string, 0, len(env))
	for j := len(env) - 1; j >= 0; j-- {
		kv := env[j]
		if strings.IndexByte(kv, 0) >= 0 {
			continue
		}
		i := strings.Index(kv, "=")
		if i == 0 {
			i = strings.Index(kv[1:], "=") + 1
		}
		if i < 0 {
			if kv != "" {
				out = append(out, kv)
			}
			continue
		}
		k := kv[:i]
		if saw[k] {
			continue
		}
		saw[k] = true
		out = append(out, kv)
	}
	for a, b := 0, len(out)-1; a < b; a, b = a+1, b-1 {
		out[a], out[b] = out[b], out[a]
	}
	return out
}

// socketPath is the socket tmux 3.3a's main() picks: -S as given; else
// $TMUX's first field when neither -S nor -L is given; else
// make_label(): the label ("default") in tmux-UID under the first of
// $TMUX_TMPDIR and /tmp that realpath(3) resolves. def reports the last
// case (CLIENT_DEFAULTSOCKET). ok is false when tmux would fail or create
// the directory first: the binary then speaks for itself.
func socketPath(req Request, getenv func(string) (string, bool)) (socket string, def, ok bool) {
	if req.SocketPath != "" {
		return req.SocketPath, false, true
	}
	label := req.SocketName
	if label == "" {
		if t, _ := getenv("TMUX"); t != "" && t[0] != ',' {
			if i := strings.IndexByte(t, ','); i >= 0 {
				t = t[:i]
			}
			return t, false, true
		}
		label = "default"
	}
	dir := ""
	if v, set := getenv("TMUX_TMPDIR"); set {
		if r, err := nativeRealpath(v); err == nil {
			dir = r
		}
	}
	if dir == "" {
		r, err := nativeRealpath("/tmp/")
		if err != nil {
			return "", false, false
		}
		dir = r
	}
	uid := os.Getuid()
	base := dir + "/tmux-" + strconv.Itoa(uid)
	var st syscall.Stat_t
	if err := syscall.Lstat(base, &st); err != nil {
		return "", false, false
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR || st.Uid != uint32(uid) || st.Mode&0o007 != 0 {
		return "", false, false
	}
	return base + "/" + label, true, true
}

// nativeRealpath is realpath(3): absolute, symbolic links resolved, the
// path must exist.
func nativeRealpath(p string) (string, error) {
	if p == "" {
		return "", syscall.ENOENT
	}
	if p[0] != '/' {
		wd, err := syscall.Getwd()
		if err != nil {
			return "", err
		}
		p = wd + "/" + p
	}
	return filepath.EvalSymlinks(p)
}

// nativeCwd is tmux's find_cwd: $PWD when it names the working directory
// (keeping its symbolic links), else getcwd(3); $HOME when there is no
// working directory.
func nativeCwd(getenv func(string) (string, bool)) (string, bool) {
	cwd, err := syscall.Getwd()
	if err != nil {
		home, _ := getenv("HOME")
		return home, home != ""
	}
	pwd, _ := getenv("PWD")
	if pwd == "" {
		return cwd, true
	}
	// getcwd(3) is already a real path: realpath(cwd) is cwd.
	if r, err := nativeRealpath(pwd); err != nil || r != cwd {
		return cwd, true
	}
	return pwd, true
}

// nativeDevNull is the client's stdin and stdout as the server sees them:
// /dev/null, never a terminal (the server closes both once identified).
var nativeDevNull = sync.OnceValues(func() (*os.File, error) {
	return os.OpenFile(os.DevNull, os.O_RDWR, 0)
})

// appendImsg appends one imsg as tmux's proc_send writes it.
func appendImsg(b []byte, typ uint32, hasFD bool, data ...[]byte) []byte {
	size := imsgHeaderSize
	for _, d := range data {
		size += len(d)
	}
	var flags uint16
	if hasFD {
		flags = imsgHasFD
	}
	b = binary.NativeEndian.AppendUint32(b, typ)
	b = binary.NativeEndian.AppendUint16(b, uint16(size))
	b = binary.NativeEndian.AppendUint16(b, flags)
	b = binary.NativeEndian.AppendUint32(b, nativeProtocolVersion)
	b = binary.NativeEndian.AppendUint32(b, ^uint32(0)) // pid -1
	for _, d := range data {
		b = append(b, d...)
	}
	return b
}

func i32(v int32) []byte { return binary.NativeEndian.AppendUint32(nil, uint32(v)) }

func cstr(s string) []byte { return append([]byte(s), 0) }

// nativeIdentify builds what client_send_identify and client_main send,
// in two parts: each ends with the message that carries a descriptor
// (imsg passes one descriptor per sendmsg, with the message it belongs
// to).
func nativeIdentify(call nativeCall) (first, second []byte) {
	if call.proto.longFlagsFirst {
		first = appendImsg(first, msgIdentifyLongFlags, false, binary.NativeEndian.AppendUint64(nil, call.flags))
	} else {
		first = appendImsg(first, msgIdentifyFlags, false, i32(int32(uint32(call.flags))))
	}
	first = appendImsg(first, msgIdentifyLongFlags, false, binary.NativeEndian.AppendUint64(nil, call.flags))
	first = appendImsg(first, msgIdentifyTerm, false, cstr(call.term))
	first = appendImsg(first, msgIdentifyFeatures, false, i32(0))
	first = appendImsg(first, msgIdentifyTTYName, false, []byte{0})
	first = appendImsg(first, msgIdentifyCwd, false, cstr(call.cwd))
	first = appendImsg(first, msgIdentifyStdin, true)

	second = appendImsg(second, msgIdentifyStdout, true)
	second = appendImsg(second, msgIdentifyClientPID, false, i32(int32(os.Getpid())))
	for _, kv := range call.env {
		if len(kv)+1 > nativeMaxData {
			continue
		}
		second = appendImsg(second, msgIdentifyEnviron, false, cstr(kv))
	}
	second = appendImsg(second, msgIdentifyDone, false)
	packed := i32(int32(len(call.args)))
	for _, a := range call.args {
		packed = append(packed, a...)
		packed = append(packed, 0)
	}
	second = appendImsg(second, msgCommand, false, packed)
	return first, second
}

// ErrProtocol reports a server message the tmux client would die on: what
// answers on the socket is not a tmux server this client can talk to.
var ErrProtocol = errors.New("tmux native: protocol error")

var errNativeProtocol = ErrProtocol

// nativeExchange runs one command on conn.
func nativeExchange(ctx context.Context, conn *net.UnixConn, call nativeCall) (res transport.Result, outcome int, err error) {
	defer conn.Close()
	devNull, err := nativeDevNull()
	if err != nil {
		return res, nativeNotSent, nil
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = conn.SetDeadline(time.Unix(1, 0))
		close(fired)
	})
	defer func() {
		if !stop() {
			<-fired
		}
	}()
	ctxErr := func(err error) error {
		if e := ctx.Err(); e != nil {
			return fmt.Errorf("tmux native: %w", e)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Only ctx sets a deadline on conn: the connection's timer
			// can fire a moment before ctx's, and callers look at ctx.
			<-ctx.Done()
			return fmt.Errorf("tmux native: %w", ctx.Err())
		}
		return nil
	}

	first, second := nativeIdentify(call)
	rights := syscall.UnixRights(int(devNull.Fd()))
	sent := false
	werr := writeWithRights(conn, first, rights)
	if werr == nil {
		werr = writeWithRights(conn, second, rights)
		sent = werr == nil
	}
	if werr != nil {
		if e := ctxErr(werr); e != nil {
			return res, nativeNotSent, e
		}
	}

	cv := newNativeConv(conn, call.proto)
	if werr != nil {
		cv.sendErr = werr
	}
	buf := make([]byte, 4*maxImsgSize)
	have := 0
	for !cv.done {
		nr, rerr := conn.Read(buf[have:])
		have += nr
		start := 0
		for !cv.done {
			typ, data, size, perr := parseImsg(buf[start:have])
			if perr != nil {
				cv.closeAll()
				return res, nativeRan, perr
			}
			if size == 0 {
				break
			}
			start += size
			if err := cv.dispatch(typ, data); err != nil {
				cv.closeAll()
				return res, nativeRan, err
			}
		}
		have = copy(buf, buf[start:have])
		if err := cv.flush(); err != nil {
			if e := ctxErr(err); e != nil {
				cv.closeAll()
				return res, nativeRan, e
			}
			cv.lost()
		}
		if cv.done {
			break
		}
		if rerr != nil {
			if e := ctxErr(rerr); e != nil {
				cv.closeAll()
				return res, nativeRan, e
			}
			cv.lost()
		}
	}
	cv.closeAll()
	switch {
	case cv.version:
		return res, nativeMismatch, nil
	case !sent && cv.reason == exitLostServer:
		return res, nativeNotSent, nil
	}
	res, err = cv.result()
	return res, nativeRan, err
}

// writeWithRights writes b, passing the descriptor in rights with its
// first byte, as imsg's msgbuf_write does.
func writeWithRights(conn *net.UnixConn, b, rights []byte) error {
	n, _, err := conn.WriteMsgUnix(b, rights, nil)
	if err != nil {
		return err
	}
	if n < len(b) {
		_, err = conn.Write(b[n:])
	}
	return err
}

// parseImsg splits one message off b: size 0 means b holds no complete
// message yet. A header tmux's imsg_get refuses is an error.
func parseImsg(b []byte) (typ uint32, data []byte, size int, err error) {
	if len(b) < imsgHeaderSize {
		return 0, nil, 0, nil
	}
	typ = binary.NativeEndian.Uint32(b)
	l := int(binary.NativeEndian.Uint16(b[4:]))
	peer := binary.NativeEndian.Uint32(b[8:])
	if l < imsgHeaderSize || l > maxImsgSize {
		return 0, nil, 0, fmt.Errorf("%w: message of %d bytes", errNativeProtocol, l)
	}
	if l > len(b) {
		return 0, nil, 0, nil
	}
	if typ != msgVersion && peer&0xff != nativeProtocolVersion {
		return 0, nil, 0, fmt.Errorf("%w: server protocol version %d in message %d", errNativeProtocol, peer&0xff, typ)
	}
	return typ, b[imsgHeaderSize:l:l], l, nil
}

// Exit reasons of client.c that a command client can reach.
const (
	exitNone = iota
	exitLostServer
	exitMessage
)

// fdObject is an open file of the emulated client process: what its
// stdin, stdout and stderr are when transport.Local runs the binary, or a
// file it opened by name.
type fdObject struct {
	refs     int
	read     bool // opened for reading
	write    bool // opened for writing
	stream   int  // 1 stdout, 2 stderr, 0 neither
	f        *os.File
	readable bool // reads return data (a file), not just end of file
}

// nativeStream is one of the client's client_files.
type nativeStream struct {
	obj   *fdObject // nil once the descriptor is closed or failed to open
	fdnum int       // which of 0, 1, 2 the descriptor is, or -1
}

// nativeConv is the client side of one command: client_dispatch_wait and
// file.c's client functions, with the client's descriptor table for 0, 1
// and 2 (file_write_open and file_read_open dup a standard descriptor and
// close it, so a second stream on it gets EBADF).
type nativeConv struct {
	proto    *nativeProtocol
	w        io.Writer
	out      []byte
	sendErr  error
	flags    uint64
	fds      [3]*fdObject
	streams  map[int32]*nativeStream
	readDone map[int32]bool // read streams that ended (MSG_READ_DONE sent)
	stdout   []byte
	stderr   []byte
	exitval  int32
	exitflag bool
	reason   int
	exitmsg  string
	done     bool
	version  bool
	open     func(path string, flag int) (*os.File, syscall.Errno, error)
}

func newNativeConv(w io.Writer, proto *nativeProtocol) *nativeConv {
	cv := &nativeConv{proto: proto, w: w, flags: clientUTF8, streams: map[int32]*nativeStream{}, readDone: map[int32]bool{}, open: nativeOpenFile}
	cv.fds[0] = &fdObject{refs: 1, read: true}
	cv.fds[1] = &fdObject{refs: 1, write: true, stream: 1}
	cv.fds[2] = &fdObject{refs: 1, write: true, stream: 2}
	return cv
}

func (cv *nativeConv) send(typ uint32, data ...[]byte) {
	cv.out = appendImsg(cv.out, typ, false, data...)
}

// flush writes the queued replies. After a failed write the client has
// lost the server; later replies are dropped.
func (cv *nativeConv) flush() error {
	if len(cv.out) == 0 || cv.sendErr != nil {
		cv.out = cv.out[:0]
		return nil
	}
	_, err := cv.w.Write(cv.out)
	cv.out = cv.out[:0]
	if err != nil {
		cv.sendErr = err
	}
	return err
}

// lost is client_dispatch(NULL): the connection ended.
func (cv *nativeConv) lost() {
	if !cv.exitflag {
		cv.reason = exitLostServer
		cv.exitval = 1
	}
	cv.done = true
}

func (cv *nativeConv) install(o *fdObject) int {
	o.refs++
	for i, f := range cv.fds {
		if f == nil {
			cv.fds[i] = o
			return i
		}
	}
	return -1
}

func (cv *nativeConv) closeFD(n int, o *fdObject) {
	if n >= 0 && cv.fds[n] == o {
		cv.fds[n] = nil
	}
	o.refs--
	if o.refs == 0 && o.f != nil {
		_ = o.f.Close()
	}
}

// closeAll closes files the emulated client still has open.
func (cv *nativeConv) closeAll() {
	for _, s := range cv.streams {
		if s.obj != nil {
			cv.closeFD(s.fdnum, s.obj)
			s.obj = nil
		}
	}
	for i, o := range cv.fds {
		if o != nil {
			cv.closeFD(i, o)
		}
	}
}

// dupStd is dup(fd) and, the client not being a control client,
// close(fd).
func (cv *nativeConv) dupStd(fd int) (*nativeStream, syscall.Errno) {
	o := cv.fds[fd]
	if o == nil {
		return nil, syscall.EBADF
	}
	s := &nativeStream{obj: o, fdnum: cv.install(o)}
	if cv.flags&clientControl == 0 {
		cv.closeFD(fd, o)
	}
	return s, 0
}

func (cv *nativeConv) emit(stream int, b []byte) error {
	if len(cv.stdout)+len(cv.stderr)+len(b) > nativeMaxOutput {
		return fmt.Errorf("tmux native: %w (%d MiB)", transport.ErrOutputTooLarge, nativeMaxOutput>>20)
	}
	if stream == 1 {
		cv.stdout = append(cv.stdout, b...)
	} else {
		cv.stderr = append(cv.stderr, b...)
	}
	return nil
}

func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func badSize(typ uint32, n int) error {
	return fmt.Errorf("%w: message %d with %d bytes", errNativeProtocol, typ, n)
}

// dispatch handles one server message as client_dispatch_wait does.
func (cv *nativeConv) dispatch(typ uint32, data []byte) error {
	ne := binary.NativeEndian
	switch typ {
	case msgExit, msgShutdown:
		if len(data) < 4 && len(data) != 0 {
			return badSize(typ, len(data))
		}
		if len(data) >= 4 {
			cv.exitval = int32(ne.Uint32(data))
		}
		if len(data) > 4 {
			cv.exitmsg = cstring(data[4 : len(data)-1])
			cv.reason = exitMessage
		}
		cv.exitflag = true
		cv.done = true
	case msgReady:
		return fmt.Errorf("%w: the server attached this client (MSG_READY)", errNativeProtocol)
	case msgVersion:
		if len(data) != 0 {
			return badSize(typ, len(data))
		}
		cv.version = true
		cv.done = true
	case msgFlags:
		if len(data) != 8 {
			return badSize(typ, len(data))
		}
		cv.flags = ne.Uint64(data)
	case msgShell:
		return fmt.Errorf("%w: unexpected MSG_SHELL", errNativeProtocol)
	case msgDetach, msgDetachKill:
		cv.send(msgExiting)
	case msgExited:
		cv.done = true
	case msgReadOpen:
		return cv.readOpen(data)
	case msgReadCancel:
		if !cv.proto.readCancel {
			return nil // not a message this release knows: ignored
		}
		return cv.readCancel(data)
	case msgWriteOpen:
		return cv.writeOpen(data)
	case msgWrite:
		if len(data) < 4 {
			return badSize(typ, len(data))
		}
		s := cv.streams[int32(ne.Uint32(data))]
		if s == nil {
			return fmt.Errorf("%w: write to unknown stream %d", errNativeProtocol, int32(ne.Uint32(data)))
		}
		return cv.write(s, data[4:])
	case msgWriteClose:
		if len(data) != 4 {
			return badSize(typ, len(data))
		}
		id := int32(ne.Uint32(data))
		s := cv.streams[id]
		if s == nil {
			return fmt.Errorf("%w: close of unknown stream %d", errNativeProtocol, id)
		}
		if s.obj != nil {
			cv.closeFD(s.fdnum, s.obj)
			s.obj = nil
		}
		delete(cv.streams, id)
	case msgOldStderr, msgOldStdin, msgOldStdout:
		if err := cv.emit(2, []byte("server version is too old for client\n")); err != nil {
			return err
		}
		cv.done = true
	}
	return nil
}

// write is file_write_data: the data goes where the stream's descriptor
// points; a write that fails closes it (file_write_error_callback).
func (cv *nativeConv) write(s *nativeStream, b []byte) error {
	o := s.obj
	if o == nil || len(b) == 0 {
		return nil
	}
	switch {
	case !o.write:
	case o.f != nil:
		if _, err := o.f.Write(b); err == nil {
			return nil
		}
	default:
		return cv.emit(o.stream, b)
	}
	cv.closeFD(s.fdnum, o)
	s.obj = nil
	return nil
}

// pathAt is the file name a file_*_open message carries after its
// header of n bytes; "-" when it has none.
func pathAt(data []byte, n int) string {
	if len(data) > n {
		return cstring(data[n:])
	}
	return "-"
}

// openStream is what file_write_open and file_read_open share: stream id
// must be new; fd -1 opens path with flags as an object like kind, a
// standard descriptor the open accepts (stdOK) is duplicated, any other
// is EBADF. A refusal is answered with reply and returns a nil stream
// (and the error of a failed open, if any).
func (cv *nativeConv) openStream(id, fd int32, stdOK bool, path string, flags int, kind fdObject, reply func(syscall.Errno)) (*nativeStream, error) {
	if cv.streams[id] != nil {
		reply(syscall.EBADF)
		return nil, nil
	}
	s := &nativeStream{fdnum: -1}
	cv.streams[id] = s
	switch {
	case fd == -1:
		f, errno, err := cv.open(path, flags)
		if err != nil {
			return nil, err
		}
		if errno != 0 {
			reply(errno)
			return nil, nil
		}
		o := &kind
		o.f = f
		s.obj, s.fdnum = o, cv.install(o)
	case !stdOK:
		reply(syscall.EBADF)
		return nil, nil
	default:
		d, errno := cv.dupStd(int(fd))
		if errno != 0 {
			reply(errno)
			return nil, nil
		}
		*s = *d
	}
	return s, nil
}

// writeOpen is file_write_open.
func (cv *nativeConv) writeOpen(data []byte) error {
	ne := binary.NativeEndian
	if len(data) < 12 {
		return badSize(msgWriteOpen, len(data))
	}
	id, fd, flags := int32(ne.Uint32(data)), int32(ne.Uint32(data[4:])), int32(ne.Uint32(data[8:]))
	reply := func(e syscall.Errno) {
		cv.send(msgWriteReady, i32(id), i32(int32(e)))
	}
	s, err := cv.openStream(id, fd, fd == 1 || fd == 2, pathAt(data, 12),
		int(flags)&(syscall.O_APPEND|syscall.O_TRUNC)|syscall.O_WRONLY|syscall.O_CREAT,
		fdObject{write: true}, reply)
	if s == nil {
		return err
	}
	reply(0)
	return nil
}

// readOpen is file_read_open, with the reading that follows: a stream
// on the client's stdin (/dev/null) or on a descriptor not open for
// reading ends at once; a file is sent whole. Either way the client then
// sends MSG_READ_DONE with error 0 (file_read_error_callback).
func (cv *nativeConv) readOpen(data []byte) error {
	ne := binary.NativeEndian
	if len(data) < 8 {
		return badSize(msgReadOpen, len(data))
	}
	id, fd := int32(ne.Uint32(data)), int32(ne.Uint32(data[4:]))
	done := func(e syscall.Errno) {
		cv.send(msgReadDone, i32(id), i32(int32(e)))
	}
	s, err := cv.openStream(id, fd, fd == 0, pathAt(data, 8), syscall.O_RDONLY,
		fdObject{read: true, readable: true}, done)
	if s == nil {
		return err
	}
	if o := s.obj; o.read && o.readable && o.f != nil {
		chunk := make([]byte, nativeMaxData-4)
		for {
			nr, err := o.f.Read(chunk)
			if nr > 0 {
				cv.send(msgRead, i32(id), chunk[:nr])
				if len(cv.out) >= 256<<10 {
					if err := cv.flush(); err != nil {
						return err
					}
				}
			}
			if err != nil || nr == 0 {
				break
			}
		}
	}
	done(0)
	cv.closeFD(s.fdnum, s.obj)
	s.obj = nil
	delete(cv.streams, id)
	cv.readDone[id] = true
	return nil
}

// readCancel is file_read_cancel (3.4 on): the server no longer wants a
// read stream's data. The client answers with MSG_READ_DONE and closes
// the stream (file_read_error_callback). readOpen has read every stream
// to its end and sent MSG_READ_DONE already, which is what the binary
// does when the cancel reaches it with the read still open (both
// messages are handled before the client's next read event); a cancel
// of a stream that never was is the client's fatalx.
func (cv *nativeConv) readCancel(data []byte) error {
	if len(data) != 4 {
		return badSize(msgReadCancel, len(data))
	}
	id := int32(binary.NativeEndian.Uint32(data))
	if !cv.readDone[id] {
		return fmt.Errorf("%w: cancel of unknown stream %d", errNativeProtocol, id)
	}
	return nil
}

// result is what client_main returns and prints once the loop ends.
func (cv *nativeConv) result() (transport.Result, error) {
	msg := ""
	switch cv.reason {
	case exitLostServer:
		msg = "server exited unexpectedly"
	case exitMessage:
		msg = cv.exitmsg
	}
	var err error
	if cv.flags&clientControl != 0 {
		line := "%exit\n"
		if cv.reason != exitNone {
			line = "%exit " + msg + "\n"
		}
		if cv.flags&clientControlControl != 0 {
			line += "\033\\"
		}
		err = cv.emit(1, []byte(line))
	} else if cv.reason != exitNone {
		err = cv.emit(2, []byte(msg+"\n"))
	}
	if err != nil {
		return transport.Result{}, err
	}
	return transport.Result{Stdout: cv.stdout, Stderr: cv.stderr, ExitCode: int(uint8(cv.exitval))}, nil
}

// nativeOpenFile opens a file the server asked the client to read or
// write by name (a hook or a nested command running source-file or
// save-buffer), as file.c does. Only directories (which read as nothing)
// and regular files that this process does not itself have open and that
// are not in /proc are opened: anything else (/dev/stdout,
// /proc/self/...) would mean this process's own descriptors rather than
// the tmux client's, and fails the call.
func nativeOpenFile(path string, flag int) (*os.File, syscall.Errno, error) {
	fd, err := syscall.Open(path, flag|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0o644)
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.EINVAL
		}
		return nil, errno, nil
	}
	f := os.NewFile(uintptr(fd), path)
	refuse := func(why string) (*os.File, syscall.Errno, error) {
		_ = f.Close()
		return nil, 0, fmt.Errorf("tmux native: the server asked the client to open %q, %s", path, why)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return refuse("which cannot be examined")
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return f, 0, nil // reading it fails at once, as in the client: no data
	case syscall.S_IFREG:
	default:
		return refuse("which is not a regular file (run it with FLEETMUX_TMUX_EXEC=1)")
	}
	var fs syscall.Statfs_t
	if err := syscall.Fstatfs(fd, &fs); err != nil || fs.Type == 0x9fa0 { // PROC_SUPER_MAGIC
		return refuse("which is in /proc (run it with FLEETMUX_TMUX_EXEC=1)")
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return refuse("and /proc/self/fd cannot be read")
	}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n == fd {
			continue
		}
		var o syscall.Stat_t
		if syscall.Fstat(n, &o) == nil && o.Dev == st.Dev && o.Ino == st.Ino {
			return refuse("which this process has open (run it with FLEETMUX_TMUX_EXEC=1)")
		}
	}
	return f, 0, nil
}
