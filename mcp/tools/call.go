package tools

import (
	"context"
	"fmt"

	"github.com/fleetmux/fleetmux/tmux"
)

// Call is one tool invocation: validated arguments, the host it runs on,
// what the server gives it (Deps) and the tmux server and objects it
// targets, resolved before the handler runs.
type Call struct {
	Args Args
	Host string
	// Name is the tool's name.
	Name string
	deps Deps
	env  *Env
	// decoded are the argument structs argsOf decoded.
	decoded []any

	// Resolved before the handler runs, per the tool's target kind
	// (table.go).
	srv     *tmux.Server
	session tmux.Attrs
	window  tmux.Attrs
	pane    tmux.Attrs
}

// NewCall is a call of tool name on host with validated arguments.
func NewCall(d Deps, name, host string, args map[string]any) *Call {
	return &Call{Args: args, Host: host, Name: name, deps: d, env: d.Env()}
}

// HostField is the value of the host field of result models: nil in local
// mode, the host name in fleet mode.
func (c *Call) HostField() *string {
	if !c.env.Backend.Fleet() {
		return nil
	}
	h := c.Host
	return &h
}

// Getenv reads a per-call environment variable.
func (c *Call) Getenv(name string) string { return c.env.Getenv(name) }

// IsLocal reports whether the call runs on this machine.
func (c *Call) IsLocal() bool { return c.env.Backend.Local(c.Host) }

// Settings returns the server's start-up settings.
func (c *Call) Settings() Settings { return c.env.Settings }

// Tmux returns the tmux server the call targets: socket_name argument (or
// LIBTMUX_SOCKET), LIBTMUX_SOCKET_PATH and LIBTMUX_TMUX_BIN, on the
// call's host (TmuxServer).
func (c *Call) Tmux(ctx context.Context) (*tmux.Server, error) {
	ex, err := c.env.executor(ctx, c.Host)
	if err != nil {
		return nil, err
	}
	return TmuxServer(ex, c.Args.Str("socket_name"), c.IsLocal(), c.Getenv), nil
}

// TmuxFor returns the tmux server with the given socket name on the
// call's host.
func (c *Call) TmuxFor(ctx context.Context, socketName string) (*tmux.Server, error) {
	ex, err := c.env.executor(ctx, c.Host)
	if err != nil {
		return nil, err
	}
	return TmuxServer(ex, &socketName, c.IsLocal(), c.Getenv), nil
}

func (c *Call) String() string { return fmt.Sprintf("%s@%s", c.Name, c.Host) }

// executor is how tmux commands reach host: through the host's runner,
// or the native client where that runner is the local binary
// (tmux.NewExecutor decides).
func (s *Env) executor(ctx context.Context, host string) (tmux.Executor, error) {
	r, err := s.Backend.Runner(ctx, host)
	if err != nil {
		return nil, &HostError{Host: host, Err: err}
	}
	return tmux.NewExecutor(r), nil
}
