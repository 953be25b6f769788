package tmux

import (
	"context"
	"fmt"
	"regexp"
)

// SessionRef names a session as the tools do: by id, else by name, else
// the first listed session.
type SessionRef struct{ Name, ID *string }

// plainName is a session name that can travel inside a target and a
// format unchanged: no target separators (: .), no format or parser
// syntax, no leading sigil.
var plainName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`)

// NewWindowIn creates a window in the session ref names (nw.Session is
// filled in) and returns the session and the new window's row as
// RefreshWindow reads it. When ref has a plain id ("$3") or a plain name,
// everything is one request: the session listing, a check in tmux that
// the target is that session (for a name), new-window and the window
// listing; the listing decides a lookup error, so a missing session is
// reported the same way whichever path ran. Otherwise the session is
// looked up first.
// sessionTarget is how a request names the session ref names when tmux
// resolves it exactly: a plain id, or "=name" for a plain name with a
// check that stops the request unless the session found has that name
// (tmux would also take a client's name). exact is false for every other
// ref: look the session up first.
func sessionTarget(ref SessionRef) (target string, checks []Cmd, exact bool) {
	switch {
	case ref.ID != nil && isID(*ref.ID, '$'):
		return *ref.ID, nil, true
	case ref.ID == nil && ref.Name != nil && plainName.MatchString(*ref.Name):
		target = "=" + *ref.Name
		return target, []Cmd{guard(target+":", "#{==:#{session_name},"+*ref.Name+"}")}, true
	}
	return "", nil, false
}

func (s *Server) NewWindowIn(ctx context.Context, ref SessionRef, nw NewWindow) (Attrs, Attrs, error) {
	target, checks, exact := sessionTarget(ref)
	if !exact {
		sess, err := s.ResolveSession(ctx, ref.Name, ref.ID)
		if err != nil {
			return nil, nil, err
		}
		nw.Session = sess["session_id"]
		w, err := s.newWindow(ctx, nil, nw)
		return sess, w, err
	}
	nw.Session = target
	sessions := cmd("list-sessions", "-F", Format(SessionFields))
	replies, err := s.newWindowReplies(ctx, append([]Cmd{sessions}, checks...), nw)
	if err != nil {
		return nil, nil, err
	}
	rows, err := s.rowsOf(sessions, replies[0], SessionFields)
	if err != nil {
		return nil, nil, err
	}
	sess, err := pickSession(rows, ref.Name, ref.ID)
	if err != nil {
		return nil, nil, err
	}
	if len(checks) > 0 && replies[1].Err != nil {
		// The listing has the session but the check failed: ask again
		// by id.
		nw.Session = sess["session_id"]
		w, err := s.newWindow(ctx, nil, nw)
		return sess, w, err
	}
	w, err := s.createdWindow(ctx, replies[1+len(checks):])
	return sess, w, err
}

// newWindow runs new-window after the commands of pre and reads the new
// window back.
func (s *Server) newWindow(ctx context.Context, pre []Cmd, nw NewWindow) (Attrs, error) {
	replies, err := s.newWindowReplies(ctx, pre, nw)
	if err != nil {
		return nil, err
	}
	return s.createdWindow(ctx, replies[len(pre):])
}

// newWindowReplies sends pre, new-window and the window listing as one
// request.
func (s *Server) newWindowReplies(ctx context.Context, pre []Cmd, nw NewWindow) ([]Reply, error) {
	return s.Batch(ctx, append(pre, nw.Cmd(), windowListing)...)
}

var windowListing = cmd("list-windows", "-a", "-F", Format(WindowFields))

// createdWindow reads new-window's reply and the listing after it as
// Created and RefreshWindow would: the window's row in its session. A
// window listed in several sessions (a session group) is read again with
// RefreshWindow, which lets tmux pick the session.
func (s *Server) createdWindow(ctx context.Context, replies []Reply) (Attrs, error) {
	created, listing := replies[0], replies[1]
	if created.Err != nil {
		return nil, created.Err
	}
	rows, err := ParseRows(created.Lines, WindowFields)
	switch {
	case err != nil:
		return nil, &ReplyError{err}
	case len(rows) == 0:
		return nil, &ReplyError{fmt.Errorf("new-window printed no window")}
	}
	id := rows[0]["window_id"]
	all, err := s.rowsOf(windowListing, listing, WindowFields)
	if err != nil {
		return nil, err
	}
	var match []Attrs
	for _, r := range all {
		if r["window_id"] == id {
			if len(match) > 0 && match[0]["session_id"] != r["session_id"] {
				return s.RefreshWindow(ctx, id)
			}
			match = append(match, r)
		}
	}
	if len(match) == 0 {
		return s.RefreshWindow(ctx, id)
	}
	return pickWindowRow(match), nil
}
