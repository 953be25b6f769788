package mcp

import (
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/tmux"
)

func TestSessionTools(t *testing.T) {
	e := newEnv(t)
	var s SessionInfo
	e.ok("get_session_info", map[string]any{"session_name": "fixture"}, &s)
	if s.WindowCount < 1 || *s.SessionName != "fixture" {
		t.Fatalf("session %+v", s)
	}
	var byID SessionInfo
	e.ok("get_session_info", map[string]any{"session_id": s.SessionID}, &byID)
	if byID.SessionID != s.SessionID {
		t.Fatalf("by id %+v", byID)
	}
	e.fail("get_session_info", map[string]any{"session_name": "nope"}, "Object not found: Could not find session_name=nope for list-sessions ()\nCall list_sessions")

	var w WindowInfo
	e.ok("create_window", map[string]any{"window_name": "logs"}, &w)
	if *w.WindowName != "logs" || w.ActivePaneID == nil {
		t.Fatalf("window %+v", w)
	}
	e.fail("create_window", map[string]any{"direction": "sideways"}, "Input should be 'before' or 'after'")
	var wins []WindowInfo
	e.result("list_windows", map[string]any{"session_name": "fixture"}, &wins)
	if len(wins) != 2 {
		t.Fatalf("windows %+v", wins)
	}
	e.result("list_windows", map[string]any{"session_id": s.SessionID, "filters": map[string]any{"window_name": "logs"}}, &wins)
	if len(wins) != 1 {
		t.Fatalf("filtered windows %+v", wins)
	}
	e.result("list_windows", map[string]any{"filters": map[string]any{"window_active": "1"}}, &wins)
	if len(wins) != 1 {
		t.Fatalf("active windows %+v", wins)
	}
	var sel WindowInfo
	e.ok("select_window", map[string]any{"window_id": w.WindowID}, &sel)
	if sel.WindowID != w.WindowID || *sel.WindowActive != "1" {
		t.Fatalf("select by id %+v", sel)
	}
	e.ok("select_window", map[string]any{"direction": "next"}, &sel)
	if sel.WindowID == w.WindowID {
		t.Fatalf("next should move off %s", w.WindowID)
	}
	e.fail("select_window", nil, "Provide window_id, window_index, or direction.")
	e.ok("create_session", map[string]any{"session_name": "solo"}, nil)
	e.fail("select_window", map[string]any{"session_name": "solo", "direction": "last"}, "no last window")

	var renamed SessionInfo
	e.ok("rename_session", map[string]any{"session_name": "solo", "new_name": "duo"}, &renamed)
	if *renamed.SessionName != "duo" {
		t.Fatalf("renamed %+v", renamed)
	}
	e.ok("rename_session", map[string]any{"session_name": "duo", "new_name": "x#(id)#S"}, &renamed)
	if *renamed.SessionName != "x#(id)#S" {
		t.Fatalf("literal rename %+v", renamed)
	}
	e.ok("rename_session", map[string]any{"session_name": "x#(id)#S", "new_name": "duo"}, &renamed)
	e.fail("kill_session", nil, "Refusing to kill without an explicit target")
	if got := e.ok("kill_session", map[string]any{"session_name": "duo"}, nil); got != "Session killed: duo" {
		t.Fatalf("kill_session: %q", got)
	}
	e.setVar("TMUX", e.tmux("display-message", "-p", "#{socket_path}")+",1,$0")
	e.setVar("TMUX_PANE", e.firstPane())
	e.fail("kill_session", map[string]any{"session_name": "fixture"}, "Refusing to kill the session containing")
}

func TestWindowTools(t *testing.T) {
	e := newEnv(t)
	wid := e.tmux("display-message", "-p", "-t", "fixture", "#{window_id}")
	var w WindowInfo
	e.ok("get_window_info", map[string]any{"window_id": wid}, &w)
	if w.PaneCount != 1 || *w.SessionName != "fixture" || *w.ActivePaneID != e.firstPane() {
		t.Fatalf("window %+v", w)
	}
	e.ok("get_window_info", map[string]any{"session_name": "fixture", "window_index": "0"}, &w)
	e.fail("get_window_info", map[string]any{"window_id": "@99999"}, "Object not found: Could not find window_id=@99999")

	var p PaneInfo
	e.ok("split_window", map[string]any{"window_id": wid, "direction": "right"}, &p)
	if !strings.HasPrefix(p.PaneID, "%") || p.PaneID == e.firstPane() {
		t.Fatalf("split %+v", p)
	}
	e.fail("split_window", map[string]any{"direction": "diagonal"}, "Input should be")
	var panes []PaneInfo
	e.result("list_panes", map[string]any{"window_id": wid}, &panes)
	if len(panes) != 2 {
		t.Fatalf("panes %+v", panes)
	}
	e.result("list_panes", map[string]any{"session_name": "fixture", "filters": map[string]any{"pane_active": "1"}}, &panes)
	if len(panes) != 1 {
		t.Fatalf("active panes %+v", panes)
	}
	layout := e.tmux("display-message", "-p", "-t", wid, "#{window_layout}")
	if err := tmux.CheckLayout(layout); err != nil {
		t.Fatalf("real layout %q rejected: %v", layout, err)
	}
	e.ok("select_layout", map[string]any{"window_id": wid, "layout": "even-horizontal"}, &w)
	e.ok("select_layout", map[string]any{"window_id": wid, "layout": layout}, &w)
	e.fail("select_layout", map[string]any{"window_id": wid, "layout": "bogus-layout"}, "Invalid layout")
	e.ok("rename_window", map[string]any{"window_id": wid, "new_name": "main"}, &w)
	if *w.WindowName != "main" {
		t.Fatalf("rename %+v", w)
	}
	e.ok("resize_window", map[string]any{"window_id": wid, "width": 60, "height": 20}, &w)
	e.ok("move_window", map[string]any{"window_id": wid, "destination_index": "99"}, &w)
	if *w.WindowIndex != "99" {
		t.Fatalf("move %+v", w)
	}
	var other SessionInfo
	e.ok("create_session", map[string]any{"session_name": "other"}, &other)
	e.ok("move_window", map[string]any{"window_id": wid, "destination_session": other.SessionID, "destination_index": "7"}, &w)
	if *w.SessionID != other.SessionID || *w.WindowIndex != "7" {
		t.Fatalf("move to session %+v", w)
	}
	e.fail("kill_window", nil, "window_id\n  Missing required argument [type=missing_argument]")
	if got := e.ok("kill_window", map[string]any{"window_id": wid}, nil); got != "Window killed: "+wid {
		t.Fatalf("kill_window %q", got)
	}
}

func TestUnknownToolAndValidation(t *testing.T) {
	e := newEnv(t)
	res := e.fail("no_such_tool", nil, "Unknown tool: 'no_such_tool'")
	if res.Meta["error_type"] != "NotFoundError" || res.Meta["expected"] != false {
		t.Fatalf("meta %v", res.Meta)
	}
	res = e.fail("list_sessions", map[string]any{"wait_for_previous": true}, "1 validation error for call[list_sessions]\nwait_for_previous\n  Unexpected keyword argument [type=unexpected_keyword_argument]")
	if !strings.Contains(text(res), "your client (fleetmux-test 0)") || res.Meta["error_type"] != "ValidationError" || res.Meta["expected"] != true {
		t.Fatalf("suggestion: %q %v", text(res), res.Meta)
	}
	e.fail("get_session_info", map[string]any{"session_name": 5}, "session_name\n  Input should be a valid string [type=string_type]")
	e.fail("resize_window", map[string]any{"width": "abc"}, "Input should be a valid integer, unable to parse string as an integer")
	var w WindowInfo
	e.ok("resize_window", map[string]any{"width": "70"}, &w)
}

func TestDirectPaneTargetsMissing(t *testing.T) {
	e := newEnv(t)
	e.fail("send_keys", map[string]any{"pane_id": "%999", "keys": "x"}, "Pane not found: Pane not found: %999\nCall list_panes")
	e.fail("capture_pane", map[string]any{"pane_id": "%999"}, "Pane not found: Pane not found: %999")
	e.tmux("kill-server")
	e.fail("send_keys", map[string]any{"pane_id": "%0", "keys": "x"}, "Pane not found: Pane not found: %0")
	e.fail("capture_pane", map[string]any{"pane_id": "%0"}, "Pane not found: Pane not found: %0")
}
