package tools

import (
	"context"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

type listWindowsArgs struct {
	SessionName, SessionID *string
	Filters                any
}

func listWindows(ctx context.Context, c *Call, a listWindowsArgs) (any, error) {
	srv := c.srv
	extra := filterExtraFields("window", a.Filters, tmux.WindowFields)
	var (
		rows []tmux.Attrs
		err  error
	)
	if a.SessionName != nil || a.SessionID != nil {
		// One request: the session and every window, filtered by session.
		_, rows, err = tmux.SessionWindows(ctx, srv, a.SessionName, a.SessionID, extra)
	} else {
		rows, err = srv.WindowsWith(ctx, "", extra)
	}
	if err != nil {
		return nil, err
	}
	if rows, err = filterRows("window", rows, a.Filters); err != nil {
		return nil, err
	}
	return infos(rows, c.WindowInfo), nil
}

func getSessionInfo(ctx context.Context, c *Call, _ noArgs) (any, error) {
	return c.SessionInfo(c.session), nil
}

type createWindowArgs struct {
	spawnArgs
	WindowName, StartDirectory, Direction *string
	SessionName, SessionID                *string
	Attach                                bool
}

func createWindow(ctx context.Context, c *Call, a createWindowArgs) (any, error) {
	env, _ := a.env() // checked by checkSpawnEnv
	srv := c.srv
	nw := tmux.NewWindow{Name: a.WindowName, Attach: a.Attach, Spawn: tmux.Spawn{Env: env}}
	if d := a.StartDirectory; d != nil && *d != "" {
		nw.Spawn.Dir = expandHome(c, *d)
	}
	if d := a.Direction; d != nil {
		switch *d {
		case "before":
			nw.Before = true
		case "after":
			nw.After = true
		default:
			// The session is looked up first, as libtmux-mcp does.
			if _, err := c.resolveSession(ctx, srv); err != nil {
				return nil, err
			}
			return nil, Expectedf("Invalid direction: %s. Valid: after, before", pyfmt.Repr(*d))
		}
	}
	_, w, err := tmux.NewWindowIn(ctx, srv, tmux.SessionRef{Name: a.SessionName, ID: a.SessionID}, nw)
	if err != nil {
		return nil, replyError(err)
	}
	return c.WindowInfo(w), nil
}

func checkRenameSession(a renameSessionArgs) error { return checkSessionName(a.NewName) }

type renameSessionArgs struct {
	NewName string // checked by checkRenameSession
}

func renameSession(ctx context.Context, c *Call, a renameSessionArgs) (any, error) {
	name := a.NewName
	s, err := tmux.SessionChange(ctx, c.srv, sessionRef(c), func(target string) []tmux.Cmd {
		return []tmux.Cmd{tmux.RenameSession(target, name)}
	})
	if err != nil {
		return nil, err
	}
	return c.SessionInfo(s), nil
}

func checkSelectWindow(a selectWindowArgs) error {
	if a.WindowID == nil && a.WindowIndex == nil && a.Direction == nil {
		return Expectedf("Provide window_id, window_index, or direction.")
	}
	return nil
}

type selectWindowArgs struct {
	WindowID, WindowIndex, Direction *string
}

func selectWindow(ctx context.Context, c *Call, a selectWindowArgs) (any, error) {
	wid, widx, dir := a.WindowID, a.WindowIndex, a.Direction
	srv := c.srv
	if wid != nil || widx != nil {
		w, err := changeWindow(c, ctx, func(id string) []tmux.Cmd { return []tmux.Cmd{tmux.SelectWindow(id)} })
		if err != nil {
			return nil, err
		}
		return c.WindowInfo(w), nil
	}
	s, err := c.resolveSession(ctx, srv)
	if err != nil {
		return nil, err
	}
	step, ok := tmux.WindowStep(s["session_id"], *dir)
	if !ok {
		return nil, Expectedf("Invalid direction: %s. Valid: next, previous, last", pyfmt.Repr(*dir))
	}
	if _, err := srv.Do(ctx, step); err != nil {
		return nil, err
	}
	rows, err := srv.Windows(ctx, s["session_id"])
	if err != nil {
		return nil, err
	}
	if i := tmux.Active(rows, "window"); i >= 0 {
		return c.WindowInfo(rows[i]), nil
	}
	return nil, &tmux.NoWindowsError{}
}

// killSessionTarget is what checkKillSession reads; the handler finds the
// session from the same arguments (targets.go).
type killSessionTarget struct {
	SessionName, SessionID *string
}

func checkKillSession(a killSessionTarget) error {
	if a.SessionName == nil && a.SessionID == nil {
		return Refusedf("Refusing to kill without an explicit target. Provide session_name or session_id.")
	}
	return nil
}

func killSession(ctx context.Context, c *Call, _ noArgs) (any, error) {
	srv := c.srv
	if id := caller(c); id == nil || id.PaneID == "" || !callerOnServer(c, ctx, srv) {
		// No guard to check: the lookup and the kill are one request.
		var cmds []tmux.Cmd
		s, replies, err := tmux.SessionAct(ctx, srv, sessionRef(c), func(target string) []tmux.Cmd {
			cmds = []tmux.Cmd{tmux.KillSession(target)}
			return cmds
		})
		if err != nil {
			return nil, err
		}
		if err := srv.Judge(cmds, replies); err != nil {
			return nil, err
		}
		return sessionKilled(s), nil
	}
	s, err := c.resolveSession(ctx, srv)
	if err != nil {
		return nil, err
	}
	if id := caller(c); id != nil {
		p, err := callerPane(ctx, srv, id.PaneID)
		if err != nil {
			return nil, err
		}
		if p != nil && p["session_id"] == s["session_id"] {
			return nil, Refusedf("Refusing to kill the session containing this MCP server's pane. Use a manual tmux command if intended.")
		}
	}
	if _, err := srv.Do(ctx, tmux.KillSession(s["session_id"])); err != nil {
		return nil, err
	}
	return sessionKilled(s), nil
}

// sessionKilled is kill_session's answer.
func sessionKilled(s tmux.Attrs) string {
	name := s["session_name"]
	if name == "" {
		name = s["session_id"]
	}
	return "Session killed: " + name
}
