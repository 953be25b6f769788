// Package tmuxtest holds helpers for tests that start tmux servers.
package tmuxtest

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

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
