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
	"syscall"
	"time"
)

// LocalTimeout bounds a local command whose ctx carries no deadline: the
// same bound the SSH path gives a host that stays silent
// (DefaultConnectTimeout). A caller that sets its own deadline (a wait
// that may legitimately take minutes) gets exactly that one.
const LocalTimeout = DefaultConnectTimeout

// localWaitDelay is how long Run waits, once the command has exited or
// been killed, for the other ends of its output pipes to close: a
// descriptor passed on to another process (a tmux client hands its
// stdout to the server it connects to) would otherwise hold Run forever.
const localWaitDelay = time.Second

// ErrTimeout reports a command that was still running when the default
// deadline (LocalTimeout) passed; it was killed, with its process group.
var ErrTimeout = errors.New("no answer within the deadline")

type envUnsetKey struct{}

// WithEnvUnset returns a ctx under which Local runs commands with the
// named variables removed from the environment it passes on. Runners
// that do not pass on this process's environment (SSH) ignore it.
func WithEnvUnset(ctx context.Context, names ...string) context.Context {
	prev := EnvUnset(ctx)
	all := append(append(make([]string, 0, len(prev)+len(names)), prev...), names...)
	return context.WithValue(ctx, envUnsetKey{}, all)
}

// EnvUnset returns the variables WithEnvUnset removes under ctx.
func EnvUnset(ctx context.Context) []string {
	v, _ := ctx.Value(envUnsetKey{}).([]string)
	return v
}

// EnvWithout returns env without the entries of the named variables.
func EnvWithout(env []string, names ...string) []string {
	out := env[:0:0]
	for _, kv := range env {
		drop := false
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				drop = true
				break
			}
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// WithDefaultDeadline returns ctx bounded by LocalTimeout when it has no
// deadline of its own, and the bound it added (0 when ctx had one).
func WithDefaultDeadline(ctx context.Context) (context.Context, context.CancelFunc, time.Duration) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}, 0
	}
	ctx, cancel := context.WithTimeout(ctx, LocalTimeout)
	return ctx, cancel, LocalTimeout
}

// Local runs commands on this machine with os/exec.
//
// The child inherits the process environment (minus what WithEnvUnset
// names), so tmux honours TMUX_TMPDIR and TMUX exactly as it would from a
// shell. Every command runs under a deadline (the caller's, else
// LocalTimeout) in its own process group, which is killed whole when the
// deadline passes.
type Local struct {
	paths PathCache
}

// NewLocal returns a local runner.
func NewLocal() *Local { return &Local{} }

// PathCache resolves a program name with exec.LookPath, remembering the
// answer per value of PATH (PATH can change between calls; tests do
// this). A name with a slash is used as it is. The zero value is ready;
// it is safe for concurrent use.
type PathCache struct {
	mu       sync.Mutex
	resolved map[string]string // PATH and name → binary
}

// LookPath resolves name as exec.LookPath does, cached.
func (pc *PathCache) LookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	key := os.Getenv("PATH") + "\x00" + name
	pc.mu.Lock()
	p, ok := pc.resolved[key]
	pc.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	pc.mu.Lock()
	if pc.resolved == nil {
		pc.resolved = map[string]string{}
	}
	pc.resolved[key] = p
	pc.mu.Unlock()
	return p, nil
}

// Run implements Runner.
func (l *Local) Run(ctx context.Context, argv []string, stdin []byte) (Result, error) {
	if err := checkArgv(argv); err != nil {
		return Result{}, fmt.Errorf("local: %w", err)
	}
	path, err := l.paths.LookPath(argv[0])
	if err != nil {
		return Result{}, fmt.Errorf("local: %s: %w", argv[0], ErrNotFound)
	}
	ctx, cancel, limit := WithDefaultDeadline(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	if unset := EnvUnset(ctx); len(unset) > 0 {
		cmd.Env = EnvWithout(os.Environ(), unset...)
	}
	// Its own process group, so that a deadline kills whatever it
	// started too (sh -c and its children).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process) }
	cmd.WaitDelay = localWaitDelay
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
		_ = killGroup(cmd.Process)
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
	if errors.Is(err, exec.ErrWaitDelay) && ctx.Err() == nil {
		// It exited 0, but something else still holds its output
		// pipes open: what it wrote is all there is.
		err = nil
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ctx.Err() == nil {
			res.ExitCode = ee.ExitCode()
			return res, nil
		}
		if ctx.Err() != nil {
			if limit > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return res, fmt.Errorf("local: %s: %w (%s): %w", argv[0], ErrTimeout, limit, ctx.Err())
			}
			return res, fmt.Errorf("local: %s: %w", argv[0], ctx.Err())
		}
		if errors.Is(err, os.ErrNotExist) {
			return res, fmt.Errorf("local: %s: %w", argv[0], ErrNotFound)
		}
		return res, fmt.Errorf("local: %s: %w", argv[0], err)
	}
	return res, nil
}

// killGroup kills p's process group (p leads it: Setpgid).
func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil {
		return p.Kill()
	}
	return nil
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
