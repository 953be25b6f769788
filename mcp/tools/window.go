package tools

import (
	"context"
	"errors"
	"strconv"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

func listPanes(ctx context.Context, c *Call) (any, error) {
	srv := c.srv
	scope, target := tmux.PanesAll, ""
	switch {
	case c.Args.Str("window_id") != nil || c.Args.Str("window_index") != nil:
		w, err := c.resolveWindow(ctx, srv)
		if err != nil {
			return nil, err
		}
		scope, target = tmux.PanesWindow, w["window_id"]
	case c.Args.Str("session_name") != nil || c.Args.Str("session_id") != nil:
		// One request: the session and every pane, filtered by session.
		scope = tmux.PanesSession
	}
	var (
		rows []tmux.Attrs
		err  error
	)
	extra := filterExtraFields("pane", c.Args["filters"], tmux.PaneFields)
	if scope == tmux.PanesSession {
		_, rows, err = tmux.SessionPanes(ctx, srv, c.Args.Str("session_name"), c.Args.Str("session_id"), extra)
	} else {
		rows, err = srv.PanesWith(ctx, scope, target, extra)
	}
	if err != nil {
		return nil, err
	}
	if rows, err = filterRows("pane", rows, c.Args["filters"]); err != nil {
		return nil, err
	}
	cc := c.NewCallerCheck(ctx, srv)
	return infos(rows, func(r tmux.Attrs) PaneInfo { return c.PaneInfo(r, cc) }), nil
}

func getWindowInfo(ctx context.Context, c *Call) (any, error) {
	return c.WindowInfo(c.window), nil
}

func splitWindow(ctx context.Context, c *Call) (any, error) {
	env, _ := spawnEnv(c) // checked by checkSpawnEnv
	srv := c.srv
	split := tmux.Split{Vertical: true, Spawn: tmux.Spawn{Env: env}, Shell: c.Args.StrOr("shell", "")}
	if d := c.Args.Str("direction"); d != nil {
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
	switch v := c.Args["size"].(type) {
	case int:
		split.Size = strconv.Itoa(v)
	case string:
		split.Size = v
	}
	if d := c.Args.Str("start_directory"); d != nil && *d != "" {
		split.Spawn.Dir = expandHome(c, *d)
	}
	var target tmux.PaneTarget
	resolved := false
	if id := c.Args.Str("pane_id"); id != nil {
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

func renameWindow(ctx context.Context, c *Call) (any, error) {
	newName := c.Args.StrOr("new_name", "")
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
func checkLayout(c *Call) error {
	layout := c.Args.StrOr("layout", "")
	if err := tmux.CheckLayout(layout); layout != "" && err != nil {
		return Expectedf("Invalid layout %s: %v. Use even-horizontal, even-vertical, main-horizontal, main-vertical, tiled, or a layout string from #{window_layout}.", pyfmt.Repr(layout), err)
	}
	return nil
}

func selectLayout(ctx context.Context, c *Call) (any, error) {
	layout := c.Args.StrOr("layout", "")
	w, err := actOnWindow(c, ctx, func(id string) []tmux.Cmd { return []tmux.Cmd{tmux.SelectLayout(id, layout)} })
	if err != nil {
		return nil, err
	}
	// libtmux's select_layout does not refresh the window, so the reference
	// reports the row it resolved before the change (window_layout is
	// the previous layout).
	return c.WindowInfo(w), nil
}

func resizeWindow(ctx context.Context, c *Call) (any, error) {
	deref := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	height, width := deref(c.Args.Int("height")), deref(c.Args.Int("width"))
	w, err := changeWindow(c, ctx, func(id string) []tmux.Cmd { return []tmux.Cmd{tmux.ResizeWindow(id, height, width)} })
	if err != nil {
		return nil, err
	}
	return c.WindowInfo(w), nil
}

func moveWindow(ctx context.Context, c *Call) (any, error) {
	srv, w := c.srv, c.window
	dest := w["session_id"]
	if ds := c.Args.Str("destination_session"); ds != nil && *ds != "" {
		dest = *ds
	}
	src := w["session_id"] + ":" + w["window_index"]
	if _, err := srv.Do(ctx, tmux.MoveWindow(src, dest, c.Args.StrOr("destination_index", ""))); err != nil {
		return nil, err
	}
	return windowInfoByID(c, ctx, srv, w["window_id"])
}

func killWindow(ctx context.Context, c *Call) (any, error) {
	wid := c.Args.StrOr("window_id", "")
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
