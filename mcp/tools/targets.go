package tools

import (
	"context"

	"github.com/fleetmux/fleetmux/tmux"
)

// targetArgs are the parameters that name a call's session, window or
// pane; a tool takes some of them, the others read nil.
type targetArgs struct {
	PaneID, SessionName, SessionID, WindowID, WindowIndex *string
}

// target is the call's target parameters.
func (c *Call) target() targetArgs { return argsOf[targetArgs](c) }

// resolveSession applies the reference's target precedence to the call's session_id/session_name.
func (c *Call) resolveSession(ctx context.Context, srv *tmux.Server) (tmux.Attrs, error) {
	t := c.target()
	return tmux.ResolveSession(ctx, srv, t.SessionName, t.SessionID)
}

// resolveWindow applies the reference's target precedence to window_id, window_index and the
// session parameters.
func (c *Call) resolveWindow(ctx context.Context, srv *tmux.Server) (tmux.Attrs, error) {
	t := c.target()
	return tmux.ResolveWindow(ctx, srv, tmux.WindowTarget{
		WindowID: t.WindowID, WindowIndex: t.WindowIndex, SessionName: t.SessionName, SessionID: t.SessionID,
	})
}

// resolvePane applies the reference's target precedence to pane_id, session_name, session_id and
// window_id (pane tools never pass window_index).
func (c *Call) resolvePane(ctx context.Context, srv *tmux.Server) (tmux.Attrs, error) {
	return tmux.ResolvePane(ctx, srv, paneTarget(c))
}

// changePane runs act's commands on the call's pane and answers the pane
// as re-read after them: one request when pane_id is a plain id
// (tmux.PaneChange).
func changePane(c *Call, ctx context.Context, act func(id string) []tmux.Cmd) (any, error) {
	p, err := tmux.PaneChange(ctx, c.srv, paneTarget(c), act)
	if err != nil {
		return nil, err
	}
	return c.PaneInfo(p, c.NewCallerCheck(ctx, c.srv)), nil
}

// actOnPane runs act's commands on the call's pane in the request that
// looks the pane up (tmux.PaneAct) and returns the pane's id and the
// commands' error as Do would judge it (unless ignore: Exec's way).
func actOnPane(c *Call, ctx context.Context, ignore bool, act func(id string) []tmux.Cmd) (string, error) {
	var cmds []tmux.Cmd
	p, replies, err := tmux.PaneAct(ctx, c.srv, paneTarget(c), func(id string) []tmux.Cmd {
		cmds = act(id)
		return cmds
	})
	if err != nil {
		return "", err
	}
	if !ignore {
		if err := c.srv.Judge(cmds, replies); err != nil {
			return "", err
		}
	}
	return p["pane_id"], nil
}

// sessionRef is the session the call's session_name and session_id name.
func sessionRef(c *Call) tmux.SessionRef {
	t := c.target()
	return tmux.SessionRef{Name: t.SessionName, ID: t.SessionID}
}

// changeWindow runs act's commands on the call's window and returns the
// window as re-read after them: one request for a plain window_id
// (tmux.WindowChange); a window named by session and index is resolved
// first.
func changeWindow(c *Call, ctx context.Context, act func(id string) []tmux.Cmd) (tmux.Attrs, error) {
	if id := c.target().WindowID; id != nil {
		return tmux.WindowChange(ctx, c.srv, *id, false, act)
	}
	w, err := c.resolveWindow(ctx, c.srv)
	if err != nil {
		return nil, err
	}
	return tmux.WindowChange(ctx, c.srv, w["window_id"], true, act)
}

// actOnWindow runs act's commands on the call's window, in the request
// that looks it up when window_id names it, and returns its row as
// listed before them; the commands are judged as Do judges them.
func actOnWindow(c *Call, ctx context.Context, act func(id string) []tmux.Cmd) (tmux.Attrs, error) {
	var (
		w       tmux.Attrs
		cmds    []tmux.Cmd
		replies []tmux.Reply
		err     error
	)
	if id := c.target().WindowID; id != nil {
		w, replies, err = tmux.WindowAct(ctx, c.srv, *id, func(id string) []tmux.Cmd {
			cmds = act(id)
			return cmds
		})
	} else if w, err = c.resolveWindow(ctx, c.srv); err == nil {
		cmds = act(w["window_id"])
		replies, err = c.srv.Batch(ctx, cmds...)
	}
	if err != nil {
		return nil, err
	}
	if err := c.srv.Judge(cmds, replies); err != nil {
		return nil, err
	}
	return w, nil
}

// paneTarget is the pane the call's pane_id, session and window
// parameters name.
func paneTarget(c *Call) tmux.PaneTarget {
	t := c.target()
	return tmux.PaneTarget{PaneID: t.PaneID, SessionName: t.SessionName, SessionID: t.SessionID, WindowID: t.WindowID}
}

// sessionArg is the id of the session session_name or session_id names,
// or "" when the call names none.
func sessionArg(c *Call, ctx context.Context) (string, error) {
	if t := c.target(); t.SessionName == nil && t.SessionID == nil {
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
func paneInfoByID(c *Call, ctx context.Context, srv *tmux.Server, id string) (PaneInfo, error) {
	p, err := tmux.RefreshPane(ctx, srv, id)
	if err != nil {
		return PaneInfo{}, err
	}
	return c.PaneInfo(p, c.NewCallerCheck(ctx, srv)), nil
}

// windowInfoByID re-reads a window the way libtmux refreshes one
// (list-windows -t <id>, tmux's own choice of winlink) and serialises it.
func windowInfoByID(c *Call, ctx context.Context, srv *tmux.Server, id string) (WindowInfo, error) {
	w, err := tmux.RefreshWindow(ctx, srv, id)
	if err != nil {
		return WindowInfo{}, err
	}
	return c.WindowInfo(w), nil
}

// directPaneID returns pane_id when it is a plain tmux pane id ("%12"),
// which tmux resolves exactly, so a tool can target it without a lookup
// call first; tmux's "can't find pane" then stands for the lookup miss.
func directPaneID(c *Call) (string, bool) {
	id := c.target().PaneID
	if id == nil || !tmux.IsPaneID(*id) {
		return "", false
	}
	return *id, true
}
