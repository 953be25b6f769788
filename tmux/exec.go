package tmux

import (
	"context"
	"errors"

	"github.com/fleetmux/fleetmux/tmux/imsg"
	"github.com/fleetmux/fleetmux/transport"
)

// Request is one request to a tmux server: a command list that one tmux
// client runs (tmux's "a ; b"), and what that client reads on stdin (the
// data of a LoadBuffer in the list).
type Request struct {
	Cmds []Cmd
}

// Stdin is the data of the request's command that reads the client's
// stdin (LoadBuffer), nil when none does.
func (r Request) Stdin() []byte {
	for _, c := range r.Cmds {
		if c.stdin != nil {
			return c.stdin
		}
	}
	return nil
}

// unnested reports whether the request runs with TMUX removed from the
// client's environment: a list with new-session, which tmux refuses as
// nested otherwise (the reference's rule).
func (r Request) unnested() bool {
	for _, c := range r.Cmds {
		if c.unnested {
			return true
		}
	}
	return false
}

// Executor is the one way a request reaches tmux: it runs req on the
// server s names (binary, -L, -S) and returns what the tmux client
// printed. A non-zero exit is not an error; an error means tmux could not
// be run at all. NewExecutor returns the two implementations.
type Executor interface {
	Execute(ctx context.Context, s *Server, req Request) (*Output, error)
}

// NewExecutor is where native-or-exec is decided, once per host: requests
// to tmux servers reached through r run as the tmux binary's argv
// (exec), except when r is transport.Local, the binary on this machine:
// there the native client (package imsg), which reproduces what that
// binary's client does, runs the requests its protocol table covers, and
// r the rest. Any other runner (SSH, or one that wraps Local to watch or
// change the commands) gets every request as argv. NativeStatus says which
// path a binary's requests take locally, and why. Executors of the same
// runner compare equal.
func NewExecutor(r transport.Runner) Executor {
	if l, ok := r.(*transport.Local); ok {
		return nativeExecutor{client: nativeClient, next: l}
	}
	return execExecutor{r: r}
}

// NativeStatus says which path NewExecutor's local executor takes for
// requests run with the tmux binary bin (a path or a name on PATH), and
// why, in words for a log line or fleetmux doctor: "native client (tmux
// 3.5a protocol 8)", "exec: tmux 3.6 not known to the native client",
// "exec: FLEETMUX_TMUX_EXEC=1". getenv (nil: os.Getenv) reads the
// FLEETMUX_TMUX_EXEC switch.
func NativeStatus(ctx context.Context, bin string, getenv func(string) string) (native bool, why string) {
	return imsg.Status(ctx, bin, getenv)
}

// execExecutor flattens a request to the binary's argv (Server.Argv) and
// runs it through a transport.Runner: local exec or SSH.
type execExecutor struct{ r transport.Runner }

func (e execExecutor) Execute(ctx context.Context, s *Server, req Request) (*Output, error) {
	return runArgv(ctx, e.r, s, req)
}

func runArgv(ctx context.Context, r transport.Runner, s *Server, req Request) (*Output, error) {
	if req.unnested() {
		ctx = transport.WithEnvUnset(ctx, "TMUX")
	}
	res, err := r.Run(ctx, s.CmdArgv(req.Cmds...), req.Stdin())
	if err != nil {
		return nil, err
	}
	return &Output{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode}, nil
}

// ErrProtocol reports a server message the tmux client would die on: what
// answers on the socket is not a tmux server the native client can talk
// to.
var ErrProtocol = imsg.ErrProtocol

// nativeClient is the process's native client: its caches (binaries on
// PATH, servers that refused its protocol) serve every local server.
var nativeClient = imsg.New()

// nativeExecutor runs a request with the native client when the client
// takes it and through next (the binary) otherwise, under a deadline:
// the caller's, else transport.LocalTimeout, after which the call fails
// with a *NoAnswerError naming the socket.
type nativeExecutor struct {
	client *imsg.Client
	next   transport.Runner
}

func (n nativeExecutor) Execute(ctx context.Context, s *Server, req Request) (*Output, error) {
	ctx, cancel, limit := transport.WithDefaultDeadline(ctx)
	defer cancel()
	s = unnest(s, req)
	out, err := n.run(ctx, s, req)
	if err != nil && limit > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return out, &NoAnswerError{Socket: imsg.SocketOf(n.request(s, req)), After: limit, Err: err}
	}
	return out, err
}

func (n nativeExecutor) run(ctx context.Context, s *Server, req Request) (*Output, error) {
	res, ran, err := n.client.Run(ctx, n.request(s, req))
	if !ran && err == nil {
		return runArgv(ctx, n.next, s, req)
	}
	if err != nil {
		return nil, err
	}
	return &Output{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode}, nil
}

// request is req as the native client takes it: the commands as the
// binary's argv carries them (EscapeArg), a lone ";" argument starting
// another command as it does for tmux.
func (n nativeExecutor) request(s *Server, req Request) imsg.Request {
	r := imsg.Request{Bin: s.BinName(), SocketName: s.SocketName, SocketPath: s.SocketPath, Stdin: req.Stdin(), Unnested: req.unnested()}
	for _, c := range req.Cmds {
		cur := make([]string, 0, len(c.args))
		for _, a := range c.args {
			if a == ";" {
				r.Cmds = append(r.Cmds, cur)
				cur = nil
				continue
			}
			cur = append(cur, EscapeArg(a))
		}
		r.Cmds = append(r.Cmds, cur)
	}
	return r
}

// socketOf implements socketNamer.
func (n nativeExecutor) socketOf(s *Server) string {
	return imsg.SocketOf(imsg.Request{Bin: s.BinName(), SocketName: s.SocketName, SocketPath: s.SocketPath})
}

// unnest keeps a request that runs with TMUX removed (new-session) on
// the server the other requests reach: without -L or -S, tmux takes the
// socket from TMUX's first field, so that socket is passed with -S.
func unnest(s *Server, req Request) *Server {
	if !req.unnested() || s.SocketName != "" || s.SocketPath != "" {
		return s
	}
	t := imsg.TMUXSocket()
	if t == "" {
		return s
	}
	c := *s
	c.SocketPath = t
	return &c
}
