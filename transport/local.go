package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Local runs commands on this machine with os/exec.
//
// The child inherits the process environment, so tmux honours TMUX_TMPDIR
// and TMUX exactly as it would from a shell. The one exception is
// new-session: tmux refuses to create a session "nested" inside another
// when TMUX is set, so that subcommand runs with TMUX removed (the same
// rule the reference server applies).
type Local struct {
	mu       sync.Mutex
	resolved map[string]string
}

// NewLocal returns a local runner.
func NewLocal() *Local { return &Local{resolved: map[string]string{}} }

func (l *Local) lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	// PATH can change between calls (tests do this); cache per PATH value.
	key := os.Getenv("PATH") + "\x00" + name
	l.mu.Lock()
	p, ok := l.resolved[key]
	l.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	l.resolved[key] = p
	l.mu.Unlock()
	return p, nil
}

// Run implements Runner.
func (l *Local) Run(ctx context.Context, argv []string, stdin []byte) (Result, error) {
	if err := checkArgv(argv); err != nil {
		return Result{}, fmt.Errorf("local: %w", err)
	}
	path, err := l.lookPath(argv[0])
	if err != nil {
		return Result{}, fmt.Errorf("local: %s: %w", argv[0], ErrNotFound)
	}
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	if wantsUnnestedEnv(argv) {
		cmd.Env = envWithout(os.Environ(), "TMUX")
	}
	budget := newOutputBudget()
	stdout, stderr := &boundedBuffer{budget: budget}, &boundedBuffer{budget: budget}
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	// A command that floods its output is killed once the budget is spent
	// (it may ignore SIGPIPE, or stop writing and sleep).
	var started sync.WaitGroup
	started.Add(1)
	budget.onExceed = func() {
		started.Wait()
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err = cmd.Start()
	started.Done()
	if err == nil {
		err = cmd.Wait()
	}
	res := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if budget.exceeded() {
		return Result{}, fmt.Errorf("local: %s: %w", argv[0], errOutputTooLarge())
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ctx.Err() == nil {
			res.ExitCode = ee.ExitCode()
			return res, nil
		}
		if ctx.Err() != nil {
			return res, fmt.Errorf("local: %s: %w", argv[0], ctx.Err())
		}
		if errors.Is(err, os.ErrNotExist) {
			return res, fmt.Errorf("local: %s: %w", argv[0], ErrNotFound)
		}
		return res, fmt.Errorf("local: %s: %w", argv[0], err)
	}
	return res, nil
}

// wantsUnnestedEnv reports whether argv is a tmux new-session call.
func wantsUnnestedEnv(argv []string) bool {
	for _, a := range argv[1:] {
		if a == "new-session" || a == "new" {
			return true
		}
	}
	return false
}

func envWithout(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// SocketAlive reports whether the unix socket at path accepts a
// connection within timeout (list_servers skips stale socket files this
// way without starting a tmux client for each).
func (l *Local) SocketAlive(path string, timeout time.Duration) bool {
	c, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}
