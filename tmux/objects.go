package tmux

import (
	"context"
	"fmt"
	"strings"
)

// Sep separates fields in every format string this package sends.
const Sep = "\u241e"

// Attrs holds the raw tmux format values of one listed object, keyed by
// format variable name (e.g. "session_name", "pane_active").
type Attrs map[string]string

// Get returns the raw value and whether tmux reported the field.
func (a Attrs) Get(k string) (string, bool) { v, ok := a[k]; return v, ok }

// SessionFields, WindowFields and PaneFields are the format variables read
// for each object kind. Filters match against these names.
var (
	SessionFields = []string{
		"session_id", "session_name", "session_windows", "session_attached",
		"session_created", "session_activity", "session_last_attached",
		"session_group", "session_path", "session_many_attached",
		"session_grouped", "session_alerts", "session_format",
		"pane_id", // active pane of the active window
	}
	WindowFields = []string{
		"window_id", "window_name", "window_index", "session_id", "session_name",
		"window_panes", "window_layout", "window_active", "window_width",
		"window_height", "window_flags", "window_zoomed_flag", "window_activity",
		"window_bell_flag", "window_linked", "window_visible_layout",
		"window_raw_flags", "window_last_flag",
		"pane_id", // active pane
	}
	PaneFields = []string{
		"pane_id", "pane_index", "pane_width", "pane_height", "pane_left",
		"pane_top", "pane_right", "pane_bottom", "pane_at_left",
		"pane_at_right", "pane_at_top", "pane_at_bottom", "pane_tty",
		"pane_current_command", "pane_current_path", "pane_pid", "pane_title",
		"pane_active", "pane_dead", "pane_in_mode", "pane_mode",
		"pane_start_command", "pane_synchronized", "pane_last", "pane_marked",
		"window_id", "window_index", "window_name", "window_active",
		"session_id", "session_name", "history_size", "history_limit",
		"cursor_x", "cursor_y", "alternate_on",
	}
)

// Format joins fields as "#{a}␞#{b}...".
func Format(fields []string) string {
	var sb strings.Builder
	for i, f := range fields {
		if i > 0 {
			sb.WriteString(Sep)
		}
		sb.WriteString("#{")
		sb.WriteString(f)
		sb.WriteString("}")
	}
	return sb.String()
}

// ParseRows splits format output into Attrs, one per row. A row with too
// few fields (a value containing a newline) is joined with the next line;
// a row with too many is an error.
func ParseRows(lines []string, fields []string) ([]Attrs, error) {
	var rows []Attrs
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		parts := strings.Split(line, Sep)
		for len(parts) < len(fields) && i+1 < len(lines) {
			i++
			line += "\n" + lines[i]
			parts = strings.Split(line, Sep)
		}
		if len(parts) != len(fields) {
			return nil, fmt.Errorf("tmux: format reply has %d fields, want %d", len(parts), len(fields))
		}
		a := make(Attrs, len(fields))
		for j, f := range fields {
			a[f] = parts[j]
		}
		rows = append(rows, a)
	}
	return rows, nil
}

// list runs a list command; a server that is not running yields no rows.
func list(ctx context.Context, s *Server, fields []string, args ...string) ([]Attrs, error) {
	listing := cmd(append(args, "-F", Format(fields))...)
	replies, err := s.Batch(ctx, listing) // one command: no marker
	if err != nil {
		return nil, err
	}
	return rowsOf(s, listing, replies[0], fields)
}

// rowsOf parses a listing's reply: a listing that failed because no
// server runs is no rows; stderr from a listing that exited 0 is ignored.
// A socket where something else answers (it hangs up, speaks another
// protocol version, refuses us) is an error naming the socket.
func rowsOf(s *Server, listing Cmd, r Reply, fields []string) ([]Attrs, error) {
	if r.Err != nil && r.ExitCode != 0 {
		if isNoServer(strings.TrimSpace(strings.Join(r.Err.Stderr, "\n"))) {
			return nil, nil
		}
		if err := s.Unreachable(r); err != nil {
			return nil, err
		}
		return nil, &CommandError{Sub: listing.Name(), Stderr: r.Err.Stderr, Argv: s.CmdArgv(listing)}
	}
	return ParseRows(r.Lines, fields)
}

// paneListing lists every pane of the server (list-panes -a) with fields.
func paneListing(fields []string) Cmd { return cmd("list-panes", "-a", "-F", Format(fields)) }

// isNoServer reports tmux's words for a server that does not exist: no
// socket file ("error connecting to PATH (No such file or directory)"),
// or a socket file nobody listens on ("no server running on PATH"). The
// reference answers an empty listing there. Anything else the tmux
// client says about the connection is a failure (Unreachable).
func isNoServer(stderr string) bool {
	line, _, _ := strings.Cut(stderr, "\n")
	return strings.HasPrefix(line, "no server running on ") ||
		(strings.HasPrefix(line, "error connecting to ") && strings.HasSuffix(line, " (No such file or directory)")) ||
		line == "no sessions"
}

// clientFailures are the tmux client's own messages about the connection
// (client.c), printed before or instead of any command's output.
var clientFailures = []string{
	"error connecting to ",       // a socket we may not open (Permission denied), ...
	"server exited unexpectedly", // it hung up at once, or sent garbage
	"protocol version mismatch",  // another tmux version, or not tmux
	"server version is too old",
	"lost server",
}

// Unreachable returns the failure of a reply whose tmux client could not
// talk to the server on the socket (and so ran nothing), naming the
// socket: a listing there is an error, not an empty list. It is nil for
// every other reply, "no server running" included.
func (s *Server) Unreachable(r Reply) error {
	if r.Err == nil || r.ExitCode == 0 {
		return nil
	}
	stderr := strings.TrimSpace(strings.Join(r.Err.Stderr, "\n"))
	if isNoServer(stderr) {
		return nil
	}
	var msg string
	switch {
	case stderr == "":
		msg = fmt.Sprintf("tmux server on socket %s: the tmux client exited with status %d and said nothing", s.SocketLabel(), r.ExitCode)
	case !startsWithAny(stderr, clientFailures):
		return nil
	case strings.HasPrefix(stderr, "error connecting to "):
		msg = stderr // it names the socket and the cause
	default:
		msg = "tmux server on socket " + s.SocketLabel() + ": " + stderr
	}
	return &CommandError{Sub: r.Err.Sub, Stderr: strings.Split(msg, "\n"), Argv: r.Err.Argv}
}

// OutputUnreachable is Unreachable for the output of Exec: the failure
// of a command list whose tmux client could not talk to the server.
func (s *Server) OutputUnreachable(out *Output) error {
	if out == nil || out.ExitCode == 0 {
		return nil
	}
	return s.Unreachable(Reply{Err: &CommandError{Stderr: out.ErrLines(), Argv: s.Argv()}, ExitCode: out.ExitCode})
}

func startsWithAny(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// Sessions lists every session.
func (s *Server) Sessions(ctx context.Context) ([]Attrs, error) {
	return s.SessionsWith(ctx, nil)
}

// SessionsWith lists every session, reading the extra format variables
// too.
func (s *Server) SessionsWith(ctx context.Context, extra []string) ([]Attrs, error) {
	return list(ctx, s, withFields(SessionFields, extra), "list-sessions")
}

// Windows lists windows: of one session when target is set, else all
// (list-windows -a, a linked window once per session).
func (s *Server) Windows(ctx context.Context, target string) ([]Attrs, error) {
	return s.WindowsWith(ctx, target, nil)
}

// WindowsWith is Windows reading the extra format variables too.
func (s *Server) WindowsWith(ctx context.Context, target string, extra []string) ([]Attrs, error) {
	fields := withFields(WindowFields, extra)
	if target == "" {
		return list(ctx, s, fields, "list-windows", "-a")
	}
	return list(ctx, s, fields, "list-windows", "-t", target)
}

// withFields appends the extra variables not already in base. Callers
// must pass plain variable names (they become #{name} in the format).
func withFields(base, extra []string) []string {
	if len(extra) == 0 {
		return base
	}
	out := append([]string(nil), base...)
	have := map[string]bool{}
	for _, f := range base {
		have[f] = true
	}
	for _, f := range extra {
		if !have[f] && validFieldName(f) {
			have[f] = true
			out = append(out, f)
		}
	}
	return out
}

// validFieldName accepts format variable names only (letters, digits and
// underscores), so a name can never smuggle format syntax.
func validFieldName(f string) bool {
	if f == "" {
		return false
	}
	for _, r := range f {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// PaneScope selects which panes Panes lists.
type PaneScope int

// Pane listing scopes.
const (
	PanesAll     PaneScope = iota // list-panes -a
	PanesSession                  // list-panes -s -t session
	PanesWindow                   // list-panes -t window
)

// Panes lists panes in the given scope.
func (s *Server) Panes(ctx context.Context, scope PaneScope, target string) ([]Attrs, error) {
	return s.PanesWith(ctx, scope, target, nil)
}

// PanesWith is Panes reading the extra format variables too.
func (s *Server) PanesWith(ctx context.Context, scope PaneScope, target string, extra []string) ([]Attrs, error) {
	fields := withFields(PaneFields, extra)
	switch scope {
	case PanesSession:
		return list(ctx, s, fields, "list-panes", "-s", "-t", target)
	case PanesWindow:
		return list(ctx, s, fields, "list-panes", "-t", target)
	default:
		return list(ctx, s, fields, "list-panes", "-a")
	}
}

// Display evaluates a format against a target with display-message -p and
// returns its output lines (stderr ignored).
func (s *Server) Display(ctx context.Context, target, format string) ([]string, error) {
	out, err := s.Exec(ctx, DisplayMessage(target, format))
	if err != nil {
		return nil, err
	}
	return out.Lines(), nil
}
