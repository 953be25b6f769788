package transport

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLocalEnv: Local passes the environment on unchanged whatever the
// arguments say (it knows nothing of tmux: an argument "new" is text),
// and removes exactly what WithEnvUnset names.
func TestLocalEnv(t *testing.T) {
	t.Setenv("TMUX", "/tmp/sock,1,$0")
	t.Setenv("FM_OTHER", "kept")
	l := NewLocal()
	cases := []struct {
		name string
		ctx  context.Context
		argv []string
		want string
	}{
		{"plain", context.Background(), []string{"sh", "-c", `printf '%s|%s' "$TMUX" "$FM_OTHER"`, "sh", "new"}, "/tmp/sock,1,$0|kept"},
		{"new-session text", context.Background(), []string{"sh", "-c", `printf '%s|%s' "$TMUX" "$FM_OTHER"`, "new-session", "new"}, "/tmp/sock,1,$0|kept"},
		{"unset TMUX", WithEnvUnset(context.Background(), "TMUX"), []string{"sh", "-c", `printf '%s|%s' "${TMUX-unset}" "$FM_OTHER"`}, "unset|kept"},
		{"unset both", WithEnvUnset(WithEnvUnset(context.Background(), "TMUX"), "FM_OTHER"), []string{"sh", "-c", `printf '%s|%s' "${TMUX-unset}" "${FM_OTHER-unset}"`}, "unset|unset"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := l.Run(tc.ctx, tc.argv, nil)
			if err != nil || string(res.Stdout) != tc.want {
				t.Fatalf("got %q, %v; want %q", res.Stdout, err, tc.want)
			}
		})
	}
}

// TestLocalDeadlineKillsGroup: a command that outlives its deadline is
// killed with everything it started, and Run returns even while another
// process still holds its output pipe open.
func TestLocalDeadlineKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	// The child sleeps in the background holding stdout; the shell waits.
	script := `sleep 300 & echo $! > ` + pidFile + `; wait`
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := NewLocal().Run(ctx, []string{"sh", "-c", script}, nil)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run had not returned 30s after its deadline")
	}
	t.Logf("returned after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a deadline error, got %v", err)
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for i := 0; ; i++ {
		// Killed: gone, or a zombie until init reaps it.
		st, serr := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if serr != nil || strings.Contains(string(st), ") Z ") {
			break
		}
		if i == 100 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the command's child %d still runs after the deadline", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLocalDefaultDeadline: without a deadline of its own a call gets
// WithDefaultDeadline's, and the timeout error says so (ErrTimeout).
func TestLocalDefaultDeadline(t *testing.T) {
	ctx, cancel, limit := WithDefaultDeadline(context.Background())
	defer cancel()
	if _, ok := ctx.Deadline(); !ok || limit != LocalTimeout {
		t.Fatalf("no default deadline: %v %v", ok, limit)
	}
	own, cancel2 := context.WithTimeout(context.Background(), time.Hour)
	defer cancel2()
	if got, _, limit := WithDefaultDeadline(own); got != own || limit != 0 {
		t.Fatal("a caller's deadline was replaced")
	}
	if testing.Short() {
		return
	}
	start := time.Now()
	_, err := NewLocal().Run(context.Background(), []string{"sleep", "300"}, nil)
	t.Logf("returned after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), LocalTimeout.String()) {
		t.Fatalf("want ErrTimeout naming %s, got %v", LocalTimeout, err)
	}
}
