package transport

import (
	"errors"
	"io"
	"net"
	"testing"
)

// TestReadFailClosesWrites: once a read fails (the peer closed), every
// write fails too, although the socket itself would still take it.
func TestReadFailClosesWrites(t *testing.T) {
	a, b := net.Pipe()
	c := &readFailClosesWrites{Conn: a}
	go func() { b.Write([]byte("x")); b.Close() }()
	buf := make([]byte, 4)
	if n, err := c.Read(buf); n != 1 || err != nil {
		t.Fatalf("first read: %d %v", n, err)
	}
	if _, err := c.Read(buf); !errors.Is(err, io.EOF) {
		t.Fatalf("second read: %v, want EOF", err)
	}
	_, err := c.Write([]byte("open channel"))
	if !errors.Is(err, io.EOF) {
		t.Fatalf("write after a failed read: %v, want an error wrapping EOF", err)
	}
}
