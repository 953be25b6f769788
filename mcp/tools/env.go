package tools

import (
	"context"
	"log/slog"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/fleet/vocab"
	"github.com/fleetmux/fleetmux/mcp/surface"
	"github.com/fleetmux/fleetmux/tmux/watch"
	"github.com/fleetmux/fleetmux/transport"
)

// Backend maps hosts to runners. Local mode has only "local".
type Backend interface {
	// Runner returns the runner for host, or an error naming the cause.
	Runner(ctx context.Context, host string) (transport.Runner, error)
	// Fleet reports whether any remote host is selected (fleet mode).
	Fleet() bool
	// Match expands a host argument ("*", a glob or a name) to hosts.
	Match(pattern string) ([]string, error)
	// Cap returns a host's safety cap, if any.
	Cap(host string) (Tier, bool)
	// Local reports whether host is this machine.
	Local(host string) bool
}

// AuditEvent is one tool call as the audit layer sees it: the audit
// record of the shared vocabulary (vocab.AuditRecord), Args already
// redacted; the auditor sets PID, the store Seq and JID.
type AuditEvent = vocab.AuditRecord

// Auditor persists audit events. Append must return only once the record
// is durable.
type Auditor interface {
	Append(ctx context.Context, ev AuditEvent) error
}

// Env is the server-wide part of what handlers use: the hosts, the
// start-up settings and the services a call may leave work with. The
// server builds one and every call shares it.
type Env struct {
	Backend  Backend
	Settings Settings
	Log      *slog.Logger
	// Getenv reads per-call variables (LIBTMUX_SOCKET, TMUX_PANE, ...).
	Getenv func(string) string
	// Extended: fleetmux's extensions are on (fleet mode or --extensions).
	Extended bool
	// MaxCallSeconds is --max-call-seconds (extensions only; <= 0: never).
	MaxCallSeconds float64
	// SessionID is this process's audit id.
	SessionID string
	Jobs      *Jobs
	Auditor   Auditor // nil: audit only to the log
	// AuditWarn logs an audit store failure once per server.
	AuditWarn *sync.Once
	// Background holds work a call leaves to finish after it returned;
	// shutdown waits for it.
	Background *sync.WaitGroup
	// Watch tells waits when a tmux server's panes printed something
	// (wait_watch.go).
	Watch *watch.Hub
	// PollWaits makes wait_for_text poll even where a watcher could run
	// (the baseline of the wait benchmarks).
	PollWaits bool
}

// Deps is what a call needs from the server running it, beyond Env: the
// client's session (progress, warnings), the pipeline (nested calls, the
// host gate) and the tool table.
type Deps interface {
	Env() *Env
	// WantsProgress reports whether the client sent a progress token.
	WantsProgress() bool
	// Progress sends a progress notification when the client asked for
	// them.
	Progress(ctx context.Context, progress, total float64, msg string) error
	// Warn sends a warning log message to the client.
	Warn(ctx context.Context, msg string) error
	// CallTool runs a nested tool call through the full pipeline.
	CallTool(ctx context.Context, name string, args map[string]any) *sdk.CallToolResult
	// LookupTool returns what the batch layer needs to know about a tool.
	LookupTool(name string) (ToolInfo, bool)
	// AuditRefused records an operation a batch refused (its parent: the
	// running tool), as the same refusal made directly is recorded.
	AuditRefused(ctx context.Context, name string, args map[string]any, start time.Time, err error)
	// HostGate is the tool's safety gate for host (tier cap).
	HostGate(host string) error
	// Client is the MCP client's name ("" when unknown).
	Client() string
}

// ToolInfo describes a registered tool for batch pre-checks.
type ToolInfo struct {
	Name        string
	Tier        Tier
	SelfBounded bool
	Visible     bool
	Spec        *surface.Tool
}
