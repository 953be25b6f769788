package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// openRetryLimit bounds how long a session open is retried while the
// server refuses it for lack of slots (a slot of a cancelled command is only
// freed when that command exits on the server).
const openRetryLimit = 15 * time.Second

// sshConn is one connection to the host (through its jump hosts) and
// everything multiplexed on it.
type sshConn struct {
	s      *SSH
	client *ssh.Client
	hops   []*ssh.Client
	since  time.Time

	// sem holds one token per open session: command channels and
	// per-command sessions alike.
	sem chan struct{}
	// streamSem holds one token per stream in a slot kept for streams
	// (SSHOptions.MaxStreams), on top of sem.
	streamSem chan struct{}

	ending // when and why the connection died

	pmu        sync.Mutex
	idle       []*cmdChannel // channels ready for a command
	nchan      int           // channels open (idle, busy or starting)
	starting   int           // channels being started
	lastTake   time.Time     // when a channel was last handed to a call
	changed    chan struct{} // closed and replaced when a slot or channel frees
	noChannels bool          // a channel failed to start: per-command only
}

func newSSHConn(s *SSH, client *ssh.Client, hops []*ssh.Client) *sshConn {
	return &sshConn{
		s:         s,
		client:    client,
		hops:      hops,
		since:     time.Now(),
		sem:       make(chan struct{}, s.opts.MaxSessions),
		streamSem: make(chan struct{}, s.opts.MaxStreams),
		ending:    ending{done: make(chan struct{})},
		changed:   make(chan struct{}),
	}
}

// ending is an end that comes once: done is closed when it comes, and
// err, set before, says why. A connection and a command channel embed it.
type ending struct {
	done chan struct{}
	once sync.Once
	err  error
}

func (e *ending) isDead() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// end records err as the cause, closes done and runs then, the first time
// only.
func (e *ending) end(err error, then func()) {
	e.once.Do(func() {
		e.err = err
		close(e.done)
		then()
	})
}

// close tears the connection down (idempotent); err is the cause.
func (c *sshConn) close(err error) {
	c.end(err, func() {
		closeClients(c.client, c.hops)
		c.pmu.Lock()
		idle := c.idle
		c.idle = nil
		c.broadcastLocked()
		c.pmu.Unlock()
		for _, ch := range idle {
			ch.close(err)
		}
		c.s.connLost(c, err)
	})
}

// deadErr is the error for work that found the connection dead.
func (c *sshConn) deadErr() error {
	<-c.done
	return fmt.Errorf("%w: %w", ErrConnLost, c.err)
}

func (c *sshConn) broadcastLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// releaseSlot returns a session token and wakes waiters.
func (c *sshConn) releaseSlot() {
	<-c.sem
	c.pmu.Lock()
	c.broadcastLocked()
	c.pmu.Unlock()
}

// acquireSlot takes a session token, waiting for one.
func (c *sshConn) acquireSlot(ctx context.Context) error {
	select {
	case c.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return c.deadErr()
	}
}

// run runs one quoted command line. started reports whether the command
// may have begun on the server (if false, it certainly did not).
func (c *sshConn) run(ctx context.Context, line string, stdin []byte) (res Result, started bool, err error) {
	stop := c.watch()
	defer stop()
	defer func() {
		// A call that failed because the connection died reports why it
		// died (for instance: the host stopped answering).
		if err != nil && ctx.Err() == nil && c.isDead() && !errors.Is(err, ErrOutputTooLarge) {
			err = c.deadErr()
		}
	}()
	if c.s.opts.PerCommand || len(stdin) > maxChannelStdin {
		if err := c.acquireSlot(ctx); err != nil {
			return Result{}, false, err
		}
		defer c.releaseSlot()
		return c.runSession(ctx, line, stdin)
	}
	ch, err := c.acquire(ctx)
	if err != nil {
		return Result{}, false, err
	}
	if ch == nil { // overflow: a session slot for the per-command path
		defer c.releaseSlot()
		return c.runSession(ctx, line, stdin)
	}
	res, started, err = ch.run(ctx, line, stdin)
	c.put(ch)
	return res, started, err
}

// replyTimeout is how long the host may stay silent while a call waits
// on it: the ConnectTimeout of its ssh_config, or DefaultConnectTimeout.
func (c *sshConn) replyTimeout() time.Duration { return connectTimeout(&c.s.cfg) }

// watch guards one call in flight: every half replyTimeout it sends a
// keepalive request, and if the host does not answer within the other
// half, the connection is declared dead (ErrUnreachable) and dropped, so
// the call, and every other call on the connection, fails at once and the
// next call dials again. A frozen host thus costs a call at most about
// replyTimeout, while a legitimately long command (tmux wait-for) goes on
// as long as the host answers. The returned function ends the watch.
func (c *sshConn) watch() func() {
	d := c.replyTimeout()
	done := make(chan struct{})
	if !c.s.spawn(func() {
		t := time.NewTimer(d / 2)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-c.done:
				return
			case <-t.C:
			}
			if !c.probe(d/2, done) {
				c.close(fmt.Errorf("%w: no reply within %s", ErrUnreachable, d))
				return
			}
			t.Reset(d / 2)
		}
	}) {
		return func() {}
	}
	return func() { close(done) }
}

// probe sends one keepalive request and reports whether the host answered
// within d (or the watched call ended first, or the connection is gone).
func (c *sshConn) probe(d time.Duration, done <-chan struct{}) bool {
	reply := make(chan error, 1)
	start := time.Now()
	if !c.s.spawn(func() {
		_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
		reply <- err
	}) {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-reply:
		if err == nil {
			c.s.setRTT(time.Since(start))
		}
		return err == nil
	case <-done:
		return true
	case <-c.done:
		return true
	case <-t.C:
		return false
	}
}

// openSession opens a session channel. While the server refuses for lack of
// session slots, it retries with backoff. A connection-level failure closes
// the connection so that the caller's retry redials.
func (c *sshConn) openSession(ctx context.Context) (ssh.Channel, <-chan *ssh.Request, error) {
	deadline := time.Now().Add(openRetryLimit)
	wait := 10 * time.Millisecond
	for {
		ch, reqs, err := c.openChannel(ctx)
		if err == nil {
			return ch, reqs, nil
		}
		var oce *ssh.OpenChannelError
		if !errors.As(err, &oce) {
			if ctx.Err() == nil {
				c.close(fmt.Errorf("open session: %w", err))
			}
			return nil, nil, err
		}
		if (oce.Reason != ssh.ConnectionFailed && oce.Reason != ssh.ResourceShortage) || time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("open session: %w", err)
		}
		c.s.log.Debug("session refused; retrying", "err", err, "wait", wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-c.done:
			return nil, nil, c.deadErr()
		}
		wait = min(wait*2, 200*time.Millisecond)
	}
}

// openChannel is client.OpenChannel("session") bounded by ctx. A channel
// that opens after ctx gave up is closed.
func (c *sshConn) openChannel(ctx context.Context) (ssh.Channel, <-chan *ssh.Request, error) {
	type result struct {
		ch   ssh.Channel
		reqs <-chan *ssh.Request
		err  error
	}
	out := make(chan result)
	abandon := make(chan struct{})
	if c.s.isClosed() {
		return nil, nil, ErrClosed
	}
	// Not spawned with c.s.spawn, so Close does not wait for it:
	// x/crypto's OpenChannel can block forever when the connection's
	// reader has already ended (its channel list was dropped before this
	// channel joined it, so nothing ever answers or closes it). Seen in
	// TestSoak: SSH.Close waited 13 minutes. The goroutine ends as soon as
	// OpenChannel returns; abandon lets it end without a receiver.
	go func() {
		ch, reqs, err := c.client.OpenChannel("session", nil)
		select {
		case out <- result{ch, reqs, err}:
		case <-abandon:
			if ch != nil {
				ch.Close()
				go ssh.DiscardRequests(reqs)
			}
		}
	}()
	select {
	case r := <-out:
		return r.ch, r.reqs, r.err
	case <-ctx.Done():
		close(abandon)
		return nil, nil, ctx.Err()
	case <-c.done:
		close(abandon)
		return nil, nil, c.deadErr()
	}
}

// runSession runs line on a new session: the per-command path. The caller
// holds a session slot.
func (c *sshConn) runSession(ctx context.Context, line string, stdin []byte) (Result, bool, error) {
	ch, reqs, err := c.openSession(ctx)
	if err != nil {
		return Result{}, false, err
	}
	sess := newRawSession(ch, reqs)
	defer sess.close()
	// abort makes the session end now: a TERM to sessionLoop kills the
	// command's process group (sshd closes the session only once every
	// process holding its pipes is gone), then the channel is closed.
	var abortOnce sync.Once
	aborted := make(chan struct{})
	abort := func() {
		abortOnce.Do(func() {
			close(aborted)
			_, _ = ch.SendRequest("signal", false, ssh.Marshal(struct{ Signal string }{"TERM"}))
			sess.close()
		})
	}
	stop := context.AfterFunc(ctx, abort)
	defer stop()
	budget := newOutputBudget()
	budget.onExceed = abort
	stdout, stderr := &boundedBuffer{budget: budget}, &boundedBuffer{budget: budget}
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); _, _ = io.Copy(stdout, ch) }()
	go func() { defer copies.Done(); _, _ = io.Copy(stderr, ch.Stderr()) }()
	// The login shell only ever sees sessionCommand, which holds no quote,
	// backslash, newline or '!': whatever the shell (sh, bash, zsh, fish,
	// tcsh), it starts sh. The quoted command line travels on stdin.
	ok, err := ch.SendRequest("exec", true, ssh.Marshal(struct{ Command string }{sessionCommand()}))
	if err != nil || !ok {
		sess.close()
		copies.Wait()
		if ctx.Err() != nil {
			return Result{}, true, ctx.Err()
		}
		if err == nil {
			// The server refused to run it: it certainly did not start, but
			// another attempt would be refused as well.
			return Result{}, true, errors.New("server refused to run the command")
		}
		return Result{}, true, fmt.Errorf("exec: %w", err)
	}
	stdinDone := make(chan struct{})
	go func() {
		defer close(stdinDone)
		if _, err := ch.Write(encodeSessionInput(line)); err == nil && stdin != nil {
			ch.Write(stdin)
		}
		ch.CloseWrite()
	}()
	// stdout and stderr reach EOF when the command's end closes them.
	finished := make(chan struct{})
	go func() {
		copies.Wait()
		<-sess.exited
		<-stdinDone // a write blocked on a command that never read stdin fails once closed
		close(finished)
	}()
	select {
	case <-finished:
	case <-aborted:
		// The server closes the channel once the killed command is gone; a
		// server that does not is not waited for beyond the reply timeout
		// (what is left ends with the connection).
		select {
		case <-finished:
		case <-time.After(c.replyTimeout()):
		case <-c.done:
		}
		if budget.exceeded() {
			return Result{}, true, errOutputTooLarge()
		}
		if ctx.Err() != nil {
			return Result{}, true, ctx.Err()
		}
		return Result{}, true, errors.New("session aborted")
	}
	status, err := sess.wait()
	sess.close()
	res := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: status}
	if budget.exceeded() {
		return Result{}, true, errOutputTooLarge()
	}
	if ctx.Err() != nil {
		return res, true, ctx.Err()
	}
	if err != nil {
		return res, true, err
	}
	return res, true, nil
}

// rawSession tracks the requests of a session channel: exit-status and
// exit-signal end it; anything else that wants a reply is refused, as
// OpenSSH does.
type rawSession struct {
	ch        ssh.Channel
	exited    chan struct{} // closed when the request stream ends
	status    int           // valid after exited
	gotStatus bool
	closeOnce sync.Once
}

func newRawSession(ch ssh.Channel, reqs <-chan *ssh.Request) *rawSession {
	r := &rawSession{ch: ch, exited: make(chan struct{}), status: -1}
	go func() {
		defer close(r.exited)
		for req := range reqs {
			switch req.Type {
			case "exit-status":
				if len(req.Payload) >= 4 {
					r.status = int(binary.BigEndian.Uint32(req.Payload))
					r.gotStatus = true
				}
			case "exit-signal":
				var sig struct {
					Signal     string
					CoreDumped bool
					Error      string
					Lang       string
				}
				if ssh.Unmarshal(req.Payload, &sig) == nil && !r.gotStatus {
					r.status = 128 + signalNumber(sig.Signal)
					r.gotStatus = true
				}
			}
			if req.WantReply {
				req.Reply(false, nil)
			}
		}
	}()
	return r
}

// wait returns the exit status once the channel is closed.
func (r *rawSession) wait() (int, error) {
	<-r.exited
	if !r.gotStatus {
		return -1, errors.New("connection lost before the command's exit status arrived")
	}
	return r.status, nil
}

func (r *rawSession) close() {
	r.closeOnce.Do(func() { r.ch.Close() })
}

// signalNumber maps an SSH signal name to its (Linux) number, as
// x/crypto/ssh does for Waitmsg.ExitStatus.
func signalNumber(name string) int {
	switch name {
	case "ABRT":
		return 6
	case "ALRM":
		return 14
	case "FPE":
		return 8
	case "HUP":
		return 1
	case "ILL":
		return 4
	case "INT":
		return 2
	case "KILL":
		return 9
	case "PIPE":
		return 13
	case "QUIT":
		return 3
	case "SEGV":
		return 11
	case "TERM":
		return 15
	case "USR1":
		return 10
	case "USR2":
		return 12
	}
	return 0
}

// keepalive sends keepalive@openssh.com every ServerAliveInterval and
// closes the connection after ServerAliveCountMax unanswered ones. Any
// reply, even a refusal, proves the connection alive. One probe is sent at
// once to measure the round trip, whatever the interval.
func (c *sshConn) keepalive() {
	interval := c.s.cfg.ServerAliveInterval
	if interval <= 0 {
		interval = DefaultKeepaliveInterval
	}
	maxMissed := c.s.cfg.ServerAliveCountMax
	if maxMissed <= 0 {
		maxMissed = DefaultServerAliveCountMax
	}
	replies := make(chan error, 1)
	send := func() {
		start := time.Now()
		// c is live, so the runner is not past Close's Wait.
		c.s.wg.Go(func() {
			_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
			if err == nil {
				c.s.setRTT(time.Since(start))
			}
			replies <- err
		})
	}
	send()
	outstanding := true
	t := time.NewTicker(interval)
	defer t.Stop()
	tick := t.C
	missed := 0
	for {
		select {
		case <-c.done:
			if outstanding {
				<-replies
			}
			return
		case err := <-replies:
			outstanding = false
			if err != nil {
				c.close(fmt.Errorf("keepalive: %w", err))
				continue
			}
			missed = 0
		case <-tick:
			c.trimIdle(idleChannelTTL)
			if !outstanding {
				send()
				outstanding = true
				continue
			}
			missed++
			if missed >= maxMissed {
				c.close(fmt.Errorf("no answer to %d keepalives at %s intervals", missed, interval))
			}
		}
	}
}

// ping sends one keepalive and returns its round trip.
func (c *sshConn) ping(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	out := make(chan error, 1)
	if !c.s.spawn(func() {
		_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
		out <- err
	}) {
		return 0, ErrClosed
	}
	select {
	case err := <-out:
		if err != nil {
			return 0, err
		}
		d := time.Since(start)
		c.s.setRTT(d)
		return d, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}
