package mcp

import (
	"github.com/fleetmux/fleetmux/fleet/vocab"
	"github.com/fleetmux/fleetmux/mcp/surface"
	"github.com/fleetmux/fleetmux/mcp/tools"
	"github.com/fleetmux/fleetmux/tmux"
)

// Names of packages tools, surface and fleet/vocab that the pipeline and
// fleetmux's commands use through package mcp.
type (
	Backend           = tools.Backend
	Auditor           = tools.Auditor
	AuditEvent        = tools.AuditEvent
	HostLister        = tools.HostLister
	HostStatus        = tools.HostStatus
	Settings          = tools.Settings
	Job               = tools.Job
	JobStore          = tools.JobStore
	JobInfo           = tools.JobInfo
	CancelJobResult   = tools.CancelJobResult
	SessionInfo       = tools.SessionInfo
	WindowInfo        = tools.WindowInfo
	PaneInfo          = tools.PaneInfo
	RunCommandResult  = tools.RunCommandResult
	TailedOutput      = tools.TailedOutput
	WaitForTextResult = tools.WaitForTextResult
	Call              = tools.Call
	ToolError         = tools.ToolError
	HostError         = tools.HostError
	ValidationError   = surface.ValidationError
	Tier              = vocab.Tier
)

// The three safety tiers.
const (
	TierReadonly    = vocab.TierReadonly
	TierMutating    = vocab.TierMutating
	TierDestructive = vocab.TierDestructive
)

// Job states.
const (
	JobRunning = tools.JobRunning
	JobExited  = tools.JobExited
	JobLost    = tools.JobLost
)

// DefaultMaxCallSeconds is the default of --max-call-seconds.
const DefaultMaxCallSeconds = tools.DefaultMaxCallSeconds

// ErrHistoryEnv is the fatal start-up error for a bad
// LIBTMUX_SUPPRESS_HISTORY.
var ErrHistoryEnv = tools.ErrHistoryEnv

// ParseTier parses a tier name (exact, case-sensitive).
func ParseTier(s string) (Tier, bool) { return vocab.ParseTier(s) }

// SettingsFromEnv reads the start-up settings from the environment.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	return tools.SettingsFromEnv(getenv)
}

// TmuxServer is the one rule for which tmux server a call reaches (see
// tools.TmuxServer); fleetmux doctor uses it too.
func TmuxServer(ex tmux.Executor, socketName *string, local bool, getenv func(string) string) *tmux.Server {
	return tools.TmuxServer(ex, socketName, local, getenv)
}
