package mcp

import (
	"context"

	"github.com/fleetmux/fleetmux/tmux"
)

// resolveSession applies §5.3 with the call's session_id/session_name.
func (c *Call) resolveSession(ctx context.Context, srv *tmux.Server) (tmux.Attrs, error) {
	return srv.ResolveSession(ctx, c.Str("session_name"), c.Str("session_id"))
}

// resolveWindow applies §5.3 with window_id, window_index and the
// session parameters.
func (c *Call) resolveWindow(ctx context.Context, srv *tmux.Server) (tmux.Attrs, error) {
	return srv.ResolveWindow(ctx, tmux.WindowTarget{
		WindowID: c.Str("window_id"), WindowIndex: c.Str("window_index"),
		SessionName: c.Str("session_name"), SessionID: c.Str("session_id"),
	})
}

// resolvePane applies §5.3 with pane_id, session_name, session_id and
// window_id (pane tools never pass window_index).
func (c *Call) resolvePane(ctx context.Context, srv *tmux.Server) (tmux.Attrs, error) {
	return srv.ResolvePane(ctx, c.paneTarget())
}

// paneTarget is the pane the call's pane_id, session and window
// parameters name.
func (c *Call) paneTarget() tmux.PaneTarget {
	return tmux.PaneTarget{
		PaneID: c.Str("pane_id"), SessionName: c.Str("session_name"),
		SessionID: c.Str("session_id"), WindowID: c.Str("window_id"),
	}
}

// sessionArg is the id of the session session_name or session_id names,
// or "" when the call names none.
func (c *Call) sessionArg(ctx context.Context) (string, error) {
	if c.Str("session_name") == nil && c.Str("session_id") == nil {
		return "", nil
	}
	s, err := c.resolveSession(ctx, c.srv)
	if err != nil {
		return "", err
	}
	return s["session_id"], nil
}

// paneInfoByID re-reads a pane the way libtmux refreshes one
// (list-panes -t <id>, so a pane of a linked window is not ambiguous) and
// serialises it.
func (c *Call) paneInfoByID(ctx context.Context, srv *tmux.Server, id string) (PaneInfo, error) {
	p, err := srv.RefreshPane(ctx, id)
	if err != nil {
		return PaneInfo{}, err
	}
	return c.paneInfo(p, c.newCallerCheck(ctx, srv)), nil
}

// windowInfoByID re-reads a window the way libtmux refreshes one
// (list-windows -t <id>, tmux's own choice of winlink) and serialises it.
func (c *Call) windowInfoByID(ctx context.Context, srv *tmux.Server, id string) (WindowInfo, error) {
	w, err := srv.RefreshWindow(ctx, id)
	if err != nil {
		return WindowInfo{}, err
	}
	return c.windowInfo(w), nil
}

// sessionInfoByID re-reads a session and serialises it.
func (c *Call) sessionInfoByID(ctx context.Context, srv *tmux.Server, id string) (SessionInfo, error) {
	s, err := srv.SessionByID(ctx, id)
	if err != nil {
		return SessionInfo{}, err
	}
	return c.sessionInfo(s), nil
}

// directPaneID returns pane_id when it is a plain tmux pane id ("%12"),
// which tmux resolves exactly, so a tool can target it without a lookup
// call first; tmux's "can't find pane" then stands for the lookup miss.
func (c *Call) directPaneID() (string, bool) {
	id := c.Str("pane_id")
	if id == nil || !tmux.IsPaneID(*id) {
		return "", false
	}
	return *id, true
}
