package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
)

// shutdownBound is how long a stop may take before the test calls it
// stuck: far above the local call deadline, never asserted as a timing.
const shutdownBound = 60 * time.Second

// hangingSocket listens on a unix socket that accepts connections and
// never answers (a stopped or hung tmux server) and returns its path.
func hangingSocket(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fm-hang-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "hang")
	tmuxtest.FakeSocket(t, path, tmuxtest.Hold)
	return path
}

// TestStdioExitsWithStuckCall: a tools/call on a socket where no tmux
// server answers is answered with an error naming the socket, and the
// stdio server exits after stdin closes instead of waiting on it.
func TestStdioExitsWithStuckCall(t *testing.T) {
	sock := hangingSocket(t)
	cmd := exec.Command(binPath, "--no-audit")
	cmd.Env = append(os.Environ(), "LIBTMUX_SOCKET_PATH="+sock, "TMUX=", "TMUX_PANE=")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, errb := &lockedBuf{}, &lockedBuf{}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	io.WriteString(in, initLine+"\n"+`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}`+"\n")
	time.Sleep(300 * time.Millisecond) // the call is under way
	in.Close()
	start := time.Now()
	select {
	case err := <-exited:
		t.Logf("exited %.1fs after stdin closed: %v", time.Since(start).Seconds(), err)
	case <-time.After(shutdownBound):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("still running %s after stdin closed\n%s", shutdownBound, errb.String())
	}
	var answer string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, `"id":2`) {
			answer = l
		}
	}
	if !strings.Contains(answer, `"isError":true`) || !strings.Contains(answer, sock) {
		t.Errorf("the stuck call was not answered with an error naming %s: %q\nstderr:\n%s", sock, answer, errb.String())
	}
}

// TestServeHTTPExitsWithStuckCall: SIGTERM stops `serve --http` within a
// bounded time while a tool call waits on a socket where no tmux server
// answers.
func TestServeHTTPExitsWithStuckCall(t *testing.T) {
	sock := hangingSocket(t)
	d := startHTTPDaemon(t, []string{"LIBTMUX_SOCKET_PATH=" + sock}, "--no-audit", "--no-auth")
	ctx, cancel := context.WithTimeout(context.Background(), shutdownBound)
	defer cancel()
	cs := connectHTTP(ctx, t, d.url, "", "stuck", "2025-11-25")
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "list_sessions", Arguments: map[string]any{}})
		called <- err
	}()
	time.Sleep(500 * time.Millisecond) // the call is under way
	start := time.Now()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.exited:
		d.exited <- err
		t.Logf("exited %.1fs after SIGTERM: %v", time.Since(start).Seconds(), err)
		if err != nil {
			t.Errorf("exit status after SIGTERM: %v\n%s", err, d.stderr.String())
		}
	case <-time.After(shutdownBound):
		t.Fatalf("still running %s after SIGTERM\n%s", shutdownBound, d.stderr.String())
	}
	cancel()
	<-called
}
