package tmux

import "context"

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

// SessionByID finds a session by id ("$1").
func (s *Server) SessionByID(ctx context.Context, id string) (Attrs, error) {
	rows, err := s.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	r, err := lookup(rows, "session_id", id)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, &NotFoundError{Key: "session_id", ID: id, ListCmd: "list-sessions"}
	}
	return r, nil
}

// ResolveSession applies the anchor's session rule: id wins over name;
// neither means the first listed session.
func (s *Server) ResolveSession(ctx context.Context, name, id *string) (Attrs, error) {
	rows, err := s.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case id != nil:
		r, err := lookup(rows, "session_id", *id)
		if err != nil {
			return nil, err
		}
		if r == nil {
			return nil, &NotFoundError{Key: "session_id", ID: *id, ListCmd: "list-sessions"}
		}
		return r, nil
	case name != nil:
		r, err := lookup(rows, "session_name", *name)
		if err != nil {
			return nil, err
		}
		if r == nil {
			return nil, &NotFoundError{Key: "session_name", ID: *name, ListCmd: "list-sessions"}
		}
		return r, nil
	}
	if len(rows) == 0 {
		return nil, &NotFoundError{Key: "session", ID: "(any)", ListCmd: "list-sessions"}
	}
	return rows[0], nil
}

// WindowByID finds a window server-wide by id ("@2").
func (s *Server) WindowByID(ctx context.Context, id string) (Attrs, error) {
	rows, err := s.Windows(ctx, "")
	if err != nil {
		return nil, err
	}
	r, err := lookup(rows, "window_id", id)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, &NotFoundError{Key: "window_id", ID: id, ListCmd: "list-windows"}
	}
	return r, nil
}

// WindowTarget carries the hierarchy parameters of window resolution.
type WindowTarget struct {
	WindowID, WindowIndex, SessionName, SessionID *string
}

// ResolveWindow applies the anchor's window rule: window_id server-wide;
// else the session, then window_index in it, else its first window.
func (s *Server) ResolveWindow(ctx context.Context, t WindowTarget) (Attrs, error) {
	if t.WindowID != nil {
		return s.WindowByID(ctx, *t.WindowID)
	}
	sess, err := s.ResolveSession(ctx, t.SessionName, t.SessionID)
	if err != nil {
		return nil, err
	}
	rows, err := s.Windows(ctx, sess["session_id"])
	if err != nil {
		return nil, err
	}
	if t.WindowIndex != nil {
		r, err := lookup(rows, "window_index", *t.WindowIndex)
		if err != nil {
			return nil, err
		}
		if r == nil {
			return nil, &NotFoundError{Key: "window_index", ID: *t.WindowIndex, ListCmd: "list-windows"}
		}
		return r, nil
	}
	if len(rows) == 0 {
		return nil, &NoWindowsError{}
	}
	return rows[0], nil
}

// PaneByID finds a pane server-wide by id ("%3").
func (s *Server) PaneByID(ctx context.Context, id string) (Attrs, error) {
	rows, err := s.Panes(ctx, PanesAll, "")
	if err != nil {
		return nil, err
	}
	r, err := lookup(rows, "pane_id", id)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, &PaneNotFoundError{ID: id}
	}
	return r, nil
}

// PaneTarget carries the hierarchy parameters of pane resolution.
type PaneTarget struct {
	PaneID, SessionName, SessionID, WindowID, WindowIndex *string
}

// ResolvePane applies the anchor's pane rule: pane_id server-wide; else a
// window (WindowTarget rules) and its first pane.
func (s *Server) ResolvePane(ctx context.Context, t PaneTarget) (Attrs, error) {
	if t.PaneID != nil {
		return s.PaneByID(ctx, *t.PaneID)
	}
	w, err := s.ResolveWindow(ctx, WindowTarget{WindowID: t.WindowID, WindowIndex: t.WindowIndex, SessionName: t.SessionName, SessionID: t.SessionID})
	if err != nil {
		return nil, err
	}
	rows, err := s.Panes(ctx, PanesWindow, w["window_id"])
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, &PaneNotFoundError{}
	}
	return rows[0], nil
}
