package tmux

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Lookup finds rows whose key equals value. More than one match is an
// AmbiguousError; none returns nil.
func lookup(rows []Attrs, key, value string) (Attrs, error) {
	var found Attrs
	n := 0
	for _, r := range rows {
		if r[key] == value {
			if found == nil {
				found = r
			}
			n++
		}
	}
	if n > 1 {
		return nil, &AmbiguousError{Count: n, Key: key, Value: value}
	}
	return found, nil
}

// Active is the index of the first row whose KIND_active field is "1"
// (kind "pane" or "window"), or -1.
func Active(rows []Attrs, kind string) int {
	for i, r := range rows {
		if r[kind+"_active"] == "1" {
			return i
		}
	}
	return -1
}

// byID is the one row of a listing whose key field is id: notFound when
// there is none, an AmbiguousError when there are several.
func byID(rows []Attrs, err error, key, id string, notFound error) (Attrs, error) {
	if err != nil {
		return nil, err
	}
	r, err := lookup(rows, key, id)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, notFound
	}
	return r, nil
}

// SessionByID finds a session by id ("$1").
func SessionByID(ctx context.Context, s *Server, id string) (Attrs, error) {
	rows, err := s.Sessions(ctx)
	return byID(rows, err, "session_id", id, &NotFoundError{Key: "session_id", ID: id, ListCmd: "list-sessions"})
}

// ResolveSession applies the reference's session rule: id wins over name;
// neither means the first listed session.
func ResolveSession(ctx context.Context, s *Server, name, id *string) (Attrs, error) {
	rows, err := s.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	return pickSession(rows, name, id)
}

// pickSession applies the session rule to a session listing.
func pickSession(rows []Attrs, name, id *string) (Attrs, error) {
	switch {
	case id != nil:
		return byID(rows, nil, "session_id", *id, &NotFoundError{Key: "session_id", ID: *id, ListCmd: "list-sessions"})
	case name != nil:
		return byID(rows, nil, "session_name", *name, &NotFoundError{Key: "session_name", ID: *name, ListCmd: "list-sessions"})
	}
	if len(rows) == 0 {
		return nil, &NotFoundError{Key: "session", ID: "(any)", ListCmd: "list-sessions"}
	}
	return rows[0], nil
}

// SessionPanes resolves the session name or id names (the rule of
// ResolveSession) and lists its panes, as `list-panes -s -t SESSION`
// would, reading the extra format variables too: one request, the
// session listing and every pane, filtered here.
func SessionPanes(ctx context.Context, s *Server, name, id *string, extra []string) (Attrs, []Attrs, error) {
	fields := withFields(PaneFields, extra)
	return sessionRowsOf(ctx, s, name, id, paneListing(fields), fields)
}

// SessionWindows is SessionPanes for windows: the session's windows as
// `list-windows -t SESSION` lists them.
func SessionWindows(ctx context.Context, s *Server, name, id *string, extra []string) (Attrs, []Attrs, error) {
	fields := withFields(WindowFields, extra)
	return sessionRowsOf(ctx, s, name, id, cmd("list-windows", "-a", "-F", Format(fields)), fields)
}

// sessionRowsOf sends the session listing and the server-wide listing
// as one request, resolves the session and keeps its rows.
func sessionRowsOf(ctx context.Context, s *Server, name, id *string, listing Cmd, fields []string) (Attrs, []Attrs, error) {
	sessions := cmd("list-sessions", "-F", Format(SessionFields))
	replies, err := s.Batch(ctx, sessions, listing)
	if err != nil {
		return nil, nil, err
	}
	srows, err := rowsOf(s, sessions, replies[0], SessionFields)
	if err != nil {
		return nil, nil, err
	}
	sess, err := pickSession(srows, name, id)
	if err != nil {
		return nil, nil, err
	}
	rows, err := rowsOf(s, listing, replies[1], fields)
	if err != nil {
		return nil, nil, err
	}
	out := []Attrs{}
	for _, r := range rows {
		if r["session_id"] == sess["session_id"] {
			out = append(out, r)
		}
	}
	return sess, out, nil
}

// WindowByID finds a window server-wide by id ("@2").
func WindowByID(ctx context.Context, s *Server, id string) (Attrs, error) {
	rows, err := s.Windows(ctx, "")
	return byID(rows, err, "window_id", id, &NotFoundError{Key: "window_id", ID: id, ListCmd: "list-windows"})
}

// WindowTarget carries the hierarchy parameters of window resolution.
type WindowTarget struct {
	WindowID, WindowIndex, SessionName, SessionID *string
}

// ResolveWindow applies the reference's window rule: window_id server-wide;
// else the session, then window_index in it, else its first window. It
// costs one tmux call (list-windows -a, filtered here with exact matches).
func ResolveWindow(ctx context.Context, s *Server, t WindowTarget) (Attrs, error) {
	if t.WindowID != nil {
		return WindowByID(ctx, s, *t.WindowID)
	}
	rows, err := s.Windows(ctx, "")
	if err != nil {
		return nil, err
	}
	rows, err = sessionRows(rows, t.SessionName, t.SessionID)
	if err != nil {
		return nil, err
	}
	return pickWindow(rows, t.WindowIndex)
}

// sessionRows keeps the rows of the session named by id or name (id
// wins); with neither, the rows of the first listed session.
func sessionRows(rows []Attrs, name, id *string) ([]Attrs, error) {
	key, val := "", ""
	switch {
	case id != nil:
		key, val = "session_id", *id
	case name != nil:
		key, val = "session_name", *name
	default:
		if len(rows) == 0 {
			return nil, &NotFoundError{Key: "session", ID: "(any)", ListCmd: "list-sessions"}
		}
		key, val = "session_id", rows[0]["session_id"]
	}
	var out []Attrs
	for _, r := range rows {
		if r[key] == val {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, &NotFoundError{Key: key, ID: val, ListCmd: "list-sessions"}
	}
	return out, nil
}

// pickWindow selects window_index among one session's rows (window rows,
// or pane rows which carry window_index), else the first window.
func pickWindow(rows []Attrs, index *string) (Attrs, error) {
	if index == nil {
		if len(rows) == 0 {
			return nil, &NoWindowsError{}
		}
		return rows[0], nil
	}
	for _, r := range rows {
		if r["window_index"] == *index {
			return r, nil
		}
	}
	return nil, &NotFoundError{Key: "window_index", ID: *index, ListCmd: "list-windows"}
}

// PaneByID finds a pane server-wide by id ("%3").
func PaneByID(ctx context.Context, s *Server, id string) (Attrs, error) {
	rows, err := s.Panes(ctx, PanesAll, "")
	return byID(rows, err, "pane_id", id, &PaneNotFoundError{ID: id})
}

// PaneRead resolves t and runs the commands read makes for the pane's id.
// When t names a plain pane id ("%3", which tmux resolves exactly), the
// lookup listing and the commands travel as one request, one round trip
// to a remote host; otherwise the pane is resolved first. Because the
// commands may run before the lookup is judged (a pane listed twice is
// still an AmbiguousError), read must only build commands without side
// effects. The replies are those of read's commands.
func PaneRead(ctx context.Context, s *Server, t PaneTarget, read func(paneID string) []Cmd) (Attrs, []Reply, error) {
	if t.PaneID == nil || !IsPaneID(*t.PaneID) {
		p, err := ResolvePane(ctx, s, t)
		if err != nil {
			return nil, nil, err
		}
		replies, err := s.Batch(ctx, read(p["pane_id"])...)
		return p, replies, err
	}
	id := *t.PaneID
	listing := paneListing(PaneFields)
	replies, err := s.Batch(ctx, append([]Cmd{listing}, read(id)...)...)
	if err != nil {
		return nil, nil, err
	}
	rows, err := rowsOf(s, listing, replies[0], PaneFields)
	p, err := byID(rows, err, "pane_id", id, &PaneNotFoundError{ID: id})
	if err != nil {
		return nil, nil, err
	}
	return p, replies[1:], nil
}

// PaneAct is PaneRead for commands with side effects: when t names a
// plain pane id, one request lists the panes, checks in tmux that the
// pane is listed exactly once (UniqueWindow: its window has one link), and
// only then runs act's commands; the listing decides the error when the
// check fails (PaneNotFoundError, AmbiguousError). A check that fails while
// the listing shows the pane once (a notification briefly holds a
// reference to the window) costs one more request for act alone.
// Otherwise the pane is resolved first. On an error from the request
// itself (a deadline while act waits, say) the returned row is nil.
func PaneAct(ctx context.Context, s *Server, t PaneTarget, act func(paneID string) []Cmd) (Attrs, []Reply, error) {
	if t.PaneID == nil || !IsPaneID(*t.PaneID) {
		p, err := ResolvePane(ctx, s, t)
		if err != nil {
			return nil, nil, err
		}
		replies, err := s.Batch(ctx, act(p["pane_id"])...)
		return p, replies, err
	}
	return actOn(ctx, s, paneListing(PaneFields), PaneFields, "pane_id", *t.PaneID, &PaneNotFoundError{ID: *t.PaneID}, act)
}

// WindowAct is PaneAct for a window named by its id ("@3").
func WindowAct(ctx context.Context, s *Server, id string, act func(windowID string) []Cmd) (Attrs, []Reply, error) {
	if !isID(id, '@') {
		w, err := WindowByID(ctx, s, id)
		if err != nil {
			return nil, nil, err
		}
		replies, err := s.Batch(ctx, act(w["window_id"])...)
		return w, replies, err
	}
	return actOn(ctx, s, windowListing, WindowFields, "window_id", id, &NotFoundError{Key: "window_id", ID: id, ListCmd: "list-windows"}, act)
}

// actOn sends listing, the UniqueWindow check of id and act's commands as
// one request and judges the lookup of id in the listing (see PaneAct).
func actOn(ctx context.Context, s *Server, listing Cmd, fields []string, key, id string, notFound error, act func(string) []Cmd) (Attrs, []Reply, error) {
	replies, err := s.Batch(ctx, append([]Cmd{listing, UniqueWindow(id)}, act(id)...)...)
	if err != nil {
		return nil, nil, err
	}
	rows, err := rowsOf(s, listing, replies[0], fields)
	r, err := byID(rows, err, key, id, notFound)
	if err != nil {
		return nil, nil, err
	}
	if replies[1].Err == nil {
		return r, replies[2:], nil
	}
	replies, err = s.Batch(ctx, act(id)...)
	return r, replies, err
}

// IsPaneID reports whether id is a plain tmux pane id ("%12"), which tmux
// resolves exactly (no name or prefix matching).
func IsPaneID(id string) bool { return isID(id, '%') }

// isID reports whether id is sigil followed by decimal digits.
func isID(id string, sigil byte) bool {
	if len(id) < 2 || id[0] != sigil {
		return false
	}
	for i := 1; i < len(id); i++ {
		if id[i] < '0' || id[i] > '9' {
			return false
		}
	}
	return true
}

// PaneTarget carries the hierarchy parameters of pane resolution.
type PaneTarget struct {
	PaneID, SessionName, SessionID, WindowID, WindowIndex *string
}

// ResolvePane applies the reference's pane rule: pane_id server-wide; else a
// window (WindowTarget rules) and its first pane. It costs one tmux call:
// list-panes -a lists every pane with its window and session, in session,
// window index and pane index order.
func ResolvePane(ctx context.Context, s *Server, t PaneTarget) (Attrs, error) {
	if t.PaneID != nil {
		return PaneByID(ctx, s, *t.PaneID)
	}
	rows, err := s.Panes(ctx, PanesAll, "")
	if err != nil {
		return nil, err
	}
	var win []Attrs
	if t.WindowID != nil {
		// list-windows -a lists one row per winlink: a window linked into
		// two sessions, or twice into one, is ambiguous by id.
		links := map[string]bool{}
		first := ""
		for _, r := range rows {
			if r["window_id"] == *t.WindowID {
				link := r["session_id"] + ":" + r["window_index"]
				if first == "" {
					first = link
				}
				links[link] = true
				if link == first {
					win = append(win, r)
				}
			}
		}
		if len(links) == 0 {
			return nil, &NotFoundError{Key: "window_id", ID: *t.WindowID, ListCmd: "list-windows"}
		}
		if len(links) > 1 {
			return nil, &AmbiguousError{Count: len(links), Key: "window_id", Value: *t.WindowID}
		}
	} else {
		srows, err := sessionRows(rows, t.SessionName, t.SessionID)
		if err != nil {
			return nil, err
		}
		w, err := pickWindow(srows, t.WindowIndex)
		if err != nil {
			return nil, err
		}
		for _, r := range srows {
			if r["window_id"] == w["window_id"] {
				win = append(win, r)
			}
		}
	}
	if len(win) == 0 {
		return nil, &PaneNotFoundError{}
	}
	return win[0], nil
}

// RefreshWindow re-reads a window as libtmux's Window.refresh does:
// list-windows -t <id> lets tmux pick the session; among the rows of the
// id, the current winlink wins, else the lowest index. A window linked
// into several sessions is therefore not ambiguous here.
func RefreshWindow(ctx context.Context, s *Server, id string) (Attrs, error) {
	rows, err := s.Windows(ctx, id)
	return pickRefreshedWindow(id, rows, err)
}

// pickRefreshedWindow judges RefreshWindow's listing of id.
func pickRefreshedWindow(id string, rows []Attrs, err error) (Attrs, error) {
	if err != nil && !targetMissing(err) {
		return nil, err
	}
	var match []Attrs
	for _, r := range rows {
		if r["window_id"] == id {
			match = append(match, r)
		}
	}
	if len(match) == 0 {
		return nil, &NotFoundError{Key: "window_id", ID: id, ListCmd: "list-windows", Extra: pyTuple("-t", id)}
	}
	return pickWindowRow(match), nil
}

// pickWindowRow is the row RefreshWindow returns among the rows of one
// window in one session: the active one, else the lowest index.
func pickWindowRow(match []Attrs) Attrs {
	best := match[0]
	for _, r := range match {
		if r["window_active"] == "1" {
			return r
		}
		if atoi(r["window_index"]) < atoi(best["window_index"]) {
			best = r
		}
	}
	return best
}

// RefreshPane re-reads a pane as libtmux's Pane.refresh does
// (list-panes -t <id>: the pane's window in the session tmux picks).
func RefreshPane(ctx context.Context, s *Server, id string) (Attrs, error) {
	rows, err := s.Panes(ctx, PanesWindow, id)
	return pickRefreshedPane(id, rows, err)
}

// pickRefreshedPane judges RefreshPane's listing of id.
func pickRefreshedPane(id string, rows []Attrs, err error) (Attrs, error) {
	if err != nil && !targetMissing(err) {
		return nil, err
	}
	for _, r := range rows {
		if r["pane_id"] == id {
			return r, nil
		}
	}
	return nil, &NotFoundError{Key: "pane_id", ID: id, ListCmd: "list-panes", Extra: pyTuple("-t", id)}
}

// targetMissing reports a listing refused because its -t target does not
// exist ("can't find window: @9").
func targetMissing(err error) bool {
	var ce *CommandError
	return errors.As(err, &ce) && strings.Contains(strings.Join(ce.Stderr, "\n"), "can't find ")
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return int(^uint(0) >> 1)
	}
	return n
}

// pyTuple renders strings as a Python tuple literal, as libtmux's
// not-found messages print their list arguments.
func pyTuple(items ...string) string {
	q := make([]string, len(items))
	for i, it := range items {
		q[i] = pyStrRepr(it)
	}
	if len(q) == 1 {
		return "(" + q[0] + ",)"
	}
	return "(" + strings.Join(q, ", ") + ")"
}

// pyStrRepr is Python's repr of a str for printable text.
func pyStrRepr(s string) string {
	quote := "'"
	if strings.Contains(s, "'") && !strings.Contains(s, "\"") {
		quote = "\""
	}
	var sb strings.Builder
	sb.WriteString(quote)
	for _, r := range s {
		switch {
		case r == '\\':
			sb.WriteString("\\\\")
		case string(r) == quote:
			sb.WriteString("\\" + quote)
		case r == '\n':
			sb.WriteString("\\n")
		case r == '\t':
			sb.WriteString("\\t")
		case r == '\r':
			sb.WriteString("\\r")
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&sb, "\\x%02x", r)
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteString(quote)
	return sb.String()
}

// PaneChange runs act's commands on the pane t names and re-reads the
// pane afterwards as RefreshPane does, in the same request as the lookup
// when t names a plain pane id (see PaneAct): one round trip where a
// lookup, the change and the re-read took three. act's commands are
// judged as Do judges them (any stderr fails the change, and nothing is
// re-read then).
func PaneChange(ctx context.Context, s *Server, t PaneTarget, act func(paneID string) []Cmd) (Attrs, error) {
	var (
		id   string
		cmds []Cmd
	)
	_, replies, err := PaneAct(ctx, s, t, func(pid string) []Cmd {
		id, cmds = pid, act(pid)
		return append(cmds, refreshPaneCmd(pid))
	})
	if err != nil {
		return nil, err
	}
	if err := s.Judge(cmds, replies); err != nil {
		return nil, err
	}
	rows, err := rowsOf(s, refreshPaneCmd(id), replies[len(replies)-1], PaneFields)
	return pickRefreshedPane(id, rows, err)
}

// WindowChange is PaneChange for the window named by id: act's commands,
// then the window re-read as RefreshWindow does. With resolved true, id
// is a window already resolved (by session and index, say), which is not
// looked up again: a window linked into several sessions is ambiguous by
// id alone.
func WindowChange(ctx context.Context, s *Server, id string, resolved bool, act func(windowID string) []Cmd) (Attrs, error) {
	var (
		wid     = id
		cmds    []Cmd
		replies []Reply
		err     error
	)
	if resolved {
		cmds = act(id)
		replies, err = s.Batch(ctx, append(cmds, refreshWindowCmd(id))...)
	} else {
		_, replies, err = WindowAct(ctx, s, id, func(w string) []Cmd {
			wid, cmds = w, act(w)
			return append(cmds, refreshWindowCmd(w))
		})
	}
	if err != nil {
		return nil, err
	}
	if err := s.Judge(cmds, replies); err != nil {
		return nil, err
	}
	rows, err := rowsOf(s, refreshWindowCmd(wid), replies[len(replies)-1], WindowFields)
	return pickRefreshedWindow(wid, rows, err)
}

// Judge is the error of cmds, sent in one request with Batch (replies
// holds theirs, then possibly those of reads after them), as Do(cmds...)
// would report it: a failed command's stderr, or stderr printed while
// every command ran (a warning, which Batch attributes to the last
// command of the request, a read after them).
func (s *Server) Judge(cmds []Cmd, replies []Reply) error {
	for _, r := range replies[:len(cmds)] {
		if r.Err != nil {
			return r.Err
		}
	}
	if len(replies) > len(cmds) && len(cmds) > 0 {
		if last := replies[len(replies)-1]; last.Err != nil && last.ExitCode == 0 {
			return &CommandError{Sub: cmds[0].Name(), Stderr: last.Err.Stderr, Argv: s.CmdArgv(cmds[0])}
		}
	}
	return nil
}

// refreshPaneCmd is RefreshPane's listing.
func refreshPaneCmd(id string) Cmd { return cmd("list-panes", "-t", id, "-F", Format(PaneFields)) }

// refreshWindowCmd is RefreshWindow's listing.
func refreshWindowCmd(id string) Cmd {
	return cmd("list-windows", "-t", id, "-F", Format(WindowFields))
}

// SplitPane splits the pane t names (sp.Target is set to its id) and
// returns the new pane as RefreshPane reads it: the lookup, the split and
// the new pane's window listed in one request when t names a plain pane
// id (see PaneAct). With resolved true, t.PaneID is a pane already
// resolved (the active pane of a window named by session and index),
// which is not looked up again. The split is judged as Do judges it; a
// split that prints no pane id is a *ReplyError.
func SplitPane(ctx context.Context, s *Server, t PaneTarget, resolved bool, sp Split) (Attrs, error) {
	var cmds []Cmd
	act := func(pid string) []Cmd {
		sp.Target = pid
		cmds = []Cmd{SplitWindow(sp)}
		// The new pane shares the window of the pane split: listing that
		// window (tmux picks the session by the window) is RefreshPane's
		// listing of the new pane.
		return append(cmds, refreshPaneCmd(pid))
	}
	var (
		replies []Reply
		err     error
	)
	if resolved && t.PaneID != nil {
		replies, err = s.Batch(ctx, act(*t.PaneID)...)
	} else {
		_, replies, err = PaneAct(ctx, s, t, act)
	}
	if err != nil {
		return nil, err
	}
	if err := s.Judge(cmds, replies); err != nil {
		return nil, err
	}
	if len(replies[0].Lines) == 0 || replies[0].Lines[0] == "" {
		return nil, &ReplyError{fmt.Errorf("split-window printed no pane id")}
	}
	id := replies[0].Lines[0]
	rows, err := rowsOf(s, refreshPaneCmd(sp.Target), replies[1], PaneFields)
	if p, err := pickRefreshedPane(id, rows, err); err == nil {
		return p, nil
	}
	return RefreshPane(ctx, s, id)
}
