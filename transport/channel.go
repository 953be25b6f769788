package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// Command channels: the fast path of SSH.Run.
//
// A per-command session makes sshd start the user's login shell for every
// command, and the shell reads its rc files (100 ms and more with pyenv,
// nvm or conda). A command channel is one session running a small POSIX sh
// loop (channelLoop) that reads requests on stdin and runs each argv with
// fork+exec: the login shell starts once per channel, not once per command.
//
// Protocol, per channel. The client first sends a line holding a random
// marker M (130 bits, sent on stdin so it never appears in any process's
// argv or environment); the loop answers "M r\n" on stdout and on stderr,
// after whatever the rc files printed, which the client discards. Then, per
// request:
//
//	client → loop:  "SEQ N K\n", N lines of the QuoteArgv command line
//	                (split at its newlines), K lines of stdin escaped for
//	                printf(1) (\ooo for every byte but printable ASCII)
//	loop → stdout:  "M SEQ +\n" (the command may now run), its stdout,
//	                "M SEQ STATUS\n"
//	loop → stderr:  its stderr, "M SEQ\n"
//
// The loop keeps the channel's stdin on fd 3 and runs the command in the
// background with fd 3 closed and stdin from /dev/null (or from printf when
// there is stdin); meanwhile a watcher reads fd 3, which is silent while a
// command runs: when it sees EOF (the client closed the channel, for
// instance because the caller's context ended), it kills the loop's whole
// process group (sshd makes each session a new session and group; the
// loop, the command and the command's children are in it, a tmux server
// is not: it daemonizes), so a blocking `tmux wait-for` does not hold a
// server session slot forever.
// When the command ends, the loop kills the watcher with SIGKILL (a trapped
// TERM can be lost while bash blocks in read) and reaps it with stderr
// discarded, so no "Killed" notice reaches the command's stderr.
// The login shell never parses the loop: it starts sh with channelBoot,
// which reads the loop as the first line of stdin and runs it.
const channelLoop = `exec 3<&0 </dev/null; IFS= read -r M <&3 || exit 0; nl=$(echo; echo x); nl=${nl%x}; ` +
	`echo "$M r"; echo "$M r" >&2; ` +
	`while IFS= read -r h <&3; do s=${h%% *}; r=${h#* }; n=${r%% *}; m=${r#* }; ` +
	`c=; i=0; while [ $i -lt $n ]; do IFS= read -r l <&3 || exit 0; if [ $i -eq 0 ]; then c=$l; else c=$c$nl$l; fi; i=$((i+1)); done; ` +
	`f=; i=0; while [ $i -lt $m ]; do IFS= read -r l <&3 || exit 0; f=$f$l; i=$((i+1)); done; ` +
	`echo "$M $s +"; ` +
	`if [ $m -gt 0 ]; then printf "$f" | (eval "exec $c") 3<&- & else (eval "exec $c") 3<&- & fi; p=$!; ` +
	`{ IFS= read -r x <&3; kill -9 0; } 2>/dev/null & w=$!; ` +
	`wait $p 2>/dev/null; st=$?; kill -9 $w 2>/dev/null; wait $w 2>/dev/null; ` +
	`echo "$M $s $st"; echo "$M $s" >&2; done`

// sessionLoop is what a per-command session runs (the fallback when the
// command channels are busy, and for large stdin), started like the
// channel loop by shellBoot from the first line of stdin. It reads a line
// with a count N, then the N lines of the QuoteArgv command line, and
// runs it with the rest of the session's stdin (sh's read takes no byte
// past its newline). A TERM (sent as an SSH "signal" request when the
// caller gives up or the output overflows) kills the session's whole
// process group, so no orphan keeps sshd's pipes, and the session, open.
const sessionLoop = `IFS= read -r n || exit 126; nl=$(echo; echo x); nl=${nl%x}; c=; i=0; ` +
	`while [ $i -lt $n ]; do IFS= read -r l || exit 126; if [ $i -eq 0 ]; then c=$l; else c=$c$nl$l; fi; i=$((i+1)); done; ` +
	`exec 3<&0; trap "kill -9 0" TERM HUP; (eval "exec $c") <&3 3<&- & wait $! 2>/dev/null; exit $?`

// sessionCommand is the command line that starts a per-command session.
func sessionCommand() string { return channelCommand() }

// encodeSessionInput frames sessionLoop and a command line for a
// per-command session.
func encodeSessionInput(line string) []byte {
	cmd := strings.Split(line, "\n")
	var b bytes.Buffer
	b.Grow(len(sessionLoop) + len(line) + 16)
	b.WriteString(sessionLoop)
	b.WriteByte('\n')
	fmt.Fprintf(&b, "%d\n", len(cmd))
	for _, l := range cmd {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// maxChannelStdin is the largest stdin sent through a command channel
// (the loop reads it a byte at a time); larger stdin takes a per-command
// session.
const maxChannelStdin = 64 << 10

// errChannelStart marks a channel whose loop did not come up although the
// session opened: the host cannot run it, so the connection stops trying.
var errChannelStart = errors.New("command channel did not start")

// channelBoot reads one line (channelLoop or sessionLoop) from stdin and
// runs it. It holds no quote, backslash, newline or '!', so any login
// shell (sh, bash, zsh, fish, csh/tcsh) starts it unchanged; it is all a
// login shell ever parses.
const channelBoot = `IFS= read -r s || exit 126; eval "$s"`

// channelCommand is the command line that starts the loop.
func channelCommand() string {
	line, err := QuoteArgv([]string{"sh", "-c", channelBoot})
	if err != nil {
		panic(err)
	}
	return "exec " + line
}

// encodeRequest frames one request for channelLoop.
func encodeRequest(seq int, line string, stdin []byte) []byte {
	cmd := strings.Split(line, "\n")
	in := printfLines(stdin)
	var b bytes.Buffer
	b.Grow(len(line) + 4*len(stdin) + 32)
	fmt.Fprintf(&b, "%d %d %d\n", seq, len(cmd), len(in))
	for _, l := range cmd {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	for _, l := range in {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// printfLines encodes data as printf(1) format text, in lines of at most
// about 4 KiB: printable ASCII stays as is, every other byte (and \, %, and
// a leading -, which printf could take for an option) becomes \ooo.
func printfLines(data []byte) []string {
	const maxLine = 4096
	var out []string
	var b strings.Builder
	for i, c := range data {
		if c >= 0x20 && c < 0x7f && c != '\\' && c != '%' && !(i == 0 && c == '-') {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, `\%03o`, c)
		}
		if b.Len() >= maxLine {
			out = append(out, b.String())
			b.Reset()
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// cmdChannel is one running channelLoop.
type cmdChannel struct {
	conn   *sshConn
	ch     ssh.Channel
	sess   *rawSession
	marker []byte
	seq    int

	out  chan Frame // stdout frames
	errs chan Frame // stderr frames

	ending // when and why the channel broke

	idleSince time.Time // when it last went back to the idle pool (under conn.pmu)
}

// fail marks the channel broken and closes it (idempotent). Closing the
// session closes the loop's stdin: the loop kills a running command and
// exits.
func (cc *cmdChannel) fail(err error) {
	cc.end(err, func() {
		cc.ch.Close()
		cc.conn.channelGone(cc)
	})
}

func (cc *cmdChannel) close(err error) { cc.fail(err) }

// readFrames splits r at marker lines and delivers the frames until the
// stream ends or the channel dies.
func (cc *cmdChannel) readFrames(r io.Reader, dst chan<- Frame) {
	_, err := SplitFrames(r, cc.marker, func(f Frame) bool {
		select {
		case dst <- f:
			return true
		case <-cc.done:
			return false
		}
	})
	switch {
	case err == nil:
	case err == io.EOF:
		cc.fail(errors.New("remote command loop closed its output"))
	default:
		// Over the limit the loop is desynchronised by now: drop the
		// channel.
		cc.fail(err)
	}
}

// startChannel opens a session and starts channelLoop in it. The caller
// holds a session slot for it and has counted it in nchan; on failure both
// are given back here.
func (c *sshConn) startChannel(ctx context.Context) (*cmdChannel, error) {
	sch, reqs, err := c.openSession(ctx)
	if err != nil {
		c.pmu.Lock()
		c.nchan--
		c.pmu.Unlock()
		c.releaseSlot()
		return nil, err
	}
	return c.startLoop(ctx, sch, reqs)
}

// startLoop starts channelLoop on an open session channel and waits until
// it is ready.
func (c *sshConn) startLoop(ctx context.Context, sch ssh.Channel, reqs <-chan *ssh.Request) (*cmdChannel, error) {
	cc := &cmdChannel{
		conn:   c,
		ch:     sch,
		sess:   newRawSession(sch, reqs),
		marker: NewMarker(),
		out:    make(chan Frame),
		errs:   make(chan Frame),
		ending: ending{done: make(chan struct{})},
	}
	ok := c.s.spawn(func() { cc.readFrames(sch, cc.out) }) &&
		c.s.spawn(func() { cc.readFrames(sch.Stderr(), cc.errs) }) &&
		c.s.spawn(func() {
			select {
			case <-cc.sess.exited:
				cc.fail(errors.New("remote command loop exited"))
			case <-cc.done:
			}
		})
	if !ok {
		cc.fail(ErrClosed)
		return nil, ErrClosed
	}
	stop := context.AfterFunc(ctx, func() { cc.fail(ctx.Err()) })
	defer stop()
	timer := time.NewTimer(connectTimeout(&c.s.cfg))
	defer timer.Stop()

	started, err := sch.SendRequest("exec", true, ssh.Marshal(struct{ Command string }{channelCommand()}))
	if err == nil && !started {
		err = errors.New("server refused to start it")
	}
	if err == nil {
		_, err = sch.Write([]byte(channelLoop + "\n" + string(cc.marker) + "\n"))
	}
	for ready := 0; err == nil && ready < 2; {
		select {
		case f := <-cc.out:
			if f.Trailer == "r" {
				ready++
			}
		case f := <-cc.errs:
			if f.Trailer == "r" {
				ready++
			}
		case <-cc.done:
			err = cc.err
		case <-timer.C:
			err = fmt.Errorf("no answer within %s", connectTimeout(&c.s.cfg))
		}
	}
	if err != nil {
		cc.fail(err)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if c.isDead() {
			return nil, c.deadErr()
		}
		return nil, fmt.Errorf("%w: %w", errChannelStart, err)
	}
	return cc, nil
}

// run runs one command line on the channel. started is false only when
// the loop provably did not begin the command (no acknowledgement).
func (cc *cmdChannel) run(ctx context.Context, line string, stdin []byte) (Result, bool, error) {
	cc.seq++
	seq := strconv.Itoa(cc.seq)
	stop := context.AfterFunc(ctx, func() { cc.fail(ctx.Err()) })
	defer stop()
	if _, err := cc.ch.Write(encodeRequest(cc.seq, line, stdin)); err != nil {
		cc.fail(err)
		return Result{}, false, fmt.Errorf("command channel: %w", err)
	}
	var res Result
	started, acked, gotOut, gotErr := false, false, false, false
	protocolErr := func(what string, f Frame) (Result, bool, error) {
		err := fmt.Errorf("command channel: unexpected %s frame %q for request %s", what, f.Trailer, seq)
		cc.fail(err)
		return res, started, err
	}
	for !gotOut || !gotErr {
		select {
		case f := <-cc.out:
			if !acked {
				if f.Trailer != seq+" +" {
					return protocolErr("stdout", f)
				}
				started, acked = true, true
				continue
			}
			st, ok := strings.CutPrefix(f.Trailer, seq+" ")
			code, err := strconv.Atoi(st)
			if !ok || err != nil {
				return protocolErr("stdout", f)
			}
			res.Stdout, res.ExitCode, gotOut = f.Data, code, true
		case f := <-cc.errs:
			if f.Trailer != seq {
				return protocolErr("stderr", f)
			}
			res.Stderr, gotErr, started = f.Data, true, true
		case <-cc.done:
			if ctx.Err() != nil {
				return res, started, ctx.Err()
			}
			if errors.Is(cc.err, ErrOutputTooLarge) {
				return Result{}, started, cc.err
			}
			return res, started, fmt.Errorf("command channel: %w", cc.err)
		}
	}
	return res, true, nil
}

// overflowDelay is how long a call waits for a busy command channel before
// it takes a per-command session instead: channels usually free up within
// milliseconds, and a per-command session costs a login shell start; but a
// pool full of blocking commands (tmux wait-for) must not stall the rest.
// A variable so that a test can take the timing out of what it checks.
var overflowDelay = 50 * time.Millisecond

// acquire returns an idle command channel, starts a new one while the pool
// is below MaxChannels, or, when the pool has been full and busy for
// overflowDelay (or channels do not work on this host), takes a session
// slot for the per-command path and returns nil. "Busy for overflowDelay"
// means every channel has been running its command that long (blocking
// commands such as tmux wait-for): behind a queue of short commands, or
// while a channel of the pool is still starting, a call waits its turn,
// since a per-command session costs the same login shell as a channel,
// for one command (a burst of twenty calls took four of them).
func (c *sshConn) acquire(ctx context.Context) (*cmdChannel, error) {
	var overflow <-chan time.Time
	for {
		if c.isDead() {
			return nil, c.deadErr()
		}
		c.pmu.Lock()
		if n := len(c.idle); n > 0 {
			cc := c.idle[n-1]
			c.idle = c.idle[:n-1]
			c.lastTake = time.Now()
			c.pmu.Unlock()
			return cc, nil
		}
		wake := c.changed
		if !c.noChannels && c.nchan < c.s.opts.MaxChannels {
			select {
			case c.sem <- struct{}{}:
				c.nchan++
				c.starting++
				c.pmu.Unlock()
				cc, err := c.startChannel(ctx)
				c.pmu.Lock()
				c.starting--
				c.lastTake = time.Now()
				c.broadcastLocked()
				c.pmu.Unlock()
				if err == nil {
					return cc, nil
				}
				if !errors.Is(err, errChannelStart) {
					return nil, err
				}
				c.pmu.Lock()
				if !c.noChannels {
					c.noChannels = true
					c.s.log.Warn("command channels unavailable; using a session per command", "err", err)
				}
				c.pmu.Unlock()
				continue
			default:
			}
		} else if c.noChannels || c.starting == 0 {
			// Every channel is busy; the newest has been since lastTake.
			if wait := overflowDelay - time.Since(c.lastTake); c.noChannels || wait <= 0 {
				select {
				case c.sem <- struct{}{}:
					c.pmu.Unlock()
					return nil, nil
				default:
				}
			} else if overflow == nil {
				overflow = time.After(wait)
			}
		}
		c.pmu.Unlock()
		select {
		case <-wake:
		case <-overflow:
			overflow = nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
		}
	}
}

// put returns a channel to the idle pool after a call.
func (c *sshConn) put(cc *cmdChannel) {
	if cc.isDead() {
		return
	}
	c.pmu.Lock()
	if c.isDead() {
		c.pmu.Unlock()
		cc.fail(c.err)
		return
	}
	cc.idleSince = time.Now()
	c.idle = append(c.idle, cc)
	c.broadcastLocked()
	c.pmu.Unlock()
}

// idleChannelTTL is how long a command channel may sit unused before it
// is closed; the connection keeps at least one warm channel.
const idleChannelTTL = 2 * time.Minute

// trimIdle closes the channels idle for longer than ttl, but the last
// one: a burst of calls opens several channels (sessions on the host)
// that need not stay open for ever.
func (c *sshConn) trimIdle(ttl time.Duration) {
	cutoff := time.Now().Add(-ttl)
	var stale []*cmdChannel
	c.pmu.Lock()
	// The idle pool is a stack: the oldest are first. They leave the pool
	// before they are closed, so no call can pick one up meanwhile.
	for len(c.idle) > 1 && c.idle[0].idleSince.Before(cutoff) {
		stale = append(stale, c.idle[0])
		c.idle = c.idle[1:]
	}
	c.pmu.Unlock()
	for _, cc := range stale {
		cc.fail(errors.New("closed after being idle"))
	}
}

// channelGone forgets a dead channel and frees its session slot.
func (c *sshConn) channelGone(cc *cmdChannel) {
	c.pmu.Lock()
	for i, x := range c.idle {
		if x == cc {
			c.idle = append(c.idle[:i], c.idle[i+1:]...)
			break
		}
	}
	c.nchan--
	c.pmu.Unlock()
	c.releaseSlot()
}

func (c *sshConn) channelCount() int {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return c.nchan
}
