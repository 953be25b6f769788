package tmux

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrBinaryNotFound reports that the tmux binary could not be executed.
var ErrBinaryNotFound = errors.New("tmux binary not found")

// ErrNoAnswer reports a tmux server that did not answer a command
// within its deadline (stopped, hung, or not a tmux server).
var ErrNoAnswer = errors.New("tmux server did not answer")

// NoAnswerError is ErrNoAnswer for one socket.
type NoAnswerError struct {
	Socket string        // the socket's path where it is known, else -L name
	After  time.Duration // the deadline that passed
	Err    error         // what the runner returned
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("tmux server on socket %s did not answer within %s", e.Socket, e.After)
}

// Unwrap lets errors.Is find ErrNoAnswer and the runner's error
// (context.DeadlineExceeded).
func (e *NoAnswerError) Unwrap() []error { return []error{ErrNoAnswer, e.Err} }

// CommandError is a tmux command that wrote to stderr (or failed).
type CommandError struct {
	Sub    string   // subcommand, e.g. "last-window"
	Stderr []string // stderr lines
	Argv   []string // full argv, for logs
}

func (e *CommandError) Error() string {
	msg := strings.Join(e.Stderr, "\n")
	if e.Sub == "" {
		return msg
	}
	return e.Sub + ": " + msg
}

// Class names the reference's exception class, used as error_type.
func (e *CommandError) Class() string { return "LibTmuxException" }

// NotFoundError is a session or window lookup that found nothing
// (libtmux's TmuxObjectDoesNotExist).
type NotFoundError struct {
	Key, ID, ListCmd, Extra string
}

func (e *NotFoundError) Error() string {
	extra := e.Extra
	if extra == "" {
		extra = "()"
	}
	return fmt.Sprintf("Could not find %s=%s for %s %s", e.Key, e.ID, e.ListCmd, extra)
}

// Class names the reference's exception class.
func (e *NotFoundError) Class() string { return "TmuxObjectDoesNotExist" }

// PaneNotFoundError is a pane lookup that found nothing.
type PaneNotFoundError struct{ ID string }

func (e *PaneNotFoundError) Error() string {
	if e.ID == "" {
		return "Pane not found"
	}
	return "Pane not found: " + e.ID
}

// Class names the reference's exception class.
func (e *PaneNotFoundError) Class() string { return "PaneNotFound" }

// AmbiguousError is an id that matched more than one listed row.
type AmbiguousError struct {
	Count      int
	Key, Value string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("Multiple objects returned (%d): %s='%s'", e.Count, e.Key, e.Value)
}

// Class names the reference's exception class.
func (e *AmbiguousError) Class() string { return "MultipleObjectsReturned" }

// NoWindowsError is a session without windows.
type NoWindowsError struct{}

func (e *NoWindowsError) Error() string { return "No windows exist for object" }

// Class names the reference's exception class.
func (e *NoWindowsError) Class() string { return "NoWindowsExist" }

// SessionExistsError is new-session with a taken name.
type SessionExistsError struct{ Name string }

func (e *SessionExistsError) Error() string { return "Session named " + e.Name + " exists" }

// Class names the reference's exception class.
func (e *SessionExistsError) Class() string { return "TmuxSessionExists" }

// BadSessionNameError is a session name tmux cannot store.
type BadSessionNameError struct{ Reason, Name string }

func (e *BadSessionNameError) Error() string {
	if e.Name == "" && e.Reason == "empty" {
		return "Bad session name: empty"
	}
	return fmt.Sprintf("Bad session name: %s (session name: %s)", e.Reason, e.Name)
}

// Class names the reference's exception class.
func (e *BadSessionNameError) Class() string { return "BadSessionName" }

// CheckSessionName applies libtmux's session-name rules.
func CheckSessionName(name string) error {
	switch {
	case name == "":
		return &BadSessionNameError{Reason: "empty"}
	case strings.Contains(name, "."):
		return &BadSessionNameError{Reason: "contains periods", Name: name}
	case strings.Contains(name, ":"):
		return &BadSessionNameError{Reason: "contains colons", Name: name}
	}
	return nil
}

// IsDeterministic reports whether err is a lookup or naming failure that a
// retry cannot fix.
func IsDeterministic(err error) bool {
	var (
		nf *NotFoundError
		pn *PaneNotFoundError
		am *AmbiguousError
		nw *NoWindowsError
		se *SessionExistsError
		bn *BadSessionNameError
	)
	return errors.As(err, &nf) || errors.As(err, &pn) || errors.As(err, &am) ||
		errors.As(err, &nw) || errors.As(err, &se) || errors.As(err, &bn) ||
		errors.Is(err, ErrBinaryNotFound)
}

// PaneMissing reports whether a command failed because its -t pane id
// does not exist ("can't find pane: %9").
func PaneMissing(out *Output) bool {
	if out == nil || out.ExitCode == 0 {
		return false
	}
	stderr := strings.TrimSpace(string(out.Stderr))
	// No server means no panes: the lookup the reference does first would
	// have found nothing either. A server that hangs up at once is one
	// going away (kill-server returns before its server has exited).
	return strings.Contains(stderr, "can't find pane") || isNoServer(stderr) ||
		strings.HasPrefix(stderr, "server exited unexpectedly")
}

// NoServer reports whether a failed command's error says that no tmux
// server answers on the socket (never started, or gone).
func NoServer(e *CommandError) bool {
	return e != nil && len(e.Stderr) > 0 && isNoServer(strings.Join(e.Stderr, "\n"))
}
