package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// Errors of the SSH transport that callers branch on. They are wrapped
// (errors.Is) together with a message naming the host and the cause.
var (
	// ErrHostKeyUnknown: the host is not in known_hosts and
	// StrictHostKeyChecking is yes or ask. The error carries the offered key's
	// SHA256 fingerprint (see HostKeyError).
	ErrHostKeyUnknown = errors.New("host key unknown")
	// ErrHostKeyChanged: the host offered a key that differs from the one in
	// known_hosts, a revoked key, or a certificate known_hosts rejects. It
	// is always refused, whatever StrictHostKeyChecking says.
	ErrHostKeyChanged = errors.New("host key changed")
	// ErrAuth: the server refused every key offered.
	ErrAuth = errors.New("authentication failed")
	// ErrConnLost: the connection died while a call used it (the cause is
	// wrapped too: ErrUnreachable when the host stopped answering).
	ErrConnLost = errors.New("connection lost")
	// ErrClosed: the runner was closed.
	ErrClosed = errors.New("runner closed")
)

// Defaults of SSHConfig and SSHOptions.
const (
	DefaultConnectTimeout      = 10 * time.Second
	DefaultServerAliveCountMax = 3
	// DefaultMaxSessions stays below OpenSSH's default MaxSessions (10).
	DefaultMaxSessions = 8
	// DefaultKeepaliveInterval is the keepalive interval when ssh_config
	// sets no ServerAliveInterval: a controller must notice dead peers
	// whatever the user's interactive settings are.
	DefaultKeepaliveInterval = 15 * time.Second
	// DefaultMaxStreams is how many sessions streams hold on top of
	// MaxSessions: DefaultMaxSessions plus it stays below OpenSSH's 10.
	DefaultMaxStreams = 1
	// channelReserve is how many session slots the command channels leave
	// for per-command sessions (overflow, large stdin, channel start-up).
	channelReserve = 2
)

// SSHOptions tunes an SSH runner; the zero value is the default.
type SSHOptions struct {
	// MaxSessions caps the sessions open at once on the host's connection
	// (command channels included). Keep it below the server's MaxSessions.
	// 0 means DefaultMaxSessions.
	MaxSessions int
	// MaxStreams is how many session slots are kept for streams (a
	// host's wait watcher) on top of MaxSessions, so that a watcher
	// starts even while commands fill every other slot; a stream beyond
	// them takes an ordinary slot. 0 means DefaultMaxStreams; negative
	// means none.
	MaxStreams int
	// MaxChannels caps the long-lived command channels; 0 means
	// MaxSessions-2 (at least 1).
	MaxChannels int
	// PerCommand turns the command channels off: every Run opens its own
	// session, and the remote login shell starts (and reads its rc files)
	// for every command.
	PerCommand bool
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
}

// SSHState is the connection state reported by Status.
type SSHState string

// Connection states.
const (
	// SSHIdle: no connection, and the last attempt (if any) did not fail.
	SSHIdle SSHState = "idle"
	// SSHConnected: a verified, authenticated connection is up.
	SSHConnected SSHState = "connected"
	// SSHUnreachable: the last connection attempt failed.
	SSHUnreachable SSHState = "unreachable"
)

// SSHStatus is a snapshot of a runner's connection.
type SSHStatus struct {
	State          SSHState
	LastError      error         // last connect failure or connection loss; nil if none
	LastErrorAt    time.Time     // when LastError happened
	RTT            time.Duration // last keepalive round trip; 0 before the first
	ConnectedSince time.Time     // zero unless State is SSHConnected
	Channels       int           // command channels open now
}

// SSH runs argv on one host over one pooled, verified SSH connection.
//
// The connection is dialled on first use (once, however many calls race
// for it), kept alive at ServerAliveInterval, and dialled again by the next
// call after it drops. By default a command runs on a long-lived command
// channel (see channel.go), so the remote login shell starts once per
// channel instead of once per command.
//
// A command is re-sent on a new session or connection only when it provably
// never started (the dial or the session open failed, or a command channel
// died before acknowledging the request); otherwise the failure is returned.
type SSH struct {
	cfg  SSHConfig
	opts SSHOptions
	log  *slog.Logger

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the runner starts

	mu        sync.Mutex
	closed    bool
	conn      *sshConn  // live connection, or nil
	dialing   *dialCall // dial in flight, or nil
	state     SSHState
	lastErr   error
	lastErrAt time.Time
	rtt       time.Duration
}

type dialCall struct {
	done chan struct{}
	conn *sshConn
	err  error
}

var _ Runner = (*SSH)(nil)

// NewSSH returns a runner for the host cfg describes. It does not connect;
// the first Run (or Connect) does. cfg is copied.
func NewSSH(cfg *SSHConfig, opts SSHOptions) *SSH {
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	switch {
	case opts.MaxStreams == 0:
		opts.MaxStreams = DefaultMaxStreams
	case opts.MaxStreams < 0:
		opts.MaxStreams = 0
	}
	if opts.MaxChannels <= 0 {
		opts.MaxChannels = max(opts.MaxSessions-channelReserve, 1)
	}
	opts.MaxChannels = min(opts.MaxChannels, opts.MaxSessions)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &SSH{cfg: *cfg, opts: opts, ctx: ctx, cancel: cancel, state: SSHIdle}
	s.log = log.With("host", s.alias())
	return s
}

func (s *SSH) alias() string {
	if s.cfg.Alias != "" {
		return s.cfg.Alias
	}
	return s.cfg.HostName
}

// errorf formats an error with the "ssh <alias>: " prefix.
func (s *SSH) errorf(format string, args ...any) error {
	return fmt.Errorf("ssh "+s.alias()+": "+format, args...)
}

// spawn runs f in a goroutine that Close waits for. It reports false (and
// does not run f) once the runner is closed.
func (s *SSH) spawn(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Go(f)
	return true
}

// isClosed reports whether Close has been called.
func (s *SSH) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Run implements Runner. The argv is quoted with QuoteArgv; argv[0] is the
// remote binary (looked up on the remote PATH). Exit status 127 (the remote
// shell could not find argv[0]) is reported as an error wrapping
// ErrNotFound, as Local does, with the Result still filled in.
func (s *SSH) Run(ctx context.Context, argv []string, stdin []byte) (Result, error) {
	if err := checkArgv(argv); err != nil {
		return Result{}, s.errorf("%w", err)
	}
	line, err := QuoteArgv(argv)
	if err != nil {
		return Result{}, s.errorf("%w", err)
	}
	const attempts = 3
	for attempt := 1; ; attempt++ {
		c, err := s.connection(ctx)
		if err != nil {
			return Result{}, err
		}
		res, started, err := c.run(ctx, line, stdin)
		if err == nil {
			if res.ExitCode == 127 {
				return res, s.errorf("%s: %w", argv[0], ErrNotFound)
			}
			return res, nil
		}
		if ctx.Err() != nil {
			return res, s.errorf("%s: %w", argv[0], ctx.Err())
		}
		if started || attempt == attempts || errors.Is(err, ErrClosed) || errors.Is(err, ErrUnreachable) || errors.Is(err, ErrOutputTooLarge) {
			return res, s.errorf("%s: %w", argv[0], err)
		}
		s.log.Debug("command never started; retrying", "attempt", attempt, "err", err)
	}
}

// Connect dials the host now if it is not connected. Run connects on
// demand; Connect is for callers that want to check a host.
func (s *SSH) Connect(ctx context.Context) error {
	_, err := s.connection(ctx)
	return err
}

// Ping sends one keepalive request on the connection (dialling first if
// needed) and returns the round-trip time.
func (s *SSH) Ping(ctx context.Context) (time.Duration, error) {
	c, err := s.connection(ctx)
	if err != nil {
		return 0, err
	}
	rtt, err := c.ping(ctx)
	if err != nil {
		return 0, s.errorf("keepalive: %w", err)
	}
	return rtt, nil
}

// Status returns the connection state without doing any I/O.
func (s *SSH) Status() SSHStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := SSHStatus{State: s.state, LastError: s.lastErr, LastErrorAt: s.lastErrAt, RTT: s.rtt}
	if c := s.conn; c != nil && st.State == SSHConnected {
		st.ConnectedSince = c.since
		st.Channels = c.channelCount()
	}
	return st
}

// Close closes the connection, its command channels and sessions, and
// waits for every goroutine of the runner to end. Calls in flight fail.
// Close is idempotent.
func (s *SSH) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	c := s.conn
	s.mu.Unlock()
	s.cancel()
	if c != nil {
		c.close(ErrClosed)
	}
	s.wg.Wait()
	s.mu.Lock()
	s.conn = nil
	s.state = SSHIdle
	s.mu.Unlock()
	return nil
}

// connection returns the live connection, dialling once for all callers
// when there is none. The dial runs under the runner's lifetime and
// ConnectTimeout, not under ctx: a caller that gives up does not fail the
// others waiting for the same dial.
func (s *SSH) connection(ctx context.Context) (*sshConn, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, s.errorf("%w", ErrClosed)
	}
	if c := s.conn; c != nil && !c.isDead() {
		s.mu.Unlock()
		return c, nil
	}
	call := s.dialing
	if call == nil {
		call = &dialCall{done: make(chan struct{})}
		s.dialing = call
		s.wg.Go(func() { s.runDial(call) })
	}
	s.mu.Unlock()
	select {
	case <-call.done:
		return call.conn, call.err
	case <-ctx.Done():
		return nil, s.errorf("connect: %w", ctx.Err())
	}
}

func (s *SSH) runDial(call *dialCall) {
	start := time.Now()
	client, hops, err := s.dial(s.ctx)
	s.mu.Lock()
	s.dialing = nil
	if err == nil && s.closed {
		err = s.errorf("%w", ErrClosed)
		closeClients(client, hops)
	}
	if err != nil {
		call.err = err
		if !s.closed {
			s.state, s.lastErr, s.lastErrAt = SSHUnreachable, err, time.Now()
		}
		s.mu.Unlock()
		s.log.Info("connect failed", "err", err, "after", time.Since(start))
		close(call.done)
		return
	}
	c := newSSHConn(s, client, hops)
	s.conn, s.state = c, SSHConnected
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		err := client.Wait()
		if err == nil || errors.Is(err, io.EOF) {
			err = errors.New("connection closed by the server")
		}
		c.close(err)
	}()
	go func() {
		defer s.wg.Done()
		c.keepalive()
	}()
	s.mu.Unlock()
	s.log.Info("connected", "after", time.Since(start), "jumps", len(hops))
	call.conn = c
	close(call.done)
}

// connLost records that c died of err (unless the runner closed it).
func (s *SSH) connLost(c *sshConn, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != c {
		return
	}
	s.conn = nil
	if s.closed || errors.Is(err, ErrClosed) {
		return
	}
	s.state = SSHIdle
	if errors.Is(err, ErrUnreachable) {
		// The peer stopped answering: say so until a new dial succeeds.
		s.state = SSHUnreachable
	}
	s.lastErr, s.lastErrAt = s.errorf("connection lost: %w", err), time.Now()
	s.log.Info("connection lost", "err", err)
}

func (s *SSH) setRTT(d time.Duration) {
	s.mu.Lock()
	s.rtt = d
	s.mu.Unlock()
}

func closeClients(client *ssh.Client, hops []*ssh.Client) {
	if client != nil {
		client.Close()
	}
	for i := len(hops) - 1; i >= 0; i-- {
		hops[i].Close()
	}
}
