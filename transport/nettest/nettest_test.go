package nettest

import (
	"io"
	"net"
	"testing"
)

// TestServeClosesAtCleanup: a handler that never returns on its own is
// released by the cleanup closing its connection, and so is a tracked
// connection the handler dialled itself.
func TestServeClosesAtCleanup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		handle bool
	}{{"handler", true}, {"silent", false}} {
		t.Run(tc.name, func(t *testing.T) {
			released := make(chan error, 1)
			var peer net.Conn
			t.Run("inner", func(t *testing.T) {
				l := Listen(t, "tcp", "127.0.0.1:0")
				var handle func(net.Conn)
				if tc.handle {
					handle = func(c net.Conn) {
						_, err := io.ReadAll(c) // returns when the cleanup closes c
						released <- err
					}
				} else {
					released <- nil
				}
				l.Serve(handle)
				c, err := net.Dial("tcp", l.Addr())
				if err != nil {
					t.Fatal(err)
				}
				peer = c
				if _, err := c.Write([]byte("x")); err != nil {
					t.Fatal(err)
				}
			})
			<-released
			// The server side is closed: the client reads EOF (or a reset).
			buf := make([]byte, 1)
			if n, err := peer.Read(buf); err == nil {
				t.Fatalf("read %d bytes after cleanup, want the connection closed", n)
			}
			peer.Close()
		})
	}
}
