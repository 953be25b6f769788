package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"golang.org/x/crypto/ssh"
)

// Streamer is a runner that can also open a long-lived stream on its host
// (SSH does; fleet's runners pass it through).
type Streamer interface {
	Stream(ctx context.Context) (*Stream, error)
}

var _ Streamer = (*SSH)(nil)

// Stream is one long-lived session on the host's pooled connection,
// running sh with channelBoot: sh evaluates the first line the caller
// writes, and whatever that starts reads the rest of stdin. The login
// shell only ever sees channelCommand (built by QuoteArgv); the caller's
// text travels on stdin. What runs there dies with the stream: closing it
// closes the session's stdin, and a dropped connection closes it too.
//
// A stream holds one session slot for its whole life (one kept for
// streams where one is free, so a stream opens even while commands fill
// every ordinary slot), and while it is
// open the connection is watched as during a call (a host that stops
// answering is dropped within ConnectTimeout, and the stream ends).
type Stream struct {
	conn *sshConn
	ch   ssh.Channel
	sess *rawSession

	reserved  bool // holds a slot kept for streams, not an ordinary one
	done      chan struct{}
	closeOnce sync.Once
	stopWatch func()
}

// Stream opens a stream on the host, dialling first if needed. ctx bounds
// the opening only.
func (s *SSH) Stream(ctx context.Context) (*Stream, error) {
	c, err := s.connection(ctx)
	if err != nil {
		return nil, err
	}
	reserved, err := c.acquireStreamSlot(ctx)
	if err != nil {
		return nil, s.errorf("stream: %w", err)
	}
	release := c.releaseSlot
	if reserved {
		release = c.releaseStreamSlot
	}
	ch, reqs, err := c.openSession(ctx)
	if err != nil {
		release()
		return nil, s.errorf("stream: %w", err)
	}
	st := &Stream{conn: c, ch: ch, sess: newRawSession(ch, reqs), reserved: reserved, done: make(chan struct{})}
	ok, err := ch.SendRequest("exec", true, ssh.Marshal(struct{ Command string }{channelCommand()}))
	if err == nil && !ok {
		err = errors.New("server refused to start it")
	}
	if err != nil {
		st.sess.close()
		release()
		return nil, s.errorf("stream: exec: %w", err)
	}
	st.stopWatch = c.watch()
	if !s.spawn(func() {
		select {
		case <-st.sess.exited:
		case <-c.done:
		case <-st.done:
		}
		st.Close()
	}) {
		st.Close()
		return nil, s.errorf("stream: %w", ErrClosed)
	}
	return st, nil
}

// Write sends bytes to the remote process's stdin.
func (st *Stream) Write(p []byte) (int, error) {
	n, err := st.ch.Write(p)
	if err != nil {
		return n, fmt.Errorf("stream: write: %w", err)
	}
	return n, nil
}

// Stdout is the remote process's stdout; it ends when the stream does.
func (st *Stream) Stdout() io.Reader { return st.ch }

// Stderr is the remote process's stderr.
func (st *Stream) Stderr() io.Reader { return st.ch.Stderr() }

// Done is closed once the stream has ended (Close, the remote process
// exited, or the connection was lost).
func (st *Stream) Done() <-chan struct{} { return st.done }

// Err says why a stream ended: the connection's loss when it was lost,
// else nil.
func (st *Stream) Err() error {
	if st.conn.isDead() {
		return st.conn.deadErr()
	}
	return nil
}

// Close ends the stream (idempotent): the session closes, so the remote
// process sees EOF on stdin, and the slot is given back.
func (st *Stream) Close() error {
	st.closeOnce.Do(func() {
		close(st.done)
		st.sess.close()
		if st.stopWatch != nil {
			st.stopWatch()
		}
		if st.reserved {
			st.conn.releaseStreamSlot()
		} else {
			st.conn.releaseSlot()
		}
	})
	return nil
}

// acquireStreamSlot takes a slot kept for streams if one is free, else
// waits for either kind; reserved says which it got.
func (c *sshConn) acquireStreamSlot(ctx context.Context) (reserved bool, err error) {
	select {
	case c.streamSem <- struct{}{}:
		return true, nil
	default:
	}
	select {
	case c.streamSem <- struct{}{}:
		return true, nil
	case c.sem <- struct{}{}:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-c.done:
		return false, c.deadErr()
	}
}

// releaseStreamSlot gives back a slot kept for streams.
func (c *sshConn) releaseStreamSlot() { <-c.streamSem }
