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
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/transport/nettest"
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

// Version returns the path of a tmux of version v (e.g. "3.1c") built from
// Debian's source package by .ci/tmux-versions.sh, which it runs (cached
// under ~/.cache/fleetmux-test/tmux: instant; the first build takes 1-2
// minutes and needs the Debian mirror). With -short and nothing cached the
// test is skipped.
func Version(t testing.TB, v string) string {
	t.Helper()
	if base, err := cacheDir(); err == nil {
		bin := filepath.Join(base, "tmux", v, "tmux")
		if out, err := exec.Command(bin, "-V").Output(); err == nil && strings.TrimSpace(string(out)) == "tmux "+v {
			return bin
		}
	}
	if testing.Short() {
		t.Skipf("tmuxtest: tmux %s is not built yet (.ci/tmux-versions.sh %s builds it); skipped with -short", v, v)
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("tmuxtest: %v", err)
	}
	cmd := exec.Command(filepath.Join(root, ".ci", "tmux-versions.sh"), v)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tmuxtest: .ci/tmux-versions.sh %s: %v\n%s", v, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// Cached returns the path of a tmux of version v already in the cache
// (where Version and .ci/tmux-versions.sh put their builds), without
// building anything: for versions no Debian suite has a source package of
// (3.4), which someone builds by hand from the upstream tag into
// that place. ok is false when no binary there answers `tmux -V` with v;
// path is then where it would be.
func Cached(v string) (path string, ok bool) {
	base, err := cacheDir()
	if err != nil {
		return "", false
	}
	bin := filepath.Join(base, "tmux", v, "tmux")
	out, err := exec.Command(bin, "-V").Output()
	return bin, err == nil && strings.TrimSpace(string(out)) == "tmux "+v
}

// cacheDir is where the tests cache what they install or build:
// $FLEETMUX_TEST_CACHE, else fleetmux-test in the user's cache directory
// (as .ci/tmux-versions.sh and TestRealClients use).
func cacheDir() (string, error) {
	if d := os.Getenv("FLEETMUX_TEST_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "fleetmux-test"), nil
}

// repoRoot is the directory above the working directory that holds go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

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

// FakeSocket listens on the unix socket path and hands every connection
// to serve in its own goroutine: a stand-in for a tmux server that hangs,
// closes at once or answers garbage. The listener and every connection
// close at the test's cleanup, which waits for serve to return.
func FakeSocket(t testing.TB, path string, serve func(net.Conn)) {
	t.Helper()
	nettest.Listen(t, "unix", path).Serve(serve)
}

// Hold keeps a connection open, reading nothing, until the test ends.
func Hold(c net.Conn) {
	buf := make([]byte, 1)
	_, _ = c.Read(buf) // returns when cleanup closes c
}
