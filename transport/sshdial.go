package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/user"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// dial connects to the host through its ProxyJump hops, first hop first,
// each hop verified and authenticated with its own settings. The whole
// chain is bounded by the host's ConnectTimeout, each hop also by its own.
func (s *SSH) dial(ctx context.Context) (*ssh.Client, []*ssh.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout(&s.cfg))
	defer cancel()
	var hops []*ssh.Client
	var via *ssh.Client
	for i, hop := range s.cfg.Jumps {
		c, err := s.dialHop(ctx, via, hop)
		if err != nil {
			closeClients(nil, hops)
			return nil, nil, s.errorf("jump host %d (%s): %w", i+1, cfgName(hop), err)
		}
		hops = append(hops, c)
		via = c
	}
	c, err := s.dialHop(ctx, via, &s.cfg)
	if err != nil {
		closeClients(nil, hops)
		return nil, nil, s.errorf("%w", err)
	}
	return c, hops, nil
}

func connectTimeout(cfg *SSHConfig) time.Duration {
	if cfg.ConnectTimeout > 0 {
		return cfg.ConnectTimeout
	}
	return DefaultConnectTimeout
}

func cfgName(cfg *SSHConfig) string {
	if cfg.Alias != "" {
		return cfg.Alias
	}
	return cfg.HostName
}

func cfgAddr(cfg *SSHConfig) string {
	port := cfg.Port
	if port == 0 {
		port = 22
	}
	return net.JoinHostPort(cfg.HostName, strconv.Itoa(port))
}

// dialHop opens one verified, authenticated connection to cfg's host,
// directly or through via. The TCP connect and the handshake are bounded by
// ctx and cfg's ConnectTimeout: ssh.ClientConfig.Timeout covers only the
// TCP connect, so the conn is closed when the deadline passes (and given a
// deadline too, when it supports one).
func (s *SSH) dialHop(ctx context.Context, via *ssh.Client, cfg *SSHConfig) (*ssh.Client, error) {
	timeout := connectTimeout(cfg)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := cfgAddr(cfg)

	hk, err := newHostKeyChecker(cfg, s.log)
	if err != nil {
		return nil, err
	}
	login := cfg.User
	if login == "" {
		u, err := user.Current()
		if err != nil {
			return nil, fmt.Errorf("no User and no current user: %w", err)
		}
		login = u.Username
	}
	auth, err := newAuth(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer auth.close()

	var nc net.Conn
	if via == nil {
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", addr)
	} else {
		nc, err = via.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("connect %s: no connection within %s: %w", addr, timeout, ErrUnreachable)
		}
		return nil, fmt.Errorf("connect %s: %w: %w", addr, ErrUnreachable, err)
	}
	nc = &readFailClosesWrites{Conn: nc}
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl) // unsupported on jump channels; the AfterFunc covers them
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	ccfg := &ssh.ClientConfig{
		User:              login,
		Auth:              auth.methods,
		HostKeyCallback:   hk.check,
		HostKeyAlgorithms: hk.algorithms(),
		Timeout:           timeout,
	}
	conn, chans, reqs, err := ssh.NewClientConn(nc, addr, ccfg)
	if !stop() {
		// ctx ended while (or right after) handshaking: nc is closed.
		if err == nil {
			conn.Close()
		}
		if hkErr := hk.failure(); hkErr != nil {
			return nil, hkErr
		}
		return nil, fmt.Errorf("connect %s: no SSH handshake within %s: %w", addr, timeout, ErrUnreachable)
	}
	if err != nil {
		var ne net.Error
		if hk.failure() == nil && errors.As(err, &ne) && ne.Timeout() {
			return nil, fmt.Errorf("connect %s: no SSH handshake within %s: %w: %w", addr, timeout, ErrUnreachable, err)
		}
		return nil, classifyHandshake(addr, err, hk, auth)
	}
	nc.SetDeadline(time.Time{})
	return ssh.NewClient(conn, chans, reqs), nil
}

// classifyHandshake turns a failed handshake into an error that wraps the
// matching sentinel.
func classifyHandshake(addr string, err error, hk *hostKeyChecker, auth *authSetup) error {
	if hkErr := hk.failure(); hkErr != nil {
		return hkErr
	}
	msg := err.Error()
	// x/crypto/ssh has no typed error for these two.
	if strings.Contains(msg, "unable to authenticate") || strings.Contains(msg, "Too many authentication failures") {
		detail := fmt.Sprintf("%s: server refused the keys offered (%s)", addr, auth.describe())
		return fmt.Errorf("%s: %w: %w", detail, ErrAuth, err)
	}
	return fmt.Errorf("handshake with %s: %w: %w", addr, ErrUnreachable, err)
}

// readFailClosesWrites makes every write fail once a read has failed.
//
// x/crypto/ssh's reader, on a connection the peer closed, closes its
// packet queue before it marks writes as failed; in that gap the mux has
// already dropped its channels, and an OpenChannel that joins then sends
// its request on the still-writable socket and waits for an answer that
// never comes: its goroutine is blocked for good (TestSoak saw five after
// hosts were restarted under load). Failing writes from the moment a read
// fails closes the gap: that OpenChannel's send fails and it returns.
type readFailClosesWrites struct {
	net.Conn
	readErr atomic.Pointer[error]
}

func (c *readFailClosesWrites) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.readErr.CompareAndSwap(nil, &err)
	}
	return n, err
}

func (c *readFailClosesWrites) Write(p []byte) (int, error) {
	if e := c.readErr.Load(); e != nil {
		return 0, fmt.Errorf("ssh connection: write after the read side failed: %w", *e)
	}
	return c.Conn.Write(p)
}
