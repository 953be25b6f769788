package mcp

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/mcp/tools"
)

// paneEnviron reads the environment a pane's process started with, from
// /proc (Linux): what the spawn tools' environment and
// suppress_persistent_history arguments reach.
func (e *testEnv) paneEnviron(pane string) map[string]string {
	e.t.Helper()
	pid := e.tmux("display-message", "-p", "-t", pane, "#{pane_pid}")
	b, err := os.ReadFile("/proc/" + pid + "/environ")
	if err != nil {
		e.t.Fatalf("environment of pane %s: %v", pane, err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// TestSpawnToolsTakeEveryArgument calls create_session, create_window and
// split_window with each argument their handlers decode (issue 21: the
// handlers read them from typed structs) and checks that every one
// reaches tmux.
func TestSpawnToolsTakeEveryArgument(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the panes' environment from /proc")
	}
	e := newEnv(t)
	dir := t.TempDir()
	realDir, _ := filepath.EvalSymlinks(dir)
	inDir := func(what, path string) {
		t.Helper()
		if path != dir && path != realDir {
			t.Errorf("%s: directory %q, want %q", what, path, dir)
		}
	}
	// Each tool sets its own values: tmux keeps create_session's in the
	// session's environment, which the later windows inherit.
	env := func(key, histcontrol string) map[string]any {
		return map[string]any{key: "1", "HISTCONTROL": histcontrol}
	}
	wantEnv := func(what, pane, key, histcontrol string) {
		t.Helper()
		got := e.paneEnviron(pane)
		for k, v := range map[string]string{key: "1", "HISTCONTROL": histcontrol + ":ignorespace", "HISTFILE": "", "fish_private_mode": "1"} {
			if have, ok := got[k]; !ok || have != v {
				t.Errorf("%s: %s=%q (set %v), want %q", what, k, have, ok, v)
			}
		}
	}

	var s SessionInfo
	e.ok("create_session", map[string]any{
		"session_name": "typed", "window_name": "first", "start_directory": dir, "x": 91, "y": 31,
		"environment": env("FLEET_SESSION", "ignoredups"), "suppress_persistent_history": true,
	}, &s)
	if *s.SessionName != "typed" {
		t.Fatalf("create_session: %+v", s)
	}
	if got := e.tmux("display-message", "-p", "-t", "typed", "#{window_name} #{window_width}x#{window_height}"); got != "first 91x31" {
		t.Errorf("create_session: window %q, want \"first 91x31\"", got)
	}
	first := e.tmux("display-message", "-p", "-t", "typed", "#{pane_id}")
	inDir("create_session", e.tmux("display-message", "-p", "-t", first, "#{pane_current_path}"))
	wantEnv("create_session", first, "FLEET_SESSION", "ignoredups")

	var w WindowInfo
	e.ok("create_window", map[string]any{
		"session_id": s.SessionID, "window_name": "second", "start_directory": dir, "attach": false, "direction": "before",
		"environment": env("FLEET_WINDOW", "erasedups"), "suppress_persistent_history": true,
	}, &w)
	if *w.WindowName != "second" || *w.WindowIndex != "0" || *w.WindowActive != "0" {
		t.Errorf("create_window before, detached: name %q index %q active %q", *w.WindowName, *w.WindowIndex, *w.WindowActive)
	}
	inDir("create_window", e.tmux("display-message", "-p", "-t", *w.ActivePaneID, "#{pane_current_path}"))
	wantEnv("create_window", *w.ActivePaneID, "FLEET_WINDOW", "erasedups")
	e.ok("create_window", map[string]any{"session_name": "typed", "window_name": "third", "attach": true}, &w)
	if *w.WindowActive != "1" {
		t.Errorf("create_window attached: active %q", *w.WindowActive)
	}

	var p PaneInfo
	e.ok("split_window", map[string]any{
		"pane_id": first, "direction": "right", "size": 20, "start_directory": dir, "shell": "sleep 3600",
		"environment": env("FLEET_SPLIT", "ignoredups:erasedups"), "suppress_persistent_history": true,
	}, &p)
	if got := e.tmux("display-message", "-p", "-t", p.PaneID, "#{pane_width} #{pane_start_command}"); got != "20 sleep 3600" && got != `20 "sleep 3600"` {
		t.Errorf("split_window right, 20 columns: %q", got)
	}
	inDir("split_window", e.tmux("display-message", "-p", "-t", p.PaneID, "#{pane_current_path}"))
	wantEnv("split_window", p.PaneID, "FLEET_SPLIT", "ignoredups:erasedups")
	e.ok("split_window", map[string]any{"session_name": "typed", "window_index": "1", "direction": "above", "size": "5"}, &p)
	if got := e.tmux("display-message", "-p", "-t", p.PaneID, "#{pane_height} #{pane_top}"); got != "5 0" {
		t.Errorf("split_window above, size \"5\": height and top %q, want \"5 0\"", got)
	}
}

// TestGetServerInfoSocketName: get_server_info reports the socket_name
// argument (its handler's one argument, issue 21) over LIBTMUX_SOCKET.
func TestGetServerInfoSocketName(t *testing.T) {
	e := newEnv(t)
	e.setVar("LIBTMUX_SOCKET", "")
	var info tools.ServerInfo
	e.ok("get_server_info", map[string]any{"socket_name": e.socket}, &info)
	if !info.IsAlive || info.SocketName == nil || *info.SocketName != e.socket {
		t.Fatalf("server info %+v, want socket_name %q", info, e.socket)
	}
}
