package mcp

import (
	"context"

	"github.com/fleetmux/fleetmux/tmux"
)

func init() {
	register("list_windows", listWindows)
	register("get_session_info", getSessionInfo)
	register("create_window", createWindow)
	register("rename_session", renameSession)
	register("select_window", selectWindow)
	register("kill_session", killSession)
}

func listWindows(ctx context.Context, c *Call) (any, error) {
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, err
	}
	target := ""
	if c.Str("session_name") != nil || c.Str("session_id") != nil {
		s, err := c.resolveSession(ctx, srv)
		if err != nil {
			return nil, err
		}
		target = s["session_id"]
	}
	rows, err := srv.WindowsWith(ctx, target, filterExtraFields("window", c.Raw("filters"), tmux.WindowFields))
	if err != nil {
		return nil, err
	}
	if rows, err = filterRows("window", rows, c.Raw("filters")); err != nil {
		return nil, err
	}
	out := make([]WindowInfo, 0, len(rows))
	for _, r := range rows {
		out = append(out, c.windowInfo(r))
	}
	return out, nil
}

func getSessionInfo(ctx context.Context, c *Call) (any, error) {
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, err
	}
	s, err := c.resolveSession(ctx, srv)
	if err != nil {
		return nil, err
	}
	return c.sessionInfo(s), nil
}

func createWindow(ctx context.Context, c *Call) (any, error) {
	env, err := c.spawnEnv()
	if err != nil {
		return nil, err
	}
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, err
	}
	s, err := c.resolveSession(ctx, srv)
	if err != nil {
		return nil, err
	}
	args := []string{"new-window", "-t", s["session_id"] + ":"}
	if !c.Bool("attach") {
		args = append(args, "-d")
	}
	args = append(args, "-P", "-F", tmux.Format(tmux.WindowFields))
	if d := c.Str("start_directory"); d != nil && *d != "" {
		args = append(args, "-c", tmux.EscapeLiteral(c.expandHome(*d)))
	}
	if n := c.Str("window_name"); n != nil {
		args = append(args, "-n", tmux.EscapeLiteral(*n))
	}
	args = append(args, env...)
	if d := c.Str("direction"); d != nil {
		switch *d {
		case "before":
			args = append(args, "-b")
		case "after":
			args = append(args, "-a")
		default:
			return nil, expectedf("Invalid direction: %s. Valid: after, before", pyRepr(*d))
		}
	}
	lines, err := srv.Cmd(ctx, args...)
	if err != nil {
		return nil, err
	}
	rows, err := tmux.ParseRows(lines, tmux.WindowFields)
	if err != nil || len(rows) == 0 {
		return nil, unexpected("RuntimeError", errOrEmpty(err, "new-window printed no window"))
	}
	return c.windowInfoByID(ctx, srv, rows[0]["window_id"])
}

func renameSession(ctx context.Context, c *Call) (any, error) {
	newName := c.StrOr("new_name", "")
	if err := checkSessionName(newName); err != nil {
		return nil, err
	}
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, err
	}
	s, err := c.resolveSession(ctx, srv)
	if err != nil {
		return nil, err
	}
	if _, err := srv.Cmd(ctx, "rename-session", "-t", s["session_id"], tmux.EscapeLiteral(newName)); err != nil {
		return nil, err
	}
	return c.sessionInfoByID(ctx, srv, s["session_id"])
}

func selectWindow(ctx context.Context, c *Call) (any, error) {
	wid, widx, dir := c.Str("window_id"), c.Str("window_index"), c.Str("direction")
	if wid == nil && widx == nil && dir == nil {
		return nil, expectedf("Provide window_id, window_index, or direction.")
	}
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, err
	}
	if wid != nil || widx != nil {
		w, err := c.resolveWindow(ctx, srv)
		if err != nil {
			return nil, err
		}
		if _, err := srv.Cmd(ctx, "select-window", "-t", w["window_id"]); err != nil {
			return nil, err
		}
		return c.windowInfoByID(ctx, srv, w["window_id"])
	}
	s, err := c.resolveSession(ctx, srv)
	if err != nil {
		return nil, err
	}
	var sub string
	switch *dir {
	case "next":
		sub = "next-window"
	case "previous":
		sub = "previous-window"
	case "last":
		sub = "last-window"
	default:
		return nil, expectedf("Invalid direction: %s. Valid: next, previous, last", pyRepr(*dir))
	}
	if _, err := srv.Cmd(ctx, sub, "-t", s["session_id"]); err != nil {
		return nil, err
	}
	rows, err := srv.Windows(ctx, s["session_id"])
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r["window_active"] == "1" {
			return c.windowInfo(r), nil
		}
	}
	return nil, &tmux.NoWindowsError{}
}

func killSession(ctx context.Context, c *Call) (any, error) {
	if c.Str("session_name") == nil && c.Str("session_id") == nil {
		return nil, refusedf("Refusing to kill without an explicit target. Provide session_name or session_id.")
	}
	srv, err := c.Tmux(ctx)
	if err != nil {
		return nil, err
	}
	s, err := c.resolveSession(ctx, srv)
	if err != nil {
		return nil, err
	}
	if id := c.caller(); id != nil && id.PaneID != "" && c.callerOnServer(ctx, srv) {
		p, err := callerPane(ctx, srv, id.PaneID)
		if err != nil {
			return nil, err
		}
		if p != nil && p["session_id"] == s["session_id"] {
			return nil, refusedf("Refusing to kill the session containing this MCP server's pane. Use a manual tmux command if intended.")
		}
	}
	if _, err := srv.Cmd(ctx, "kill-session", "-t", s["session_id"]); err != nil {
		return nil, err
	}
	name := s["session_name"]
	if name == "" {
		name = s["session_id"]
	}
	return "Session killed: " + name, nil
}
