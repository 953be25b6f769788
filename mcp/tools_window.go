package mcp

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/fleetmux/fleetmux/tmux"
)

func init() {
	register("list_panes", listPanes)
	register("get_window_info", getWindowInfo)
	register("split_window", splitWindow)
	register("rename_window", renameWindow)
	register("select_layout", selectLayout)
	register("resize_window", resizeWindow)
	register("move_window", moveWindow)
	register("kill_window", killWindow)
}

func listPanes(ctx context.Context, c *Call) (any, error) {
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, err
	}
	var rows []tmux.Attrs
	extra := filterExtraFields("pane", c.Raw("filters"), tmux.PaneFields)
	switch {
	case c.Str("window_id") != nil || c.Str("window_index") != nil:
		w, err := c.resolveWindow(ctx, srv)
		if err != nil {
			return nil, err
		}
		rows, err = srv.PanesWith(ctx, tmux.PanesWindow, w["window_id"], extra)
		if err != nil {
			return nil, err
		}
	case c.Str("session_name") != nil || c.Str("session_id") != nil:
		s, err := c.resolveSession(ctx, srv)
		if err != nil {
			return nil, err
		}
		rows, err = srv.PanesWith(ctx, tmux.PanesSession, s["session_id"], extra)
		if err != nil {
			return nil, err
		}
	default:
		rows, err = srv.PanesWith(ctx, tmux.PanesAll, "", extra)
		if err != nil {
			return nil, err
		}
	}
	if rows, err = filterRows("pane", rows, c.Raw("filters")); err != nil {
		return nil, err
	}
	cc := c.newCallerCheck(ctx, srv)
	out := make([]PaneInfo, 0, len(rows))
	for _, r := range rows {
		out = append(out, c.paneInfo(r, cc))
	}
	return out, nil
}

func getWindowInfo(ctx context.Context, c *Call) (any, error) {
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, err
	}
	w, err := c.resolveWindow(ctx, srv)
	if err != nil {
		return nil, err
	}
	return c.windowInfo(w), nil
}

func splitWindow(ctx context.Context, c *Call) (any, error) {
	env, err := c.spawnEnv()
	if err != nil {
		return nil, err
	}
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, err
	}
	var dirFlags []string
	if d := c.Str("direction"); d != nil {
		switch *d {
		case "below":
			dirFlags = []string{"-v"}
		case "above":
			dirFlags = []string{"-v", "-b"}
		case "right":
			dirFlags = []string{"-h"}
		case "left":
			dirFlags = []string{"-h", "-b"}
		default:
			return nil, expectedf("Invalid direction: %s. Valid: above, below, left, right", pyRepr(*d))
		}
	} else {
		dirFlags = []string{"-v"}
	}
	var target string
	if id := c.Str("pane_id"); id != nil {
		p, err := srv.PaneByID(ctx, *id)
		if err != nil {
			return nil, err
		}
		target = p["pane_id"]
	} else {
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
		target = panes[0]["pane_id"]
		for _, p := range panes {
			if p["pane_active"] == "1" {
				target = p["pane_id"]
				break
			}
		}
	}
	args := append([]string{"split-window", "-t", target}, dirFlags...)
	switch v := c.Raw("size").(type) {
	case int:
		args = append(args, "-l"+strconv.Itoa(v))
	case string:
		args = append(args, "-l"+v)
	}
	args = append(args, "-P", "-F", "#{pane_id}")
	if d := c.Str("start_directory"); d != nil && *d != "" {
		args = append(args, "-c"+tmux.EscapeLiteral(c.expandHome(*d)))
	}
	args = append(args, "-d")
	args = append(args, env...)
	if sh := c.Str("shell"); sh != nil && *sh != "" {
		args = append(args, *sh)
	}
	lines, err := srv.Cmd(ctx, args...)
	if err != nil {
		return nil, err
	}
	if len(lines) == 0 {
		return nil, unexpected("RuntimeError", fmt.Errorf("split-window printed no pane id"))
	}
	return c.paneInfoByID(ctx, srv, lines[0])
}

func renameWindow(ctx context.Context, c *Call) (any, error) {
	newName := c.StrOr("new_name", "")
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, err
	}
	w, err := c.resolveWindow(ctx, srv)
	if err != nil {
		return nil, err
	}
	if _, err := srv.Cmd(ctx, "rename-window", "-t", w["window_id"], tmux.EscapeLiteral(newName)); err != nil {
		return nil, err
	}
	info, err := c.windowInfoByID(ctx, srv, w["window_id"])
	if err != nil {
		return nil, err
	}
	// libtmux sets the new name before refreshing, and a refresh keeps
	// it even when tmux reports the name empty.
	info.WindowName = &newName
	return info, nil
}

func selectLayout(ctx context.Context, c *Call) (any, error) {
	layout := c.StrOr("layout", "")
	// An empty layout runs select-layout without one (tmux re-applies the
	// window's last layout), as libtmux does.
	if err := tmux.CheckLayout(layout); layout != "" && err != nil {
		return nil, expectedf("Invalid layout %s: %v. Use even-horizontal, even-vertical, main-horizontal, main-vertical, tiled, or a layout string from #{window_layout}.", pyRepr(layout), err)
	}
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, err
	}
	w, err := c.resolveWindow(ctx, srv)
	if err != nil {
		return nil, err
	}
	args := []string{"select-layout", "-t", w["window_id"]}
	if layout != "" {
		args = append(args, layout)
	}
	if _, err := srv.Cmd(ctx, args...); err != nil {
		return nil, err
	}
	// libtmux's select_layout does not refresh the window, so the anchor
	// reports the row it resolved before the change (window_layout is
	// the previous layout).
	return c.windowInfo(w), nil
}

func resizeWindow(ctx context.Context, c *Call) (any, error) {
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, err
	}
	w, err := c.resolveWindow(ctx, srv)
	if err != nil {
		return nil, err
	}
	args := []string{"resize-window", "-t", w["window_id"]}
	if h := c.Int("height"); h != nil && *h != 0 {
		args = append(args, "-y"+strconv.Itoa(*h))
	}
	if wd := c.Int("width"); wd != nil && *wd != 0 {
		args = append(args, "-x"+strconv.Itoa(*wd))
	}
	if _, err := srv.Cmd(ctx, args...); err != nil {
		return nil, err
	}
	return c.windowInfoByID(ctx, srv, w["window_id"])
}

func moveWindow(ctx context.Context, c *Call) (any, error) {
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, err
	}
	w, err := c.resolveWindow(ctx, srv)
	if err != nil {
		return nil, err
	}
	dest := w["session_id"]
	if ds := c.Str("destination_session"); ds != nil && *ds != "" {
		dest = *ds
	}
	src := w["session_id"] + ":" + w["window_index"]
	if _, err := srv.Cmd(ctx, "move-window", "-s", src, "-t", dest+":"+c.StrOr("destination_index", "")); err != nil {
		return nil, err
	}
	return c.windowInfoByID(ctx, srv, w["window_id"])
}

func killWindow(ctx context.Context, c *Call) (any, error) {
	wid := c.StrOr("window_id", "")
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, err
	}
	w, err := srv.WindowByID(ctx, wid)
	if err != nil {
		return nil, err
	}
	if id := c.caller(); id != nil && id.PaneID != "" && c.callerOnServer(ctx, srv) {
		p, err := callerPane(ctx, srv, id.PaneID)
		if err != nil {
			return nil, err
		}
		if p != nil && p["window_id"] == wid {
			return nil, refusedf("Refusing to kill the window containing this MCP server's pane. Use a manual tmux command if intended.")
		}
	}
	if _, err := srv.Cmd(ctx, "kill-window", "-t", w["window_id"]); err != nil {
		return nil, err
	}
	return "Window killed: " + w["window_id"], nil
}

// callerPane looks the caller's pane up on the target server as the
// anchor's guards do (server.panes.get with a default): a missing pane is
// nil, but a pane listed more than once (its window is linked into
// several sessions) or a failed listing is an error, never a pass.
func callerPane(ctx context.Context, srv *tmux.Server, id string) (tmux.Attrs, error) {
	p, err := srv.PaneByID(ctx, id)
	var nf *tmux.PaneNotFoundError
	if errors.As(err, &nf) {
		return nil, nil
	}
	return p, err
}
