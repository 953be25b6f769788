package mcp

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fleetmux/fleetmux/mcp/tools"
	"github.com/fleetmux/fleetmux/transport"
)

// countingRunner counts the requests (tmux invocations) a tool makes.
type countingRunner struct {
	n    atomic.Int64
	next transport.Runner
}

func (c *countingRunner) Run(ctx context.Context, argv []string, stdin []byte) (transport.Result, error) {
	c.n.Add(1)
	return c.next.Run(ctx, argv, stdin)
}

// TestOneRequestPerTool holds the number of tmux requests each tool
// makes when its target is named by id (or a plain session name): over
// SSH a request is a round trip, so these are the tools' costs on a
// remote host. The results themselves are checked by the tools' own
// tests.
func TestOneRequestPerTool(t *testing.T) {
	cr := &countingRunner{next: transport.NewLocal()}
	e := newEnv(t, func(_ *testEnv, o *Options) { o.Backend = &localBackend{r: cr} })
	pane := e.firstPane()
	win := strings.TrimSpace(e.tmux("display", "-p", "-t", pane, "#{window_id}"))
	e.tmux("new-session", "-d", "-s", "other")
	victim := e.paneSplit(pane, "sleep 3600")
	cursor := ""
	cases := []struct {
		name     string
		args     map[string]any
		requests int64
		fails    string // the error text, for a call that must fail
	}{
		{"list_sessions", nil, 1, ""},
		{"list_windows", map[string]any{"session_name": "fixture"}, 1, ""},
		{"list_panes", map[string]any{"session_name": "fixture"}, 1, ""},
		{"get_session_info", map[string]any{"session_name": "fixture"}, 1, ""},
		{"get_window_info", map[string]any{"window_id": win}, 1, ""},
		{"get_pane_info", map[string]any{"pane_id": pane}, 1, ""},
		{"get_server_info", nil, 1, ""},
		{"capture_pane", map[string]any{"pane_id": pane}, 1, ""},
		{"snapshot_pane", map[string]any{"pane_id": pane}, 1, ""},
		{"display_message", map[string]any{"pane_id": pane, "format_string": "#{pane_id}"}, 1, ""},
		{"paste_text", map[string]any{"pane_id": pane, "text": "x", "bracket": false}, 1, ""},
		{"send_keys", map[string]any{"pane_id": pane, "keys": "C-u", "enter": false}, 1, ""},
		{"resize_pane", map[string]any{"pane_id": pane, "height": 10}, 1, ""},
		{"resize_pane", map[string]any{"pane_id": pane, "zoom": true}, 1, ""},
		{"resize_pane", map[string]any{"pane_id": pane, "zoom": false}, 1, ""},
		{"set_pane_title", map[string]any{"pane_id": pane, "title": "t"}, 1, ""},
		{"clear_pane", map[string]any{"pane_id": pane}, 1, ""},
		{"select_pane", map[string]any{"pane_id": pane}, 1, ""},
		{"enter_copy_mode", map[string]any{"pane_id": pane, "scroll_up": 2}, 1, ""},
		{"exit_copy_mode", map[string]any{"pane_id": pane}, 1, ""},
		{"exit_copy_mode", map[string]any{"pane_id": pane}, 1, ""}, // not in a mode
		{"pipe_pane", map[string]any{"pane_id": pane}, 1, ""},
		{"select_window", map[string]any{"window_id": win}, 1, ""},
		{"rename_window", map[string]any{"window_id": win, "new_name": "w"}, 1, ""},
		{"select_layout", map[string]any{"window_id": win, "layout": "tiled"}, 1, ""},
		{"resize_window", map[string]any{"window_id": win, "width": 80}, 1, ""},
		{"rename_session", map[string]any{"session_name": "other", "new_name": "other2"}, 1, ""},
		{"rename_session", map[string]any{"session_id": "$1", "new_name": "other"}, 1, ""},
		{"split_window", map[string]any{"pane_id": pane}, 1, ""},
		{"create_session", map[string]any{"session_name": "zz"}, 1, ""},
		{"create_session", map[string]any{"session_name": "zz"}, 1, "Session named zz exists"},
		{"create_window", map[string]any{"session_name": "zz"}, 1, ""},
		{"kill_session", map[string]any{"session_name": "zz"}, 1, ""},
		{"respawn_pane", map[string]any{"pane_id": victim, "kill": true, "shell": "sleep 3600"}, 1, ""},
		{"kill_pane", map[string]any{"pane_id": victim}, 1, ""},
		{"kill_pane", map[string]any{"pane_id": "%999"}, 1, "Pane not found"},
		{"capture_since", map[string]any{"pane_id": pane}, 1, ""},
		{"send_keys", map[string]any{"pane_id": pane, "keys": "echo since-one"}, 1, ""},
		{"capture_since", map[string]any{"pane_id": pane, "cursor": "PREVIOUS"}, 1, ""},
	}
	for _, c := range cases {
		if c.name == "capture_since" && c.args["cursor"] == "PREVIOUS" {
			c.args["cursor"] = cursor
		}
		before := cr.n.Load()
		if c.fails != "" {
			e.fail(c.name, c.args, c.fails)
		} else {
			e.ok(c.name, c.args, nil)
		}
		if got := cr.n.Load() - before; got != c.requests {
			t.Errorf("%s %v: %d tmux requests, want %d", c.name, c.args, got, c.requests)
		}
		if c.name == "capture_since" && c.args["cursor"] != nil {
			var out tools.CaptureSinceResult
			e.ok(c.name, map[string]any{"pane_id": pane, "cursor": c.args["cursor"]}, &out)
			if !slices.Contains(out.Lines, "since-one") || out.LinesMissed {
				t.Errorf("capture_since with a cursor: %+v", out)
			}
		} else if c.name == "capture_since" {
			var out tools.CaptureSinceResult
			e.ok(c.name, map[string]any{"pane_id": pane}, &out)
			cursor = out.Cursor
		}
		if c.name == "send_keys" && c.args["keys"] == "echo since-one" {
			waitFor(t, "output", func() bool { return strings.Count(e.tmux("capture-pane", "-p", "-t", pane), "since-one") >= 2 })
		}
	}
}
