// Package tmuxtest holds helpers for tests that start tmux servers.
package tmuxtest

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

// EnvBin names the variable that picks the tmux binary the tests run: a
// path or a name on PATH (e.g. a binary .ci/tmux-versions.sh built). Unset,
// the tests run "tmux" from PATH.
const EnvBin = "FLEETMUX_TEST_TMUX"

// Bin returns the tmux binary the tests run: $FLEETMUX_TEST_TMUX, else
// "tmux". Every place a test starts or drives a tmux server uses it, and
// tests that start fleetmux (or an mcp.Server) point LIBTMUX_TMUX_BIN at it.
func Bin() string {
	if b := os.Getenv(EnvBin); b != "" {
		return b
	}
	return "tmux"
}

// Command is exec.Command(Bin(), args...).
func Command(args ...string) *exec.Cmd { return exec.Command(Bin(), args...) }

// CommandContext is exec.CommandContext(ctx, Bin(), args...).
func CommandContext(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, Bin(), args...)
}

// LookPath resolves Bin() to a path, as exec.LookPath does.
func LookPath() (string, error) { return exec.LookPath(Bin()) }

// SweepSockets removes the socket files that this test process's tmux
// servers left behind: tmux does not remove its socket when its server
// exits, so every test run would otherwise leave its private sockets
// (named fleetmux-…-PID…) in the tmux directory, where they slow down
// whatever lists servers there (list_servers probes each one). Only
// sockets of this process (pid) whose server is gone (connection refused)
// are removed. Call it from TestMain after m.Run.
func SweepSockets(pid int) {
	dir := os.Getenv("TMUX_TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	dir = filepath.Join(dir, "tmux-"+strconv.Itoa(os.Getuid()))
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	mine := regexp.MustCompile(`^fleetmux-(.*-)?` + strconv.Itoa(pid) + `(-|$)`)
	var left []string
	for _, e := range ents {
		if mine.MatchString(e.Name()) && e.Type()&os.ModeSocket != 0 {
			left = append(left, filepath.Join(dir, e.Name()))
		}
	}
	// A server told to exit (kill-server) may still be going away: look
	// again for a moment before leaving its socket alone.
	for try := 0; len(left) > 0 && try < 5; try++ {
		if try > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		alive := left[:0]
		for _, path := range left {
			c, err := net.DialTimeout("unix", path, time.Second)
			switch {
			case err == nil:
				_ = c.Close()
				alive = append(alive, path) // a server still answers there
			case errors.Is(err, syscall.ECONNREFUSED):
				_ = os.Remove(path)
			}
		}
		left = alive
	}
}
