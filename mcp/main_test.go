package mcp

import (
	"os"
	"testing"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
)

// TestMain removes the socket files of the tmux servers the tests
// started (tmux leaves them behind when its server exits).
func TestMain(m *testing.M) {
	code := m.Run()
	tmuxtest.SweepSockets(os.Getpid())
	os.Exit(code)
}
