package tools

import (
	"errors"
	"fmt"

	"github.com/fleetmux/fleetmux/mcp/surface"

	"github.com/fleetmux/fleetmux/tmux"
	"github.com/fleetmux/fleetmux/transport"
)

// ToolError is a failure a tool reports on purpose, with the reference's
// classification: Expected errors are agent-correctable.
type ToolError struct {
	Msg        string
	Suggestion string
	Expected   bool
	Class      string // error_type; "" means ExpectedToolError / ToolError
	Refused    bool   // a safety or guard refusal (audited as "refused")
	Cause      error
}

func (e *ToolError) Error() string { return e.Msg }
func (e *ToolError) Unwrap() error { return e.Cause }

// Expectedf is an agent-correctable error with a formatted message.
func Expectedf(format string, a ...any) *ToolError {
	return &ToolError{Msg: fmt.Sprintf(format, a...), Expected: true}
}

// Refusedf is an expected error that refuses an action (guards, tiers).
func Refusedf(format string, a ...any) *ToolError {
	return &ToolError{Msg: fmt.Sprintf(format, a...), Expected: true, Refused: true}
}

// unexpected is an operator fault or bug, rendered the reference's way.
func Unexpected(class string, err error) *ToolError {
	return &ToolError{Msg: fmt.Sprintf("Unexpected error: %s: %v", class, err), Class: class, Cause: err}
}

// ErrorInfo is the rendered form of any error a tool call produced.
type ErrorInfo struct {
	Text       string
	Suggestion string
	Type       string
	Expected   bool
	Refused    bool
}

// DescribeError maps an error to the reference's message, hint, error_type
// and expected flag.
func DescribeError(err error) ErrorInfo {
	var te *ToolError
	if errors.As(err, &te) {
		class := te.Class
		if class == "" {
			if te.Expected {
				class = "ExpectedToolError"
			} else {
				class = "ToolError"
			}
		}
		return ErrorInfo{Text: te.Msg, Suggestion: te.Suggestion, Type: class, Expected: te.Expected, Refused: te.Refused}
	}
	var ve *ValidationError
	if errors.As(err, &ve) {
		info := ErrorInfo{Text: ve.Error(), Type: "ValidationError", Expected: true}
		return info
	}
	if errors.Is(err, tmux.ErrBinaryNotFound) {
		return ErrorInfo{Text: "tmux binary not found. Ensure tmux is installed and in PATH.", Type: "TmuxCommandNotFound"}
	}
	var (
		se *tmux.SessionExistsError
		bn *tmux.BadSessionNameError
		nf *tmux.NotFoundError
		am *tmux.AmbiguousError
		pn *tmux.PaneNotFoundError
		ce *tmux.CommandError
		nw *tmux.NoWindowsError
	)
	switch {
	case errors.As(err, &se):
		return ErrorInfo{Text: se.Error(), Type: se.Class(), Expected: true}
	case errors.As(err, &bn):
		return ErrorInfo{Text: bn.Error(), Type: bn.Class(), Expected: true}
	case errors.As(err, &nf):
		return ErrorInfo{Text: "Object not found: " + nf.Error(), Suggestion: "Call list_sessions / list_windows / list_panes to discover valid ids.", Type: nf.Class(), Expected: true}
	case errors.As(err, &am):
		return ErrorInfo{Text: "Ambiguous target: " + am.Error(), Suggestion: "A window shared between sessions is listed once per session that holds it, so a name or index can match more than one row. Target it by id (session_id / window_id / pane_id) instead.", Type: am.Class(), Expected: true}
	case errors.As(err, &pn):
		return ErrorInfo{Text: "Pane not found: " + pn.Error(), Suggestion: "Call list_panes to discover valid pane ids.", Type: pn.Class(), Expected: true}
	case errors.As(err, &nw):
		return ErrorInfo{Text: "tmux error: " + nw.Error(), Type: nw.Class(), Expected: true}
	case errors.As(err, &ce):
		return ErrorInfo{Text: "tmux error: " + ce.Error(), Type: ce.Class(), Expected: true}
	}
	if errors.Is(err, tmux.ErrNoAnswer) || errors.Is(err, tmux.ErrProtocol) {
		// A socket where no tmux server answers: it names the socket.
		return ErrorInfo{Text: "tmux error: " + err.Error(), Type: "LibTmuxException", Expected: true}
	}
	var he *HostError
	if errors.As(err, &he) {
		return ErrorInfo{Text: he.Error(), Type: "HostError", Expected: true}
	}
	switch {
	case errors.Is(err, transport.ErrUnreachable), errors.Is(err, transport.ErrConnLost) && !errors.Is(err, transport.ErrClosed):
		// A host that cannot be reached, or stopped answering: the agent
		// can retry later or use another host; not a server fault.
		return ErrorInfo{Text: "Host unreachable: " + err.Error(), Suggestion: "Call list_hosts to see the host's state; the next call dials it again.", Type: "HostError", Expected: true}
	case errors.Is(err, transport.ErrOutputTooLarge):
		return ErrorInfo{Text: "Output too large: " + err.Error(), Type: "ToolError", Expected: true}
	case errors.Is(err, transport.ErrArgTooLong):
		return ErrorInfo{Text: "Argument too long: " + err.Error(), Suggestion: "Send long text in several smaller calls, or through a paste buffer.", Type: "ToolError", Expected: true}
	}
	return ErrorInfo{Text: fmt.Sprintf("Unexpected error: RuntimeError: %v", err), Type: "RuntimeError"}
}

// HostError is a fleet-mode failure to reach or select a host.
type HostError struct {
	Host string
	Err  error
}

func (e *HostError) Error() string { return fmt.Sprintf("host %q: %v", e.Host, e.Err) }
func (e *HostError) Unwrap() error { return e.Err }

// IsTransient reports whether the readonly retry layer may retry err: a
// tmux failure that is not a deterministic lookup or naming error.
func IsTransient(err error) bool {
	if tmux.IsDeterministic(err) {
		return false
	}
	var ce *tmux.CommandError
	return errors.As(err, &ce)
}

// ValidationError is a failed argument check (package surface validates).
type ValidationError = surface.ValidationError
