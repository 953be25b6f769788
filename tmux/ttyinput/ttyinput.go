// Package ttyinput tells whether the program in the foreground of a tmux
// pane is waiting for the user to type: blocked reading the pane's
// terminal (a password or y/n prompt, read, cat, a REPL) rather than
// working, sleeping or waiting on its children, a pipe or the network.
//
// It judges from process and terminal state read on the pane's host, not
// from the screen: tmux.InputProbe reads /proc there in the same request
// (one round trip locally and over SSH) and Judge decides from that line.
package ttyinput

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/fleetmux/fleetmux/tmux"
)

// State is what the foreground of a pane is doing, as far as input goes.
type State string

const (
	// Line: a program reads a line from the terminal with echo on (read -p,
	// a y/n question, cat, python input()).
	Line State = "line"
	// Password: a program reads a line with echo off (a password prompt).
	Password State = "password"
	// Keys: a program reads keys one at a time (the terminal is in
	// non-canonical mode): a REPL, a line editor, a pager on the main
	// screen.
	Keys State = "keys"
	// Screen: a full-screen program on the alternate screen (vi, less,
	// top, a git commit editor) reads keys. It waits for keys all the
	// time, also while it works, so it does not count as waiting for
	// input.
	Screen State = "screen"
	// Shell: a shell at its prompt.
	Shell State = "shell"
	// Busy: the foreground runs, sleeps, or waits on its children, a pipe,
	// a file or the network.
	Busy State = "busy"
	// Unknown: this host does not let us tell (no /proc, a pane without a
	// live process, a program waiting on the terminal and a socket at
	// once such as ssh or a nested tmux client).
	Unknown State = "unknown"
)

// Waiting is the pane's waiting_for_input: true for Line, Password and
// Keys, false for Screen, Shell and Busy, nil (unknown) otherwise.
func (s State) Waiting() *bool {
	var w bool
	switch s {
	case Line, Password, Keys:
		w = true
	case Screen, Shell, Busy:
	default:
		return nil
	}
	return &w
}

// Report is the judgement of one pane.
type Report struct {
	State State
	// PID is the process that reads the terminal (0 when none does).
	PID int
}

// Waiting is r.State.Waiting().
func (r Report) Waiting() *bool { return r.State.Waiting() }

// ErrNoLine reports that the probe handed no line back (the pane's host
// could not run it, or it ran out of time).
var ErrNoLine = errors.New("ttyinput: the probe printed nothing")

// Probe reads pane (a pane id) on srv in one request and judges it;
// local says that srv runs on this machine (see NewRequest). A pane that
// is gone is the tmux error of the request.
func Probe(ctx context.Context, srv *tmux.Server, pane string, local bool) (Report, error) {
	req, err := NewRequest(pane, local)
	if err != nil {
		return Report{}, err
	}
	replies, err := srv.Batch(ctx, req.Cmds()...)
	if err != nil {
		return Report{}, fmt.Errorf("ttyinput: probe %s: %w", pane, err)
	}
	return req.Read(ctx, replies)
}

// Request is one probe of one pane: commands to run in a tmux request of
// their own or at the end of another one, and the reading of their
// replies.
//
// On a remote host (local false) the commands run the script of
// tmux.InputProbe there. On this machine (local true) they only print
// the pane's process, terminal and screen, and Read looks at /proc and
// the terminal itself: no program is started. local must be true only
// for a server of this machine's tmux (the fleet's host "local"); Read
// checks that the pane's process has the pane's terminal and says
// Unknown where it does not.
type Request struct {
	pane   string
	local  bool
	option string
}

// NewRequest prepares a probe of pane.
func NewRequest(pane string, local bool) (*Request, error) {
	if !tmux.IsPaneID(pane) {
		return nil, fmt.Errorf("ttyinput: %q is not a pane id", pane)
	}
	r := &Request{pane: pane, local: local}
	if !local {
		var tok [8]byte
		if _, err := rand.Read(tok[:]); err != nil {
			return nil, fmt.Errorf("ttyinput: option name: %w", err)
		}
		r.option = "@fleetmux_input_" + hex.EncodeToString(tok[:])
	}
	return r, nil
}

// localFormat is what a local probe asks of tmux.
const localFormat = "#{pane_id} #{pane_dead} #{pane_pid} #{pane_tty} #{alternate_on}"

// Cmds are the commands of the probe, to place last in a request.
func (r *Request) Cmds() []tmux.Cmd {
	if r.local {
		return []tmux.Cmd{tmux.DisplayMessage(r.pane, localFormat)}
	}
	return tmux.InputProbe(r.pane, r.option)
}

// Read judges the replies of a request that ends with r.Cmds().
func (r *Request) Read(ctx context.Context, replies []tmux.Reply) (Report, error) {
	_, rep, err := r.read(ctx, replies)
	return rep, err
}

// read is Read that also returns the probe line (the script's, or the
// local sample written the same way).
func (r *Request) read(ctx context.Context, replies []tmux.Reply) (string, Report, error) {
	n := len(r.Cmds())
	if len(replies) < n {
		return "", Report{}, fmt.Errorf("ttyinput: %d replies, want the probe's %d", len(replies), n)
	}
	probe := replies[len(replies)-n:]
	for _, p := range probe {
		if p.Err != nil {
			return "", Report{}, fmt.Errorf("ttyinput: probe: %w", p.Err)
		}
	}
	var out []string
	if r.local {
		out = probe[0].Lines
	} else {
		out = probe[1].Lines
	}
	if len(out) == 0 || out[0] == "" {
		return "", Report{State: Unknown}, ErrNoLine
	}
	if !r.local {
		return out[0], Judge(out[0]), nil
	}
	s, err := sampleLocal(ctx, r.pane, out[0])
	if err != nil {
		return "", Report{State: Unknown}, err
	}
	return s.String(), judgeSample(s, true), nil
}

// sample is a parsed probe line.
type sample struct {
	none      bool // the pane has no process to look at
	arch      string
	alternate bool
	canon     int // 1 canonical, 0 not, -1 unknown, -2 not asked (no member may read)
	echo      int
	panePID   int
	group     int
	procs     []proc
}

// proc is one member of the foreground group.
type proc struct {
	pid     int
	state   string
	shell   bool
	syscall []string // "-" / "running" / nr and args
	wchan   string
	ttyFDs  []int
	sockFDs []int
	arg0    string // tty, sock, pipe, other, -
	epTTY   bool
	epSock  bool
}

// maxLine bounds the probe line that is parsed.
const maxLine = 64 << 10

// parse reads a probe line; ok is false for "none" or a line it does not
// understand.
func parse(line string) (s sample, ok bool) {
	if len(line) > maxLine {
		return s, false
	}
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "fleetmux-input" || f[1] != "1" {
		return s, false
	}
	s.arch, s.alternate = f[2], f[3] == "1"
	s.canon, s.echo = flag(f[4]), flag(f[5])
	var err1, err2 error
	s.panePID, err1 = strconv.Atoi(f[6])
	s.group, err2 = strconv.Atoi(f[7])
	if err1 != nil || err2 != nil {
		return s, false
	}
	rest := f[8:]
	for len(rest) > 0 {
		if rest[0] != "@" || len(rest) < 11 {
			return s, false
		}
		p := proc{state: rest[2], shell: rest[3] == "1", syscall: strings.Split(rest[4], ","), wchan: rest[5],
			ttyFDs: ints(rest[6]), sockFDs: ints(rest[7]), arg0: rest[8], epTTY: rest[9] == "1", epSock: rest[10] == "1"}
		var err error
		if p.pid, err = strconv.Atoi(rest[1]); err != nil {
			return s, false
		}
		s.procs = append(s.procs, p)
		rest = rest[11:]
	}
	return s, true
}

func flag(s string) int {
	switch s {
	case "1":
		return 1
	case "0":
		return 0
	case "x":
		return notAsked
	}
	return -1
}

// notAsked is the terminal mode the probe did not ask for, since no
// member of the group may read the terminal.
const notAsked = -2

func ints(s string) []int {
	if s == "-" {
		return nil
	}
	var out []int
	for _, x := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(x); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// Judge decides from one probe line.
func Judge(line string) Report { return judge(line, true) }

// judge is Judge; without useSyscall it decides as on a host where
// /proc/PID/syscall cannot be read.
func judge(line string, useSyscall bool) Report {
	s, ok := parse(line)
	if !ok {
		return Report{State: Unknown}
	}
	return judgeSample(s, useSyscall)
}

// judgeSample decides from a sample, read by the script or locally.
func judgeSample(s sample, useSyscall bool) Report {
	if s.group <= 0 || s.canon == -1 || len(s.procs) == 0 {
		return Report{State: Unknown}
	}
	unknown := false
	for _, p := range s.procs {
		if !useSyscall {
			p.syscall = []string{"-"}
		}
		switch v := s.verdict(p); v {
		case reads:
			if s.canon < 0 {
				// The probe judged that no member reads the terminal
				// and did not ask its modes: it was wrong.
				return Report{State: Unknown}
			}
			return Report{State: s.kind(p), PID: p.pid}
		case unsure:
			unknown = true
		}
	}
	if unknown {
		return Report{State: Unknown}
	}
	return Report{State: Busy}
}

type verdict int

const (
	busy verdict = iota
	reads
	unsure
)

// kind names what a process that reads the terminal waits for.
func (s sample) kind(p proc) State {
	switch {
	case p.shell && (s.canon == 0 || interactive(p)):
		return Shell
	case s.canon == 0 && s.alternate:
		return Screen
	case s.canon == 0:
		return Keys
	case s.echo == 0:
		return Password
	}
	return Line
}

// interactive reports whether shell process p is an interactive one: such
// a shell keeps a copy of its terminal on a high descriptor (bash 255,
// zsh and dash 10), a shell running a script or -c does not. It tells a
// shell without a line editor (dash) at its prompt from a read builtin
// of a script; a read typed at an interactive prompt counts as the shell.
func interactive(p proc) bool {
	for _, fd := range p.ttyFDs {
		if fd >= 10 {
			return true
		}
	}
	return false
}

// verdict tells whether p is blocked reading the terminal.
func (s sample) verdict(p proc) verdict {
	if p.state != "S" {
		// Running, in uninterruptible sleep, stopped or a zombie: not
		// reading the terminal now.
		return busy
	}
	if len(p.syscall) > 1 {
		nr, err := strconv.Atoi(p.syscall[0])
		if err == nil {
			switch syscallKind(s.arch, nr) {
			case sysRead:
				if p.arg0 == "tty" {
					return reads
				}
				return busy
			case sysSelect:
				// nfds is the highest descriptor waited on plus one.
				n, err := strconv.ParseInt(p.syscall[1], 0, 64)
				if err != nil {
					return unsure
				}
				return s.waitSet(below(p.ttyFDs, n), below(p.sockFDs, n))
			case sysPoll:
				// Which descriptors are polled is in the process's memory:
				// take them all.
				return s.waitSet(len(p.ttyFDs) > 0, len(p.sockFDs) > 0)
			case sysEpoll:
				return s.waitSet(p.epTTY, p.epSock)
			case sysOther:
				return busy
			}
		}
	}
	// /proc/PID/syscall is not readable (Yama ptrace_scope, another
	// user) or the arch is not known: the kernel function it sleeps in.
	switch w := p.wchan; {
	case w == "wait_woken" || strings.HasPrefix(w, "n_tty_read"):
		// A tty read sleeps here, but so does a socket read.
		if len(p.sockFDs) == 0 && len(p.ttyFDs) > 0 {
			return reads
		}
		return unsure
	case strings.HasPrefix(w, "poll_schedule_timeout"), strings.HasPrefix(w, "do_select"),
		strings.HasPrefix(w, "do_sys_poll"), strings.HasPrefix(w, "core_sys_select"):
		return s.waitSet(len(p.ttyFDs) > 0, len(p.sockFDs) > 0)
	case strings.Contains(w, "epoll") || strings.HasPrefix(w, "ep_poll"):
		if p.arg0 == "other" {
			return s.waitSet(p.epTTY, p.epSock)
		}
		return s.waitSet(len(p.ttyFDs) > 0, len(p.sockFDs) > 0)
	case w == "" || w == "-" || w == "0":
		return unsure
	}
	return busy
}

// waitSet judges a wait on several descriptors: one that holds the
// terminal in non-canonical mode reads keys; one that also holds a
// socket is a program that relays the terminal (ssh, a tmux client):
// whether its other end waits cannot be told from here.
func (s sample) waitSet(tty, sock bool) verdict {
	switch {
	case tty && s.canon < 0:
		return unsure
	case !tty || s.canon == 1:
		return busy
	case sock:
		return unsure
	}
	return reads
}

func below(fds []int, n int64) bool {
	for _, fd := range fds {
		if int64(fd) < n {
			return true
		}
	}
	return false
}

type sysKind int

const (
	sysUnknown sysKind = iota
	sysRead
	sysSelect
	sysPoll
	sysEpoll
	sysOther
)

// syscalls maps the syscall numbers that matter per arch (uname -m):
// anything else on a known arch is sysOther.
var syscalls = map[string]map[int]sysKind{
	"x86_64": {0: sysRead, 17: sysRead, 19: sysRead, 295: sysRead, 327: sysRead,
		23: sysSelect, 270: sysSelect, 7: sysPoll, 271: sysPoll,
		232: sysEpoll, 281: sysEpoll, 441: sysEpoll},
	"aarch64": {63: sysRead, 65: sysRead, 67: sysRead, 69: sysRead, 286: sysRead,
		72: sysSelect, 73: sysPoll, 22: sysEpoll, 441: sysEpoll},
	"riscv64": {63: sysRead, 65: sysRead, 67: sysRead, 69: sysRead, 286: sysRead,
		72: sysSelect, 73: sysPoll, 22: sysEpoll, 441: sysEpoll},
	"i686": {3: sysRead, 145: sysRead, 180: sysRead, 333: sysRead,
		82: sysSelect, 142: sysSelect, 308: sysSelect, 168: sysPoll, 309: sysPoll,
		256: sysEpoll, 319: sysEpoll, 441: sysEpoll},
}

func syscallKind(arch string, nr int) sysKind {
	if arch == "i386" || arch == "i586" {
		arch = "i686"
	}
	if arch == "arm64" {
		arch = "aarch64"
	}
	t, ok := syscalls[arch]
	if !ok {
		return sysUnknown
	}
	if k, ok := t[nr]; ok {
		return k
	}
	return sysOther
}
