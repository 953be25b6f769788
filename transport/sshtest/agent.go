package sshtest

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetmux/fleetmux/transport/nettest"
	"golang.org/x/crypto/ssh/agent"
)

// StartAgent serves an in-memory ssh-agent holding keys (anything
// agent.AddedKey accepts: ed25519.PrivateKey, *ecdsa.PrivateKey, ...) on a
// unix socket and returns the socket path. It stops when the test ends.
func StartAgent(t testing.TB, keys ...any) string {
	t.Helper()
	ring := agent.NewKeyring()
	for _, k := range keys {
		if err := ring.Add(agent.AddedKey{PrivateKey: k}); err != nil {
			t.Fatalf("sshtest: agent add: %v", err)
		}
	}
	// Unix socket paths are limited to ~108 bytes; t.TempDir can be longer.
	dir, err := os.MkdirTemp("", "sshtest-agent")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.sock")
	t.Cleanup(func() { os.RemoveAll(dir) }) // runs after the listener's cleanup
	nettest.Listen(t, "unix", sock).Serve(func(c net.Conn) {
		agent.ServeAgent(ring, c)
		c.Close()
	})
	return sock
}
