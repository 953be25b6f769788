// Package nettest is the test suites' stand-in network peer: a listener
// on a private socket that accepts connections, hands each to a handler
// and closes everything when the test ends.
package nettest

import (
	"net"
	"sync"
	"testing"
)

// Listener is a listener owned by one test. Its connections, and any
// other connection handed to Track, close at the test's cleanup, which
// then waits for every handler to return.
type Listener struct {
	ln     net.Listener
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
	wg     sync.WaitGroup
}

// Listen listens on network/address (t.Fatal on error) and registers the
// cleanup; call Serve to start accepting.
func Listen(t testing.TB, network, address string) *Listener {
	t.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	l := &Listener{ln: ln}
	t.Cleanup(l.close)
	return l
}

// Addr is the listener's address (host:port, or the socket path).
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Serve accepts connections until the test ends, tracks each and hands it
// to handle in its own goroutine; a nil handle leaves the connection open
// and silent until the cleanup closes it.
func (l *Listener) Serve(handle func(net.Conn)) {
	l.wg.Go(func() {
		for {
			c, err := l.ln.Accept()
			if err != nil {
				return
			}
			l.Track(c)
			if handle != nil {
				l.wg.Go(func() { handle(c) })
			}
		}
	})
}

// Track has c closed at the cleanup (at once when the cleanup has run).
func (l *Listener) Track(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = c.Close()
		return
	}
	l.conns = append(l.conns, c)
}

func (l *Listener) close() {
	_ = l.ln.Close()
	l.mu.Lock()
	l.closed = true
	for _, c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}
