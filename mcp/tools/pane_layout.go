package tools

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

// Pane layout and state tools: resize, select, swap, corner lookup and
// copy mode.

func checkResizePane(a toolResizePaneArgs) error {
	if a.Zoom != nil && (a.Height != nil || a.Width != nil) {
		return Expectedf("Cannot combine zoom with height/width")
	}
	return nil
}

type toolResizePaneArgs struct {
	Zoom          any // nil when absent or null, else a bool
	Height, Width *int
}

func toolResizePane(ctx context.Context, c *Call, a toolResizePaneArgs) (any, error) {
	if a.Zoom != nil {
		zoom, _ := a.Zoom.(bool)
		return changePane(c, ctx, func(id string) []tmux.Cmd { return []tmux.Cmd{tmux.SetZoom(id, zoom)} })
	}
	nonZero := func(n *int) *int {
		if n != nil && *n == 0 {
			return nil
		}
		return n
	}
	height, width := nonZero(a.Height), nonZero(a.Width)
	return changePane(c, ctx, func(id string) []tmux.Cmd { return []tmux.Cmd{tmux.ResizePane(id, height, width)} })
}

func checkSelectPane(a toolSelectPaneArgs) error {
	if a.PaneID == nil && a.Direction == nil {
		return Expectedf("Provide either pane_id or direction.")
	}
	return nil
}

type toolSelectPaneArgs struct {
	PaneID, Direction *string // one of them is set (checkSelectPane)
}

func toolSelectPane(ctx context.Context, c *Call, a toolSelectPaneArgs) (any, error) {
	paneID, dir := a.PaneID, a.Direction
	srv := c.srv
	if paneID != nil {
		return changePane(c, ctx, func(id string) []tmux.Cmd { return []tmux.Cmd{tmux.SelectPane(id)} })
	}
	w, err := c.resolveWindow(ctx, srv)
	if err != nil {
		return nil, err
	}
	wid := w["window_id"]
	if cmd, ok := tmux.SelectPaneDirection(wid, tmux.Direction(*dir)); ok {
		if _, err := srv.Do(ctx, cmd); err != nil {
			return nil, err
		}
	} else if *dir == "next" || *dir == "previous" {
		// Step through the window's own pane list rather than using a
		// relative target, whose meaning varies across tmux releases and
		// can land in the client's current window instead.
		panes, err := srv.Panes(ctx, tmux.PanesWindow, wid)
		if err != nil {
			return nil, err
		}
		if len(panes) == 0 {
			return nil, &tmux.PaneNotFoundError{}
		}
		idx := max(tmux.Active(panes, "pane"), 0)
		step := 1
		if *dir == "previous" {
			step = -1
		}
		next := panes[((idx+step)%len(panes)+len(panes))%len(panes)]
		if _, err := srv.Do(ctx, tmux.SelectPane(next["pane_id"])); err != nil {
			return nil, err
		}
	}
	lines, err := srv.Display(ctx, wid, "#{pane_id}")
	if err != nil {
		return nil, err
	}
	if len(lines) > 0 && lines[0] != "" {
		info, err := paneInfoByID(c, ctx, srv, lines[0])
		if err == nil {
			return info, nil
		}
		var pn *tmux.PaneNotFoundError
		if !errors.As(err, &pn) {
			return nil, err
		}
	}
	panes, err := srv.Panes(ctx, tmux.PanesWindow, wid)
	if err != nil {
		return nil, err
	}
	if i := tmux.Active(panes, "pane"); i >= 0 {
		return c.PaneInfo(panes[i], c.NewCallerCheck(ctx, srv)), nil
	}
	return nil, &tmux.PaneNotFoundError{}
}

type toolSwapPaneArgs struct {
	SourcePaneID, TargetPaneID string
}

func toolSwapPane(ctx context.Context, c *Call, a toolSwapPaneArgs) (any, error) {
	srv := c.srv
	src, err := tmux.PaneByID(ctx, srv, a.SourcePaneID)
	if err != nil {
		return nil, err
	}
	dst, err := tmux.PaneByID(ctx, srv, a.TargetPaneID)
	if err != nil {
		return nil, err
	}
	if _, err := srv.Do(ctx, tmux.SwapPane(src["pane_id"], dst["pane_id"])); err != nil {
		return nil, err
	}
	return paneInfoByID(c, ctx, srv, src["pane_id"])
}

type toolFindPaneByPositionArgs struct {
	Corner string
}

func toolFindPaneByPosition(ctx context.Context, c *Call, a toolFindPaneByPositionArgs) (any, error) {
	srv, w := c.srv, c.window
	panes, err := srv.Panes(ctx, tmux.PanesWindow, w["window_id"])
	if err != nil {
		return nil, err
	}
	vertical, horizontal, _ := strings.Cut(a.Corner, "-")
	var matches []tmux.Attrs
	for _, p := range panes {
		if p["pane_at_"+vertical] == "1" && p["pane_at_"+horizontal] == "1" {
			matches = append(matches, p)
		}
	}
	if len(matches) == 0 {
		return nil, Expectedf("No pane found at corner %s in window %s. This is unusual \u2014 built-in layouts always have a pane at every corner.", pyfmt.Repr(a.Corner), w["window_id"])
	}
	// Several candidates (a single pane touches every edge): the one whose
	// top-left cell lies furthest from the origin wins, for every corner;
	// ties keep tmux's order.
	score := func(p tmux.Attrs) int {
		l, errL := panePyInt(p["pane_left"])
		t, errT := panePyInt(p["pane_top"])
		if errL != nil || errT != nil {
			return 0
		}
		return l + t
	}
	sort.SliceStable(matches, func(i, j int) bool { return score(matches[i]) > score(matches[j]) })
	return c.PaneInfo(matches[0], c.NewCallerCheck(ctx, srv)), nil
}

// panePyInt is int(v or 0) for a tmux text field.
func panePyInt(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	return strconv.Atoi(strings.TrimSpace(v))
}

type toolEnterCopyModeArgs struct {
	ScrollUp *int
}

func toolEnterCopyMode(ctx context.Context, c *Call, a toolEnterCopyModeArgs) (any, error) {
	return changePane(c, ctx, func(id string) []tmux.Cmd {
		cmds := []tmux.Cmd{tmux.CopyMode(id)}
		if n := a.ScrollUp; n != nil && *n > 0 {
			// Its verdict is ignored, as the reference ignores it: run only
			// where it can succeed.
			cmds = append(cmds, tmux.IfCopyMode(id, tmux.CopyModeCommand(id, "scroll-up", *n)))
		}
		return cmds
	})
}

func toolExitCopyMode(ctx context.Context, c *Call, _ noArgs) (any, error) {
	// Leaving copy mode when not in it is not an error: the command runs
	// only in a mode that takes it.
	return changePane(c, ctx, func(id string) []tmux.Cmd {
		return []tmux.Cmd{tmux.IfCopyMode(id, tmux.CopyModeCommand(id, "cancel", 0))}
	})
}
