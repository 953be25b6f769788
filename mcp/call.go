package mcp

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/tmux"
)

// Call is one tool invocation: validated arguments, the host it runs on
// and access to the tmux server it targets.
type Call struct {
	s      *Server
	tool   *tool
	Args   map[string]any
	Host   string
	req    *sdk.CallToolRequest
	parent string

	// Resolved by dispatch before the handler runs, per the tool's
	// target kind (tools.go).
	srv     *tmux.Server
	session tmux.Attrs
	window  tmux.Attrs
	pane    tmux.Attrs
}

// Str returns a string argument or nil.
func (c *Call) Str(name string) *string {
	if v, ok := c.Args[name].(string); ok {
		return &v
	}
	return nil
}

// StrOr returns a string argument or def.
func (c *Call) StrOr(name, def string) string {
	if v := c.Str(name); v != nil {
		return *v
	}
	return def
}

// Int returns an integer argument or nil.
func (c *Call) Int(name string) *int {
	if v, ok := c.Args[name].(int); ok {
		return &v
	}
	return nil
}

// Float returns a number argument or nil.
func (c *Call) Float(name string) *float64 {
	switch v := c.Args[name].(type) {
	case float64:
		return &v
	case int:
		f := float64(v)
		return &f
	}
	return nil
}

// Bool returns a boolean argument (false when absent).
func (c *Call) Bool(name string) bool {
	v, _ := c.Args[name].(bool)
	return v
}

// Raw returns the argument as validated.
func (c *Call) Raw(name string) any { return c.Args[name] }

// Strings returns a list-of-strings argument; nil when null.
func (c *Call) Strings(name string) []string {
	arr, ok := c.Args[name].([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

// HostField is the value of the host field of result models: nil in local
// mode, the host name in fleet mode.
func (c *Call) HostField() *string {
	if !c.s.opts.Backend.Fleet() {
		return nil
	}
	h := c.Host
	return &h
}

// Getenv reads a per-call environment variable.
func (c *Call) Getenv(name string) string { return c.s.getenv(name) }

// IsLocal reports whether the call runs on this machine.
func (c *Call) IsLocal() bool { return c.s.opts.Backend.Local(c.Host) }

// Settings returns the server's start-up settings.
func (c *Call) Settings() Settings { return c.s.opts.Settings }

// Tmux returns the tmux server the call targets: socket_name argument (or
// LIBTMUX_SOCKET), LIBTMUX_SOCKET_PATH and LIBTMUX_TMUX_BIN, on the
// call's host (TmuxServer).
func (c *Call) Tmux(ctx context.Context) (*tmux.Server, error) {
	ex, err := c.s.executor(ctx, c.Host)
	if err != nil {
		return nil, err
	}
	return TmuxServer(ex, c.Str("socket_name"), c.IsLocal(), c.Getenv), nil
}

// TmuxFor returns the tmux server with the given socket name on the
// call's host.
func (c *Call) TmuxFor(ctx context.Context, socketName string) (*tmux.Server, error) {
	ex, err := c.s.executor(ctx, c.Host)
	if err != nil {
		return nil, err
	}
	return TmuxServer(ex, &socketName, c.IsLocal(), c.Getenv), nil
}

// executor is how tmux commands reach host: through the host's runner,
// or the native client where that runner is the local binary
// (tmux.NewExecutor decides).
func (s *Server) executor(ctx context.Context, host string) (tmux.Executor, error) {
	r, err := s.opts.Backend.Runner(ctx, host)
	if err != nil {
		return nil, &HostError{Host: host, Err: err}
	}
	return tmux.NewExecutor(r), nil
}

// WantsProgress reports whether the client asked for progress (sent a
// progress token): without one Progress sends nothing.
func (c *Call) WantsProgress() bool {
	return c.req != nil && c.req.Session != nil && c.req.Params != nil && c.req.Params.GetProgressToken() != nil
}

// Progress sends a progress notification when the client asked for them.
func (c *Call) Progress(ctx context.Context, progress, total float64, msg string) error {
	if c.req == nil || c.req.Session == nil || c.req.Params == nil {
		return nil
	}
	tok := c.req.Params.GetProgressToken()
	if tok == nil {
		return nil
	}
	return c.req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: progress, Total: total, Message: msg})
}

// Warn sends a warning log message to the client (notifications/message).
func (c *Call) Warn(ctx context.Context, msg string) error {
	c.s.log.Warn(msg, "tool", c.tool.spec.Name)
	if c.req == nil || c.req.Session == nil {
		return nil
	}
	//lint:ignore SA1019 warnings reach clients through MCP logging on purpose (the anchor sends them; deprecated only from 2026-07-28)
	return c.req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "warning", Data: msg, Logger: "libtmux_mcp"})
}

// CallTool runs a nested tool call through the full pipeline (batch
// tools use it).
func (c *Call) CallTool(ctx context.Context, name string, args map[string]any) *sdk.CallToolResult {
	return c.s.dispatch(ctx, c.req, name, args, c.tool.spec.Name)
}

// ToolInfo describes a registered tool for batch pre-checks.
type ToolInfo struct {
	Name        string
	Tier        Tier
	SelfBounded bool
	Visible     bool
}

// LookupTool returns what the batch layer needs to know about a tool.
func (c *Call) LookupTool(name string) (ToolInfo, bool) {
	t := c.s.byName[name]
	if t == nil {
		return ToolInfo{}, false
	}
	return ToolInfo{Name: name, Tier: t.tier, SelfBounded: t.spec.SelfBounded, Visible: c.s.visible(t)}, true
}

// ToolName is the name of the running tool.
func (c *Call) ToolName() string { return c.tool.spec.Name }

func (c *Call) String() string { return fmt.Sprintf("%s@%s", c.tool.spec.Name, c.Host) }
