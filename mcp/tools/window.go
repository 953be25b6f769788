package tools

import (
	"context"
	"errors"
	"strconv"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

type listPanesArgs struct {
	WindowID, WindowIndex, SessionName, SessionID *string
	Filters                                       any
}

func listPanes(ctx context.Context, c *Call, a listPanesArgs) (any, error) {
	srv := c.srv
	scope, target := tmux.PanesAll, ""
	switch {
	case a.WindowID != nil || a.WindowIndex != nil:
		w, err := c.resolveWindow(ctx, srv)
		if err != nil {
			return nil, err
		}
		scope, target = tmux.PanesWindow, w["window_id"]
	case a.SessionName != nil || a.SessionID != nil:
		// One request: the session and every pane, filtered by session.
		scope = tmux.PanesSession
	}
	var (
		rows []tmux.Attrs
		err  error
	)
	extra := filterExtraFields("pane", a.Filters, tmux.PaneFields)
	if scope == tmux.PanesSession {
		_, rows, err = tmux.SessionPanes(ctx, srv, a.SessionName, a.SessionID, extra)
	} else {
		rows, err = srv.PanesWith(ctx, scope, target, extra)
	}
	if err != nil {
		return nil, err
	}
	if rows, err = filterRows("pane", rows, a.Filters); err != nil {
		return nil, err
	}
	cc := c.NewCallerCheck(ctx, srv)
	return infos(rows, func(r tmux.Attrs) PaneInfo { return c.PaneInfo(r, cc) }), nil
}

func getWindowInfo(ctx context.Context, c *Call, _ noArgs) (any, error) {
	return c.WindowInfo(c.window), nil
}

type splitWindowArgs struct {
	spawnArgs
	Shell                             string
	Direction, StartDirectory, PaneID *string
	Size                              any // an int or a string
}

func splitWindow(ctx context.Context, c *Call, a splitWindowArgs) (any, error) {
	env, _ := a.env() // checked by checkSpawnEnv
	srv := c.srv
	split := tmux.Split{Vertical: true, Spawn: tmux.Spawn{Env: env}, Shell: a.Shell}
	if d := a.Direction; d != nil {
		switch *d {
		case "below":
		case "above":
			split.Before = true
		case "right":
			split.Vertical = false
		case "left":
			split.Vertical, split.Before = false, true
		default:
			return nil, Expectedf("Invalid direction: %s. Valid: above, below, left, right", pyfmt.Repr(*d))
		}
	}
	switch v := a.Size.(type) {
	case int:
		split.Size = strconv.Itoa(v)
	case string:
		split.Size = v
	}
	if d := a.StartDirectory; d != nil && *d != "" {
		split.Spawn.Dir = expandHome(c, *d)
	}
	var target tmux.PaneTarget
	resolved := false
	if id := a.PaneID; id != nil {
		target.PaneID = id
	} else {
		resolved = true
		w, err := c.resolveWindow(ctx, srv)
		if err != nil {
			return nil, err
		}
		panes, err := srv.Panes(ctx, tmux.PanesWindow, w["window_id"])
		if err != nil {
			return nil, err
		}
		if len(panes) == 0 {
			return nil, &tmux.PaneNotFoundError{}
		}
		id := panes[max(tmux.Active(panes, "pane"), 0)]["pane_id"]
		target.PaneID = &id
	}
	p, err := tmux.SplitPane(ctx, srv, target, resolved, split)
	if err != nil {
		return nil, replyError(err)
	}
	return c.PaneInfo(p, c.NewCallerCheck(ctx, srv)), nil
}

type renameWindowArgs struct {
	NewName string
}

func renameWindow(ctx context.Context, c *Call, a renameWindowArgs) (any, error) {
	newName := a.NewName
	w, err := changeWindow(c, ctx, func(id string) []tmux.Cmd { return []tmux.Cmd{tmux.RenameWindow(id, newName)} })
	if err != nil {
		return nil, err
	}
	info := c.WindowInfo(w)
	// libtmux sets the new name before refreshing, and a refresh keeps
	// it even when tmux reports the name empty.
	info.WindowName = &newName
	return info, nil
}

// checkLayout refuses a layout tmux would not take (or crash on). An
// empty layout runs select-layout without one (tmux re-applies the
// window's last layout), as libtmux does.
func checkLayout(a selectLayoutArgs) error {
	layout := a.Layout
	if err := tmux.CheckLayout(layout); layout != "" && err != nil {
		return Expectedf("Invalid layout %s: %v. Use even-horizontal, even-vertical, main-horizontal, main-vertical, tiled, or a layout string from #{window_layout}.", pyfmt.Repr(layout), err)
	}
	return nil
}

type selectLayoutArgs struct {
	Layout string // checked by checkLayout
}

func selectLayout(ctx context.Context, c *Call, a selectLayoutArgs) (any, error) {
	layout := a.Layout
	w, err := actOnWindow(c, ctx, func(id string) []tmux.Cmd { return []tmux.Cmd{tmux.SelectLayout(id, layout)} })
	if err != nil {
		return nil, err
	}
	// libtmux's select_layout does not refresh the window, so the reference
	// reports the row it resolved before the change (window_layout is
	// the previous layout).
	return c.WindowInfo(w), nil
}

type resizeWindowArgs struct {
	Height, Width *int
}

func resizeWindow(ctx context.Context, c *Call, a resizeWindowArgs) (any, error) {
	deref := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	height, width := deref(a.Height), deref(a.Width)
	w, err := changeWindow(c, ctx, func(id string) []tmux.Cmd { return []tmux.Cmd{tmux.ResizeWindow(id, height, width)} })
	if err != nil {
		return nil, err
	}
	return c.WindowInfo(w), nil
}

type moveWindowArgs struct {
	DestinationSession *string
	DestinationIndex   string
}

func moveWindow(ctx context.Context, c *Call, a moveWindowArgs) (any, error) {
	srv, w := c.srv, c.window
	dest := w["session_id"]
	if ds := a.DestinationSession; ds != nil && *ds != "" {
		dest = *ds
	}
	src := w["session_id"] + ":" + w["window_index"]
	if _, err := srv.Do(ctx, tmux.MoveWindow(src, dest, a.DestinationIndex)); err != nil {
		return nil, err
	}
	return windowInfoByID(c, ctx, srv, w["window_id"])
}

type killWindowArgs struct {
	WindowID string
}

func killWindow(ctx context.Context, c *Call, a killWindowArgs) (any, error) {
	wid := a.WindowID
	srv := c.srv
	if id := caller(c); id != nil && id.PaneID != "" && callerOnServer(c, ctx, srv) {
		w, err := tmux.WindowByID(ctx, srv, wid)
		if err != nil {
			return nil, err
		}
		p, err := callerPane(ctx, srv, id.PaneID)
		if err != nil {
			return nil, err
		}
		if p != nil && p["window_id"] == wid {
			return nil, Refusedf("Refusing to kill the window containing this MCP server's pane. Use a manual tmux command if intended.")
		}
		if _, err := srv.Do(ctx, tmux.KillWindow(w["window_id"])); err != nil {
			return nil, err
		}
		return "Window killed: " + w["window_id"], nil
	}
	// No guard to check: the lookup and the kill are one request.
	w, replies, err := tmux.WindowAct(ctx, srv, wid, func(id string) []tmux.Cmd { return []tmux.Cmd{tmux.KillWindow(id)} })
	if err != nil {
		return nil, err
	}
	if replies[0].Err != nil {
		return nil, replies[0].Err
	}
	return "Window killed: " + w["window_id"], nil
}

// callerPane looks the caller's pane up on the target server as the
// reference's guards do (server.panes.get with a default): a missing pane is
// nil, but a pane listed more than once (its window is linked into
// several sessions) or a failed listing is an error, never a pass.
func callerPane(ctx context.Context, srv *tmux.Server, id string) (tmux.Attrs, error) {
	p, err := tmux.PaneByID(ctx, srv, id)
	var nf *tmux.PaneNotFoundError
	if errors.As(err, &nf) {
		return nil, nil
	}
	return p, err
}
